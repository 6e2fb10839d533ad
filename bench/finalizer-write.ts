/**
 * `tsx bench/finalizer-write.ts [--n 2000] [--rounds 2]`: what kube-apiserver spends to release
 * the last finalizer of a StorageBucket being deleted, written as the JSON patch the runtime's
 * `removeFinalizer` sends or as an update (PUT) of the object as read, which controller-runtime's
 * `r.Update` sends. Each round: N buckets with a finalizer and a status of ours' shape are
 * created and deleted (they stay, held by the finalizer), then released 8 at a time (the
 * operator's workers) one way; then the same for the other way. Prints kube-apiserver's CPU
 * seconds and the wall time of each release phase. Nothing else runs on the control plane.
 */
import { parseArgs } from 'node:util';
import { join } from 'node:path';
import { BUCKET_FINALIZER } from '../operator/api/v1';
import { STORAGE_BUCKET } from '../operator/bucket/kinds';
import { KubeClient, removeFinalizer, type KubeObject } from '../operator/runtime';
import { startControlPlane, type ControlPlane } from '../test/support/control-plane';
import { parsePrometheus, sum } from '../test/support/prometheus';
import { inFlight, writeApiServerProfile } from './harness';

const REPO = join(__dirname, '..');

/** kube-apiserver's CPU seconds so far, from its /metrics. */
async function apiServerCpu(cp: ControlPlane): Promise<number> {
  return sum(parsePrometheus((await cp.kubectl(['get', '--raw', '/metrics'])).stdout), 'process_cpu_seconds_total');
}

function bucket(ns: string, i: number): KubeObject {
  return {
    apiVersion: 'storage.avalonhosting.example/v1',
    kind: 'StorageBucket',
    metadata: {
      name: `b-${String(i).padStart(5, '0')}`,
      namespace: ns,
      finalizers: [BUCKET_FINALIZER],
      annotations: { 'storage.avalonhosting.example/idempotency-key': `key-${ns}-${i}-0123456789abcdef` },
    },
    spec: { region: 'eu-west-1', sizeGB: 10, providerRef: { name: 'cfg' } },
  } as KubeObject;
}

function status(i: number): Record<string, unknown> {
  const at = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
  const condition = (type: string, reason: string, message: string) => ({
    type,
    status: 'True',
    reason,
    message,
    observedGeneration: 1,
    lastTransitionTime: at,
  });
  return {
    observedGeneration: 1,
    id: `bkt-${String(i).padStart(8, '0')}`,
    phase: 'Active',
    idempotencyKey: `key-${i}-0123456789abcdef`,
    providerEndpoint: 'https://provider.example:8443',
    account: 'acct-0001',
    conditions: [condition('Ready', 'Available', `provider bucket bkt-${i} is Active`), condition('Synced', 'ReconcileSuccess', 'spec applied')],
  };
}

async function round(
  cp: ControlPlane,
  client: KubeClient,
  ns: string,
  n: number,
  how: 'patch' | 'put',
  profile?: string,
): Promise<{ cpu: number; wallMs: number }> {
  await inFlight(n, 20, async (i) => {
    const created = await client.create(STORAGE_BUCKET, bucket(ns, i));
    await client.patchStatus(STORAGE_BUCKET, ns, created.metadata?.name ?? '', { status: status(i) }, 'merge');
    await client.delete(STORAGE_BUCKET, ns, created.metadata?.name ?? '');
  });
  const held = (await client.list<KubeObject>(STORAGE_BUCKET, { namespace: ns })).items;
  const cpu0 = await apiServerCpu(cp);
  const t0 = Date.now();
  const profiling = profile ? writeApiServerProfile(cp, `${profile}-${how}-${ns}.pprof`, 8) : undefined;
  await inFlight(held.length, 8, async (i) => {
    const obj = held[i];
    if (!obj) return;
    if (how === 'patch') await removeFinalizer(client, STORAGE_BUCKET, obj, BUCKET_FINALIZER);
    else await client.update(STORAGE_BUCKET, { ...obj, metadata: { ...obj.metadata, finalizers: [] } });
  });
  const wallMs = Date.now() - t0;
  await profiling;
  const cpu = (await apiServerCpu(cp)) - cpu0;
  const left = (await client.list<KubeObject>(STORAGE_BUCKET, { namespace: ns })).items.length;
  if (left !== 0) throw new Error(`${left} buckets left after releasing their finalizers by ${how}`);
  return { cpu, wallMs };
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { n: { type: 'string', default: '2000' }, rounds: { type: 'string', default: '2' }, profile: { type: 'string' } },
  });
  const n = Number(values.n);
  const rounds = Number(values.rounds);
  const cp = await startControlPlane();
  try {
    const apply = await cp.kubectl(['apply', '--server-side', '-f', join(REPO, 'dist', '00-crds.yaml')]);
    if (apply.code !== 0) throw new Error(apply.stderr);
    await cp.kubectl(['wait', '--for=condition=Established', 'crd/storagebuckets.storage.avalonhosting.example']);
    const client = new KubeClient({ restConfig: cp.restConfig() });
    for (let r = 0; r < rounds; r++) {
      for (const how of r % 2 === 0 ? (['patch', 'put'] as const) : (['put', 'patch'] as const)) {
        const ns = `fin-${how}-${r}`;
        await cp.kubectl(['create', 'namespace', ns]);
        const { cpu, wallMs } = await round(cp, client, ns, n, how, values.profile);
        console.log(
          `${how}\tround ${r}\t${n} releases\tkube-apiserver CPU ${cpu.toFixed(2)} s (${((cpu * 1000) / n).toFixed(3)} ms each)\twall ${(wallMs / 1000).toFixed(2)} s`,
        );
      }
    }
  } finally {
    await cp.stop();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
