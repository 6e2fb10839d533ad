/**
 * The provider rate limit is per account (endpoint origin plus API key): tenants sharing a
 * provider with their own keys do not spend each other's tokens; a rotated key is a new
 * account; idle accounts are forgotten with their metric series; the key is never a label.
 */
import { expect } from 'chai';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Registry } from 'prom-client';
import { BucketMetric } from '../../../operator/api/metric-names';
import { ProviderClients, providerAccount } from '../../../operator/provider-client/client';
import { TokenBucket } from '../../../operator/provider-client/rate-limiter';

/** A sleep that only ends when the test says so (or its signal aborts), with the ms asked. */
function manualSleep(): { sleep: (ms: number, signal?: AbortSignal) => Promise<void>; pending: Array<{ ms: number; wake: () => void }> } {
  const pending: Array<{ ms: number; wake: () => void }> = [];
  return {
    pending,
    sleep: (ms, signal) =>
      new Promise<void>((resolve, reject) => {
        signal?.addEventListener('abort', () => reject(signal.reason), { once: true });
        pending.push({ ms, wake: resolve });
      }),
  };
}

async function metricValues(registry: Registry, name: string): Promise<Array<{ labels: Record<string, string | number>; value: number }>> {
  const metric = (await registry.getMetricsAsJSON()).find((m) => m.name === name);
  return (metric?.values ?? []).map((v) => ({ labels: { ...v.labels } as Record<string, string | number>, value: v.value }));
}

describe('providerAccount', () => {
  const key = 'key-one-0123456789';
  const cases: Record<string, { args: { a: [string, string]; b: [string, string] }; want: { same: boolean } }> = {
    'the same origin and key, whatever the path or trailing slash': {
      args: { a: ['https://p.example', key], b: ['https://p.example/api/v1/', key] },
      want: { same: true },
    },
    'a rotated key is a new account': {
      args: { a: ['https://p.example', key], b: ['https://p.example', 'key-two-0123456789'] },
      want: { same: false },
    },
    'the same key at another origin is another account': {
      args: { a: ['https://p.example', key], b: ['https://p.example:8443', key] },
      want: { same: false },
    },
    'another scheme is another origin': { args: { a: ['https://p.example', key], b: ['http://p.example', key] }, want: { same: false } },
  };
  for (const [name, tc] of Object.entries(cases)) {
    it(name, () => {
      const a = providerAccount(...tc.args.a);
      const b = providerAccount(...tc.args.b);
      expect(a.id === b.id).to.equal(tc.want.same);
      expect(a.label === b.label).to.equal(tc.want.same);
    });
  }

  it('names the account by a digest that does not contain the key', () => {
    const a = providerAccount('https://p.example', key);
    expect(a.id).to.match(/^[0-9a-f]{64}$/);
    expect(a.label).to.equal(a.id.slice(0, 12));
    expect(a.id).to.not.include(key);
  });
});

