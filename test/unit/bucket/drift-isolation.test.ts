/**
 * Drift scans isolated per account: one tenant's provider answering something unusable (or too
 * slowly) stops only that account's scan, which shows on its config (state, Event, metric),
 * while another tenant's drift is still found in the same pass.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import type { BucketProviderConfig, StorageBucket } from '../../../operator/api/v1';
import { API_VERSION, CONFIG_IN_USE_FINALIZER } from '../../../operator/api/v1';
import { DriftReports } from '../../../operator/bucket/drift';
import { ScanStates, type ScanFailureReason } from '../../../operator/bucket/drift-scan-state';
import { DriftScanner } from '../../../operator/bucket/drift-scanner';
import { operatorTags } from '../../../operator/bucket/tags';
import { ProviderClients } from '../../../operator/provider-client';
import { IndexedCache } from '../../../operator/runtime/cache';
import { KeyChannel } from '../../../operator/runtime/controller';
import type { KubeObject, ObjectKey } from '../../../operator/runtime/types';
import type { ProviderHandle } from '../../../provider';
import { bucket, credentialSecrets, credentialsSecret, readyStatus } from '../../support/fixtures';
import { API_KEY, call, createBody, start } from '../provider/helpers';

/** The cluster identity the scan runs with (the fixtures' DEFAULT_TAGS carry it). */
const CLUSTER = 'cluster-1';

/** How the broken tenant's endpoint answers `GET /buckets`. */
type Answer = (res: http.ServerResponse, req: http.IncomingMessage) => void;

const answers: Record<string, { answer: Answer; reason: ScanFailureReason }> = {
  '200 {} (no items)': { answer: (res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'), reason: 'UnusableAnswer' },
  'not JSON': { answer: (res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<html>maintenance</html>'), reason: 'UnusableAnswer' },
  'a continue token that repeats forever': {
    answer: (res) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ items: [], continue: 'again' })),
    reason: 'UnusableAnswer',
  },
  'items that are not buckets': {
    answer: (res) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ items: [1, 2] })),
    reason: 'UnusableAnswer',
  },
  '500': {
    answer: (res) => res.writeHead(500, { 'content-type': 'application/json' }).end('{"code":"Internal","message":"boom"}'),
    reason: 'ProviderError',
  },
  'a body dripped slower than the deadline': {
    answer: (res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"items":[');
      const t = setInterval(() => res.write(' '), 50);
      res.on('close', () => clearInterval(t));
    },
    reason: 'DeadlineExceeded',
  },
};

