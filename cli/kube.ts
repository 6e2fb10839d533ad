/**
 * The plugin's I/O against the API server, through the operator's own client
 * (operator/runtime: KubeClient, loadRestConfig): the connection as kubectl users expect it,
 * discovery (cli/discovery.ts decides where each kind is read), reads in the served preferred
 * version converted to v1 in process (cli/as-v1.ts), one StorageBucket's snapshot, lists for
 * `-A` and the report, and plain-text reads (Pod logs, metrics through the Service proxy).
 */
import { homedir } from 'node:os';
import type { V1Secret, V1Service } from '@kubernetes/client-node';
import type { BucketProviderConfig, StorageBucket } from '../operator/api/v1';
import { SECRET, SERVICE } from '../operator/bucket/kinds';
import { accessSecretName, serviceName } from '../operator/bucket/names';
import { MANAGED_BY_SELECTOR } from '../operator/bucket/owned-identity';
import { API_VERSIONS } from '../operator/api/version-names';
import { ApiError, isNotFound } from '../operator/runtime/api-errors';
import { realClock, type Clock } from '../operator/runtime/clock';
import { KubeClient, type ListOptions } from '../operator/runtime/client';
import { EVENT_KIND, type EventObject } from '../operator/runtime/event-object';
import { loadRestConfig } from '../operator/runtime/load-config';
import type { RestConfig } from '../operator/runtime/rest-config';
import { Transport } from '../operator/runtime/transport';
import type { KubeObject, ResourceKind } from '../operator/runtime/types';
import { asV1 } from './as-v1';
import { GROUP_PATH, conversionUnavailable, isConversionFailure, servedKinds, type ServedKinds, type Where } from './discovery';
import { CliError, ExitCode } from './exit-codes';
import { credentialFacts, ownedFacts, timeText, type CredentialFacts, type EventFacts, type Lookup, type Snapshot } from './snapshot';

/** Sent as User-Agent and recorded as the field manager of the plugin's edits. */
export const FIELD_MANAGER = 'kubectl-bucket';

/**
 * The runtime's clock, read from `process.hrtime` rather than `performance.now()`: the first
 * read of the `performance` global loads Node's perf_hooks modules, about 3 % of a `why`'s CPU
 * (bench/cli-startup.ts), for request deadlines a monotonic millisecond count serves as well.
 */
export const CLI_CLOCK: Clock = { ...realClock, now: () => Number(process.hrtime.bigint()) / 1e6 };

/** The verbs of the operator's client the plugin uses (a plain object in tests). */
export type KubeApi = Pick<KubeClient, 'get' | 'list' | 'watch' | 'patch'>;

/** Raw reads of the API server: discovery documents, logs, proxied metrics. */
export type RawApi = Pick<Transport, 'json' | 'stream'>;

/** A connection to the API server, the namespace commands default to, and where the operator's kinds are served. */
export interface Kube extends Where {
  readonly client: KubeApi;
  readonly transport: RawApi;
  /** Where the config came from (a kubeconfig path, or `in-cluster`). */
  readonly source: string;
  /** `-n`, else the context's namespace, else `default`. */
  readonly namespace: string;
  readonly served: ServedKinds;
  close(): void;
}

/**
 * Connects as kubectl would for these flags (`--kubeconfig`, `$KUBECONFIG`, in-cluster,
 * `~/.kube/config`; `--context`, `-n`) and runs discovery: a cluster that does not serve the
 * operator's kinds ends here with `CliError(NOT_SERVED)`.
 */
export async function connectKube(
  flags: { kubeconfig?: string; context?: string; namespace?: string },
  env: NodeJS.ProcessEnv = process.env,
): Promise<Kube> {
  let config: RestConfig;
  try {
    config = loadRestConfig({
      ...(flags.kubeconfig ? { kubeconfig: flags.kubeconfig } : {}),
      ...(flags.context ? { context: flags.context } : {}),
      env,
      homeDir: homedir(),
    });
  } catch (err) {
    throw new CliError(ExitCode.ERROR, err instanceof Error ? err.message : String(err));
  }
  // Interactive: fail fast rather than wait the operator's 30 s, and never queue behind a QPS limit.
  const opts = { restConfig: config, requestTimeoutMs: 15_000, userAgent: FIELD_MANAGER, qps: 0, clock: CLI_CLOCK };
  // One transport for discovery, the verbs and raw reads: one TLS handshake and one HTTP/2
  // session instead of one each (about 7 % of a `why`'s CPU, bench/cli-startup.ts).
  const transport = new Transport(opts);
  const client = new KubeClient({ ...opts, transport });
  const close = () => transport.close();
  const where: Where = { context: flags.context ?? config.context ?? config.source, server: config.server };
  try {
    const served = await discover(transport, where);
    return { ...where, client, transport, source: config.source, namespace: flags.namespace ?? config.namespace ?? 'default', served, close };
  } catch (err) {
    close();
    throw err;
  }
}

