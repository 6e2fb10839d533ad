/**
 * The long run of the model check (test/support/model/): many random sequences of user,
 * provider and operator actions against the real reconciler, the fakes and the mock
 * provider's store in process. Prints counts, every group of violations with its seeds and
 * the shortest sequence found, and the time; exits 1 when an invariant broke.
 *
 *   npx tsx bench/model.ts --runs 5000 [--seed 1] [--length 20] [--no-shrink]
 */
import { parseArgs } from 'node:util';
import { explore, formatReport } from '../test/support/model/explore';

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '5000' },
    seed: { type: 'string', default: '1' },
    length: { type: 'string', default: '20' },
    'no-shrink': { type: 'boolean', default: false },
  },
});

function int(name: string, value: string | undefined): number {
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n < 0) throw new Error(`--${name} must be a non-negative integer, got ${String(value)}`);
  return n;
}

async function main(): Promise<void> {
  const runs = int('runs', values.runs);
  const first = int('seed', values.seed);
  const length = int('length', values.length);
  const seeds = Array.from({ length: runs }, (_, i) => first + i);
  let last = Date.now();
  const report = await explore({
    seeds,
    length,
    shrink: !values['no-shrink'],
    progress: (done, failed) => {
      if (Date.now() - last < 10_000 && done !== runs) return;
      last = Date.now();
      process.stderr.write(`${done}/${runs} sequences, ${failed} failing\n`);
    },
  });
  process.stdout.write(`seeds ${first}..${first + runs - 1}, ${length} actions each\n${formatReport(report)}\n`);
  process.exitCode = report.groups.length > 0 ? 1 : 0;
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exitCode = 2;
});
