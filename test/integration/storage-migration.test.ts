/**
 * The storage flip on a real control plane (issue 19, part 5): 1,000 StorageBuckets and their
 * configs stored in v1; the CRDs then store v2 (as `conversionWebhook.storageVersion: 'v2'`
 * renders them), the operator switches to reading and writing v2, and the
 * StorageVersionMigrations the construct renders make kube-controller-manager rewrite every
 * object in v2 and trim `status.storedVersions`. What etcd holds is read directly (its JSON
 * gateway), so "rewritten" is proven, not inferred from the CRD's status. Then the way back,
 * as docs/v2.md writes it: store v1 again, migrate to v1, and only then may v2 leave the CRDs.
 *
 * The operator runs in-process as its ServiceAccount under the rendered RBAC and policies
 * (namespace mode, watching its own namespace); no provider runs, so "reconciling" is seen as
 * status written for the generation it was computed from.
 */
import { expect } from 'chai';
import { Chart, Testing } from 'cdk8s';
import { renderCrd } from '../../infra/crd';
import { COMMON_LABELS } from '../../infra/labels';
import { OperatorStorageMigration } from '../../infra/storage-migration';
import * as v1 from '../../operator/api/v1';
import * as v2 from '../../operator/api/v2';
import type { ApiVersionName } from '../../operator/api/version-names';
import type { RunningOperator } from '../../operator/operator';
import type { ControlPlane } from '../support/control-plane';
import {
  applyV1Only,
  configWithoutSecret,
  crdName,
  failedRead,
  SERVER_SIDE_APPLY,
  startConversionStack,
  VERSION_PAIRS,
  type ConversionStack,
} from '../support/conversion-stack';
import { eventually } from '../support/eventually';
import { apply, getJson, kubectlOk, providerManifests } from '../support/kube';
import { startProviderProcess, type ProviderProcess } from '../support/provider-process';
import { freePort } from '../support/ports';
import { freshNamespace } from './setup';
import { testApp } from '../support/test-app';

const COUNT = 1000;
const BUCKETS_V1 = `storagebuckets.${v1.VERSION}.${v1.GROUP}`;
const BUCKETS_V2 = `storagebuckets.${v2.VERSION}.${v2.GROUP}`;
const CONFIGS_V2 = `bucketproviderconfigs.${v2.VERSION}.${v2.GROUP}`;
const LAST_APPLIED = 'kubectl.kubernetes.io/last-applied-configuration';

interface Obj {
  apiVersion: string;
  metadata: {
    name: string;
    uid: string;
    generation?: number;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    finalizers?: string[];
  };
  spec: Record<string, unknown>;
  status?: { observedGeneration?: number; conditions?: Array<{ type: string; reason: string }> } & Record<string, unknown>;
}
interface CrdJson {
  spec: { versions: Array<{ name: string; storage: boolean }> };
  status?: { storedVersions?: string[] };
}
interface Migration {
  status?: { resourceVersion?: string; conditions?: Array<{ type: string; status: string; message?: string }> };
}
const MIGRATIONS = 'storageversionmigrations.storagemigration.k8s.io';

const b64 = (s: string) => Buffer.from(s, 'utf8').toString('base64');
const unb64 = (s: string) => Buffer.from(s, 'base64').toString('utf8');

/** The apiVersion each object of `resource` in `namespace` is stored in, by name, read from etcd. */
async function storedVersions(cp: ControlPlane, resource: string, namespace: string): Promise<Map<string, string>> {
  const prefix = `/registry/${v1.GROUP}/${resource}/${namespace}/`;
  const end = prefix.slice(0, -1) + String.fromCharCode(prefix.charCodeAt(prefix.length - 1) + 1);
  const res = await fetch(`${cp.etcdUrl}/v3/kv/range`, { method: 'POST', body: JSON.stringify({ key: b64(prefix), range_end: b64(end) }) });
  if (!res.ok) throw new Error(`etcd range ${prefix}: ${res.status} ${await res.text()}`);
  const body = (await res.json()) as { kvs?: Array<{ key: string; value: string }> };
  return new Map(
    (body.kvs ?? []).map((kv) => [unb64(kv.key).slice(prefix.length), (JSON.parse(unb64(kv.value)) as { apiVersion: string }).apiVersion]),
  );
}

