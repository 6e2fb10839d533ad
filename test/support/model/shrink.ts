/**
 * Delta debugging over a failing action list: drop chunks (halves, quarters, ... single
 * actions) while the run still breaks the same invariant, until no single action can go.
 * The result is 1-minimal: removing any one action makes the failure disappear.
 */

/** Options of {@link shrink}. */
export interface ShrinkOptions {
  /** Most runs of `fails` to spend. @default 400 */
  readonly maxRuns?: number;
}

/** The shortest sub-list of `items` the shrinker finds for which `fails` still holds. */
export async function shrink<T>(items: readonly T[], fails: (candidate: readonly T[]) => Promise<boolean>, opts: ShrinkOptions = {}): Promise<T[]> {
  const maxRuns = opts.maxRuns ?? 400;
  let runs = 0;
  let current = [...items];
  let chunk = Math.max(1, Math.floor(current.length / 2));
  while (current.length > 0 && runs < maxRuns) {
    let removed = false;
    for (let start = 0; start < current.length && runs < maxRuns;) {
      const candidate = [...current.slice(0, start), ...current.slice(start + chunk)];
      runs++;
      if (await fails(candidate)) {
        current = candidate;
        removed = true;
      } else {
        start += chunk;
      }
    }
    if (chunk === 1 && !removed) break;
    if (!removed) chunk = Math.max(1, Math.floor(chunk / 2));
  }
  return current;
}
