import { expect } from 'chai';
import { median, medianRatios, ratios, type SubjectRow } from '../../../bench/compare';

const row = (subject: string, round: number, ready: number, cpu: number): SubjectRow => ({
  scenario: 'backlog',
  n: 1000,
  subject,
  round,
  figures: { 'all Ready s': ready, 'CPU s': cpu, note: 'text' },
});

describe('bench/compare', () => {
  it('pairs ours with the peer of the same round, never of another', () => {
    const rows = [row('ours', 1, 10, 4), row('peer', 1, 20, 2), row('peer', 2, 5, 1), row('ours', 2, 10, 3)];
    const byRound = ratios(rows, 'ours', 'peer').map((c) => c.figures.find((f) => f.figure === 'all Ready s')?.ratio);
    expect(byRound).to.deep.equal([0.5, 2]);
  });

  it('summarises rounds by the median of each figure and of the per-round ratios', () => {
    const rows = [
      row('ours', 1, 10, 4),
      row('peer', 1, 20, 2),
      row('peer', 2, 10, 2),
      row('ours', 2, 10, 3),
      row('ours', 3, 30, 2),
      row('peer', 3, 10, 4),
    ];
    const [m] = medianRatios(ratios(rows, 'ours', 'peer'));
    expect(m?.rounds).to.equal(3);
    const ready = m?.figures.find((f) => f.figure === 'all Ready s');
    // Per-round ratios 0.5, 1 and 3: one slow round does not decide the figure.
    expect(ready).to.deep.equal({ figure: 'all Ready s', ours: 10, peer: 10, ratio: 1 });
    expect(m?.perRound['all Ready s']).to.deep.equal([0.5, 1, 3]);
    expect(m?.figures.map((f) => f.figure)).to.not.include('note');
  });

  it('takes the mean of the middle two of an even count', () => {
    expect(median([4, 1, 3, 2])).to.equal(2.5);
    expect(median([7])).to.equal(7);
  });
});
