/**
 * A small Kubernetes REST client addressed by `ResourceKind`: the verbs (get, list, watch,
 * create, update, patch, apply, delete) and the resource paths they use.
 *
 * client-node's generated clients are per-group and cannot stream watches with bookmarks on
 * our terms (and cost about 70 MiB just to import), so the runtime talks REST itself. The
 * HTTP machinery (agent, TLS, credentials, deadlines, request counter) is in transport.ts,
 * error answers in api-errors.ts, watch frame decoding in watch-events.ts.
 */
import { isGone } from './api-errors';
import { isRecord } from './client-internal';
import { Transport, type ResponseStream, type TransportOptions, type TransportRequest } from './transport';
import type { KubeObject, ResourceKind } from './types';
import { WatchLineDecoder, decodeWatchEvent, type WatchEvent } from './watch-events';

/** Patch flavours of the API server, by the name callers use. */
export type PatchType = 'merge' | 'json' | 'strategic';

/** One RFC 6902 operation, as sent with `patch(..., 'json')`. */
export interface JsonPatchOp {
  readonly op: 'add' | 'remove' | 'replace' | 'move' | 'copy' | 'test';
  readonly path: string;
  readonly value?: unknown;
  readonly from?: string;
}

/** Options of a `KubeClient`: those of its transport (server, TLS, credentials, timeouts, metrics). */
export type KubeClientOptions = TransportOptions & {
  /** Send through this transport (and its connections) instead of one of the client's own; it was made from these options. */
  readonly transport?: Transport;
};

/** Per-call options shared by every request. */
export interface CallOptions {
  readonly signal?: AbortSignal;
  /** Overrides the client's request timeout. */
  readonly timeoutMs?: number;
}

/** Options of a write that records a field manager. */
export interface WriteOptions extends CallOptions {
  readonly fieldManager?: string;
  readonly dryRun?: boolean;
}

/** Options of `list`. */
export interface ListOptions extends CallOptions {
  /** All namespaces when empty or for cluster-scoped kinds. */
  readonly namespace?: string;
  readonly labelSelector?: string;
  readonly fieldSelector?: string;
  /** Page size; pages are fetched until the server returns no continue token. @default 500 */
  readonly limit?: number;
}

/** A complete list: every page's items plus the resourceVersion to watch from. */
export interface ListResult<T extends KubeObject> {
  readonly items: T[];
  readonly resourceVersion: string;
}

/** Options of `watch`. */
export interface WatchOptions {
  readonly namespace?: string;
  readonly labelSelector?: string;
  readonly fieldSelector?: string;
  /** Start after this version (usually the list's); the server's choice when empty. */
  readonly resourceVersion?: string;
  /** Server closes the stream after this long; the caller re-watches. */
  readonly timeoutSeconds?: number;
  /** @default true */
  readonly allowWatchBookmarks?: boolean;
  /** Aborting ends the stream; the iterator then returns without an error. */
  readonly signal?: AbortSignal;
  /** Called once the server answered 200, i.e. the watch is established. */
  readonly onOpen?: () => void;
}

/** Options of `delete`. */
export interface DeleteOptions extends CallOptions {
  readonly propagationPolicy?: 'Foreground' | 'Background' | 'Orphan';
  readonly gracePeriodSeconds?: number;
  /** The delete fails with Conflict unless the live object still has this uid / version. */
  readonly preconditions?: { readonly uid?: string; readonly resourceVersion?: string };
  readonly dryRun?: boolean;
}

/** Options of a server-side apply. */
export interface ApplyOptions extends CallOptions {
  readonly fieldManager: string;
  /** Take ownership of fields other managers hold instead of failing with Conflict. */
  readonly force?: boolean;
  readonly dryRun?: boolean;
}

/**
 * The URL path of a resource: `/api/v1/...` for the core group, `/apis/<group>/<version>/...`
 * otherwise. An empty namespace means all namespaces (lists) and is an error for a single
 * namespaced object.
 */
