/**
 * Provenance by construction on the real control plane (issue 31): the sequences of
 * test/support/model/provenance-scenarios.ts applied through the model-e2e adapter to dist/,
 * two mock provider processes and the operator image under its ServiceAccount and the shipped
 * admission policy. The same invariants as the in-process model are judged at every quiescent
 * point (a bucket whose tags name a live object or another cluster is never changed or
 * deleted by anyone else) and after a teardown that deletes everything.
 */
import { expect } from 'chai';
import { PROVENANCE_SCENARIOS } from '../support/model/provenance-scenarios';
import { runSeed } from '../support/model-e2e/run';
import { startE2eStack, type E2eStack } from '../support/model-e2e/stack';

describe('provenance on the real control plane: a copied key never makes another bucket ours', function () {
  this.timeout(300_000);
  let stack: E2eStack;
  before(async () => {
    stack = await startE2eStack();
  });
  after(async () => {
    await stack?.stop(false);
  });

  let seed = 310;
  for (const [name, actions] of Object.entries(PROVENANCE_SCENARIOS)) {
    it(`found in review (issue 31): observe another's bucket with its key copied, drop the adopt-id, switch to Full, delete: ${name}`, async () => {
      const run = await runSeed(stack, ++seed, actions.length, actions);
      expect(run.error, run.trace.join('\n')).to.equal(undefined);
      expect(run.violations, run.trace.join('\n')).to.deep.equal([]);
      expect(run.trace.join('\n')).to.not.match(/no-op|refused/);
    });
  }
});
