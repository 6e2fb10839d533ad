/** How the integration runner deals test files to lanes (pure; see scripts/test-integration.ts). */

/**
 * Deals `items` to `lanes` lanes, longest first, each to the lane with the least weight so far
 * (LPT scheduling). Items with the same `group` (say, the files that need the machine's one
 * node) are dealt as one unit, so they run in one lane, one after another. Within a lane the
 * items keep the order they were dealt in, so the longest start first and the short ones fill
 * in at the end. Deterministic for a given input.
 */
export function dealByWeight<T>(
  items: readonly T[],
  weight: (item: T) => number,
  lanes: number,
  group: (item: T) => string | undefined = () => undefined,
): T[][] {
  const n = Math.max(1, Math.min(Math.floor(lanes), items.length));
  const units = new Map<string, { members: T[]; w: number; i: number }>();
  items.forEach((item, i) => {
    const key = group(item);
    const id = key === undefined ? `item:${i}` : `group:${key}`;
    const unit = units.get(id) ?? { members: [], w: 0, i };
    unit.members.push(item);
    unit.w += weight(item);
    units.set(id, unit);
  });
  const out: T[][] = Array.from({ length: n }, () => []);
  const load = new Array<number>(n).fill(0);
  const order = [...units.values()].sort((a, b) => b.w - a.w || a.i - b.i);
  for (const { members, w } of order) {
    let best = 0;
    for (let l = 1; l < n; l++) if ((load[l] ?? 0) < (load[best] ?? 0)) best = l;
    out[best]?.push(...members);
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
