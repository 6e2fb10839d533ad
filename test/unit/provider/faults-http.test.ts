import { expect } from 'chai';
import type { Bucket, FaultSettings, ProviderHandle } from '../../../provider';
import { ADMIN_TOKEN, call, create, start } from './helpers';

describe('provider fault injection over HTTP', () => {
  let p: ProviderHandle;
  beforeEach(async () => {
    p = await start();
  });
  afterEach(async () => {
    await p.close();
  });

  const single: Record<string, { faults: FaultSettings; status: number; code: string; retryAfter?: string }> = {
    outage: { faults: { outage: true }, status: 503, code: 'ServiceUnavailable' },
    'errorRate 1 with 500': { faults: { errorRate: 1, errorStatus: 500 }, status: 500, code: 'InternalError' },
    'errorRate 1 with default 503': { faults: { errorRate: 1 }, status: 503, code: 'ServiceUnavailable' },
    'throttleRate 1': { faults: { throttleRate: 1, retryAfterSeconds: 3 }, status: 429, code: 'Throttled', retryAfter: '3' },
    'failNext 502': { faults: { failNext: { status: 502, count: 1 } }, status: 502, code: 'ServiceUnavailable' },
  };
  for (const [name, tc] of Object.entries(single)) {
    it(`${name} -> ${tc.status} on every /buckets route`, async () => {
      p.faults.set(tc.faults);
      const requests = [
        call(p.url, '/buckets'),
        create(p.url, 'k'),
        call(p.url, '/buckets/bucket-000000000000'),
        call(p.url, '/buckets/bucket-000000000000', { method: 'PATCH', body: {} }),
        call(p.url, '/buckets/bucket-000000000000', { method: 'DELETE' }),
      ];
      // failNext counts one request; the rest go through.
      const results = await Promise.all(requests);
      const failed = results.filter((r) => r.status === tc.status);
      expect(failed.length).to.equal('failNext' in tc.faults ? 1 : requests.length);
      for (const res of failed) {
        expect(res.body).to.deep.include({ code: tc.code });
        expect(res.headers['retry-after']).to.equal(tc.retryAfter);
      }
      if (!('failNext' in tc.faults)) expect(p.store.count()).to.equal(0);
    });
  }

  it('leaves /healthz, /admin and unauthenticated requests alone', async () => {
    p.faults.set({ outage: true, latencyMs: 0 });
    expect((await call(p.url, '/healthz')).status).to.equal(200);
    expect((await call(p.url, '/admin/faults', { auth: `Bearer ${ADMIN_TOKEN}` })).status).to.equal(200);
    expect((await call(p.url, '/buckets', { auth: null })).status).to.equal(401);
    p.faults.set({ failNext: { status: 503, count: 1 } });
    expect((await call(p.url, '/buckets', { auth: 'Bearer wrong' })).status).to.equal(403);
    expect(p.faults.get().failNext?.count).to.equal(1);
  });

  it('fails exactly failNext.count requests, then recovers', async () => {
    p.faults.set({ failNext: { status: 503, count: 3 } });
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) statuses.push((await call(p.url, '/buckets')).status);
    expect(statuses).to.deep.equal([503, 503, 503, 200, 200]);
  });

  it('gives the same answers for the same seed', async () => {
    const run = async (): Promise<number[]> => {
      p.faults.set({ errorRate: 0.3, throttleRate: 0.2, seed: 1234 });
      const out: number[] = [];
      for (let i = 0; i < 30; i++) out.push((await call(p.url, '/buckets')).status);
      return out;
    };
    const first = await run();
    expect(await run()).to.deep.equal(first);
    expect(first).to.include.members([200, 429, 503]);
  });

  it('adds latencyMs before answering', async () => {
    p.faults.set({ latencyMs: 60 });
    const started = performance.now();
    const res = await call(p.url, '/buckets');
    expect(res.status).to.equal(200);
    // A lower bound only: a sleep never ends early, a loaded machine may add any amount.
    expect(performance.now() - started).to.be.at.least(55);
  });

  it('applies faults given at start', async () => {
    const faulty = await start({ faults: { failNext: { status: 429, count: 1 } } });
    try {
      expect((await call(faulty.url, '/buckets')).status).to.equal(429);
      expect((await call(faulty.url, '/buckets')).status).to.equal(200);
    } finally {
      await faulty.close();
    }
  });

  describe('dropAfterCommitOnCreate', () => {
    it('commits the bucket, cuts the connection, and a retry with the same key returns it', async () => {
      p.faults.set({ dropAfterCommitOnCreate: { count: 1 } });
      let error: unknown;
      try {
        await create(p.url, 'crash-window');
      } catch (err) {
        error = err;
      }
      expect(error).to.be.instanceOf(Error);
      expect((error as NodeJS.ErrnoException).code).to.equal('ECONNRESET');
      expect(p.store.count()).to.equal(1);
      const [committed] = p.store.list();

      const retry = await create(p.url, 'crash-window');
      expect(retry.status).to.equal(200);
      expect(retry.headers['idempotent-replayed']).to.equal('true');
      expect((retry.body as Bucket).id).to.equal(committed?.id);
      expect(p.store.count()).to.equal(1);
      expect(p.stats().requests).to.include({ 'POST /buckets dropped': 1, 'POST /buckets 200': 1 });
    });

    it('with rate 1 drops every new create but never a replay', async () => {
      p.faults.set({ dropAfterCommitOnCreate: 1 });
      for (const key of ['a', 'b']) {
        let dropped = false;
        await create(p.url, key).catch(() => {
          dropped = true;
        });
        expect(dropped, key).to.equal(true);
        expect((await create(p.url, key)).status).to.equal(200);
      }
      expect(p.store.count()).to.equal(2);
    });
  });
});
