import { expect } from 'chai';
import { ProviderError } from '../../../operator/provider-client/errors';
import { TokenBucket } from '../../../operator/provider-client/rate-limiter';

describe('ProviderError', () => {
  const cases: Record<string, [number, boolean]> = {
    'no response (timeout, reset)': [0, true],
    '408 request timeout': [408, true],
    '429 throttled': [429, true],
    '500': [500, true],
    '503': [503, true],
    '400 malformed': [400, false],
    '401 unauthenticated': [401, false],
    '403 forbidden': [403, false],
    '404 not found': [404, false],
    '409 conflict': [409, false],
    '422 validation': [422, false],
  };
  for (const [name, [status, retryable]] of Object.entries(cases)) {
    it(`${name} is ${retryable ? '' : 'not '}retryable`, () => {
      expect(new ProviderError('x', { status, code: 'C' }).retryable).to.equal(retryable);
    });
  }

  it('flags auth errors and not-found', () => {
    expect(new ProviderError('x', { status: 401, code: 'Unauthorized' }).isAuthError).to.equal(true);
    expect(new ProviderError('x', { status: 403, code: 'Forbidden' }).isAuthError).to.equal(true);
    expect(new ProviderError('x', { status: 404, code: 'NotFound' }).isNotFound).to.equal(true);
  });
});

describe('TokenBucket', () => {
  it('serves a burst at once, then one token per 1/qps seconds', () => {
    let now = 0;
    const tb = new TokenBucket({ qps: 10, burst: 3, now: () => now });
    expect([tb.tryTake(), tb.tryTake(), tb.tryTake()]).to.deep.equal([0, 0, 0]);
    expect(tb.tryTake()).to.equal(100);
    now += 100;
    expect(tb.tryTake()).to.equal(0);
    expect(tb.tryTake()).to.equal(100);
  });

  it('never holds more than its burst, however long it idles', () => {
    let now = 0;
    const tb = new TokenBucket({ qps: 10, burst: 2, now: () => now });
    now += 60_000;
    expect([tb.tryTake(), tb.tryTake()]).to.deep.equal([0, 0]);
    expect(tb.tryTake()).to.be.greaterThan(0);
  });

  it('refuses nonsense settings with a message naming them', () => {
    expect(() => new TokenBucket({ qps: 0, burst: 1 })).to.throw(/qps=0/);
    expect(() => new TokenBucket({ qps: 1, burst: 0 })).to.throw(/burst=0/);
  });

  it('take() waits in order and honours an aborted signal', async () => {
    const tb = new TokenBucket({ qps: 1000, burst: 1 });
    const order: number[] = [];
    await Promise.all([1, 2, 3].map((i) => tb.take().then(() => order.push(i))));
    expect(order).to.deep.equal([1, 2, 3]);
    const aborted = AbortSignal.abort();
    let failed = false;
    await tb.take(aborted).catch(() => (failed = true));
    expect(failed).to.equal(true);
  });
});
