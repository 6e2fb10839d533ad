/**
 * The drift scan shared fairly between tenants (issue 32): an account whose endpoint never
 * answers is given up at its deadline on the scanner's clock, a tenant with several such
 * accounts holds no more than its share of the scan slots, and every other tenant's drift is
 * found and sent while the slow lists are still hanging.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { pino } from 'pino';
import type { BucketProviderConfig, StorageBucket } from '../../../operator/api/v1';
import { API_VERSION, CONFIG_IN_USE_FINALIZER } from '../../../operator/api/v1';
import { DriftReports } from '../../../operator/bucket/drift';
import { ScanStates } from '../../../operator/bucket/drift-scan-state';
import { defaultAccountDeadlineMs, DriftScanner, type ScanSummary } from '../../../operator/bucket/drift-scanner';
import { ProviderClients } from '../../../operator/provider-client';
import { IndexedCache } from '../../../operator/runtime/cache';
import { KeyChannel } from '../../../operator/runtime/controller';
import type { ObjectKey } from '../../../operator/runtime/types';
import { eventually, IN_PROCESS } from '../../support/eventually';
import { FakeClock } from '../../support/fake-clock';
import { bucket, credentialSecrets, credentialsSecret, readyStatus } from '../../support/fixtures';

const API_KEY = 'scan-key-0123456789';

/** An endpoint that lists nothing (every recorded bucket is then missing), or never answers. */
interface Endpoint {
  readonly url: string;
  /** Requests that reached it. */
  readonly arrived: () => number;
  /** Requests it holds unanswered right now (a never-answering endpoint). */
  readonly holding: () => number;
  readonly close: () => Promise<void>;
}

async function endpoint(kind: 'lists-nothing' | 'never-answers', onRequest: () => void = () => undefined): Promise<Endpoint> {
  let arrived = 0;
  const held = new Set<http.ServerResponse>();
  const server = http.createServer((_req, res) => {
    arrived++;
    onRequest();
    if (kind === 'lists-nothing') {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ items: [] }));
      return;
    }
    held.add(res);
    res.on('close', () => held.delete(res));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    arrived: () => arrived,
    holding: () => held.size,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** Settles `p` into what happened to it, so a test can look at a pending scan without awaiting it. */
function track<T>(p: Promise<T>): { readonly value: () => T | undefined; readonly settled: () => boolean } {
  let value: T | undefined;
  let settled = false;
  p.then(
    (v) => {
      value = v;
      settled = true;
    },
    () => (settled = true),
  );
  return { value: () => value, settled: () => settled };
}

