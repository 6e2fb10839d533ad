import { expect } from 'chai';
import { histogramQuantile, quantile, readyStatus } from '../../../bench/conversion';
import { StorageBucketStatus, validate } from '../../../operator/api/v1';

describe('bench: the conversion figures', () => {
  it('takes quantiles by nearest rank, whatever the order of the samples', () => {
    const xs = Array.from({ length: 100 }, (_, i) => 100 - i); // 100..1
    expect(quantile(xs, 0.5)).to.equal(50);
    expect(quantile(xs, 0.99)).to.equal(99);
    expect(quantile(xs, 1)).to.equal(100);
    expect(quantile([7], 0.99)).to.equal(7);
    expect(Number.isNaN(quantile([], 0.5))).to.equal(true);
  });

  it('reads a quantile out of a Prometheus histogram as histogram_quantile does', () => {
    // 10 observations <= 1 ms, 90 more <= 2.5 ms, none above.
    const b = [
      { le: 0.0005, count: 0 },
      { le: 0.001, count: 10 },
      { le: 0.0025, count: 100 },
      { le: Infinity, count: 100 },
    ];
    expect(histogramQuantile(b, 0.1)).to.be.closeTo(0.001, 1e-12);
    // The 50th of 100 lies 40/90 into the (1 ms, 2.5 ms] bucket.
    expect(histogramQuantile(b, 0.5)).to.be.closeTo(0.001 + (0.0015 * 40) / 90, 1e-12);
    expect(histogramQuantile([...b].reverse(), 0.99)).to.be.closeTo(0.001 + (0.0015 * 89) / 90, 1e-12);
    // Beyond the last finite bound the answer is that bound, not infinity.
    expect(
      histogramQuantile(
        [
          { le: 0.001, count: 1 },
          { le: Infinity, count: 10 },
        ],
        0.99,
      ),
    ).to.equal(0.001);
    expect(Number.isNaN(histogramQuantile([{ le: Infinity, count: 0 }], 0.5))).to.equal(true);
  });

  it('stores objects whose status the v1 schema accepts', () => {
    for (const i of [0, 1, 59, 9999]) expect(validate(StorageBucketStatus, readyStatus(i, 1))).to.deep.equal([]);
    expect(validate(StorageBucketStatus, { ...readyStatus(1, 1), phase: 'Sideways' })).to.not.deep.equal([]);
  });
});
