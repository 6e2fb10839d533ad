import { expect } from 'chai';
import { pino } from 'pino';
import type { BucketProviderConfig, StorageBucket } from '../../../operator/api/v1';
import { API_VERSION, CONFIG_IN_USE_FINALIZER } from '../../../operator/api/v1';
import { DriftReports } from '../../../operator/bucket/drift';
import { DriftScanner } from '../../../operator/bucket/drift-scanner';
import { operatorTags } from '../../../operator/bucket/tags';
import { ProviderClients } from '../../../operator/provider-client';
import { IndexedCache } from '../../../operator/runtime/cache';
import { KeyChannel } from '../../../operator/runtime/controller';
import type { ObjectKey } from '../../../operator/runtime/types';
import type { ProviderHandle } from '../../../provider';
import { bucket, credentialSecrets, credentialsSecret, readyStatus } from '../../support/fixtures';
import { API_KEY, call, createBody, start } from '../provider/helpers';

/** The cluster identity the scan runs with (the fixtures' DEFAULT_TAGS carry it). */
const CLUSTER = 'cluster-1';

/** The scanner against an in-process provider, with caches filled by hand. */
describe('DriftScanner', () => {
  let p: ProviderHandle;
  const clients = new ProviderClients({ qps: 1000, burst: 1000 });
  before(async () => {
    p = await start({ activationDelayMs: 0 });
  });
  after(async () => {
    clients.close();
    await p.close();
  });

  function world(apiKey: string) {
    const buckets = new IndexedCache<StorageBucket>();
    const configs = new IndexedCache<BucketProviderConfig>();
    configs.upsert({
      apiVersion: API_VERSION,
      kind: 'BucketProviderConfig',
      metadata: { name: 'default', namespace: 'ns1', finalizers: [CONFIG_IN_USE_FINALIZER] },
      spec: { endpoint: p.url, secretRef: { name: 'key', key: 'apiKey' }, insecure: true },
    });
    const secrets = credentialSecrets([credentialsSecret({ apiKey })]);
    const sent: ObjectKey[] = [];
    const channel = new KeyChannel();
    channel.subscribe((k) => sent.push(k));
    const reports = new DriftReports();
    const scanner = new DriftScanner({ buckets, configs, secrets, clients, clusterId: CLUSTER, reports, channel, logger: pino({ level: 'silent' }) });
    return { buckets, sent, reports, scanner };
  }

  /** A provider bucket made as the operator makes them, and the Ready object recording it. */
  async function readyPair(name: string): Promise<StorageBucket> {
    const obj = bucket(name).prepared(`key-${name}`).build();
    const res = await call(p.url, '/buckets', { method: 'POST', body: createBody({ tags: operatorTags(obj, CLUSTER) }) });
    const made = res.body as { id: string; endpoint: string; account: string };
    return bucket(name)
      .prepared(`key-${name}`)
      .withStatus(readyStatus(p.url, { id: made.id, endpoint: made.endpoint, idempotencyKey: `key-${name}`, account: made.account }))
      .build();
  }

  it('lists once, sends and records only the buckets that differ', async () => {
    const w = world(API_KEY);
    const [fine, shrunk, gone] = await Promise.all([readyPair('fine'), readyPair('shrunk'), readyPair('gone')]);
    for (const b of [fine, shrunk, gone]) w.buckets.upsert(b);
    p.store.adminPatch(shrunk.status!.id!, { sizeGB: 2 });
    p.store.adminDelete(gone.status!.id!);
    p.resetStats();

    const summary = await w.scanner.scan();
    expect(p.stats().requests).to.deep.equal({ 'GET /buckets 200': 1 });
    expect(summary.findings.map((f) => [f.key.name, f.reason])).to.have.deep.members([
      ['shrunk', 'drifted'],
      ['gone', 'missing'],
    ]);
    expect(w.sent.map((k) => k.name)).to.have.members(['shrunk', 'gone']);
    expect(w.reports.reported({ namespace: 'ns1', name: 'fine' })).to.equal(false);
    expect(w.reports.reported({ namespace: 'ns1', name: 'gone' })).to.equal(true);
  });

  it('sends every bucket of an account whose credentials are rejected, so each reports it', async () => {
    const w = world('not-a-key');
    w.buckets.upsert(await readyPair('locked'));
    const summary = await w.scanner.scan();
    expect(summary.failedAccounts).to.equal(1);
    expect(w.sent.map((k) => k.name)).to.deep.equal(['locked']);
  });

  it('keeps the previous findings when the provider is unavailable', async () => {
    const w = world(API_KEY);
    const b = await readyPair('flaky');
    w.buckets.upsert(b);
    p.store.adminDelete(b.status!.id!);
    await w.scanner.scan();
    p.faults.set({ outage: true });
    try {
      const summary = await w.scanner.scan();
      expect(summary.failedAccounts).to.equal(1);
      expect(w.reports.reported({ namespace: 'ns1', name: 'flaky' })).to.equal(true);
    } finally {
      p.faults.clear();
    }
  });
});