/** Reads the operator's API group and its versions' resource lists (in parallel) and decides where each kind is read. */
export async function discover(raw: Pick<RawApi, 'json'>, where: Where): Promise<ServedKinds> {
  const doc = async (path: string): Promise<unknown> => {
    try {
      return await raw.json<unknown>({ verb: 'GET', method: 'GET', path });
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw apiFailure(err, where.server);
    }
  };
  const [group, ...lists] = await Promise.all([doc(GROUP_PATH), ...API_VERSIONS.map((v) => doc(`${GROUP_PATH}/${v}`))]);
  return servedKinds(group, new Map(API_VERSIONS.map((v, i) => [v, lists[i]])), where);
}

/** Turns an API or transport failure into a one-line `CliError`, as kubectl words it. */
export function apiFailure(err: unknown, server: string): CliError {
  if (err instanceof CliError) return err;
  if (err instanceof ApiError) {
    return new CliError(err.status === 404 ? ExitCode.NOT_FOUND : ExitCode.ERROR, `Error from server (${err.reason}): ${err.message}`);
  }
  const detail = err instanceof Error ? err.message : String(err);
  return new CliError(ExitCode.ERROR, `cannot reach the API server at ${server}: ${detail}`);
}

function isForbidden(err: unknown): boolean {
  return err instanceof ApiError && (err.status === 403 || err.status === 401);
}

/**
 * Runs `read` in each of `kinds` (one kind's served versions, best first) until one answers
 * other than "the conversion webhook failed": an object stored in another version needs the
 * webhook to be served in this one, never in its own. When every version failed that way the
 * error names the webhook.
 */
export async function inServedVersion<R>(kinds: readonly ResourceKind[], what: string, read: (kind: ResourceKind) => Promise<R>): Promise<R> {
  let first: Error | undefined;
  for (const kind of kinds) {
    try {
      return await read(kind);
    } catch (err) {
      if (!isConversionFailure(err)) throw err;
      first ??= err;
    }
  }
  const [kind] = kinds;
  if (!kind || !first) throw new Error(`no served version to read ${what} in`);
  throw conversionUnavailable(
    what,
    kind,
    kinds.map((k) => k.version),
    first.message,
  );
}

/** A StorageBucket as v1, and the served version it was read in (where its edits and watches go). */
export interface ReadBucket {
  readonly bucket: StorageBucket;
  readonly kind: ResourceKind;
}

/** Reads the StorageBucket; a missing one is `CliError(NOT_FOUND)`. */
export async function readBucket(kube: Kube, namespace: string, name: string): Promise<ReadBucket> {
  try {
    return await inServedVersion(kube.served.buckets, `storagebucket ${namespace}/${name}`, async (kind) => ({
      bucket: await asV1<StorageBucket>(await kube.client.get<StorageBucket & KubeObject>(kind, namespace, name)),
      kind,
    }));
  } catch (err) {
    if (isNotFound(err))
      throw new CliError(ExitCode.NOT_FOUND, `Error from server (NotFound): storagebucket "${name}" not found in namespace "${namespace}"`);
    throw apiFailure(err, kube.server);
  }
}

/** Lists a kind of the operator's (`kinds`: its served versions) in its served form, and the version that answered. */
export async function listServed(
  kube: Kube,
  kinds: readonly ResourceKind[],
  opts: ListOptions = {},
): Promise<{ items: KubeObject[]; kind: ResourceKind }> {
  const where = opts.namespace ? `in namespace ${opts.namespace}` : 'in all namespaces';
  return inServedVersion(kinds, `${kinds[0]?.plural ?? 'objects'} ${where}`, async (kind) => ({
    items: (await kube.client.list<KubeObject>(kind, opts)).items,
    kind,
  }));
}

