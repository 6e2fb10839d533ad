import { expect } from 'chai';
import { dealByWeight, lanesFromEnv } from '../../../scripts/lanes';

describe('integration lanes', () => {
  describe('dealByWeight', () => {
    const weights: Record<string, number> = { a: 100, b: 90, c: 60, d: 50, e: 10, f: 5 };
    const w = (k: string): number => weights[k] ?? 0;

    it('deals every item to exactly one lane', () => {
      const lanes = dealByWeight(Object.keys(weights), w, 2);
      expect(lanes.flat().sort()).to.deep.equal(Object.keys(weights).sort());
    });

    it('balances the lanes by weight, longest first in each lane', () => {
      const lanes = dealByWeight(['f', 'e', 'd', 'c', 'b', 'a'], w, 2);
      const loads = lanes.map((lane) => lane.reduce((t, k) => t + w(k), 0));
      expect(Math.max(...loads) - Math.min(...loads)).to.be.at.most(10);
      for (const lane of lanes) expect(lane.map(w)).to.deep.equal([...lane.map(w)].sort((x, y) => y - x));
    });

    it('never makes an empty lane, and one lane keeps everything', () => {
      expect(dealByWeight(['a', 'b'], w, 5)).to.have.length(2);
      expect(dealByWeight(['a', 'b', 'c'], w, 1)).to.deep.equal([['a', 'b', 'c']]);
      expect(dealByWeight([], w, 2)).to.deep.equal([]);
    });

    it('keeps a group in one lane, dealt as one unit', () => {
      const g = (k: string): string | undefined => (k === 'a' || k === 'f' ? 'node' : undefined);
      const lanes = dealByWeight(['a', 'b', 'c', 'd', 'e', 'f'], w, 3, g);
      const holding = lanes.filter((lane) => lane.includes('a') || lane.includes('f'));
      expect(holding).to.have.length(1);
      expect(holding[0]).to.include.members(['a', 'f']);
      expect(lanes.flat().sort()).to.deep.equal(['a', 'b', 'c', 'd', 'e', 'f']);
    });

    it('is the same for the same input, ties kept in input order', () => {
      const flat = (): string[][] => dealByWeight(['x', 'y', 'z', 'q'], () => 1, 2);
      expect(flat()).to.deep.equal([
        ['x', 'z'],
        ['y', 'q'],
      ]);
      expect(flat()).to.deep.equal(flat());
    });
  });

  describe('lanesFromEnv', () => {
    it('takes a positive integer and falls back to 2 for anything else', () => {
      expect(lanesFromEnv({ BUCKETOPERATOR_TEST_LANES: '3' })).to.equal(3);
      expect(lanesFromEnv({ BUCKETOPERATOR_TEST_LANES: '1' })).to.equal(1);
      for (const bad of [undefined, '', '0', '-1', '1.5', 'two']) expect(lanesFromEnv({ BUCKETOPERATOR_TEST_LANES: bad })).to.equal(2);
    });
  });
});