/** How many objects are stored in each apiVersion. */
function tally(stored: Map<string, string>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const v of stored.values()) out[v] = (out[v] ?? 0) + 1;
  return out;
}

/** What must survive every rewrite: identity, spec, status, labels and user annotations. */
function essence(o: Obj) {
  const annotations = Object.fromEntries(Object.entries(o.metadata.annotations ?? {}).filter(([k]) => k !== LAST_APPLIED));
  return {
    uid: o.metadata.uid,
    labels: o.metadata.labels ?? {},
    annotations,
    finalizers: o.metadata.finalizers ?? [],
    spec: o.spec,
    status: o.status,
  };
}

describe('storage migration to v2 and back on a real control plane', function () {
  this.timeout(300_000);
  let stack: ConversionStack;
  let cp: ControlPlane;
  let ns = '';
  let opNs = '';
  /** Objects written only to move the garbage collector's watch along (see migrate()). */
  let nudgeNs = '';
  let op: RunningOperator | undefined;
  let provider: ProviderProcess;
  let snapshot: Map<string, ReturnType<typeof essence>>;

  const listV1 = async (namespace: string) =>
    (JSON.parse(await kubectlOk(cp, ['get', BUCKETS_V1, '-n', namespace, '-o', 'json'])) as { items: Obj[] }).items;
  const crd = (name: string) => getJson<CrdJson>(cp, 'crd', name, '');

  /** Restarts the in-process operator reading and writing `version`. */
  async function operatorOn(version: ApiVersionName): Promise<void> {
    await op?.stop();
    op = stack.startOperator({ ownApiVersion: version, logEnv: 'MIGRATION_LOG' });
    await op.manager.elected();
  }

  /** Applies the migrations the construct renders for `version` and waits until both succeeded. */
  async function migrate(version: ApiVersionName): Promise<void> {
    const chart = new Chart(testApp(), 'migration');
    const rendered = new OperatorStorageMigration(chart, 'm', { version });
    await kubectlOk(cp, ['apply', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'List', items: Testing.synth(chart) }));
    // A migration starts once kube-controller-manager's garbage collector has watched past the
    // resourceVersion the migration records; with nothing else written, that is the watch's next
    // bookmark, up to a minute away. One write of each kind after the migrations recorded theirs
    // carries the watch past it at once (a busy cluster writes anyway).
    for (const m of rendered.migrations) {
      const name = m.metadata.name ?? '';
      await eventually(async () => ((await getJson<Migration>(cp, MIGRATIONS, name, ''))?.status?.resourceVersion ? true : undefined), {
        description: `StorageVersionMigration ${name} to record a resourceVersion`,
        timeoutMs: 30_000,
        intervalMs: 200,
      });
    }
    for (const resource of ['storagebuckets', 'bucketproviderconfigs']) {
      await kubectlOk(cp, ['annotate', '--overwrite', resource, 'nudge', '-n', nudgeNs, `example.com/nudged=${version}`]);
    }
    for (const m of rendered.migrations) {
      const name = m.metadata.name ?? '';
      await eventually(
        async () => {
          const got = await getJson<Migration>(cp, MIGRATIONS, name, '');
          const failed = got?.status?.conditions?.find((c) => c.type === 'Failed' && c.status === 'True');
          if (failed) throw new Error(`migration ${name} failed: ${failed.message ?? ''}`);
          return got?.status?.conditions?.some((c) => c.type === 'Succeeded' && c.status === 'True') ? true : undefined;
        },
        { description: `StorageVersionMigration ${name} to succeed`, timeoutMs: 180_000, intervalMs: 500 },
      );
    }
  }

  /** Waits until the operator has written the status of `resource` `name` (opNs) for its current generation. */
  async function reconciled(resource: string, name: string): Promise<Obj> {
    return eventually(
      async () => {
        const o = await getJson<Obj>(cp, resource, name, opNs);
        return o?.status?.observedGeneration === o?.metadata.generation ? o : undefined;
      },
      { description: `the operator to write the status of ${name}`, timeoutMs: 30_000 },
    );
  }

  before(async () => {
    stack = await startConversionStack('migration');
    ({ cp, ns, opNs } = stack);
    nudgeNs = await freshNamespace(cp, 'migration-nudge');
    provider = await startProviderProcess({ activationDelayMs: 200 });
    await apply(cp, {
      apiVersion: v1.API_VERSION,
      kind: 'StorageBucket',
      metadata: { name: 'nudge', namespace: nudgeNs },
      spec: { region: 'us-east-1', sizeGB: 1, providerRef: { name: 'nudge' } },
    });
    await apply(cp, {
      apiVersion: v1.API_VERSION,
      kind: 'BucketProviderConfig',
      metadata: { name: 'nudge', namespace: nudgeNs },
      spec: { endpoint: 'https://storage.example.com', secretRef: { name: 'nudge' } },
    });
    await operatorOn('v1');
    // The webhook answers once the operator has injected its CA.
    for (const [def] of VERSION_PAIRS) {
      await eventually(
        async () => {
          const got = await getJson<{ spec: { conversion?: { webhook?: { clientConfig?: { caBundle?: string } } } } }>(cp, 'crd', crdName(def), '');
          return got?.spec.conversion?.webhook?.clientConfig?.caBundle ? true : undefined;
        },
        { description: `${crdName(def)} to carry the caBundle`, timeoutMs: 30_000 },
      );
    }
  });

  after(async () => {
    await op?.stop();
    await provider?.stop();
    await stack?.stop();
  });

  it(`${COUNT} StorageBuckets stored in v1 are rewritten in v2 by the rendered migrations; storedVersions ends as [v2]; nothing is lost`, async () => {
    const items = Array.from({ length: COUNT }, (_, i) => ({
      apiVersion: v1.API_VERSION,
      kind: 'StorageBucket',
      metadata: {
        name: `b-${String(i).padStart(4, '0')}`,
        namespace: ns,
        labels: { team: `t${i % 7}` },
        ...(i % 10 === 0 ? { annotations: { 'example.com/note': `n${i}` } } : {}),
      },
      spec: { region: i % 2 ? 'eu-west-1' : 'us-east-1', sizeGB: 1 + (i % 500), providerRef: { name: 'default' }, encrypted: i % 3 === 0 },
    }));
    await kubectlOk(cp, ['create', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'List', items }));
    // Written through v2 (a spelling v1 cannot hold: it rides in an annotation of the v1 object).
    await apply(cp, {
      apiVersion: v2.API_VERSION,
      kind: 'StorageBucket',
      metadata: { name: 'made-in-v2', namespace: ns },
      spec: { forProvider: { region: 'us-east-1', size: '1500Mi' }, providerConfigRef: { name: 'default' } },
    });
    // The operator's own: a config naming a missing Secret and a bucket using it, both given a status.
    await apply(cp, configWithoutSecret(v1.API_VERSION, 'cfg', opNs));
    await apply(cp, {
      apiVersion: v1.API_VERSION,
      kind: 'StorageBucket',
      metadata: { name: 'watched', namespace: opNs },
      spec: { region: 'us-east-1', sizeGB: 3, providerRef: { name: 'cfg' } },
    });
    await reconciled(BUCKETS_V1, 'watched');

    // Objects the operator does not watch must come through unchanged; the one it watches keeps
    // its identity and spec (its status is the operator's to rewrite).
    snapshot = new Map((await listV1(ns)).map((o) => [o.metadata.name, essence(o)]));
    expect(snapshot.size).to.equal(COUNT + 1);
    const watchedBefore = (await listV1(opNs))[0]!;
    expect(watchedBefore.status?.conditions?.length, 'the watched bucket has conditions').to.be.greaterThan(0);
    expect(tally(await storedVersions(cp, 'storagebuckets', ns))).to.deep.equal({ [v1.API_VERSION]: COUNT + 1 });

    // The flip, in the order docs/v2.md gives: CRDs storing v2, the operator on v2, then the migrations.
    await stack.applyCrds({ storage: 'v2' });
    await operatorOn('v2');
    for (const [def] of VERSION_PAIRS) {
      expect((await crd(crdName(def)))?.status?.storedVersions, `${crdName(def)} before the migration`).to.have.members(['v1', 'v2']);
    }
    await migrate('v2');

    for (const [def] of VERSION_PAIRS) expect((await crd(crdName(def)))?.status?.storedVersions, crdName(def)).to.deep.equal(['v2']);
    expect(tally(await storedVersions(cp, 'storagebuckets', ns))).to.deep.equal({ [v2.API_VERSION]: COUNT + 1 });
    expect(tally(await storedVersions(cp, 'storagebuckets', opNs))).to.deep.equal({ [v2.API_VERSION]: 1 });
    expect(tally(await storedVersions(cp, 'bucketproviderconfigs', opNs))).to.deep.equal({ [v2.API_VERSION]: 1 });

    const after = await listV1(ns);
    expect(after).to.have.length(COUNT + 1);
    const [watchedAfter] = await listV1(opNs);
    expect([watchedAfter?.metadata.uid, watchedAfter?.spec]).to.deep.equal([watchedBefore.metadata.uid, watchedBefore.spec]);
    const changed = after.filter((o) => JSON.stringify(essence(o)) !== JSON.stringify(snapshot.get(o.metadata.name)));
    expect(changed.map((o) => o.metadata.name)).to.deep.equal([]);
    const madeInV2 = (await getJson<{ spec: { forProvider: { size: string } } }>(cp, BUCKETS_V2, 'made-in-v2', ns))!;
    expect(madeInV2.spec.forProvider.size).to.equal('1500Mi');
  });

  it('the operator on v2 keeps reconciling with the webhook unreachable, while v1 reads fail naming the webhook', async () => {
    await stack.applyCrds({ storage: 'v2', url: `https://127.0.0.1:${await freePort()}/convert` });
    try {
      const failed = await failedRead(cp, BUCKETS_V1, 'watched', opNs);
      expect(failed).to.match(/conversion webhook for storage\.avalonhosting\.example\/v2, Kind=StorageBucket failed: .*connection refused/);
      // A new bucket and a new config, written and read in v2 by everyone: the operator gives both a status.
      await apply(cp, configWithoutSecret(v2.API_VERSION, 'cfg-while-down', opNs));
      await apply(cp, {
        apiVersion: v2.API_VERSION,
        kind: 'StorageBucket',
        metadata: { name: 'while-down', namespace: opNs },
        spec: { forProvider: { region: 'us-east-1', size: '2G' }, providerConfigRef: { name: 'cfg-while-down' } },
      });
      const bucket = await reconciled(BUCKETS_V2, 'while-down');
      expect(bucket.status?.conditions?.map((c) => c.type)).to.include('Ready');
      await reconciled(CONFIGS_V2, 'cfg-while-down');
      // And an edit of an existing one is followed.
      await kubectlOk(cp, [
        'patch',
        BUCKETS_V2,
        'watched',
        '-n',
        opNs,
        '--type=merge',
        '-p',
        JSON.stringify({ spec: { forProvider: { size: '4G' } } }),
      ]);
      const watched = await reconciled(BUCKETS_V2, 'watched');
      expect(watched.metadata.generation).to.equal(2);
    } finally {
      await stack.applyCrds({ storage: 'v2' });
    }
  });

  it('the operator on v2 takes a bucket through its whole life: created once, Ready, grown, deleted at the provider', async () => {
    for (const m of providerManifests(opNs, provider.url, provider.apiKey, 'real')) await apply(cp, m);
    await apply(cp, {
      apiVersion: v2.API_VERSION,
      kind: 'StorageBucket',
      metadata: { name: 'lifecycle', namespace: opNs },
      spec: { forProvider: { region: 'eu-west-1', size: '1500Mi' }, providerConfigRef: { name: 'real' } },
    });
    const isReady = (o: Obj | undefined) =>
      o?.status?.observedGeneration === o?.metadata.generation &&
      o?.status?.conditions?.some((c) => c.type === 'Ready' && (c as { status?: string }).status === 'True');
    const ready = await eventually(
      async () => {
        const o = await getJson<Obj>(cp, BUCKETS_V2, 'lifecycle', opNs);
        return isReady(o) ? o : undefined;
      },
      { description: 'the v2 bucket to be Ready', timeoutMs: 60_000 },
    );
    const atProvider = () => ready.status?.['atProvider'] as { id: string; size: string };
    expect(ready.metadata.finalizers).to.include(v1.BUCKET_FINALIZER);
    expect(atProvider().size).to.equal('2G');
    const [created] = (await provider.buckets(opNs)).filter((b) => b.id === atProvider().id);
    expect(created?.sizeGB).to.equal(2);

    await kubectlOk(cp, [
      'patch',
      BUCKETS_V2,
      'lifecycle',
      '-n',
      opNs,
      '--type=merge',
      '-p',
      JSON.stringify({ spec: { forProvider: { size: '5G' } } }),
    ]);
    await eventually(
      async () => {
        const o = await getJson<Obj>(cp, BUCKETS_V2, 'lifecycle', opNs);
        return isReady(o) && (o?.status?.['atProvider'] as { size?: string }).size === '5G' ? true : undefined;
      },
      { description: 'the bucket grown to 5G', timeoutMs: 60_000 },
    );
    expect((await provider.buckets(opNs)).find((b) => b.id === atProvider().id)?.sizeGB).to.equal(5);

    await kubectlOk(cp, ['delete', BUCKETS_V2, 'lifecycle', '-n', opNs, '--wait=true', '--timeout=60s']);
    expect((await provider.buckets(opNs)).filter((b) => b.id === atProvider().id)).to.deep.equal([]);
    expect((await provider.buckets()).length, 'one bucket was ever made, and it is gone').to.equal(0);
  });

  it('goes back: v1 stored again and migrated to, storedVersions [v1], and only then may v2 leave the CRDs', async () => {
    await stack.applyCrds({ storage: 'v1' });
    await operatorOn('v1');
    // With v2 still in storedVersions, the API server refuses to drop v2 from the CRD.
    const [bucketsV1] = VERSION_PAIRS[0];
    const refused = await cp.kubectl([...SERVER_SIDE_APPLY], {
      input: JSON.stringify(renderCrd(bucketsV1, { ...COMMON_LABELS }, { conversionWebhook: { url: stack.url } })),
    });
    expect(refused.code, 'v2 was dropped while objects may be stored in it').to.not.equal(0);
    expect(refused.stderr).to.match(
      /status\.storedVersions\[\d\]: Invalid value: "v2": missing from spec\.versions; v2 was previously a storage version/,
    );

    await migrate('v1');
    for (const [def] of VERSION_PAIRS) expect((await crd(crdName(def)))?.status?.storedVersions, crdName(def)).to.deep.equal(['v1']);
    expect(tally(await storedVersions(cp, 'storagebuckets', ns))).to.deep.equal({ [v1.API_VERSION]: COUNT + 1 });
    expect(tally(await storedVersions(cp, 'storagebuckets', opNs))).to.deep.equal({ [v1.API_VERSION]: 2 });

    // Now v1 alone: the conversion stanza goes first (the operator's field manager owns the caBundle).
    await op?.stop();
    op = undefined;
    for (const [def] of VERSION_PAIRS) {
      await applyV1Only(cp, def);
      const got = (await crd(crdName(def)))!;
      expect(got.spec.versions.map((v) => v.name)).to.deep.equal(['v1']);
    }
    const items = await listV1(ns);
    expect(items).to.have.length(COUNT + 1);
    const changed = items.filter((o) => JSON.stringify(essence(o)) !== JSON.stringify(snapshot.get(o.metadata.name)));
    expect(changed.map((o) => o.metadata.name)).to.deep.equal([]);
  });
});
