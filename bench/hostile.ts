/**
 * Normal tenants' time to Ready before and among hostile tenants (issue 32): the scenario of
 * test/support/hostile-tenants.ts on a control plane of its own, with the operator image under
 * its Deployment's flags and memory heap limit. Prints p50/p99 of the normal tenants' new
 * buckets before and among the hostile ones, the operator's peak RSS and whether it restarted.
 *
 *   npm run build:control-plane && npm run build:image && npx tsx bench/hostile.ts --normal 50 --hostile-buckets 4
 */
import { hostname, cpus } from 'node:os';
import { parseArgs } from 'node:util';
import { startControlPlane } from '../test/support/control-plane';
import { percentile, runHostileTenants } from '../test/support/hostile-tenants';
import { startStack } from '../test/support/stack';

const { values } = parseArgs({ options: { normal: { type: 'string', default: '50' }, 'hostile-buckets': { type: 'string', default: '4' } } });

async function main(): Promise<void> {
  const normalTenants = Number(values.normal);
  const hostileBuckets = Number(values['hostile-buckets']);
  const cp = await startControlPlane();
  try {
    const stack = await startStack(cp, { name: 'bench-hostile', operator: { driftInterval: '10s' }, waitForCleanup: false });
    try {
      const run = await runHostileTenants(stack, { normalTenants, hostileBuckets });
      const line = (label: string, xs: readonly number[]) => `${label}: p50 ${percentile(xs, 50)} ms, p99 ${percentile(xs, 99)} ms (n=${xs.length})`;
      console.log(`machine ${hostname()} (${cpus().length} cores, ${cpus()[0]?.model ?? '?'}), ${new Date().toISOString()}`);
      console.log(`${normalTenants} normal tenants, 7 hostile tenants with ${hostileBuckets} buckets each`);
      console.log(line('normal tenants’ new bucket Ready, before the hostile tenants', run.before));
      console.log(line('normal tenants’ new bucket Ready, among the hostile tenants', run.among));
      console.log(`hostile reasons: ${JSON.stringify(run.reasons)}`);
      console.log(
        `operator peak RSS ${(run.peakRss / 2 ** 20).toFixed(0)} MiB (limit 256 MiB); restarted: ${run.startTimes[0] !== run.startTimes[1]}`,
      );
    } finally {
      await stack.stop();
    }
  } finally {
    await cp.stop();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
