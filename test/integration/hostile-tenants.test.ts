/**
 * Hostile tenants among normal ones (issue 32), as test/support/hostile-tenants.ts runs them,
 * against the image build run as its Deployment runs it (its NODE_OPTIONS heap limit
 * included): the operator never restarts, its sampled RSS stays under the Deployment's memory
 * limit, each hostile tenant's buckets say what is wrong with their endpoint, the redirect never
 * reaches the host it names, and every normal tenant's new bucket still gets Ready. The times
 * to Ready (p50, p99) before and among the hostile tenants are printed, not asserted: bench/hostile.ts
 * measures them.
 */
import { expect } from 'chai';
import { allReady, percentile, runHostileTenants } from '../support/hostile-tenants';
import { countRequests } from '../support/provider-process';
import { useStack } from '../support/stack';
import { sharedControlPlane } from './setup';

/** Normal tenants on the shared provider, one bucket each: few, to keep `npm test` short (bench/hostile.ts runs 50). */
const NORMAL_TENANTS = Number(process.env.HOSTILE_NORMAL_TENANTS ?? 10);
/** The Deployment's memory limit (infra/manager.ts). */
const MEMORY_LIMIT_BYTES = 256 * 1024 * 1024;

describe('hostile tenants among normal ones', function () {
  this.timeout(600_000);
  const stack = useStack(sharedControlPlane, { name: 'hostile', operator: { driftInterval: '10s' } });

  it('keeps the operator up and under its memory limit, and every normal tenant’s new bucket gets Ready', async () => {
    const run = await runHostileTenants(stack, { normalTenants: NORMAL_TENANTS, hostileBuckets: 2 });
    console.log(`      hostile reasons: ${JSON.stringify(run.reasons)}`);
    console.log(
      `      ${NORMAL_TENANTS} normal tenants' new buckets Ready: before the hostile tenants p50 ${percentile(run.before, 50)} ms, p99 ${percentile(run.before, 99)} ms; among them p50 ${percentile(run.among, 50)} ms, p99 ${percentile(run.among, 99)} ms`,
    );
    console.log(`      operator RSS: peak ${(run.peakRss / 2 ** 20).toFixed(0)} MiB sampled every 500 ms, limit ${MEMORY_LIMIT_BYTES / 2 ** 20} MiB`);
    expect(run.reasons).to.deep.equal(run.want);
    expect(run.among, 'every normal tenant’s new bucket got Ready').to.have.length(NORMAL_TENANTS);
    // The redirect was never followed: the host it names never saw the hostile tenant's key.
    expect(countRequests(await stack.provider.stats(), / 40[13]$/), 'requests refused at the redirect target').to.equal(0);
    expect(await allReady(stack, run.normalNs), 'normal tenants still Ready').to.equal(true);
    expect(run.startTimes[1], 'the operator process started again').to.equal(run.startTimes[0]);
    expect(() => process.kill(stack.operator.pid, 0), 'the operator process is alive').to.not.throw();
    expect(stack.operator.logs()).to.not.match(/heap out of memory|FATAL ERROR/);
    expect(run.peakRss, 'peak RSS sampled').to.be.below(MEMORY_LIMIT_BYTES);
  });
});
