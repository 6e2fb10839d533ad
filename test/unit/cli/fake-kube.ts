/**
 * A plain-object `Kube` for the plugin's commands: objects stored in the version they were
 * written in, served in each version the world serves, converted by the operator's own
 * converters as the API server's webhook would, or refused as the API server refuses when the
 * webhook is down. Discovery documents, label selectors and Pod logs as the API server gives
 * them; every request is recorded (`requests`), so a test can say which version was read.
 */
import { CliError, type ExitCode } from '../../../cli/exit-codes';
import type { Kube } from '../../../cli/kube';
import type { Terminal } from '../../../cli/terminal';
import { convert } from '../../../operator/api/convert';
import { GROUP } from '../../../operator/api/v1/group';
import { MANAGED_BY_LABEL, MANAGED_BY_VALUE } from '../../../operator/api/v1/well-known';
import { ApiError } from '../../../operator/runtime/api-errors';
import type { ListOptions } from '../../../operator/runtime/client';
import type { TransportRequest } from '../../../operator/runtime/transport';
import type { KubeObject, ResourceKind } from '../../../operator/runtime/types';
import { config, credentialSecret, readyBucket } from './fixtures';

/** What the fake API server holds and how it behaves. */
export interface FakeWorld {
  /** Versions of the operator's group served for both kinds, preferred first; empty: no CRD. */
  readonly versions: readonly string[];
  /** Objects as stored, each with apiVersion and kind. */
  readonly objects: readonly KubeObject[];
  /** The CRD's conversion webhook is down: an object is served only in the version it is stored in. */
  readonly webhookDown?: boolean;
  /** Pod logs by `pod/container`. */
  readonly logs?: Readonly<Record<string, string>>;
  /** Other plain-text answers (metrics through the Service proxy) by path. */
  readonly texts?: Readonly<Record<string, string>>;
}

/** The fake's connection facts, as a kubeconfig would give them. */
export const WHERE = { context: 'kind-prod', server: 'https://prod.example:6443' } as const;

const PLURALS: Readonly<Record<string, string>> = { StorageBucket: 'storagebuckets', BucketProviderConfig: 'bucketproviderconfigs' };

/** What the API server answers when a conversion webhook is unreachable. */
export function webhookDownMessage(apiVersion: string, kind: string): string {
  return `conversion webhook for ${apiVersion}, Kind=${kind} failed: Post "https://bucketoperator-webhook.bucketoperator-system.svc:443/convert?timeout=30s": service "bucketoperator-webhook" not found`;
}

function notFound(what: string): ApiError {
  return new ApiError(404, 'NotFound', what);
}

function apiVersionOf(kind: ResourceKind): string {
  return kind.group === '' ? kind.version : `${kind.group}/${kind.version}`;
}

function matches(obj: KubeObject, selector: string | undefined): boolean {
  if (!selector) return true;
  return selector.split(',').every((term) => {
    const [k, v] = term.split('=');
    return obj.metadata?.labels?.[k ?? ''] === v;
  });
}

/** The discovery documents of `world`: the APIGroup and one APIResourceList per served version. */
export function discoveryDoc(world: Pick<FakeWorld, 'versions'>, path: string): unknown {
  const [preferred] = world.versions;
  if (path === `/apis/${GROUP}` && preferred) {
    return {
      kind: 'APIGroup',
      name: GROUP,
      versions: world.versions.map((v) => ({ groupVersion: `${GROUP}/${v}`, version: v })),
      preferredVersion: { groupVersion: `${GROUP}/${preferred}`, version: preferred },
    };
  }
  const version = path.startsWith(`/apis/${GROUP}/`) ? path.slice(`/apis/${GROUP}/`.length) : undefined;
  if (version && world.versions.includes(version)) {
    return {
      kind: 'APIResourceList',
      groupVersion: `${GROUP}/${version}`,
      resources: Object.entries(PLURALS).flatMap(([kind, name]) => [
        { name, kind, namespaced: true, verbs: ['get', 'list', 'watch', 'patch'] },
        { name: `${name}/status`, kind, namespaced: true, verbs: ['get', 'patch'] },
      ]),
    };
  }
  throw notFound('the server could not find the requested resource');
}

