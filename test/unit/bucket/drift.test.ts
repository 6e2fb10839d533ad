import { expect } from 'chai';
import type { StorageBucket } from '../../../operator/api/v1';
import { compare, DriftReports, type DriftReason } from '../../../operator/bucket/drift';
import type { ProviderBucket } from '../../../operator/provider-client';
import { bucket, providerBucket, readyStatus, KEY1 } from '../../support/fixtures';

/** The cluster identity the scan runs with (the fixtures' DEFAULT_TAGS carry it). */
const CLUSTER = 'cluster-1';

const ENDPOINT = 'http://provider.example';
const ready = () => bucket().prepared(KEY1).withStatus(readyStatus(ENDPOINT));
const listed = providerBucket();

const cases: Record<string, { cached: StorageBucket[]; listed: ProviderBucket[]; want: Array<[string, DriftReason]> }> = {
  'listed as recorded: nothing to do': { cached: [ready().build()], listed: [listed], want: [] },
  'deleted at the provider (or lost the managed-by tag): missing': { cached: [ready().build()], listed: [], want: [['b1', 'missing']] },
  'tagged before the cluster tag existed: drifted (the update adds it)': {
    cached: [ready().build()],
    listed: [providerBucket({ tags: Object.fromEntries(Object.entries(listed.tags).filter(([k]) => k !== 'kubernetes-cluster')) })],
    want: [['b1', 'drifted']],
  },
  'the provider names an account the status does not record yet: statusStale (recorded once)': {
    cached: [ready().withStatus({ account: undefined }).build()],
    listed: [providerBucket({ account: 'acct-1' })],
    want: [['b1', 'statusStale']],
  },
  'the provider names the account the status records: fine': {
    cached: [ready().build()],
    listed: [providerBucket({ account: 'acct-1' })],
    want: [],
  },
  'shrunk at the provider: drifted': { cached: [ready().build()], listed: [providerBucket({ sizeGB: 3 })], want: [['b1', 'drifted']] },
  'encryption flipped at the provider: drifted': {
    cached: [ready().build()],
    listed: [providerBucket({ encrypted: true })],
    want: [['b1', 'drifted']],
  },
  'one of our tags changed: drifted': {
    cached: [ready().build()],
    listed: [providerBucket({ tags: { ...listed.tags, 'kubernetes-name': 'x' } })],
    want: [['b1', 'drifted']],
  },
  'grown at the provider (never shrunk back), status shows the old size: statusStale': {
    cached: [ready().build()],
    listed: [providerBucket({ sizeGB: 50 })],
    want: [['b1', 'statusStale']],
  },
  'resizing at the provider while the status says Ready: notActive': {
    cached: [ready().build()],
    listed: [providerBucket({ phase: 'Resizing' })],
    want: [['b1', 'notActive']],
  },
  "buckets in transition are their own poll's business: skipped": {
    cached: [
      bucket()
        .prepared()
        .withStatus({ ...readyStatus(ENDPOINT), phase: 'Provisioning', conditions: [] })
        .build(),
    ],
    listed: [],
    want: [],
  },
  'spec changed since Ready (generation not observed): skipped': {
    cached: [ready().withSpec({ sizeGB: 20 }).withGeneration(2).build()],
    listed: [],
    want: [],
  },
  'recorded at another endpoint: skipped (its reconcile reports ProviderChanged)': {
    cached: [bucket().prepared().withStatus(readyStatus('http://old')).build()],
    listed: [],
    want: [],
  },
  'observed (managementPolicy Observe), never tagged by us: skipped, it is read one by one': {
    cached: [ready().withSpec({ managementPolicy: 'Observe' }).build()],
    listed: [],
    want: [],
  },
  'being deleted: skipped': { cached: [ready().deleting().build()], listed: [], want: [] },
  "listed buckets nobody caches (another cluster's) are ignored": {
    cached: [ready().build()],
    listed: [listed, providerBucket({ id: 'bucket-999999' })],
    want: [],
  },
  'several buckets: only the differing ones': {
    cached: [
      ready().build(),
      bucket('b2')
        .prepared('k2')
        .withStatus(readyStatus(ENDPOINT, { id: 'bucket-000002', endpoint: 'bucket-000002.us-east-1.storage.example' }))
        .build(),
    ],
    listed: [providerBucket({ encrypted: true })],
    want: [
      ['b1', 'drifted'],
      ['b2', 'missing'],
    ],
  },
};

describe('compare', () => {
  for (const [name, tc] of Object.entries(cases)) {
    it(name, () => {
      expect(compare(tc.cached, tc.listed, ENDPOINT, CLUSTER).map((f) => [f.key.name, f.reason])).to.deep.equal(tc.want);
    });
  }
});

describe('DriftReports', () => {
  const finding = (name: string) => ({ key: { namespace: 'ns1', name }, id: 'bucket-000001', reason: 'missing' as const });

  it("keeps each account's latest findings until its next scan", () => {
    const r = new DriftReports();
    r.record('acct-a', [finding('b1')]);
    r.record('acct-b', [finding('b2')]);
    expect(r.reported({ namespace: 'ns1', name: 'b1' })).to.equal(true);
    r.record('acct-a', []);
    expect(r.reported({ namespace: 'ns1', name: 'b1' })).to.equal(false);
    expect(r.reported({ namespace: 'ns1', name: 'b2' })).to.equal(true);
  });

  it('forgets accounts no bucket uses any more', () => {
    const r = new DriftReports();
    r.record('acct-a', [finding('b1')]);
    r.retain(new Set(['acct-b']));
    expect(r.reported({ namespace: 'ns1', name: 'b1' })).to.equal(false);
  });
});
