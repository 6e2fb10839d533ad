/**
 * The exhaustive bounded search (test/support/model/exhaustive.ts): every sequence of up to 7
 * actions of the provenance alphabet (copies of a manifest, a key, a status; policy switches;
 * a restored backup; another cluster's bucket; stripped tags; a lost answer), the operator run
 * to quiescence after each, each abstract state once. Deeper: `npm run model:exhaustive`.
 */
import { expect } from 'chai';
import type { StorageBucket } from '../../../operator/api/v1';
import { Invariant } from '../../support/model/invariants';
import { exhaustive, formatExhaustive, PROVENANCE_ALPHABET } from '../../support/model/exhaustive';
import { KINDS } from '../../support/model/world';

describe('exhaustive search of the provenance alphabet', function () {
  this.timeout(600_000);

  it('finds the shortest sequence that breaks a property, breadth first', async () => {
    // A property the operator is not meant to keep: at most one StorageBucket.
    const report = await exhaustive({
      alphabet: PROVENANCE_ALPHABET,
      depth: 3,
      invariant: (world) =>
        world.api.list<StorageBucket>(KINDS.bucket).length > 1 ? [{ invariant: Invariant.quiescence, detail: 'two StorageBuckets' }] : [],
    });
    expect(report.findings.map((f) => f.actions.map((a) => a.type))).to.deep.equal([['create', 'copy']]);
    expect(formatExhaustive(report)).to.include('shortest sequence (2 action(s))');
  });

  it('every sequence of up to 7 actions keeps every invariant', async () => {
    const report = await exhaustive({ alphabet: PROVENANCE_ALPHABET, depth: 7 });
    console.log(`      ${formatExhaustive(report).split('\n')[0] ?? ''}`);
    expect(report.findings, formatExhaustive(report)).to.deep.equal([]);
    // The search reached its depth: states were still new at the last one.
    expect(report.statesPerDepth).to.have.length(7);
    expect(report.statesPerDepth.every((n) => n > 0)).to.equal(true);
  });
});