/** A `Kube` over `world`; `requests` records `VERB path-like` lines, `patches` the edits sent. */
export function fakeKube(world: FakeWorld): Kube & { requests: string[]; patches: { kind: ResourceKind; name: string; patch: unknown }[] } {
  const requests: string[] = [];
  const patches: { kind: ResourceKind; name: string; patch: unknown }[] = [];
  const serve = (kind: ResourceKind, obj: KubeObject): KubeObject => {
    const want = apiVersionOf(kind);
    const copy = structuredClone(obj);
    if (obj.apiVersion === want || kind.group !== GROUP) return { ...copy, apiVersion: obj.apiVersion ?? want };
    if (world.webhookDown) throw new ApiError(500, 'InternalError', webhookDownMessage(want, kind.kind));
    const converted = convert(copy, want);
    if (!converted.ok) throw new Error(converted.message);
    return converted.object as unknown as KubeObject;
  };
  const checkServed = (kind: ResourceKind) => {
    if (kind.group === GROUP && !world.versions.includes(kind.version)) throw notFound('the server could not find the requested resource');
  };
  const of = (kind: ResourceKind, o: KubeObject) => o.kind === kind.kind;
  const client: Kube['client'] = {
    get: async <T extends KubeObject>(kind: ResourceKind, namespace: string, name: string): Promise<T> => {
      requests.push(`GET ${apiVersionOf(kind)} ${kind.plural} ${namespace}/${name}`);
      checkServed(kind);
      const obj = world.objects.find((o) => of(kind, o) && o.metadata?.namespace === namespace && o.metadata?.name === name);
      if (!obj) throw notFound(`${kind.plural} "${name}" not found`);
      return serve(kind, obj) as T;
    },
    list: async <T extends KubeObject>(kind: ResourceKind, opts: ListOptions = {}) => {
      requests.push(`LIST ${apiVersionOf(kind)} ${kind.plural} ${opts.namespace ?? '*'}${opts.labelSelector ? ` -l ${opts.labelSelector}` : ''}`);
      checkServed(kind);
      const items = world.objects
        .filter((o) => of(kind, o) && (!opts.namespace || o.metadata?.namespace === opts.namespace) && matches(o, opts.labelSelector))
        .map((o) => serve(kind, o));
      return { items: items as T[], resourceVersion: '1' };
    },
    watch: () => {
      throw new Error('the fake does not watch');
    },
    patch: async <T extends KubeObject>(kind: ResourceKind, namespace: string, name: string, patch: unknown): Promise<T> => {
      requests.push(`PATCH ${apiVersionOf(kind)} ${kind.plural} ${namespace}/${name}`);
      checkServed(kind);
      const obj = world.objects.find((o) => of(kind, o) && o.metadata?.namespace === namespace && o.metadata?.name === name);
      if (!obj) throw notFound(`${kind.plural} "${name}" not found`);
      serve(kind, obj);
      patches.push({ kind, name, patch });
      return obj as T;
    },
  };
  const transport: Kube['transport'] = {
    json: async <T>(r: TransportRequest): Promise<T> => {
      requests.push(`GET ${r.path}`);
      return discoveryDoc(world, r.path) as T;
    },
    stream: async (r: TransportRequest) => {
      requests.push(`STREAM ${r.path.split('?')[0]}`);
      const m = /^\/api\/v1\/namespaces\/[^/]+\/pods\/([^/]+)\/log\?container=([^&]+)/.exec(r.path);
      const text = m ? world.logs?.[`${m[1]}/${m[2]}`] : world.texts?.[r.path];
      if (text === undefined) throw notFound('no such log');
      const chunks = [Buffer.from(text)][Symbol.iterator]();
      return { chunks: { next: async () => chunks.next() } as AsyncIterator<Buffer>, close: () => undefined };
    },
  };
  // Where discovery would send reads (built here, not by cli/discovery.ts, which has tests of its own).
  const kinds = (kind: string): ResourceKind[] =>
    world.versions
      .filter((v) => v === 'v1' || v === 'v2')
      .map((version) => ({ group: GROUP, version, kind, plural: PLURALS[kind]!, namespaced: true }));
  const served = { buckets: kinds('StorageBucket'), configs: kinds('BucketProviderConfig') };
  const kube = {
    ...WHERE,
    client,
    transport,
    source: '/home/user/.kube/config',
    namespace: 'team-a',
    served,
    close: () => undefined,
    requests,
    patches,
    // What the plugin before discovery read the server URL from, so these tests also run against it.
    config: { server: WHERE.server, source: '/home/user/.kube/config' },
  };
  return kube;
}

/** One namespace's objects as stored: the Ready bucket `logs` (fixtures.ts) and everything around it, the bucket and config in the versions given. */
export function storedObjects(opts: { bucket?: 'v1' | 'v2'; config?: 'v1' | 'v2'; namespace?: string; name?: string } = {}): KubeObject[] {
  const ns = opts.namespace ?? 'team-a';
  const name = opts.name ?? 'logs';
  const uid = `uid-${ns}-${name}`;
  const v1Bucket = readyBucket();
  v1Bucket.metadata = { ...v1Bucket.metadata, namespace: ns, name, uid };
  const v1Config = { ...config(), apiVersion: `${GROUP}/v1`, kind: 'BucketProviderConfig' };
  v1Config.metadata = { ...v1Config.metadata, namespace: ns };
  const inVersion = (o: object, v: 'v1' | 'v2' | undefined): KubeObject => {
    if (v !== 'v2') return o as KubeObject;
    const r = convert(o, `${GROUP}/v2`);
    if (!r.ok) throw new Error(r.message);
    return r.object as unknown as KubeObject;
  };
  const owner = [{ apiVersion: `${GROUP}/v1`, kind: 'StorageBucket', name, uid, controller: true }];
  const managed = { [MANAGED_BY_LABEL]: MANAGED_BY_VALUE };
  return [
    inVersion(v1Bucket, opts.bucket),
    inVersion(v1Config, opts.config),
    { ...credentialSecret(), apiVersion: 'v1', kind: 'Secret', metadata: { ...credentialSecret().metadata, namespace: ns } } as KubeObject,
    { apiVersion: 'v1', kind: 'Secret', metadata: { name: `${name}-access`, namespace: ns, labels: managed, ownerReferences: owner } },
    { apiVersion: 'v1', kind: 'Service', metadata: { name, namespace: ns, labels: managed, ownerReferences: owner } },
  ];
}

/** A terminal that records what a command prints. */
export function recorder(columns = 150): Terminal & { stdout: string; stderr: string } {
  const t = {
    stdout: '',
    stderr: '',
    isTTY: false,
    columns,
    env: {},
    out: (text: string) => {
      t.stdout += text;
    },
    err: (text: string) => {
      t.stderr += text;
    },
  };
  return t;
}

/** Runs `f`, returning its result or the `CliError` it threw (exit code and message) as a command's outcome. */
export async function outcome(f: () => Promise<ExitCode>): Promise<{ code: ExitCode; error?: string }> {
  try {
    return { code: await f() };
  } catch (err) {
    if (err instanceof CliError) return { code: err.code, error: err.message };
    throw err;
  }
}
