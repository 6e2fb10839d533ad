/** How the integration runner deals test files to lanes (pure; see scripts/test-integration.ts). */

/**
 * Deals `items` to `lanes` lanes, longest first, each to the lane with the least weight so far
 * (LPT scheduling). Within a lane the items keep the order they were dealt in, so the longest
 * files start first and the short ones fill in at the end. Deterministic for a given input.
 */
export function dealByWeight<T>(items: readonly T[], weight: (item: T) => number, lanes: number): T[][] {
  const n = Math.max(1, Math.min(Math.floor(lanes), items.length));
  const out: T[][] = Array.from({ length: n }, () => []);
  const load = new Array<number>(n).fill(0);
  const order = items.map((item, i) => ({ item, i, w: weight(item) })).sort((a, b) => b.w - a.w || a.i - b.i);
  for (const { item, w } of order) {
    let best = 0;
    for (let l = 1; l < n; l++) if ((load[l] ?? 0) < (load[best] ?? 0)) best = l;
    out[best]?.push(item);
    load[best] = (load[best] ?? 0) + w;
  }
  return out.filter((lane) => lane.length > 0);
}

/** BUCKETOPERATOR_TEST_LANES as a lane count: a positive integer, else 2. */
export function lanesFromEnv(env: NodeJS.ProcessEnv): number {
  const raw = env['BUCKETOPERATOR_TEST_LANES'];
  const n = raw === undefined ? NaN : Number(raw);
  return Number.isInteger(n) && n >= 1 ? n : 2;
}