export function resourcePath(kind: ResourceKind, namespace?: string, name?: string, subresource?: string): string {
  const base = kind.group === '' ? `/api/${kind.version}` : `/apis/${kind.group}/${kind.version}`;
  if (kind.namespaced && name !== undefined && !namespace) {
    throw new Error(`namespace is required for ${kind.kind} ${name}`);
  }
  const ns = kind.namespaced && namespace ? `/namespaces/${encodeURIComponent(namespace)}` : '';
  let path = `${base}${ns}/${kind.plural}`;
  if (name !== undefined) path += `/${encodeURIComponent(name)}`;
  if (subresource !== undefined) path += `/${subresource}`;
  return path;
}

/** `apiVersion` string of a kind (`v1` or `group/version`). */
export function apiVersionOf(kind: ResourceKind): string {
  return kind.group === '' ? kind.version : `${kind.group}/${kind.version}`;
}

type Query = Record<string, string | number | boolean | undefined>;

function withQuery(path: string, query: Query): string {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) {
    if (v !== undefined && v !== '') params.set(k, String(v));
  }
  const qs = params.toString();
  return qs ? `${path}?${qs}` : path;
}

const CONTENT_TYPES: Readonly<Record<PatchType | 'apply', string>> = {
  merge: 'application/merge-patch+json',
  json: 'application/json-patch+json',
  strategic: 'application/strategic-merge-patch+json',
  apply: 'application/apply-patch+yaml',
};

/** The part of `KubeClient` an informer needs; a fake implements it in unit tests. */
export interface ListerWatcher {
  list<T extends KubeObject>(kind: ResourceKind, opts?: ListOptions): Promise<ListResult<T>>;
  watch<T extends KubeObject>(kind: ResourceKind, opts?: WatchOptions): AsyncIterable<WatchEvent<T>>;
}

/** REST client for any `ResourceKind`; one per process is enough (it pools connections). */
export class KubeClient implements ListerWatcher {
  private readonly transport: Transport;

  constructor(opts: KubeClientOptions) {
    this.transport = opts.transport ?? new Transport(opts);
  }

  /** Reads one object. */
  async get<T extends KubeObject>(kind: ResourceKind, namespace: string, name: string, opts: CallOptions = {}): Promise<T> {
    return this.json<T>({ verb: 'GET', method: 'GET', path: resourcePath(kind, namespace, name), ...this.call(opts) });
  }

  /**
   * Lists every page (`limit`/`continue`). Items get `apiVersion`/`kind` filled in, which
   * the server omits for built-in kinds, so listed and watched objects look alike. When a
   * continue token expires mid-way (410), falls back to one unpaginated list, as client-go's
   * pager does, instead of failing.
   */
  async list<T extends KubeObject>(kind: ResourceKind, opts: ListOptions = {}): Promise<ListResult<T>> {
    try {
      return await this.listPages<T>(kind, opts, opts.limit ?? 500);
    } catch (err) {
      if (!(err instanceof ContinueExpired)) throw err;
      return this.listPages<T>(kind, opts, undefined);
    }
  }

  private async listPages<T extends KubeObject>(kind: ResourceKind, opts: ListOptions, limit: number | undefined): Promise<ListResult<T>> {
    const items: T[] = [];
    let cont: string | undefined;
    let resourceVersion = '';
    const apiVersion = apiVersionOf(kind);
    do {
      const path = withQuery(resourcePath(kind, opts.namespace), {
        labelSelector: opts.labelSelector,
        fieldSelector: opts.fieldSelector,
        limit,
        continue: cont,
      });
      let page: unknown;
      try {
        page = await this.json<unknown>({ verb: 'LIST', method: 'GET', path, ...this.call(opts) });
      } catch (err) {
        if (cont !== undefined && isGone(err)) throw new ContinueExpired();
        throw err;
      }
      if (!isRecord(page) || !Array.isArray(page.items)) throw new Error(`list ${kind.plural}: response is not a list`);
      for (const item of page.items as T[]) {
        item.apiVersion ??= apiVersion;
        item.kind ??= kind.kind;
        items.push(item);
      }
      const meta = isRecord(page.metadata) ? page.metadata : {};
      resourceVersion = typeof meta.resourceVersion === 'string' ? meta.resourceVersion : resourceVersion;
      cont = typeof meta.continue === 'string' && meta.continue !== '' ? meta.continue : undefined;
    } while (cont !== undefined);
    return { items, resourceVersion };
  }

