/** Small kubectl-based helpers for integration tests: read objects as JSON, apply YAML, wait. */
import { randomBytes } from 'node:crypto';
import { CoreV1Api } from '@kubernetes/client-node';
import { CREDENTIALS_SECRET_LABEL, CREDENTIALS_SECRET_TYPE } from '../../operator/api/v1';
import type { ControlPlane } from './control-plane';
import { eventually } from './eventually';

/** Runs kubectl and throws with its stderr on failure. */
export async function kubectlOk(cp: ControlPlane, args: string[], input?: string): Promise<string> {
  const res = await cp.kubectl(args, input === undefined ? {} : { input });
  if (res.code !== 0) throw new Error(`kubectl ${args.join(' ')}: ${res.stderr.trim()}`);
  return res.stdout;
}

/** The object as JSON, or undefined when it does not exist. */
export async function getJson<T = Record<string, unknown>>(cp: ControlPlane, kind: string, name: string, ns: string): Promise<T | undefined> {
  const res = await cp.kubectl(['get', kind, name, '-n', ns, '-o', 'json']);
  if (res.code !== 0) {
    if (/NotFound|not found/.test(res.stderr)) return undefined;
    throw new Error(`kubectl get ${kind} ${name}: ${res.stderr.trim()}`);
  }
  return JSON.parse(res.stdout) as T;
}

/** Applies a manifest given as an object or YAML text. */
export async function apply(cp: ControlPlane, manifest: unknown): Promise<void> {
  await kubectlOk(cp, ['apply', '-f', '-'], typeof manifest === 'string' ? manifest : JSON.stringify(manifest));
}

/**
 * Creates a namespace named `<prefix>-<random suffix>` (the apiserver picks the suffix via
 * generateName, so names never collide between tests or runs) and returns its name.
 */
export async function freshNamespace(cp: ControlPlane, prefix: string, opts: { labels?: Record<string, string> } = {}): Promise<string> {
  const core = cp.kubeConfig().makeApiClient(CoreV1Api);
  const ns = await core.createNamespace({ body: { metadata: { generateName: `${prefix}-`, labels: opts.labels } } });
  const name = ns.metadata?.name;
  if (!name) throw new Error(`namespace created from generateName ${prefix}- has no name`);
  return name;
}

/** Waits until `predicate` holds for the object (which must exist). */
export async function waitForObject<T>(
  cp: ControlPlane,
  kind: string,
  name: string,
  ns: string,
  predicate: (obj: T) => boolean,
  description: string,
  timeoutMs = 60_000,
): Promise<T> {
  return eventually(
    async () => {
      const obj = await getJson<T>(cp, kind, name, ns);
      return obj !== undefined && predicate(obj) ? obj : undefined;
    },
    { description, timeoutMs, intervalMs: 250 },
  );
}

/** Waits until the object's condition `type` has `reason`; returns the object. */
export async function waitForReason<T extends { status?: { conditions?: Array<{ type: string; status: string; reason: string; message: string }> } }>(
  cp: ControlPlane,
  kind: string,
  name: string,
  ns: string,
  type: string,
  reason: string,
): Promise<T> {
  return waitForObject<T>(cp, kind, name, ns, (x) => condition(x, type)?.reason === reason, `${kind} ${ns}/${name} ${type} reason ${reason}`);
}

/** Waits until the object no longer exists. */
export async function waitForGone(cp: ControlPlane, kind: string, name: string, ns: string, timeoutMs = 60_000): Promise<void> {
  await eventually(async () => (await getJson(cp, kind, name, ns)) === undefined, {
    description: `${kind} ${ns}/${name} to be gone`,
    timeoutMs,
    intervalMs: 250,
  });
}

/** Shape of a StorageBucket as read in tests. */
export interface BucketJson {
  metadata: {
    name: string;
    uid: string;
    finalizers?: string[];
    deletionTimestamp?: string;
    generation: number;
    annotations?: Record<string, string>;
  };
  spec: { sizeGB: number; region: string };
  status?: {
    id?: string;
    phase?: string;
    sizeGB?: number;
    endpoint?: string;
    idempotencyKey?: string;
    observedGeneration?: number;
    lastHandledReconcileAt?: string;
    conditions?: Array<{ type: string; status: string; reason: string; message: string }>;
  };
}

/** The condition of `type`, if any. */
export function condition(
  b: BucketJson | { status?: { conditions?: Array<{ type: string; status: string; reason: string; message: string }> } },
  type: string,
) {
  return b.status?.conditions?.find((c) => c.type === type);
}

/** A StorageBucket manifest. */
export function bucketManifest(ns: string, name: string, spec: Record<string, unknown> = {}, annotations?: Record<string, string>) {
  return {
    apiVersion: 'storage.avalonhosting.example/v1',
    kind: 'StorageBucket',
    metadata: { name, namespace: ns, ...(annotations ? { annotations } : {}) },
    spec: { region: 'us-east-1', sizeGB: 10, providerRef: { name: 'provider' }, ...spec },
  };
}

/** A provider-credentials Secret `name` in `ns` holding `apiKey`, labelled as users are told to (unless `labelled: false`). */
export function credentialsSecretManifest(ns: string, name: string, apiKey: string, opts: { labelled?: boolean } = {}) {
  const labels = opts.labelled === false ? {} : { labels: { [CREDENTIALS_SECRET_LABEL]: CREDENTIALS_SECRET_TYPE } };
  return { apiVersion: 'v1', kind: 'Secret', metadata: { name, namespace: ns, ...labels }, stringData: { apiKey } };
}

/**
 * The provider Secret and BucketProviderConfig named `provider` in `ns`. The Secret carries
 * the credentials label, as users are told to set it; `labelled: false` leaves it off. The mock
 * provider speaks plain http, which a config must allow explicitly (`insecure: true`).
 */
export function providerManifests(ns: string, endpoint: string, apiKey: string, name = 'provider', opts: { labelled?: boolean } = {}) {
  return [
    credentialsSecretManifest(ns, `${name}-key`, apiKey, opts),
    {
      apiVersion: 'storage.avalonhosting.example/v1',
      kind: 'BucketProviderConfig',
      metadata: { name, namespace: ns },
      spec: { endpoint, secretRef: { name: `${name}-key`, key: 'apiKey' }, ...(endpoint.startsWith('http://') ? { insecure: true } : {}) },
    },
  ];
}

const RECONCILE_REQUESTED = 'storage.avalonhosting.example/reconcile-requested-at';

/**
 * The barrier before a negative check on a StorageBucket: asks for a reconcile through the
 * reconcile-requested-at annotation (a fresh value each call) and waits until the operator
 * echoes it in `status.lastHandledReconcileAt`. Every reconcile that gets as far as its
 * status (paused, blocked or failed ones too) echoes it, and it reads the object as it is
 * after the annotation, so whatever the test changed before this call has been handled by a
 * reconcile by the time it returns: "nothing happened" is then a fact, not a hope.
 */
export async function reconciledAfterNow(cp: ControlPlane, ns: string, name: string, timeoutMs = 30_000): Promise<BucketJson> {
  const marker = `barrier-${Date.now()}-${randomBytes(3).toString('hex')}`;
  await kubectlOk(cp, ['annotate', 'sbucket', name, '-n', ns, `${RECONCILE_REQUESTED}=${marker}`, '--overwrite']);
  return waitForObject<BucketJson>(
    cp,
    'sbucket',
    name,
    ns,
    (b) => b.status?.lastHandledReconcileAt === marker,
    `StorageBucket ${ns}/${name} to handle reconcile request ${marker}`,
    timeoutMs,
  );
}
