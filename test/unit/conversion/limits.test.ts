/**
 * The conversion webhook's limits as pure bookkeeping: the defaults and their checks, and the
 * seats of reviews in flight by count and by bytes. Over a real socket: server-limits.test.ts.
 */
import { expect } from 'chai';
import { conversionLimits, DEFAULT_CONVERSION_LIMITS, InFlightReviews } from '../../../operator/conversion/limits';

const MiB = 1024 * 1024;

describe('conversion webhook limits', () => {
  it("caps a review's body at controller-runtime's 7 MiB, not the 32 MiB it once read", () => {
    expect(DEFAULT_CONVERSION_LIMITS.maxBodyBytes).to.equal(7 * MiB);
    expect(conversionLimits()).to.deep.equal(DEFAULT_CONVERSION_LIMITS);
    expect(conversionLimits({ maxInFlight: 3 }).maxInFlight).to.equal(3);
  });

  const refused: Record<string, { overrides: Parameters<typeof conversionLimits>[0]; want: RegExp }> = {
    'zero reviews in flight': { overrides: { maxInFlight: 0 }, want: /limits\.maxInFlight must be a positive integer, got 0/ },
    'a fractional cap': { overrides: { maxBodyBytes: 1.5 }, want: /limits\.maxBodyBytes must be a positive integer/ },
    'a byte budget below one body': {
      overrides: { maxBodyBytes: 2000, maxInFlightBytes: 1000 },
      want: /maxInFlightBytes \(1000\) must hold at least one body/,
    },
    'a header deadline past the request deadline': {
      overrides: { headersTimeoutMs: 5000, requestTimeoutMs: 1000 },
      want: /headersTimeoutMs \(5000\) must not exceed limits\.requestTimeoutMs/,
    },
  };
  for (const [name, { overrides, want }] of Object.entries(refused)) {
    it(`refuses ${name}, naming the field`, () => expect(() => conversionLimits(overrides)).to.throw(want));
  }

  describe('reviews in flight', () => {
    it('refuses one more than the count, and takes one again once a seat is given back', () => {
      const inFlight = new InFlightReviews({ maxInFlight: 2, maxInFlightBytes: 100 * MiB });
      const first = inFlight.tryAcquire(10);
      const second = inFlight.tryAcquire(10);
      expect(first).to.be.a('function');
      expect(second).to.be.a('function');
      expect(inFlight.tryAcquire(10)).to.equal(undefined);
      first!();
      first!(); // a second release gives nothing back twice
      expect(inFlight.size).to.equal(1);
      expect(inFlight.tryAcquire(10)).to.be.a('function');
      expect(inFlight.tryAcquire(10)).to.equal(undefined);
    });

    it('refuses a review whose bytes do not fit beside those in flight, and admits a smaller one that does', () => {
      const inFlight = new InFlightReviews({ maxInFlight: 16, maxInFlightBytes: 1500 });
      const big = inFlight.tryAcquire(1000);
      expect(inFlight.tryAcquire(600), '1000 + 600 > 1500').to.equal(undefined);
      expect(inFlight.tryAcquire(500), '1000 + 500 fits').to.be.a('function');
      expect(inFlight.tryAcquire(1)).to.equal(undefined);
      big!();
      expect(inFlight.tryAcquire(900)).to.be.a('function');
    });

    it('always admits a review alone, whatever its size', () => {
      const inFlight = new InFlightReviews({ maxInFlight: 4, maxInFlightBytes: 10 });
      expect(inFlight.tryAcquire(1000)).to.be.a('function');
      expect(inFlight.tryAcquire(1)).to.equal(undefined);
    });
  });
});