  /**
   * Streams watch events until the server closes the stream (timeoutSeconds), the signal
   * aborts (clean return) or an error happens (thrown: `ApiError` for HTTP errors and ERROR
   * frames, plain `Error` with a cause for transport failures).
   */
  async *watch<T extends KubeObject>(kind: ResourceKind, opts: WatchOptions = {}): AsyncGenerator<WatchEvent<T>, void, undefined> {
    const path = withQuery(resourcePath(kind, opts.namespace), {
      watch: 'true',
      allowWatchBookmarks: opts.allowWatchBookmarks ?? true,
      resourceVersion: opts.resourceVersion,
      labelSelector: opts.labelSelector,
      fieldSelector: opts.fieldSelector,
      timeoutSeconds: opts.timeoutSeconds,
    });
    let stream: ResponseStream;
    try {
      stream = await this.transport.stream({ verb: 'WATCH', method: 'GET', path, signal: opts.signal, timeoutMs: 0 }, `WATCH ${kind.plural}`);
    } catch (err) {
      if (opts.signal?.aborted) return;
      throw err;
    }
    try {
      opts.onOpen?.();
      const decoder = new WatchLineDecoder();
      for (;;) {
        let next: IteratorResult<Buffer>;
        try {
          next = await stream.chunks.next();
        } catch (err) {
          if (opts.signal?.aborted) return;
          throw err;
        }
        if (next.done) break;
        // Decoding stays outside the transport try: an ERROR frame's ApiError (410 above
        // all) must reach the caller as itself, not wrapped as a connection failure.
        for (const raw of decoder.push(next.value)) yield decodeWatchEvent<T>(raw);
      }
      for (const raw of decoder.end()) yield decodeWatchEvent<T>(raw);
    } finally {
      stream.close();
    }
  }

  /** Creates an object in `namespace` (ignored for cluster-scoped kinds). */
  async create<T extends KubeObject>(kind: ResourceKind, obj: T, opts: WriteOptions = {}): Promise<T> {
    return this.writeWhole<T>('POST', resourcePath(kind, obj.metadata?.namespace), kind, obj, opts);
  }

  /** Replaces an object (PUT); its `metadata.resourceVersion` makes the write conditional. */
  async update<T extends KubeObject>(kind: ResourceKind, obj: T, opts: WriteOptions = {}): Promise<T> {
    return this.writeWhole<T>('PUT', resourcePath(kind, obj.metadata?.namespace, nameOf(obj)), kind, obj, opts);
  }

  /** Sends the whole object (with its type meta) as JSON to `path`. */
  private async writeWhole<T extends KubeObject>(verb: 'POST' | 'PUT', path: string, kind: ResourceKind, obj: T, opts: WriteOptions): Promise<T> {
    return this.json<T>({
      verb,
      method: verb,
      path: withQuery(path, writeQuery(opts)),
      body: JSON.stringify(withTypeMeta(kind, obj)),
      contentType: 'application/json',
      ...this.call(opts),
    });
  }

