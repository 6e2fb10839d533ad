/**
 * The Argo CD health.lua and Flux healthCheckExprs against objects in every state the
 * operator really produces: each live object is judged by Debian's lua5.1 and by cel-go.
 * With BUCKETOPERATOR_CAPTURE_FIXTURES=1 the objects are also written (managedFields
 * stripped) as the testdata the unit tests use; review the health_test.yaml messages after.
 */
import { expect } from 'chai';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { CUSTOMIZATIONS_DIR, evaluateFluxHealth, runHealthLua, type FluxStatus, type KubeObjectData } from '../support/gitops';
import type { ControlPlane } from '../support/control-plane';
import { apply, bucketManifest, condition, getJson, kubectlOk, providerManifests, waitForObject, type BucketJson } from '../support/kube';
import { eventually } from '../support/eventually';
import { startProviderProcess, type ProviderProcess } from '../support/provider-process';
import { useStack } from '../support/stack';
import { sharedControlPlane } from './setup';

const GROUP = 'storage.avalonhosting.example';
const CAPTURE = process.env['BUCKETOPERATOR_CAPTURE_FIXTURES'] === '1';

type Json = KubeObjectData & BucketJson;

/** One state to reach and how both tools must judge it. */
interface Case {
  readonly kind: 'sbucket' | 'bucketproviderconfig';
  readonly name: string;
  /** Testdata file name. */
  readonly fixture: string;
  readonly until: (o: Json) => boolean;
  readonly argo: string;
  readonly flux: FluxStatus;
}

const readyCond = (o: Json) => condition(o, 'Ready');
const synced = (o: Json) => condition(o, 'Synced');
const atGeneration = (o: Json) => o.status?.observedGeneration === o.metadata.generation;

function fixturePath(kind: Case['kind'], file: string): string {
  return join(CUSTOMIZATIONS_DIR, GROUP, kind === 'sbucket' ? 'StorageBucket' : 'BucketProviderConfig', 'testdata', file);
}

function strip(o: KubeObjectData): KubeObjectData {
  const copy = structuredClone(o) as KubeObjectData & { metadata: Record<string, unknown> };
  delete copy.metadata['managedFields'];
  return copy;
}

