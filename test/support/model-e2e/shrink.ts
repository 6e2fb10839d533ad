/**
 * Shrinking on the cluster (optional, slow: one full run per try): drops one action at a time,
 * from the last to the first, and keeps a drop when the shorter sequence still breaks the same
 * invariant. One pass; the in-process model (test/support/model/shrink.ts) shrinks further.
 */
import type { E2eStack } from './stack';
import { runSeed, type E2eResult } from './run';

/** The shortest failing variant of `failing` found by dropping single actions. */
export async function shrinkOnCluster(stack: E2eStack, failing: E2eResult, log: (line: string) => void): Promise<E2eResult> {
  const invariant = failing.violations[0]?.invariant;
  let best = failing;
  for (let i = best.actions.length - 1; i >= 0; i--) {
    const shorter = best.actions.filter((_, j) => j !== i);
    const r = await runSeed(stack, failing.seed, shorter.length, shorter);
    const still = r.violations.some((v) => v.invariant === invariant);
    log(`shrink seed ${failing.seed}: without action ${i + 1} -> ${still ? 'still fails' : 'passes'}`);
    if (still) best = r;
  }
  return best;
}