describe('DriftScanner: accounts are scanned in isolation', () => {
  let good: ProviderHandle;
  let bad: http.Server;
  let badUrl = '';
  let answer: Answer = (res) => res.end();
  const clients = new ProviderClients({ qps: 1000, burst: 1000 });

  before(async () => {
    good = await start({ activationDelayMs: 0 });
    bad = http.createServer((req, res) => answer(res, req));
    await new Promise<void>((r) => bad.listen(0, '127.0.0.1', r));
    badUrl = `http://127.0.0.1:${(bad.address() as AddressInfo).port}`;
  });
  after(async () => {
    clients.close();
    bad.closeAllConnections();
    await new Promise((r) => bad.close(r));
    await good.close();
  });

  const config = (ns: string, endpoint: string): BucketProviderConfig => ({
    apiVersion: API_VERSION,
    kind: 'BucketProviderConfig',
    metadata: { name: 'default', namespace: ns, finalizers: [CONFIG_IN_USE_FINALIZER] },
    spec: { endpoint, secretRef: { name: 'key', key: 'apiKey' }, insecure: true },
  });

  function world() {
    const buckets = new IndexedCache<StorageBucket>();
    const configs = new IndexedCache<BucketProviderConfig>();
    configs.upsert(config('good', good.url));
    configs.upsert(config('bad', badUrl));
    const secrets = credentialSecrets(['good', 'bad'].map((namespace) => credentialsSecret({ namespace, apiKey: API_KEY })));
    const sent: ObjectKey[] = [];
    const configsSent: ObjectKey[] = [];
    const events: string[] = [];
    const channel = new KeyChannel();
    channel.subscribe((k) => sent.push(k));
    const configChannel = new KeyChannel();
    configChannel.subscribe((k) => configsSent.push(k));
    const states = new ScanStates();
    const registry = new Registry();
    const scanner = new DriftScanner({
      buckets,
      configs,
      secrets,
      clients,
      clusterId: CLUSTER,
      reports: new DriftReports(),
      channel,
      configChannel,
      states,
      registry,
      events: { event: (o: KubeObject, type, reason, _a, note) => events.push(`${o.metadata?.namespace}: ${type} ${reason}: ${note}`) },
      accountDeadlineMs: 400,
      logger: pino({ level: 'silent' }),
    });
    return { buckets, sent, configsSent, events, states, registry, scanner };
  }

  /** A Ready bucket in `ns` recording a provider bucket made at the good provider. */
  async function readyAtGood(ns: string, name: string): Promise<StorageBucket> {
    const obj = bucket(name, ns).prepared(`key-${ns}-${name}`).build();
    const res = await call(good.url, '/buckets', { method: 'POST', body: createBody({ tags: operatorTags(obj, CLUSTER) }) });
    const made = res.body as { id: string; endpoint: string; account: string };
    return bucket(name, ns)
      .prepared(`key-${ns}-${name}`)
      .withStatus(readyStatus(good.url, { id: made.id, endpoint: made.endpoint, idempotencyKey: `key-${ns}-${name}`, account: made.account }))
      .build();
  }

  /** A Ready bucket in the broken tenant, recorded at its endpoint. */
  const readyAtBad = (name: string): StorageBucket =>
    bucket(name, 'bad')
      .prepared(`key-bad-${name}`)
      .withStatus(readyStatus(badUrl, { id: `bad-${name}` }))
      .build();

  for (const [name, { answer: a, reason }] of Object.entries(answers)) {
    it(`an account answering ${name} fails alone (${reason}); the other account's drift is still found`, async () => {
      answer = a;
      const w = world();
      const drifted = await readyAtGood('good', 'drifted');
      good.store.adminPatch(drifted.status?.id ?? '', { sizeGB: 2 });
      w.buckets.upsert(drifted);
      w.buckets.upsert(readyAtBad('b1'));

      const summary = await w.scanner.scan();

      expect(summary.failedAccounts).to.equal(1);
      expect(w.sent.map((k) => `${k.namespace}/${k.name}`)).to.deep.equal(['good/drifted']);
      expect(w.states.get('good/default')).to.deep.equal({ ok: true });
      expect(w.states.get('bad/default')).to.include({ ok: false, reason });
      expect(w.configsSent.map((k) => `${k.namespace}/${k.name}`)).to.have.members(['good/default', 'bad/default']);
      expect(w.events.filter((e) => e.startsWith('bad: Warning DriftScanFailed'))).to.have.length(1);
      const metrics = await w.registry.getSingleMetricAsString('bucketoperator_drift_scan_failures_total');
      expect(metrics).to.include(`bucketoperator_drift_scan_failures_total{reason="${reason}"} 1`);
    });
  }

  it('reports a failing account once, and its recovery once', async () => {
    answer = answers['200 {} (no items)']!.answer;
    const w = world();
    w.buckets.upsert(readyAtBad('b1'));
    await w.scanner.scan();
    await w.scanner.scan();
    expect(w.events).to.deep.equal([`bad: Warning DriftScanFailed: ${(w.states.get('bad/default') as { message: string }).message}`]);
    expect(w.configsSent).to.have.length(1);

    answer = (res) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ items: [] }));
    await w.scanner.scan();
    expect(w.states.get('bad/default')).to.deep.equal({ ok: true });
    expect(w.events.slice(1)).to.deep.equal(['bad: Normal DriftScanRecovered: drift scan of the provider account succeeded again']);
    expect(w.configsSent).to.have.length(2);
  });

  it('no message carries the API key', async () => {
    answer = answers['500']!.answer;
    const w = world();
    w.buckets.upsert(readyAtBad('b1'));
    await w.scanner.scan();
    expect(JSON.stringify([w.events, w.states.get('bad/default')])).not.to.include(API_KEY);
  });
});