describe('DriftScanner: fairness between tenants', () => {
  const clients = new ProviderClients({ qps: 1000, burst: 1000 });
  const open: Endpoint[] = [];
  after(() => clients.close());
  afterEach(async () => {
    for (const e of open.splice(0)) await e.close();
  });

  /**
   * A cache of configs and Ready buckets: each tenant's accounts (one config, one bucket each,
   * at `<url>/<n>`, so each is an account of its own), the slow tenant's first.
   */
  function world(tenants: Record<string, { url: string; accounts: number }>, opts: { concurrency?: number; intervalMs?: number }) {
    const clock = new FakeClock();
    const buckets = new IndexedCache<StorageBucket>();
    const configs = new IndexedCache<BucketProviderConfig>();
    for (const [ns, t] of Object.entries(tenants)) {
      for (let n = 0; n < t.accounts; n++) {
        const endpointUrl = `${t.url}/${n}`;
        configs.upsert({
          apiVersion: API_VERSION,
          kind: 'BucketProviderConfig',
          metadata: { name: `c${n}`, namespace: ns, finalizers: [CONFIG_IN_USE_FINALIZER] },
          spec: { endpoint: endpointUrl, secretRef: { name: 'key', key: 'apiKey' }, insecure: true },
        });
        buckets.upsert(
          bucket(`b${n}`, ns)
            .prepared(`key-${ns}-${n}`)
            .withSpec({ providerRef: { name: `c${n}` } })
            .withStatus(readyStatus(endpointUrl, { id: `${ns}-${n}` }))
            .build(),
        );
      }
    }
    const secrets = credentialSecrets(Object.keys(tenants).map((namespace) => credentialsSecret({ namespace, apiKey: API_KEY })));
    const sent: ObjectKey[] = [];
    const channel = new KeyChannel();
    channel.subscribe((k) => sent.push(k));
    const states = new ScanStates();
    const reports = new DriftReports();
    const scanner = new DriftScanner({
      buckets,
      configs,
      secrets,
      clients,
      clusterId: 'cluster-1',
      reports,
      channel,
      states,
      clock,
      logger: pino({ level: 'silent' }),
      ...opts,
    });
    return { clock, scanner, sent, states, reports };
  }

  const sentIn = (sent: readonly ObjectKey[], ns: string): string[] => sent.filter((k) => k.namespace === ns).map((k) => k.name);

  it('gives up an account that never answers at a quarter of the interval, and another tenant’s drift is sent meanwhile', async () => {
    const slow = await endpoint('never-answers');
    const fast = await endpoint('lists-nothing');
    open.push(slow, fast);
    const w = world({ slow: { url: slow.url, accounts: 1 }, fast: { url: fast.url, accounts: 1 } }, { intervalMs: 60_000 });
    const scan = track(w.scanner.scan());

    await eventually(() => sentIn(w.sent, 'fast').length === 1, { ...IN_PROCESS, description: "the fast tenant's missing bucket sent" });
    expect(w.reports.reported({ namespace: 'fast', name: 'b0' }), 'recorded for its reconcile').to.equal(true);
    expect(w.states.get('fast/c0'), "the fast tenant's config shows its scan at once").to.deep.equal({ ok: true });
    expect(slow.holding(), 'the slow list still hangs').to.equal(1);
    expect(scan.settled(), 'the pass is not over').to.equal(false);

    w.clock.advance(defaultAccountDeadlineMs(60_000));
    await eventually(() => scan.settled(), { ...IN_PROCESS, description: 'the scan to end at the deadline' });
    const summary = scan.value() as ScanSummary;
    expect({ accounts: summary.accounts, failedAccounts: summary.failedAccounts }).to.deep.equal({ accounts: 1, failedAccounts: 1 });
    expect(w.states.get('slow/c0')).to.deep.include({
      ok: false,
      reason: 'DeadlineExceeded',
      message: 'drift scan: listing the provider account took longer than 15000 ms',
    });
  });

  const deadlines: Record<string, { intervalMs: number; want: number }> = {
    'a quarter of the default 60 s interval': { intervalMs: 60_000, want: 15_000 },
    'at most 30 s for a long interval': { intervalMs: 600_000, want: 30_000 },
    'at least 1 s for a short interval': { intervalMs: 2_000, want: 1_000 },
  };
  for (const [name, tc] of Object.entries(deadlines)) {
    it(`default account deadline: ${name}`, () => {
      expect(defaultAccountDeadlineMs(tc.intervalMs)).to.equal(tc.want);
    });
  }

  it('a tenant with several slow accounts holds at most its share of the slots; the other tenant’s accounts all complete meanwhile', async () => {
    const slowHeldWhenFastArrived: number[] = [];
    const slow = await endpoint('never-answers');
    const fast = await endpoint('lists-nothing', () => slowHeldWhenFastArrived.push(slow.holding()));
    open.push(slow, fast);
    // Two slots; the slow tenant's three accounts come first in the cache.
    const w = world({ slow: { url: slow.url, accounts: 3 }, fast: { url: fast.url, accounts: 3 } }, { concurrency: 2, intervalMs: 60_000 });
    const scan = track(w.scanner.scan());

    await eventually(() => sentIn(w.sent, 'fast').length === 3, { ...IN_PROCESS, description: "the fast tenant's three accounts scanned" });
    expect(sentIn(w.sent, 'fast')).to.have.members(['b0', 'b1', 'b2']);
    expect(slowHeldWhenFastArrived, 'slow lists hanging as each fast list arrived: never both slots').to.deep.equal([1, 1, 1]);
    // With nobody else waiting, the slow tenant may use both slots.
    await eventually(() => slow.holding() === 2, { ...IN_PROCESS, description: 'the slow tenant to take the free slot' });

    const deadline = defaultAccountDeadlineMs(60_000);
    w.clock.advance(deadline);
    await eventually(() => slow.arrived() === 3, { ...IN_PROCESS, description: 'the third slow account to start' });
    w.clock.advance(deadline);
    await eventually(() => scan.settled(), { ...IN_PROCESS, description: 'the scan to end' });
    expect(scan.value()).to.deep.include({ accounts: 3, failedAccounts: 3 });
  });
});
