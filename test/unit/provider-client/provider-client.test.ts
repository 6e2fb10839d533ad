import { expect } from 'chai';
import { ProviderError } from '../../../operator/provider-client/errors';
import { TokenBucket } from '../../../operator/provider-client/rate-limiter';
import { LIST_PAGE_LIMIT, ProviderClients } from '../../../operator/provider-client/client';
import type { ProviderHandle } from '../../../provider';
import { API_KEY, call, createBody, start } from '../provider/helpers';

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

describe('ProviderClient.listBuckets (against an in-process provider)', () => {
  let p: ProviderHandle;
  const clients = new ProviderClients({ qps: 1000, burst: 1000 });
  before(async () => {
    p = await start();
  });
  after(async () => {
    clients.close();
    await p.close();
  });

  it('follows continue tokens over pages of the largest size and ANDs the tag filter', async function () {
    this.timeout(20_000);
    const client = clients.client(p.url, API_KEY);
    const tags = { 'managed-by': 'bucketoperator', team: 'a' };
    // 1,001 matching buckets need exactly two pages of 1,000; others must not show up.
    for (let i = 0; i < LIST_PAGE_LIMIT + 1; i += 50) {
      const batch = Math.min(50, LIST_PAGE_LIMIT + 1 - i);
      await Promise.all(Array.from({ length: batch }, () => call(p.url, '/buckets', { method: 'POST', body: createBody({ tags }) })));
    }
    await call(p.url, '/buckets', { method: 'POST', body: createBody({ tags: { 'managed-by': 'bucketoperator', team: 'b' } }) });
    await call(p.url, '/buckets', { method: 'POST', body: createBody() });
    p.resetStats();

    const listed = await client.listBuckets({ tags });
    expect(listed).to.have.length(LIST_PAGE_LIMIT + 1);
    expect(new Set(listed.map((b) => b.id)).size).to.equal(listed.length);
    expect(listed.every((b) => b.tags['team'] === 'a')).to.equal(true);
    expect(p.stats().requests).to.deep.equal({ 'GET /buckets 200': 2 });
  });

  it('reports a rejected key as an auth error', async () => {
    const err = await clients
      .client(p.url, 'wrong')
      .listBuckets({})
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(err).to.be.instanceOf(ProviderError);
    expect((err as ProviderError).isAuthError).to.equal(true);
  });
});
