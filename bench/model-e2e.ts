/**
 * The model check on the real control plane: the in-process model's random sequences of user,
 * provider and operator actions (test/support/model/actions.ts), applied to dist/ on a real
 * control plane with the operator image running as its Deployment does, two mock provider
 * processes and two accounts; the model's invariants judged at every quiescent point and after
 * deleting everything. Prints each seed's outcome, every violation with its seed and sequence,
 * counts and wall time; exits 1 when an invariant broke, 2 when a run could not be carried out.
 *
 *   npm run model:e2e -- [--runs 20] [--seed 1] [--length 8] [--shrink] [--verbose]
 */
import { parseArgs } from 'node:util';
import { describe } from '../test/support/model/actions';
import { runSeed, type E2eResult } from '../test/support/model-e2e/run';
import { shrinkOnCluster } from '../test/support/model-e2e/shrink';
import { startE2eStack } from '../test/support/model-e2e/stack';

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '20' },
    seed: { type: 'string', default: '1' },
    length: { type: 'string', default: '8' },
    shrink: { type: 'boolean', default: false },
    verbose: { type: 'boolean', default: false },
  },
});

function int(name: string, value: string | undefined): number {
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n < 0) throw new Error(`--${name} must be a non-negative integer, got ${String(value)}`);
  return n;
}

function report(r: E2eResult, length: number): string {
  const lines = [`seed ${r.seed} (${length} actions, ${(r.ms / 1000).toFixed(1)} s):`];
  for (const v of r.violations) lines.push(`  VIOLATION ${v.invariant}: ${v.detail}`);
  if (r.error) lines.push(`  RUN FAILED: ${r.error}`);
  lines.push('  sequence as generated:', ...r.actions.map((a, i) => `    ${i + 1}. ${describe(a)}`));
  lines.push('  as applied:', ...r.trace.map((t) => `    ${t}`));
  lines.push(`  the in-process model runs (and shrinks) the same generated sequence: npm run model -- --runs 1 --seed ${r.seed} --length ${length}`);
  return lines.join('\n');
}

async function main(): Promise<void> {
  const runs = int('runs', values.runs);
  const first = int('seed', values.seed);
  const length = int('length', values.length);
  const t0 = Date.now();
  const stack = await startE2eStack();
  process.stderr.write(`model-e2e: stack up in ${((Date.now() - t0) / 1000).toFixed(1)} s; operator log ${stack.dir}/operator.log\n`);
  let failed = 0;
  let errors = 0;
  let keepLogs = false;
  try {
    for (let seed = first; seed < first + runs; seed++) {
      const r = await runSeed(stack, seed, length);
      const verdict = r.error ? 'run failed' : r.violations.length > 0 ? `VIOLATION ${r.violations[0]?.invariant ?? ''}` : 'ok';
      process.stdout.write(`seed ${seed}: ${verdict} (${(r.ms / 1000).toFixed(1)} s)\n`);
      if (values.verbose) process.stdout.write(`${r.trace.map((t) => `    ${t}`).join('\n')}\n`);
      if (r.error) errors++;
      if (r.violations.length === 0 && !r.error) continue;
      if (r.violations.length > 0) failed++;
      keepLogs = true;
      process.stdout.write(`${report(r, length)}\n`);
      if (values.shrink && r.violations.length > 0) {
        const shortest = await shrinkOnCluster(stack, r, (line) => process.stderr.write(`${line}\n`));
        process.stdout.write(`shortest sequence found on the cluster for seed ${seed}:\n${report(shortest, shortest.actions.length)}\n`);
      }
    }
  } finally {
    await stack.stop(keepLogs);
  }
  const wall = (Date.now() - t0) / 1000;
  process.stdout.write(
    `seeds ${first}..${first + runs - 1}, ${length} actions each: ${runs - failed - errors} ok, ${failed} with violations, ${errors} failed to run; wall time ${wall.toFixed(1)} s\n`,
  );
  process.exitCode = failed > 0 ? 1 : errors > 0 ? 2 : 0;
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exitCode = 2;
});