  /** Deletes an object; returns the server's answer (the object while finalizers hold it, or a Status). */
  async delete(kind: ResourceKind, namespace: string, name: string, opts: DeleteOptions = {}): Promise<KubeObject> {
    const body = {
      apiVersion: 'v1',
      kind: 'DeleteOptions',
      propagationPolicy: opts.propagationPolicy,
      gracePeriodSeconds: opts.gracePeriodSeconds,
      preconditions: opts.preconditions,
      dryRun: opts.dryRun ? ['All'] : undefined,
    };
    return this.json<KubeObject>({
      verb: 'DELETE',
      method: 'DELETE',
      path: resourcePath(kind, namespace, name),
      body: JSON.stringify(body),
      contentType: 'application/json',
      ...this.call(opts),
    });
  }

  /** Patches an object with a merge, JSON (RFC 6902) or strategic merge patch. */
  async patch<T extends KubeObject>(
    kind: ResourceKind,
    namespace: string,
    name: string,
    patch: unknown,
    type: PatchType,
    opts: WriteOptions = {},
  ): Promise<T> {
    return this.patchAt<T>(kind, namespace, name, undefined, patch, type, opts);
  }

  /** Like `patch`, on the `/status` subresource (spec changes in the patch are ignored there). */
  async patchStatus<T extends KubeObject>(
    kind: ResourceKind,
    namespace: string,
    name: string,
    patch: unknown,
    type: PatchType,
    opts: WriteOptions = {},
  ): Promise<T> {
    return this.patchAt<T>(kind, namespace, name, 'status', patch, type, opts);
  }

  /**
   * Server-side apply: `obj` is the caller's whole intent for the fields it manages; fields
   * it managed before and now omits are removed. Creates the object when missing.
   */
  async apply<T extends KubeObject>(kind: ResourceKind, obj: T, opts: ApplyOptions): Promise<T> {
    return this.applyAt<T>(kind, obj, undefined, opts);
  }

  /** Closes idle pooled connections; in-flight requests (watches) are not interrupted. */
  close(): void {
    this.transport.close();
  }

  private async applyAt<T extends KubeObject>(kind: ResourceKind, obj: KubeObject, sub: string | undefined, opts: ApplyOptions): Promise<T> {
    const query = { fieldManager: opts.fieldManager, force: opts.force ? 'true' : undefined, dryRun: opts.dryRun ? 'All' : undefined };
    const path = withQuery(resourcePath(kind, obj.metadata?.namespace, nameOf(obj), sub), query);
    // JSON is valid YAML, so the apply-patch content type takes the object as it is.
    return this.json<T>({
      verb: 'PATCH',
      method: 'PATCH',
      path,
      body: JSON.stringify(withTypeMeta(kind, obj)),
      contentType: CONTENT_TYPES.apply,
      ...this.call(opts),
    });
  }

  private async patchAt<T extends KubeObject>(
    kind: ResourceKind,
    namespace: string,
    name: string,
    sub: string | undefined,
    patch: unknown,
    type: PatchType,
    opts: WriteOptions,
  ): Promise<T> {
    const path = withQuery(resourcePath(kind, namespace, name, sub), writeQuery(opts));
    return this.json<T>({
      verb: 'PATCH',
      method: 'PATCH',
      path,
      body: JSON.stringify(patch),
      contentType: CONTENT_TYPES[type],
      ...this.call(opts),
    });
  }

  private call(opts: CallOptions): { signal?: AbortSignal; timeoutMs?: number } {
    return { signal: opts.signal, timeoutMs: opts.timeoutMs };
  }

  private json<T>(r: TransportRequest): Promise<T> {
    return this.transport.json<T>(r);
  }
}

class ContinueExpired extends Error {}

function nameOf(obj: KubeObject): string {
  const name = obj.metadata?.name;
  if (!name) throw new Error('object has no metadata.name');
  return name;
}

function withTypeMeta<T extends KubeObject>(kind: ResourceKind, obj: T): T {
  return { ...obj, apiVersion: obj.apiVersion ?? apiVersionOf(kind), kind: obj.kind ?? kind.kind };
}

function writeQuery(opts: WriteOptions): Query {
  return { fieldManager: opts.fieldManager, dryRun: opts.dryRun ? 'All' : undefined };
}
