/**
 * Provenance by construction (issue 31): no value a user can copy makes another bucket ours.
 * The scripted sequences the issue found run against the real reconciler in the model world;
 * every model invariant is judged (no write to a bucket whose tags name another live object
 * or another cluster), and the owner's bucket must still exist at the end.
 */
import { expect } from 'chai';
import { PROVENANCE_SCENARIOS } from '../../support/model/provenance-scenarios';
import { runSequence } from '../../support/model/sequence';

describe('provenance: a copied key or status never makes another bucket ours', () => {
  for (const [name, actions] of Object.entries(PROVENANCE_SCENARIOS)) {
    it(`found in review (issue 31): observe another's bucket with its key copied, drop the adopt-id, switch to Full, delete: ${name}`, async () => {
      const run = await runSequence(actions);
      expect(run.violations, run.trace.join('\n')).to.deep.equal([]);
      expect(run.trace.join('\n')).to.not.match(/no-op/);
    });
  }
});
