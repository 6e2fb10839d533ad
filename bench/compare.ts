/** Side-by-side ratios of two operators' figures from one benchmark run. */
import type { Figures } from './scenarios';

/** One figure of both operators and ours / peer. */
export interface Ratio {
  readonly figure: string;
  readonly ours: number;
  readonly peer: number;
  readonly ratio: number;
}

/** The ratios of one scenario and size. */
export interface Comparison {
  readonly scenario: string;
  readonly n: number;
  readonly figures: readonly Ratio[];
}

/** A row of figures as main.ts collects them. */
export interface SubjectRow {
  readonly scenario: string;
  readonly n: number;
  readonly subject: string;
  /** Which round of `--rounds` (1 when there is one). */
  readonly round?: number;
  readonly figures: Figures;
}

/** The ratios of one scenario and size over several rounds: each figure's median. */
export interface MedianComparison extends Comparison {
  readonly rounds: number;
  /** Each round's ratio of every figure, in round order. */
  readonly perRound: Readonly<Record<string, readonly number[]>>;
}

/**
 * Pairs ours and the peer's rows by scenario and size and divides every numeric figure both
 * have (a zero denominator gives no ratio: "0 writes vs 0 writes" says nothing).
 */
export function ratios(rows: readonly SubjectRow[], ours: string, peer: string): Comparison[] {
  const out: Comparison[] = [];
  for (const a of rows) {
    if (a.subject !== ours) continue;
    const b = rows.find((r) => r.subject === peer && r.scenario === a.scenario && r.n === a.n && r.round === a.round);
    if (!b) continue;
    const figures: Ratio[] = [];
    for (const [figure, x] of Object.entries(a.figures)) {
      const y = b.figures[figure];
      if (typeof x !== 'number' || typeof y !== 'number' || y === 0) continue;
      figures.push({ figure, ours: x, peer: y, ratio: x / y });
    }
    out.push({ scenario: a.scenario, n: a.n, figures });
  }
  return out;
}

/**
 * Medians over rounds: for every scenario, size and figure, the median of ours', of the
 * peer's and of the per-round ratios. The machine's speed drifts by more than some gaps
 * between the operators within minutes, and a ratio of one round is only as good as the two
 * minutes it was measured in; rounds that alternate which operator goes first, summarised by
 * medians, keep one slow minute from deciding a figure.
 */
export function medianRatios(perRound: readonly Comparison[]): MedianComparison[] {
  const groups = new Map<string, Comparison[]>();
  for (const c of perRound) {
    const k = `${c.scenario}\u0000${c.n}`;
    groups.set(k, [...(groups.get(k) ?? []), c]);
  }
  return [...groups.values()].map((cs) => {
    const first = cs[0]!;
    const names = [...new Set(cs.flatMap((c) => c.figures.map((f) => f.figure)))];
    const figures: Ratio[] = [];
    const byRound: Record<string, number[]> = {};
    for (const figure of names) {
      const rs = cs.flatMap((c) => c.figures.filter((f) => f.figure === figure));
      byRound[figure] = rs.map((r) => r.ratio);
      figures.push({ figure, ours: median(rs.map((r) => r.ours)), peer: median(rs.map((r) => r.peer)), ratio: median(rs.map((r) => r.ratio)) });
    }
    return { scenario: first.scenario, n: first.n, rounds: cs.length, figures, perRound: byRound };
  });
}

/** The median of a non-empty list (the mean of the middle two for an even count). */
export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}