describe('ProviderClients: one rate limiter per account', () => {
  let server: Server;
  let url = '';
  before(async () => {
    server = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ id: 'b-1', region: 'r', sizeGB: 1, encrypted: false, phase: 'Active', endpoint: 'e', tags: {} }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it('two accounts on one endpoint do not share tokens: one waiting does not hold up the other', async () => {
    const { sleep, pending } = manualSleep();
    const clients = new ProviderClients({ qps: 1, burst: 1, sleep, now: () => 0 });
    try {
      const noisy = clients.client(url, 'noisy-key-0123456789');
      const quiet = clients.client(url, 'quiet-key-0123456789');
      await noisy.getBucket('b-1');
      let noisySecondDone = false;
      const noisySecond = noisy.getBucket('b-1').then(() => (noisySecondDone = true));
      // The noisy account's bucket is empty; the quiet account has its own, full one.
      expect((await quiet.getBucket('b-1'))?.id).to.equal('b-1');
      expect(noisySecondDone, 'the quiet call was served while the noisy one still waits for its token').to.equal(false);
      expect(pending.map((p) => p.ms)).to.deep.equal([1000]);
      pending[0]?.wake();
      await noisySecond;
    } finally {
      clients.close();
    }
  });

  it('a rotated key gets a fresh limiter: the old key having spent its burst does not throttle the new one', async () => {
    const { sleep, pending } = manualSleep();
    const registry = new Registry();
    const clients = new ProviderClients({ qps: 1, burst: 2, sleep, registry, now: () => 0 });
    try {
      const before = clients.client(url, 'old-key-0123456789');
      await before.getBucket('b-1');
      await before.getBucket('b-1');
      const after = clients.client(url, 'new-key-0123456789');
      await after.getBucket('b-1');
      await after.getBucket('b-1');
      expect(pending, 'nobody had to wait').to.have.length(0);
      const calls = await metricValues(registry, BucketMetric.providerCalls);
      expect(calls).to.have.deep.members([
        { labels: { account: providerAccount(url, 'old-key-0123456789').label, code_class: '2xx' }, value: 2 },
        { labels: { account: providerAccount(url, 'new-key-0123456789').label, code_class: '2xx' }, value: 2 },
      ]);
      expect(await registry.metrics(), 'no key in any metric').to.not.match(/old-key|new-key/);
    } finally {
      clients.close();
    }
  });

  it('counts the time waited for the limiter by account', async () => {
    const { sleep, pending } = manualSleep();
    const registry = new Registry();
    const clients = new ProviderClients({ qps: 2, burst: 1, sleep, registry, now: () => 0 });
    try {
      const client = clients.client(url, 'key-0123456789');
      await client.getBucket('b-1');
      const second = client.getBucket('b-1');
      await new Promise((resolve) => setImmediate(resolve));
      pending[0]?.wake();
      await second;
      expect(await metricValues(registry, BucketMetric.providerRateLimitWait)).to.deep.equal([
        { labels: { account: providerAccount(url, 'key-0123456789').label }, value: 0.5 },
      ]);
    } finally {
      clients.close();
    }
  });

  it('forgets an idle account and its series, so memory and series follow the accounts in use', async () => {
    let now = 1_000_000;
    const registry = new Registry();
    const clients = new ProviderClients({ qps: 10, burst: 10, registry, now: () => now, accountIdleMs: 60_000 });
    try {
      await clients.client(url, 'tenant-a-0123456789').getBucket('b-1');
      await clients.client(url, 'tenant-b-0123456789').getBucket('b-1');
      expect(clients.accountCount()).to.equal(2);
      now += 30_000;
      await clients.client(url, 'tenant-b-0123456789').getBucket('b-1');
      now += 40_000;
      // a idle for 70 s (dropped); b for 40 s (kept).
      await clients.client(url, 'tenant-c-0123456789').getBucket('b-1');
      expect(clients.accountCount()).to.equal(2);
      const labels = (await metricValues(registry, BucketMetric.providerCalls)).map((v) => v.labels['account']);
      expect(labels).to.have.members([providerAccount(url, 'tenant-b-0123456789').label, providerAccount(url, 'tenant-c-0123456789').label]);
    } finally {
      clients.close();
    }
  });
});

describe('TokenBucket reservations', () => {
  it('an abort while waiting rejects at once with the reason and gives the token back', async () => {
    let now = 0;
    const { sleep, pending } = manualSleep();
    const tb = new TokenBucket({ qps: 1, burst: 1, now: () => now, sleep });
    expect(await tb.take()).to.equal(0);
    const ac = new AbortController();
    const waiting = tb.take(ac.signal);
    expect(tb.waiting).to.equal(1);
    const reason = new Error('stopped');
    ac.abort(reason);
    expect(
      await waiting.then(
        () => undefined,
        (e: unknown) => e,
      ),
    ).to.equal(reason);
    expect(tb.waiting).to.equal(0);
    now += 1000;
    expect(tb.tryTake(), 'the refilled token is there: the aborted reservation returned its own').to.equal(0);
    expect(pending.map((p) => p.ms)).to.deep.equal([1000]);
  });

  it('reserves in arrival order: the n-th waiter sleeps n tokens long', async () => {
    const { sleep, pending } = manualSleep();
    const tb = new TokenBucket({ qps: 10, burst: 1, now: () => 0, sleep });
    await tb.take();
    const waits = [tb.take(), tb.take(), tb.take()];
    expect(pending.map((p) => p.ms)).to.deep.equal([100, 200, 300]);
    for (const p of pending) p.wake();
    expect(await Promise.all(waits)).to.deep.equal([100, 200, 300]);
  });

  it('is idle only when full and nobody waits', async () => {
    let now = 0;
    const { sleep, pending } = manualSleep();
    const tb = new TokenBucket({ qps: 1, burst: 2, now: () => now, sleep });
    expect(tb.isIdle()).to.equal(true);
    await tb.take();
    expect(tb.isIdle()).to.equal(false);
    now += 1000;
    expect(tb.isIdle()).to.equal(true);
    await tb.take();
    await tb.take();
    const third = tb.take();
    now += 10_000;
    expect(tb.isIdle(), 'a waiter is not forgotten').to.equal(false);
    pending[0]?.wake();
    await third;
    expect(tb.isIdle()).to.equal(true);
  });
});
