/**
 * Runs many seeded sequences and reports what broke, grouped: failures whose invariant and
 * detail agree but for numbers (ids, uids, names) are one group. For the first seed of each
 * group the shrinker finds the shortest action list that still breaks the same invariant,
 * and the report replays it as readable lines. Shared by the unit test (fixed seeds) and
 * bench/model.ts (the long run).
 */
import { randomActions, type ModelAction } from './actions';
import type { Violation } from './invariants';
import { Prng } from './prng';
import { runSequence } from './sequence';
import { shrink } from './shrink';

/** Actions per generated sequence. */
export const DEFAULT_LENGTH = 20;

/** The actions seed `seed` generates. */
export function actionsFor(seed: number, length = DEFAULT_LENGTH): ModelAction[] {
  return randomActions(new Prng(seed), length);
}

/** One failing seed, shrunk. */
export interface Finding {
  readonly seed: number;
  readonly violation: Violation;
  /** The shortest list found that still breaks the same invariant. */
  readonly shortest: readonly ModelAction[];
  /** That list's run, line by line. */
  readonly trace: readonly string[];
}

/** Failures that look alike: one invariant, one detail but for numbers. */
export interface FindingGroup {
  /** The invariant and the detail with every number replaced by N. */
  readonly key: string;
  /** Every seed that failed this way. */
  readonly seeds: readonly number[];
  /** The first seed's failure, shrunk (or as generated, without shrinking). */
  readonly example: Finding;
}

/** What a batch of seeds found. */
export interface ExploreReport {
  readonly sequences: number;
  readonly failedSequences: number;
  readonly reconciles: number;
  readonly groups: readonly FindingGroup[];
  readonly ms: number;
}

/** Options of {@link explore}. */
export interface ExploreOptions {
  readonly seeds: Iterable<number>;
  /** @default DEFAULT_LENGTH */
  readonly length?: number;
  /** Shrink the example of each group. @default true */
  readonly shrink?: boolean;
  /** Told after each sequence. */
  readonly progress?: (done: number, failed: number) => void;
}

/**
 * The grouping key of a violation: its detail with numbers, provider places and the point of
 * the run (a trailing `(at ...)`) left out, so one cause reached in several ways is one group.
 */
export function groupKey(v: Violation): string {
  // Places become E1/A1, E1/A2, E2/A1 ... in order of appearance: which endpoint or account
  // does not matter, whether two places share one does.
  const endpoints: string[] = [];
  const accounts: string[] = [];
  const nth = (list: string[], x: string) => (list.includes(x) ? list.indexOf(x) : list.push(x) - 1) + 1;
  const detail = v.detail
    .replace(/\s*\(at [^)]*\)$/, '')
    .replace(/provider-([a-z]+)\/([a-z]+)/g, (_m, e: string, a: string) => `E${nth(endpoints, e)}/A${nth(accounts, a)}`)
    .replace(/(?<![EA])[0-9]+/g, 'N');
  return `${v.invariant}: ${detail}`;
}

/** Runs every seed and groups the failures; each group's first seed is shrunk. */
export async function explore(opts: ExploreOptions): Promise<ExploreReport> {
  const started = Date.now();
  const length = opts.length ?? DEFAULT_LENGTH;
  const failures = new Map<
    string,
    { seeds: number[]; first: { seed: number; violation: Violation; actions: ModelAction[]; trace: readonly string[] } }
  >();
  let reconciles = 0;
  let sequences = 0;
  let failed = 0;
  for (const seed of opts.seeds) {
    const actions = actionsFor(seed, length);
    const run = await runSequence(actions);
    sequences++;
    reconciles += run.reconciles;
    const violation = run.violations[0];
    if (violation) {
      failed++;
      const key = groupKey(violation);
      const group = failures.get(key);
      if (group) group.seeds.push(seed);
      else failures.set(key, { seeds: [seed], first: { seed, violation, actions, trace: run.trace } });
    }
    opts.progress?.(sequences, failed);
  }
  const groups: FindingGroup[] = [];
  for (const [key, { seeds, first }] of failures) {
    if (opts.shrink === false) {
      groups.push({ key, seeds, example: { seed: first.seed, violation: first.violation, shortest: first.actions, trace: first.trace } });
      continue;
    }
    const same = first.violation.invariant;
    const shortest = await shrink(first.actions, async (c) => (await runSequence(c)).violations.some((v) => v.invariant === same));
    const replay = await runSequence(shortest);
    const violation = replay.violations.find((v) => v.invariant === same) ?? first.violation;
    groups.push({ key, seeds, example: { seed: first.seed, violation, shortest, trace: replay.trace } });
  }
  return { sequences, failedSequences: failed, reconciles, groups, ms: Date.now() - started };
}

/** A finding as the test and the script print it. */
export function formatFinding(f: Finding): string {
  return [
    `seed ${f.seed}: ${f.violation.invariant} broken; shortest sequence found (${f.shortest.length} action(s)):`,
    ...f.trace.map((t, i) => `  ${String(i + 1).padStart(2)}. ${t}`),
    `  => ${f.violation.invariant}: ${f.violation.detail}`,
  ].join('\n');
}

/** A whole report: counts, then each group with its seeds and its shortest sequence. */
export function formatReport(r: ExploreReport): string {
  const lines = [
    `${r.sequences} sequences, ${r.reconciles} reconciles, ${r.failedSequences} failing sequence(s) in ${r.groups.length} group(s), ${(r.ms / 1000).toFixed(1)} s`,
  ];
  for (const g of r.groups) {
    const seeds = g.seeds.length > 12 ? `${g.seeds.slice(0, 12).join(', ')}, ... (${g.seeds.length})` : g.seeds.join(', ');
    lines.push('', `[${g.seeds.length}x] ${g.key}`, `  seeds: ${seeds}`, formatFinding(g.example));
  }
  return lines.join('\n');
}