/** GETs an object: found, missing (404) or forbidden (403); anything else throws. */
export async function lookup<T extends KubeObject>(kube: Kube, kind: ResourceKind, namespace: string, name: string): Promise<Lookup<T>> {
  try {
    return { state: 'found', object: await kube.client.get<T>(kind, namespace, name) };
  } catch (err) {
    if (isNotFound(err)) return { state: 'missing' };
    if (isForbidden(err)) return { state: 'forbidden', message: (err as ApiError).message };
    throw err;
  }
}

/** Looks a BucketProviderConfig up in its served versions, as v1. */
async function lookupConfig(kube: Kube, namespace: string, name: string): Promise<Lookup<BucketProviderConfig>> {
  const l = await inServedVersion(kube.served.configs, `bucketproviderconfig ${namespace}/${name}`, (kind) =>
    lookup<BucketProviderConfig & KubeObject>(kube, kind, namespace, name),
  );
  return l.state === 'found' ? { state: 'found', object: await asV1<BucketProviderConfig>(l.object) } : l;
}

/** The Event as the trace shows it. */
export function eventFacts(e: EventObject & { deprecatedLastTimestamp?: string; deprecatedCount?: number }): EventFacts {
  const time = e.series?.lastObservedTime ?? e.eventTime ?? e.deprecatedLastTimestamp ?? timeText(e.metadata?.creationTimestamp ?? '');
  return {
    type: e.type ?? 'Normal',
    reason: e.reason ?? '',
    note: e.note ?? '',
    kind: e.regarding?.['kind'] ?? '',
    name: e.regarding?.['name'] ?? '',
    time,
    count: e.series?.count ?? e.deprecatedCount ?? 1,
  };
}

/** Where a snapshot's surroundings come from: one GET each, or lists made once for many buckets. */
export interface Reads {
  config(namespace: string, name: string): Promise<Lookup<BucketProviderConfig>>;
  secret(namespace: string, name: string): Promise<Lookup<V1Secret>>;
  service(namespace: string, name: string): Promise<Lookup<V1Service>>;
  /** Every Event of `namespace`; none when Events may not be read. */
  events(namespace: string): Promise<readonly EventFacts[]>;
}

/** Memoizes `f` by its string argument, for the life of one `Reads`. */
function once<T>(f: (key: string) => Promise<T>): (key: string) => Promise<T> {
  const seen = new Map<string, Promise<T>>();
  return (key) => {
    let p = seen.get(key);
    if (!p) seen.set(key, (p = f(key)));
    return p;
  };
}

/** Reads by GET; each namespace's Events are listed once. */
export function directReads(kube: Kube): Reads {
  return {
    config: (ns, name) => lookupConfig(kube, ns, name),
    secret: (ns, name) => lookup<V1Secret & KubeObject>(kube, SECRET, ns, name),
    service: (ns, name) => lookup<V1Service & KubeObject>(kube, SERVICE, ns, name),
    events: once(async (ns) => {
      try {
        return (await kube.client.list<EventObject>(EVENT_KIND, { namespace: ns })).items.map(eventFacts);
      } catch (err) {
        if (isForbidden(err)) return [];
        throw err;
      }
    }),
  };
}

function keyOf(o: KubeObject): string {
  return `${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`;
}

/**
 * Reads for many buckets across namespaces: configs, the operator's Secrets and Services (by
 * its managed-by label) and Events are each listed once over all namespaces; whatever a list
 * does not hold (not readable cluster-wide, not labelled, not there) is read by GET as
 * {@link directReads} would, so every snapshot is the one `trace NAME` would show.
 */
