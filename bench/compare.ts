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
  readonly figures: Figures;
}

/**
 * Pairs ours and the peer's rows by scenario and size and divides every numeric figure both
 * have (a zero denominator gives no ratio: "0 writes vs 0 writes" says nothing).
 */
export function ratios(rows: readonly SubjectRow[], ours: string, peer: string): Comparison[] {
  const out: Comparison[] = [];
  for (const a of rows) {
    if (a.subject !== ours) continue;
    const b = rows.find((r) => r.subject === peer && r.scenario === a.scenario && r.n === a.n);
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
