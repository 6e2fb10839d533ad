/**
 * The plugin's I/O against the API server, through the operator's own client
 * (operator/runtime: KubeClient, loadRestConfig) and kinds (operator/bucket/kinds.ts): the
 * connection as kubectl users expect it, one StorageBucket's snapshot, lists for the report
 * and plain-text reads (Pod logs, metrics through the API server's Service proxy).
 */
import { homedir } from 'node:os';
import type { V1Secret, V1Service } from '@kubernetes/client-node';
import type { BucketProviderConfig, StorageBucket } from '../operator/api/v1';
import { PROVIDER_CONFIG, SECRET, SERVICE, STORAGE_BUCKET } from '../operator/bucket/kinds';
import { accessSecretName, serviceName } from '../operator/bucket/names';
import { ApiError, isNotFound } from '../operator/runtime/api-errors';
import { KubeClient } from '../operator/runtime/client';
import { EVENT_KIND, type EventObject } from '../operator/runtime/events';
import { loadRestConfig } from '../operator/runtime/load-config';
import type { RestConfig } from '../operator/runtime/rest-config';
import { Transport } from '../operator/runtime/transport';
import type { KubeObject, ResourceKind } from '../operator/runtime/types';
import { CliError, ExitCode } from './exit-codes';
import { credentialFacts, ownedFacts, timeText, type CredentialFacts, type EventFacts, type Lookup, type Snapshot } from './snapshot';

/** Sent as User-Agent and recorded as the field manager of the plugin's edits. */
export const FIELD_MANAGER = 'kubectl-bucket';

/** A connection to the API server and the namespace commands default to. */
export interface Kube {
  readonly client: KubeClient;
  readonly transport: Transport;
  readonly config: RestConfig;
  /** `-n`, else the context's namespace, else `default`. */
  readonly namespace: string;
  close(): void;
}

/** Connects as kubectl would for these flags: `--kubeconfig`, `$KUBECONFIG`, in-cluster, `~/.kube/config`; `--context`, `-n`. */
export function connectKube(flags: { kubeconfig?: string; context?: string; namespace?: string }, env: NodeJS.ProcessEnv = process.env): Kube {
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
  const opts = { restConfig: config, requestTimeoutMs: 15_000, userAgent: FIELD_MANAGER, qps: 0 };
  const client = new KubeClient(opts);
  const transport = new Transport(opts);
  return {
    client,
    transport,
    config,
    namespace: flags.namespace ?? config.namespace ?? 'default',
    close: () => {
      client.close();
      transport.close();
    },
  };
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

/** Reads the StorageBucket; a missing one is `CliError(NOT_FOUND)`. */
export async function getBucket(kube: Kube, namespace: string, name: string): Promise<StorageBucket> {
  try {
    return await kube.client.get<StorageBucket & KubeObject>(STORAGE_BUCKET, namespace, name);
  } catch (err) {
    if (isNotFound(err))
      throw new CliError(ExitCode.NOT_FOUND, `Error from server (NotFound): storagebucket "${name}" not found in namespace "${namespace}"`);
    throw apiFailure(err, kube.config.server);
  }
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

/** Events of `namespace` about the objects `about` names (kind/name), newest first; none when Events may not be read. */
export async function eventsAbout(kube: Kube, namespace: string, about: ReadonlySet<string>): Promise<EventFacts[]> {
  let items: EventObject[];
  try {
    items = (await kube.client.list<EventObject>(EVENT_KIND, { namespace })).items;
  } catch (err) {
    if (isForbidden(err)) return [];
    throw err;
  }
  return items
    .map(eventFacts)
    .filter((e) => about.has(`${e.kind}/${e.name}`))
    .sort((a, b) => Date.parse(b.time) - Date.parse(a.time));
}

/** Everything trace and why judge about `namespace/name`, read in parallel. Secret values are dropped on arrival. */
export async function gatherSnapshot(kube: Kube, namespace: string, name: string, now: () => Date = () => new Date()): Promise<Snapshot> {
  const bucket = await getBucket(kube, namespace, name);
  try {
    const configName = bucket.spec.providerRef.name;
    const secretOf = async (l: Lookup<V1Secret>): Promise<V1Secret | undefined | 'forbidden'> =>
      l.state === 'found' ? l.object : l.state === 'forbidden' ? 'forbidden' : undefined;
    const [config, access, service, events] = await Promise.all([
      lookup<BucketProviderConfig & KubeObject>(kube, PROVIDER_CONFIG, namespace, configName),
      lookup<V1Secret & KubeObject>(kube, SECRET, namespace, accessSecretName(name)).then(secretOf),
      lookup<V1Service & KubeObject>(kube, SERVICE, namespace, serviceName(name)),
      eventsAbout(kube, namespace, new Set([`StorageBucket/${name}`, `BucketProviderConfig/${configName}`])),
    ]);
    let credentials: CredentialFacts | undefined;
    if (config.state === 'found') {
      const secret = await lookup<V1Secret & KubeObject>(kube, SECRET, namespace, config.object.spec.secretRef.name);
      // credentialFacts keeps presence, label and key name; the value goes out of scope here.
      credentials = credentialFacts(config.object, await secretOf(secret));
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
      events,
    };
  } catch (err) {
    throw apiFailure(err, kube.config.server);
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