function writeFixture(kind: Case['kind'], file: string, o: KubeObjectData, note?: string): void {
  writeFileSync(fixturePath(kind, file), `${note ? `# ${note}\n` : ''}${stringify(strip(o))}`);
}

/** The object as it was created: no status, no finalizers or annotations the operator adds. */
function asCreated(o: KubeObjectData): KubeObjectData {
  const copy = strip(o) as KubeObjectData & { metadata: Record<string, unknown> };
  delete copy['status'];
  copy.metadata = { ...copy.metadata, generation: 1 };
  delete copy.metadata['finalizers'];
  delete copy.metadata['annotations'];
  return copy;
}

/** The object just after a spec edit the operator has not acted on yet. */
function nextGeneration(o: KubeObjectData): KubeObjectData {
  const copy = strip(o) as KubeObjectData & { metadata: { generation: number } };
  copy.metadata.generation += 1;
  return copy;
}

describe('GitOps health checks on live objects (lua5.1 and cel-go)', function () {
  this.timeout(120_000);
  // Buckets stay paused and blocked on purpose: no waiting for their cleanup.
  const stack = useStack(sharedControlPlane, { name: 'gitops', provider: { activationDelayMs: 200 }, waitForCleanup: false });
  let cp: ControlPlane;
  let slow: ProviderProcess;
  let ns: string;

  before(async () => {
    cp = stack.cp;
    const fast = stack.provider;
    // Never activates within the test, so its buckets stay Provisioning.
    slow = await startProviderProcess({ activationDelayMs: 3_600_000 });
    // The tenant's config `provider` points at the fast provider.
    ns = (await stack.tenant()).ns;
    for (const m of providerManifests(ns, slow.url, slow.apiKey, 'slow')) await apply(cp, m);
    for (const m of providerManifests(ns, fast.url, 'not-the-key', 'wrong-key')) await apply(cp, m);
    for (const m of providerManifests(ns, fast.url, fast.apiKey, 'movable')) await apply(cp, m);
    await apply(cp, providerManifests(ns, fast.url, fast.apiKey, 'no-secret')[1]);
    await apply(cp, {
      ...providerManifests(ns, fast.url, fast.apiKey, 'bad-endpoint')[1],
      spec: { endpoint: 'http://[bad', secretRef: { name: 'provider-key' }, insecure: true },
    });

    const paused = { [`${GROUP}/paused`]: 'true' };
    await apply(cp, bucketManifest(ns, 'ready'));
    await apply(cp, bucketManifest(ns, 'provisioning', { providerRef: { name: 'slow' } }));
    await apply(cp, bucketManifest(ns, 'invalid', { region: 'mars-1' }));
    await apply(cp, bucketManifest(ns, 'rejected', { providerRef: { name: 'wrong-key' } }));
    await apply(cp, bucketManifest(ns, 'paused', {}, paused));
    await apply(cp, bucketManifest(ns, 'paused-ready'));
    await apply(cp, bucketManifest(ns, 'adopt-missing', {}, { [`${GROUP}/adopt-id`]: 'b-does-not-exist' }));
    await apply(cp, bucketManifest(ns, 'no-config', { providerRef: { name: 'absent' } }));
    await apply(cp, bucketManifest(ns, 'moved', { providerRef: { name: 'movable' } }));

    // Two states need a second step once the first is reached.
    const isReady = (o: Json) => readyCond(o)?.status === 'True' && atGeneration(o);
    await waitForObject<Json>(cp, 'sbucket', 'paused-ready', ns, isReady, 'paused-ready to be Ready');
    await kubectlOk(cp, ['annotate', 'sbucket/paused-ready', '-n', ns, `${GROUP}/paused=true`]);
    await waitForObject<Json>(cp, 'sbucket', 'moved', ns, isReady, 'moved to be Ready');
    await kubectlOk(cp, [
      'patch',
      'bucketproviderconfig/movable',
      '-n',
      ns,
      '--type=merge',
      '-p',
      JSON.stringify({ spec: { endpoint: slow.url, secretRef: { name: 'slow-key', key: 'apiKey' } } }),
    ]);
  });

  after(async () => {
    await slow?.stop();
  });

  const reason = (r: string) => (o: Json) => readyCond(o)?.reason === r;
  const cases: Case[] = [
    {
      kind: 'sbucket',
      name: 'ready',
      fixture: 'healthy_ready.yaml',
      until: (o) => readyCond(o)?.status === 'True' && atGeneration(o),
      argo: 'Healthy',
      flux: 'Current',
    },
    {
      kind: 'sbucket',
      name: 'provisioning',
      fixture: 'progressing_provisioning.yaml',
      until: reason('Provisioning'),
      argo: 'Progressing',
      flux: 'InProgress',
    },
    { kind: 'sbucket', name: 'invalid', fixture: 'degraded_invalidSpec.yaml', until: reason('InvalidSpec'), argo: 'Degraded', flux: 'Failed' },
    {
      kind: 'sbucket',
      name: 'rejected',
      fixture: 'degraded_credentialsRejected.yaml',
      until: reason('CredentialsRejected'),
      argo: 'Degraded',
      flux: 'Failed',
    },
    {
      kind: 'sbucket',
      name: 'paused',
      fixture: 'suspended_paused.yaml',
      until: (o) => synced(o)?.reason === 'ReconcilePaused',
      argo: 'Suspended',
      flux: 'InProgress',
    },
    {
      kind: 'sbucket',
      name: 'paused-ready',
      fixture: 'suspended_pausedReady.yaml',
      until: (o) => synced(o)?.reason === 'ReconcilePaused',
      argo: 'Suspended',
      flux: 'Current',
    },
    {
      kind: 'sbucket',
      name: 'adopt-missing',
      fixture: 'degraded_adoptTargetNotFound.yaml',
      until: reason('AdoptTargetNotFound'),
      argo: 'Degraded',
      flux: 'Failed',
    },
    {
      kind: 'sbucket',
      name: 'no-config',
      fixture: 'progressing_providerConfigNotFound.yaml',
      until: reason('ProviderConfigNotFound'),
      argo: 'Progressing',
      flux: 'InProgress',
    },
    { kind: 'sbucket', name: 'moved', fixture: 'degraded_providerChanged.yaml', until: reason('ProviderChanged'), argo: 'Degraded', flux: 'Failed' },
    {
      kind: 'bucketproviderconfig',
      name: 'provider',
      fixture: 'healthy_ready.yaml',
      until: (o) => readyCond(o)?.status === 'True' && atGeneration(o) && (o.status as { bucketCount?: number } | undefined)?.bucketCount === 5,
      argo: 'Healthy',
      flux: 'Current',
    },
    {
      kind: 'bucketproviderconfig',
      name: 'no-secret',
      fixture: 'progressing_secretNotFound.yaml',
      until: reason('SecretNotFound'),
      argo: 'Progressing',
      flux: 'InProgress',
    },
    {
      kind: 'bucketproviderconfig',
      name: 'bad-endpoint',
      fixture: 'degraded_invalidProviderConfig.yaml',
      until: reason('InvalidProviderConfig'),
      argo: 'Degraded',
      flux: 'Failed',
    },
  ];

  const fromReady = 'Derived from healthy_ready.yaml';
  /** Fixtures derived from a case's live object, written by that case's test (CAPTURE only). */
  const derived: Record<string, Array<{ file: string; make: (o: Json) => KubeObjectData; note: string }>> = {
    'sbucket/ready': [
      { file: 'progressing_noStatus.yaml', make: asCreated, note: `${fromReady}: as created, before the operator wrote any status.` },
      {
        file: 'progressing_newGeneration.yaml',
        make: nextGeneration,
        note: `${fromReady}: the spec was just edited and the operator has not acted on it yet.`,
      },
    ],
    'sbucket/invalid': [
      {
        file: 'progressing_staleTerminal.yaml',
        make: nextGeneration,
        note: 'Derived from degraded_invalidSpec.yaml: the spec was just edited (perhaps fixed) and the operator has not acted on it yet.',
      },
    ],
    'bucketproviderconfig/provider': [
      { file: 'progressing_noStatus.yaml', make: asCreated, note: `${fromReady}: as created, before the operator wrote any status.` },
    ],
  };
  for (const c of cases) {
    it(`${c.kind} ${c.name}: Argo CD ${c.argo}, Flux ${c.flux}`, async () => {
      const obj = await waitForObject<Json>(cp, c.kind, c.name, ns, c.until, `${c.kind} ${c.name} to reach its state`);
      const lua = join(CUSTOMIZATIONS_DIR, GROUP, c.kind === 'sbucket' ? 'StorageBucket' : 'BucketProviderConfig', 'health.lua');
      expect(runHealthLua(lua, obj).status).to.equal(c.argo);
      expect(evaluateFluxHealth([obj])).to.deep.equal([c.flux]);
      if (CAPTURE) {
        writeFixture(c.kind, c.fixture, obj);
        for (const d of derived[`${c.kind}/${c.name}`] ?? []) writeFixture(c.kind, d.file, d.make(obj), d.note);
      }
    });
  }

  it('a fresh object without status is Progressing to Argo CD and Unknown to Flux', async () => {
    // Built from a live object: racing the operator for a truly status-less one would be flaky.
    const fresh = asCreated((await getJson<Json>(cp, 'sbucket', 'ready', ns))!);
    const lua = join(CUSTOMIZATIONS_DIR, GROUP, 'StorageBucket', 'health.lua');
    expect(runHealthLua(lua, fresh).status).to.equal('Progressing');
    expect(evaluateFluxHealth([fresh])).to.deep.equal(['Unknown']);
  });

  it('serves the lifecycle metrics for these buckets', async () => {
    await kubectlOk(cp, ['delete', 'sbucket/invalid', '-n', ns, '--wait=true', '--timeout=60s']);
    const sample = (text: string, series: string) => {
      const line = text.split('\n').find((l) => l.startsWith(`${series} `));
      return line === undefined ? undefined : Number(line.slice(series.length + 1));
    };
    const metrics = await eventually(
      async () => {
        const text = await stack.metrics();
        return sample(text, 'bucketoperator_bucket_deletion_seconds_count') === 1 ? text : undefined;
      },
      { description: 'the deletion to be observed', timeoutMs: 30_000, intervalMs: 250 },
    );
    expect(sample(metrics, `bucketoperator_buckets_exist{namespace="${ns}"}`)).to.equal(8);
    // ready and paused-ready; moved lost Ready to ProviderChanged.
    expect(sample(metrics, `bucketoperator_buckets_ready{namespace="${ns}"}`)).to.equal(2);
    // ready, paused-ready and moved became Ready while the operator ran; each counts once.
    expect(sample(metrics, 'bucketoperator_bucket_first_time_to_ready_seconds_count')).to.equal(3);
  });
});
