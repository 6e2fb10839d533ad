/**
 * The exhaustive bounded search of the model (test/support/model/exhaustive.ts) to a depth of
 * one's choice: every sequence of that many actions of the provenance alphabet, the operator
 * run to quiescence after each, each abstract state explored once. Prints the depth, the
 * distinct states, the expansions and the time, and every violation with its shortest
 * sequence; exits 1 when an invariant broke. `npm test` runs depth 7.
 *
 *   npm run model:exhaustive -- --depth 8
 */
import { parseArgs } from 'node:util';
import { exhaustive, formatExhaustive, PROVENANCE_ALPHABET } from '../test/support/model/exhaustive';

const { values } = parseArgs({ options: { depth: { type: 'string', default: '8' } } });

async function main(): Promise<void> {
  const depth = Number(values.depth);
  if (!Number.isSafeInteger(depth) || depth < 1) throw new Error(`--depth must be a positive integer, got ${String(values.depth)}`);
  const report = await exhaustive({
    alphabet: PROVENANCE_ALPHABET,
    depth,
    progress: (d, states, expansions) => process.stderr.write(`depth ${d}: ${states} states, ${expansions} expansions\n`),
  });
  console.log(formatExhaustive(report));
  if (report.findings.length > 0) process.exitCode = 1;
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 2;
});
