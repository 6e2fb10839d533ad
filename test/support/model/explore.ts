/**
 * Runs many seeded sequences and reports what broke: for each failing seed, the invariant,
 * its detail, and the shortest action list the shrinker found, replayed as readable lines.
 * Shared by the unit test (fixed seeds) and bench/model.ts (the long run).
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
  /** That list's run, line by line, ending with the violation. */
  readonly trace: readonly string[];
}

/** What a batch of seeds found. */
export interface ExploreReport {
  readonly sequences: number;
  readonly reconciles: number;
  readonly findings: readonly Finding[];
  readonly ms: number;
}

/** Options of {@link explore}. */
export interface ExploreOptions {
  readonly seeds: readonly number[];
  /** @default DEFAULT_LENGTH */
  readonly length?: number;
  /** Shrink failures (slower). @default true */
  readonly shrink?: boolean;
  /** Told after each sequence. */
  readonly progress?: (done: number, findings: number) => void;
}

/** Runs every seed; failures are shrunk to the shortest list that breaks the same invariant. */
export async function explore(opts: ExploreOptions): Promise<ExploreReport> {
  const started = Date.now();
  const findings: Finding[] = [];
  let reconciles = 0;
  let done = 0;
  for (const seed of opts.seeds) {
    const actions = actionsFor(seed, opts.length);
    const run = await runSequence(actions);
    reconciles += run.reconciles;
    const first = run.violations[0];
    if (first) {
      const sameInvariant = async (candidate: readonly ModelAction[]) =>
        (await runSequence(candidate)).violations.some((v) => v.invariant === first.invariant);
      const shortest = opts.shrink === false ? actions : await shrink(actions, sameInvariant);
      const replay = await runSequence(shortest);
      const violation = replay.violations.find((v) => v.invariant === first.invariant) ?? first;
      findings.push({ seed, violation, shortest, trace: replay.trace });
    }
    opts.progress?.(++done, findings.length);
  }
  return { sequences: opts.seeds.length, reconciles, findings, ms: Date.now() - started };
}

/** A finding as the test and the script print it. */
export function formatFinding(f: Finding): string {
  const lines = [
    `seed ${f.seed}: ${f.violation.invariant} broken after ${f.shortest.length} action(s)`,
    ...f.trace.map((t, i) => `  ${String(i + 1).padStart(2)}. ${t}`),
    `  => ${f.violation.invariant}: ${f.violation.detail}`,
  ];
  return lines.join('\n');
}
