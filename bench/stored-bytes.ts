/**
 * `tsx bench/stored-bytes.ts [--buckets 5] [--creator kubectl|operator-agent] [--print]`: the
 * bytes etcd holds for a Ready StorageBucket, split by field, annotation and field manager, with
 * the fields each managedFields entry names. A small real run: a control plane, dist/ applied,
 * the provider and the operator as its Deployment starts it (the image build; set
 * BUCKETOPERATOR_FROM_SOURCE=1 for the sources), N buckets created and waited Ready, then each
 * read from etcd's gateway as kube-apiserver stored it (JSON, managedFields included).
 *
 * `--creator kubectl` (the default) creates them with `kubectl create`, as a user would: the
 * spec then belongs to its own `kubectl-create` entry, as it does for the benchmark harness's
 * creates. `operator-agent` creates them through a client whose User-Agent is `bucketoperator`
 * and which names no field manager (how the harness created them before 2026-12-05), so the
 * server files the spec under the operator's own manager name and its metadata entry holds the
 * creator's fields too.
 */
import { parseArgs } from 'node:util';
import type { StorageBucket } from '../operator/api/v1';
import { STORAGE_BUCKET } from '../operator/bucket/kinds';
import { KubeClient, type KubeObject } from '../operator/runtime';
import { startControlPlane, type ControlPlane } from '../test/support/control-plane';
import { eventually } from '../test/support/eventually';
import { bucketManifest } from '../test/support/kube';
import { startStack, type Stack } from '../test/support/stack';
import { breakdownFigures, byteBreakdown, managedPaths } from './object-bytes';

/** Every StorageBucket of `ns` as etcd holds it, by key. */
async function storedBuckets(cp: ControlPlane, ns: string): Promise<Map<string, string>> {
  const prefix = `/registry/${STORAGE_BUCKET.group}/${STORAGE_BUCKET.plural}/${ns}/`;
  const end = prefix.slice(0, -1) + String.fromCharCode(prefix.charCodeAt(prefix.length - 1) + 1);
  const b64 = (x: string) => Buffer.from(x, 'utf8').toString('base64');
  const res = await fetch(`${cp.etcdUrl}/v3/kv/range`, {
    method: 'POST',
    body: JSON.stringify({ key: b64(prefix), range_end: b64(end) }),
    signal: AbortSignal.timeout(10_000),
  });
  if (!res.ok) throw new Error(`etcd range ${prefix}: ${res.status}`);
  const kvs = ((await res.json()) as { kvs?: Array<{ key: string; value: string }> }).kvs ?? [];
  const text = (x: string) => Buffer.from(x, 'base64').toString('utf8');
  return new Map(kvs.map((kv) => [text(kv.key), text(kv.value)]));
}

function ready(b: StorageBucket): boolean {
  return (b.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');
}

async function createBuckets(cp: ControlPlane, ns: string, n: number, creator: string): Promise<void> {
  const manifests = Array.from({ length: n }, (_, i) => bucketManifest(ns, `b${String(i).padStart(5, '0')}`, { sizeGB: 10 }));
  if (creator === 'kubectl') {
    const res = await cp.kubectl(['create', '-f', '-'], { input: JSON.stringify({ apiVersion: 'v1', kind: 'List', items: manifests }) });
    if (res.code !== 0) throw new Error(`kubectl create: ${res.stderr}`);
    return;
  }
  // No field manager, User-Agent bucketoperator: the server names the entry after the agent.
  const admin = new KubeClient({ restConfig: cp.restConfig(), http2: false });
  for (const m of manifests) await admin.create(STORAGE_BUCKET, m as unknown as KubeObject);
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      buckets: { type: 'string', default: '5' },
      creator: { type: 'string', default: 'kubectl' },
      print: { type: 'boolean', default: false },
    },
  });
  const n = Number(values.buckets);
  if (!Number.isInteger(n) || n < 1) throw new Error(`--buckets must be a positive integer, got ${values.buckets}`);
  if (values.creator !== 'kubectl' && values.creator !== 'operator-agent') throw new Error(`--creator must be kubectl or operator-agent`);
  let cp: ControlPlane | undefined;
  let stack: Stack | undefined;
  try {
    cp = await startControlPlane();
    stack = await startStack(cp, { name: 'stored-bytes', provider: { activationDelayMs: 500 } });
    const { ns } = await stack.tenant();
    await createBuckets(cp, ns, n, values.creator);
    const client = new KubeClient({ restConfig: cp.restConfig(), http2: false });
    await eventually(async () => (await client.list<StorageBucket>(STORAGE_BUCKET, { namespace: ns })).items.filter(ready).length === n, {
      description: `${n} buckets Ready`,
      timeoutMs: 120_000,
      intervalMs: 250,
    });
    // Ready is the last status write; the owned objects' events bring no other write of the bucket.
    const stored = [...(await storedBuckets(cp, ns)).values()];
    const totals = stored.map((s) => Buffer.byteLength(s, 'utf8'));
    const first = stored[0] ?? '';
    console.log(
      `stored StorageBucket bytes over ${n} Ready buckets: min ${Math.min(...totals)}, max ${Math.max(...totals)}, mean ${Math.round(totals.reduce((a, b) => a + b, 0) / n)}`,
    );
    console.log('\nthe first, by part:');
    for (const [k, v] of Object.entries(breakdownFigures(byteBreakdown(first)))) console.log(`  ${String(v).padStart(5)}  ${k}`);
    const b = byteBreakdown(first);
    console.log('\nannotations:');
    for (const [k, v] of Object.entries(b.annotations)) console.log(`  ${String(v).padStart(5)}  ${k}`);
    const obj = JSON.parse(first) as {
      metadata: { managedFields?: Array<{ manager?: string; operation?: string; subresource?: string; fieldsV1?: unknown }> };
    };
    for (const e of obj.metadata.managedFields ?? []) {
      console.log(`\n${[e.manager, e.operation, e.subresource].filter(Boolean).join(' ')} (${Buffer.byteLength(JSON.stringify(e))} bytes):`);
      for (const p of managedPaths(e.fieldsV1)) console.log(`  ${p}`);
    }
    if (values.print) console.log(`\n${JSON.stringify(JSON.parse(first), null, 2)}`);
  } finally {
    await stack?.stop();
    await cp?.stop();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