export async function clusterReads(kube: Kube): Promise<Reads> {
  const direct = directReads(kube);
  const listed = async (read: () => Promise<KubeObject[]>): Promise<Map<string, KubeObject>> => {
    try {
      return new Map((await read()).map((o) => [keyOf(o), o]));
    } catch (err) {
      if (isForbidden(err) || isConversionFailure(err) || err instanceof CliError) return new Map();
      throw err;
    }
  };
  const [configs, secrets, services, events] = await Promise.all([
    listed(async () => (await listServed(kube, kube.served.configs)).items),
    listed(async () => (await kube.client.list<KubeObject>(SECRET, { labelSelector: MANAGED_BY_SELECTOR })).items),
    listed(async () => (await kube.client.list<KubeObject>(SERVICE, { labelSelector: MANAGED_BY_SELECTOR })).items),
    kube.client.list<EventObject>(EVENT_KIND).then(
      (l) => l.items,
      (err: unknown) => {
        if (isForbidden(err)) return undefined;
        throw err;
      },
    ),
  ]);
  // Many buckets share a config and its credential Secret: what is read by GET is read once.
  const from = <T>(index: Map<string, KubeObject>, get: (ns: string, name: string) => Promise<Lookup<T>>) => {
    const fallback = once((key) => get(key.slice(0, key.indexOf('/')), key.slice(key.indexOf('/') + 1)));
    return async (ns: string, name: string): Promise<Lookup<T>> => {
      const o = index.get(`${ns}/${name}`);
      return o ? { state: 'found', object: o as T } : fallback(`${ns}/${name}`);
    };
  };
  const config = from<BucketProviderConfig>(configs, direct.config);
  const byNamespace = new Map<string, EventFacts[]>();
  for (const e of events ?? []) {
    const ns = e.metadata?.namespace ?? '';
    byNamespace.set(ns, [...(byNamespace.get(ns) ?? []), eventFacts(e)]);
  }
  return {
    config: async (ns, name) => {
      const l = await config(ns, name);
      return l.state === 'found' ? { state: 'found', object: await asV1<BucketProviderConfig>(l.object) } : l;
    },
    secret: from(secrets, direct.secret),
    service: from(services, direct.service),
    events: events ? async (ns) => byNamespace.get(ns) ?? [] : direct.events,
  };
}

/** Everything trace and why judge about `bucket` (as v1), read in parallel. Secret values are dropped on arrival. */
export async function snapshotOf(
  kube: Pick<Kube, 'server'>,
  bucket: StorageBucket,
  reads: Reads,
  now: () => Date = () => new Date(),
): Promise<Snapshot> {
  const namespace = bucket.metadata.namespace ?? '';
  const name = bucket.metadata.name ?? '';
  try {
    const configName = bucket.spec.providerRef.name;
    const secretOf = (l: Lookup<V1Secret>): V1Secret | undefined | 'forbidden' =>
      l.state === 'found' ? l.object : l.state === 'forbidden' ? 'forbidden' : undefined;
    const about = new Set([`StorageBucket/${name}`, `BucketProviderConfig/${configName}`]);
    const [config, access, service, events] = await Promise.all([
      reads.config(namespace, configName),
      reads.secret(namespace, accessSecretName(name)).then(secretOf),
      reads.service(namespace, serviceName(name)),
      reads.events(namespace),
    ]);
    let credentials: CredentialFacts | undefined;
    if (config.state === 'found') {
      // credentialFacts keeps presence, label and key name; the value goes out of scope here.
      credentials = credentialFacts(config.object, secretOf(await reads.secret(namespace, config.object.spec.secretRef.name)));
    }
    return {
      now: now(),
      bucket,
      config,
      ...(credentials ? { credentials } : {}),
      accessSecret: ownedFacts(
        'Secret',
        accessSecretName(name),
        bucket,
        access === undefined || access === 'forbidden' ? access : { metadata: access.metadata },
      ),
      service: ownedFacts(
        'Service',
        serviceName(name),
        bucket,
        service.state === 'found' ? service.object : service.state === 'missing' ? undefined : 'forbidden',
      ),
      events: events.filter((e) => about.has(`${e.kind}/${e.name}`)).sort((a, b) => Date.parse(b.time) - Date.parse(a.time)),
    };
  } catch (err) {
    throw apiFailure(err, kube.server);
  }
}

/** Reads `path` of the API server as text (Pod logs, proxied metrics), at most `maxBytes` (the rest is cut). */
export async function getText(kube: Kube, path: string, maxBytes = 8 * 1024 * 1024, timeoutMs = 20_000): Promise<string> {
  const stream = await kube.transport.stream({ verb: 'GET', method: 'GET', path, timeoutMs }, `GET ${path.split('?')[0]}`);
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for (;;) {
      const next = await stream.chunks.next();
      if (next.done) break;
      chunks.push(next.value);
      size += next.value.length;
      if (size >= maxBytes) break;
    }
  } finally {
    stream.close();
  }
  return Buffer.concat(chunks).subarray(0, maxBytes).toString('utf8');
}
