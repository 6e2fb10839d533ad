/**
 * A small Kubernetes REST client over Node's http(s), addressed by `ResourceKind`.
 *
 * client-node's generated clients are per-group and cannot stream watches with bookmarks on
 * our terms (and cost about 70 MiB just to import), so the runtime talks REST itself: a
 * `RestConfig` supplies the server, CA and client certificate, its credential source the
 * bearer token per request (re-read as it rotates), and one keep-alive agent per client
 * reuses connections.
 */
import http from 'node:http';
import https from 'node:https';
import { StringDecoder } from 'node:string_decoder';
import { Counter, type Registry } from 'prom-client';
import type { RestConfig } from './rest-config';
import type { KubeObject, ResourceKind } from './types';

/** Request verbs as counted by `rest_client_requests_total` (LIST and WATCH split off GET). */
export type Verb = 'GET' | 'LIST' | 'WATCH' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/** Patch flavours of the API server, by the name callers use. */
export type PatchType = 'merge' | 'json' | 'strategic';

/** One RFC 6902 operation, as sent with `patch(..., 'json')`. */
export interface JsonPatchOp {
  readonly op: 'add' | 'remove' | 'replace' | 'move' | 'copy' | 'test';
  readonly path: string;
  readonly value?: unknown;
  readonly from?: string;
}

/** Called once per finished request; `code` is the HTTP status or '<error>' for transport failures. */
export type RequestHook = (verb: Verb, code: string) => void;

/** Options of a `KubeClient`. */
export interface KubeClientOptions {
  /** Server, TLS and credentials; see `loadRestConfig`. */
  readonly restConfig: RestConfig;
  /** Deadline of every non-watch request. @default 30000 */
  readonly requestTimeoutMs?: number;
  /** Sent as User-Agent. @default 'bucketoperator' */
  readonly userAgent?: string;
  /** Observes every request (after the response status is known). */
  readonly onRequest?: RequestHook;
  /**
   * Registers (or reuses) `rest_client_requests_total{verb,code,host}` here, the counter
   * client-go exposes; several clients may share one registry.
   */
  readonly registry?: Registry;
  /** Upper bound of concurrent sockets to the API server. @default 32 */
  readonly maxSockets?: number;
}

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

/** Event types a watch yields; ERROR events are thrown as `ApiError` instead. */
export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK';

/** One decoded watch event. */
export interface WatchEvent<T extends KubeObject> {
  readonly type: WatchEventType;
  readonly object: T;
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
 * An error answer of the API server. `reason` is the Status reason (NotFound, Conflict,
 * AlreadyExists, Gone, Expired, Invalid, Forbidden, ...); `message` is the Status message on
 * one line. Neither request bodies nor headers are ever included.
 */
export class ApiError extends Error {
  override readonly name = 'ApiError';

  constructor(
    /** HTTP status code (or the `code` of a watch ERROR event). */
    readonly status: number,
    readonly reason: string,
    message: string,
    /** Seconds the server asked us to wait (429 / 503 / some 500s), when it said so. */
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
  }
}

/** True for a 404 answer. */
export function isNotFound(err: unknown): boolean {
  return err instanceof ApiError && err.status === 404;
}

/** True for a 409 answer other than AlreadyExists (an optimistic-concurrency failure). */
export function isConflict(err: unknown): boolean {
  return err instanceof ApiError && err.status === 409 && err.reason !== 'AlreadyExists';
}

/** True for a 409 AlreadyExists answer. */
export function isAlreadyExists(err: unknown): boolean {
  return err instanceof ApiError && err.status === 409 && err.reason === 'AlreadyExists';
}

/** True when a resourceVersion is too old (HTTP 410, or reason Gone/Expired): relist. */
export function isGone(err: unknown): boolean {
  return err instanceof ApiError && (err.status === 410 || err.reason === 'Gone' || err.reason === 'Expired');
}

const DEFAULT_REASONS: Readonly<Record<number, string>> = {
  400: 'BadRequest',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'NotFound',
  405: 'MethodNotAllowed',
  406: 'NotAcceptable',
  409: 'Conflict',
  410: 'Gone',
  415: 'UnsupportedMediaType',
  422: 'Invalid',
  429: 'TooManyRequests',
  500: 'InternalError',
  503: 'ServiceUnavailable',
  504: 'Timeout',
};

const MAX_MESSAGE = 512;

function oneLine(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > MAX_MESSAGE ? `${flat.slice(0, MAX_MESSAGE)}...` : flat;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Builds an `ApiError` from a status code and a (possibly non-JSON) body. A body that is not
 * a Status object is not echoed: proxies answer with HTML pages that say nothing useful.
 */
export function apiErrorFrom(status: number, body: unknown, fallbackMessage: string): ApiError {
  let parsed: unknown = body;
  if (typeof body === 'string') {
    try {
      parsed = JSON.parse(body) as unknown;
    } catch {
      parsed = undefined;
    }
  }
  const code = isRecord(parsed) && typeof parsed.code === 'number' && parsed.code > 0 ? parsed.code : status;
  const reason = isRecord(parsed) && typeof parsed.reason === 'string' && parsed.reason !== ''
    ? parsed.reason
    : (DEFAULT_REASONS[code] ?? 'Unknown');
  const message = isRecord(parsed) && typeof parsed.message === 'string' && parsed.message !== ''
    ? oneLine(parsed.message)
    : fallbackMessage;
  const details = isRecord(parsed) && isRecord(parsed.details) ? parsed.details : undefined;
  const retry = details && typeof details.retryAfterSeconds === 'number' ? details.retryAfterSeconds : undefined;
  return new ApiError(code, reason, message, retry);
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

/**
 * Splits a byte stream into lines and parses each as a watch event. Kept separate from the
 * socket so framing (lines split across chunks, multi-byte characters across chunks, blank
 * keep-alive lines) is testable without a server.
 */
export class WatchLineDecoder {
  private readonly decoder = new StringDecoder('utf8');
  private buffer = '';

  /** Feeds a chunk; returns the complete raw events it finished. */
  push(chunk: Buffer | string): unknown[] {
    this.buffer += typeof chunk === 'string' ? chunk : this.decoder.write(chunk);
    const out: unknown[] = [];
    // Walk with an offset and cut the buffer once: slicing per line would copy the rest of
    // a large chunk (an initial burst of events) once per event.
    let start = 0;
    let nl = this.buffer.indexOf('\n', start);
    while (nl >= 0) {
      const line = this.buffer.slice(start, nl).trim();
      if (line !== '') out.push(JSON.parse(line) as unknown);
      start = nl + 1;
      nl = this.buffer.indexOf('\n', start);
    }
    this.buffer = this.buffer.slice(start);
    return out;
  }

  /** Flushes a last unterminated line, if any. */
  end(): unknown[] {
    const rest = (this.buffer + this.decoder.end()).trim();
    this.buffer = '';
    return rest === '' ? [] : [JSON.parse(rest) as unknown];
  }
}

const WATCH_TYPES: ReadonlySet<string> = new Set(['ADDED', 'MODIFIED', 'DELETED', 'BOOKMARK']);

/**
 * Turns one raw watch frame into an event, or throws: an ERROR frame carries a Status (410
 * Expired when the resourceVersion was compacted) and ends the watch.
 */
export function decodeWatchEvent<T extends KubeObject>(raw: unknown): WatchEvent<T> {
  if (!isRecord(raw) || typeof raw.type !== 'string' || !isRecord(raw.object)) {
    throw new Error('malformed watch event');
  }
  if (raw.type === 'ERROR') {
    const code = typeof raw.object.code === 'number' ? raw.object.code : 500;
    throw apiErrorFrom(code, raw.object, `watch ERROR event with code ${code}`);
  }
  if (!WATCH_TYPES.has(raw.type)) throw new Error(`unknown watch event type ${oneLine(raw.type)}`);
  return { type: raw.type as WatchEventType, object: raw.object as T };
}

const CONTENT_TYPES: Readonly<Record<PatchType | 'apply', string>> = {
  merge: 'application/merge-patch+json',
  json: 'application/json-patch+json',
  strategic: 'application/strategic-merge-patch+json',
  apply: 'application/apply-patch+yaml',
};

const METRIC_NAME = 'rest_client_requests_total';

function requestCounter(registry: Registry): Counter<'verb' | 'code' | 'host'> {
  const existing = registry.getSingleMetric(METRIC_NAME);
  if (existing) return existing as Counter<'verb' | 'code' | 'host'>;
  return new Counter({
    name: METRIC_NAME,
    help: 'Number of HTTP requests to the Kubernetes API server, partitioned by verb, status code and host.',
    labelNames: ['verb', 'code', 'host'],
    registers: [registry],
  });
}

interface Request {
  readonly verb: Verb;
  readonly method: string;
  readonly path: string;
  readonly body?: string;
  readonly contentType?: string;
  readonly signal?: AbortSignal;
  /** 0 disables the deadline (watches). */
  readonly timeoutMs: number;
}

/** The part of `KubeClient` an informer needs; a fake implements it in unit tests. */
export interface ListerWatcher {
  list<T extends KubeObject>(kind: ResourceKind, opts?: ListOptions): Promise<ListResult<T>>;
  watch<T extends KubeObject>(kind: ResourceKind, opts?: WatchOptions): AsyncIterable<WatchEvent<T>>;
}

/** REST client for any `ResourceKind`; one per process is enough (it pools connections). */
export class KubeClient implements ListerWatcher {
  private readonly config: RestConfig;
  private readonly tls: https.RequestOptions;
  private readonly server: URL;
  private readonly agent: http.Agent;
  private readonly timeoutMs: number;
  private readonly userAgent: string;
  private readonly onRequest?: RequestHook;
  private readonly counter?: Counter<'verb' | 'code' | 'host'>;

  constructor(opts: KubeClientOptions) {
    this.config = opts.restConfig;
    this.server = new URL(this.config.server);
    this.tls = tlsOptions(this.config);
    const agentOpts = { keepAlive: true, maxSockets: opts.maxSockets ?? 32 };
    this.agent = this.server.protocol === 'http:' ? new http.Agent(agentOpts) : new https.Agent(agentOpts);
    this.timeoutMs = opts.requestTimeoutMs ?? 30_000;
    this.userAgent = opts.userAgent ?? 'bucketoperator';
    this.onRequest = opts.onRequest;
    this.counter = opts.registry ? requestCounter(opts.registry) : undefined;
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
    let opened: { req: http.ClientRequest; res: http.IncomingMessage };
    try {
      opened = await this.open({ verb: 'WATCH', method: 'GET', path, signal: opts.signal, timeoutMs: 0 });
    } catch (err) {
      if (opts.signal?.aborted) return;
      throw err;
    }
    const { req, res } = opened;
    try {
      if (res.statusCode !== 200) {
        throw apiErrorFrom(res.statusCode ?? 0, await readBody(res), `WATCH ${kind.plural}: HTTP ${res.statusCode}`);
      }
      opts.onOpen?.();
      const decoder = new WatchLineDecoder();
      const chunks = (res as AsyncIterable<Buffer>)[Symbol.asyncIterator]();
      for (;;) {
        let next: IteratorResult<Buffer>;
        try {
          next = await chunks.next();
        } catch (err) {
          if (opts.signal?.aborted) return;
          throw transportError('WATCH', path, err);
        }
        if (next.done) break;
        // Decoding stays outside the transport try: an ERROR frame's ApiError (410 above
        // all) must reach the caller as itself, not wrapped as a connection failure.
        for (const raw of decoder.push(next.value)) yield decodeWatchEvent<T>(raw);
      }
      for (const raw of decoder.end()) yield decodeWatchEvent<T>(raw);
    } finally {
      // Ends the socket when the consumer stops early (break, throw, abort): a half-read
      // watch would otherwise keep the connection and the server-side watcher alive.
      req.destroy();
    }
  }

  /** Creates an object in `namespace` (ignored for cluster-scoped kinds). */
  async create<T extends KubeObject>(kind: ResourceKind, obj: T, opts: WriteOptions = {}): Promise<T> {
    const path = withQuery(resourcePath(kind, obj.metadata?.namespace), writeQuery(opts));
    return this.json<T>({ verb: 'POST', method: 'POST', path, body: JSON.stringify(withTypeMeta(kind, obj)), contentType: 'application/json', ...this.call(opts) });
  }

  /** Replaces an object (PUT); its `metadata.resourceVersion` makes the write conditional. */
  async update<T extends KubeObject>(kind: ResourceKind, obj: T, opts: WriteOptions = {}): Promise<T> {
    const path = withQuery(resourcePath(kind, obj.metadata?.namespace, nameOf(obj)), writeQuery(opts));
    return this.json<T>({ verb: 'PUT', method: 'PUT', path, body: JSON.stringify(withTypeMeta(kind, obj)), contentType: 'application/json', ...this.call(opts) });
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
      verb: 'DELETE', method: 'DELETE', path: resourcePath(kind, namespace, name),
      body: JSON.stringify(body), contentType: 'application/json', ...this.call(opts),
    });
  }

  /** Patches an object with a merge, JSON (RFC 6902) or strategic merge patch. */
  async patch<T extends KubeObject>(
    kind: ResourceKind, namespace: string, name: string, patch: unknown, type: PatchType, opts: WriteOptions = {},
  ): Promise<T> {
    return this.patchAt<T>(kind, namespace, name, undefined, patch, type, opts);
  }

  /** Like `patch`, on the `/status` subresource (spec changes in the patch are ignored there). */
  async patchStatus<T extends KubeObject>(
    kind: ResourceKind, namespace: string, name: string, patch: unknown, type: PatchType, opts: WriteOptions = {},
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

  /** Server-side apply on the `/status` subresource. */
  async applyStatus<T extends KubeObject>(kind: ResourceKind, obj: T, opts: ApplyOptions): Promise<T> {
    return this.applyAt<T>(kind, obj, 'status', opts);
  }

  /** Closes idle pooled connections; in-flight requests (watches) are not interrupted. */
  close(): void {
    this.agent.destroy();
  }

  private async applyAt<T extends KubeObject>(kind: ResourceKind, obj: KubeObject, sub: string | undefined, opts: ApplyOptions): Promise<T> {
    const query = { fieldManager: opts.fieldManager, force: opts.force ? 'true' : undefined, dryRun: opts.dryRun ? 'All' : undefined };
    const path = withQuery(resourcePath(kind, obj.metadata?.namespace, nameOf(obj), sub), query);
    // JSON is valid YAML, so the apply-patch content type takes the object as it is.
    return this.json<T>({
      verb: 'PATCH', method: 'PATCH', path, body: JSON.stringify(withTypeMeta(kind, obj)),
      contentType: CONTENT_TYPES.apply, ...this.call(opts),
    });
  }

  private async patchAt<T extends KubeObject>(
    kind: ResourceKind, namespace: string, name: string, sub: string | undefined, patch: unknown, type: PatchType, opts: WriteOptions,
  ): Promise<T> {
    const path = withQuery(resourcePath(kind, namespace, name, sub), writeQuery(opts));
    return this.json<T>({
      verb: 'PATCH', method: 'PATCH', path, body: JSON.stringify(patch), contentType: CONTENT_TYPES[type], ...this.call(opts),
    });
  }

  private call(opts: CallOptions): { signal?: AbortSignal; timeoutMs: number } {
    return { signal: opts.signal, timeoutMs: opts.timeoutMs ?? this.timeoutMs };
  }

  private async json<T>(r: Request): Promise<T> {
    const { res } = await this.open(r);
    let text: string;
    try {
      text = await readBody(res);
    } catch (err) {
      throw transportError(r.verb, r.path, err);
    }
    const status = res.statusCode ?? 0;
    if (status < 200 || status >= 300) {
      const err = apiErrorFrom(status, text, `${r.verb} ${r.path.split('?')[0]}: HTTP ${status}`);
      const retryAfter = Number(res.headers['retry-after']);
      if (err.retryAfterSeconds === undefined && Number.isFinite(retryAfter) && retryAfter > 0) {
        throw new ApiError(err.status, err.reason, err.message, retryAfter);
      }
      throw err;
    }
    try {
      return JSON.parse(text) as T;
    } catch (cause) {
      throw new Error(`${r.verb} ${r.path.split('?')[0]}: response is not JSON`, { cause });
    }
  }

  /** Sends a request and resolves with the response head; the deadline also covers the body. */
  private async open(r: Request): Promise<{ req: http.ClientRequest; res: http.IncomingMessage }> {
    r.signal?.throwIfAborted();
    const creds = (await this.config.credentials?.get()) ?? {};
    // A certificate from an exec plugin replaces the static one for this request.
    const tls = creds.cert && creds.key ? { ...this.tls, cert: creds.cert, key: creds.key } : this.tls;
    const headers: http.OutgoingHttpHeaders = {
      Accept: 'application/json',
      'User-Agent': this.userAgent,
    };
    if (creds.token) headers['Authorization'] = `Bearer ${creds.token}`;
    if (r.body !== undefined) {
      headers['Content-Type'] = r.contentType ?? 'application/json';
      headers['Content-Length'] = Buffer.byteLength(r.body);
    }
    const mod = this.server.protocol === 'http:' ? http : https;
    const basePath = this.server.pathname.replace(/\/$/, '');
    return new Promise((resolve, reject) => {
      let settled = false;
      // TLS material stays in the request options, which the shared agent uses to key its
      // connection pool: a rotated client certificate gets new connections.
      const req = mod.request({
        ...tls,
        agent: this.agent,
        protocol: this.server.protocol,
        hostname: this.server.hostname,
        port: this.server.port || undefined,
        method: r.method,
        path: basePath + r.path,
        headers,
      });
      let timer: NodeJS.Timeout | undefined;
      const fail = (err: unknown): void => {
        cleanup();
        // After the response head arrived the failure surfaces while reading the body.
        if (!settled) {
          settled = true;
          this.count(r.verb, '<error>');
          reject(r.signal?.aborted ? r.signal.reason : transportError(r.verb, r.path, err));
        }
      };
      const onAbort = (): void => {
        req.destroy(r.signal?.reason instanceof Error ? r.signal.reason : new Error('aborted'));
      };
      const cleanup = (): void => {
        if (timer) clearTimeout(timer);
        r.signal?.removeEventListener('abort', onAbort);
      };
      if (r.timeoutMs > 0) {
        timer = setTimeout(() => req.destroy(new Error(`timed out after ${r.timeoutMs}ms`)), r.timeoutMs);
      }
      r.signal?.addEventListener('abort', onAbort, { once: true });
      req.on('error', fail);
      req.on('response', (res) => {
        this.count(r.verb, String(res.statusCode ?? 0));
        // The credential expired or was revoked early: fetch a fresh one for the next request.
        if (res.statusCode === 401) this.config.credentials?.invalidate?.();
        res.on('close', cleanup);
        settled = true;
        resolve({ req, res });
      });
      req.end(r.body);
    });
  }

  private count(verb: Verb, code: string): void {
    this.counter?.inc({ verb, code, host: this.server.host });
    this.onRequest?.(verb, code);
  }
}

class ContinueExpired extends Error {}

/** Static TLS request options of a config; Node checks the server name against `servername`. */
function tlsOptions(config: RestConfig): https.RequestOptions {
  const t = config.tls;
  return {
    ...(t.ca ? { ca: t.ca } : {}),
    ...(t.cert && t.key ? { cert: t.cert, key: t.key } : {}),
    ...(t.insecureSkipVerify ? { rejectUnauthorized: false } : {}),
    ...(t.serverName ? { servername: t.serverName } : {}),
  };
}

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

function transportError(verb: Verb, path: string, cause: unknown): Error {
  const detail = cause instanceof Error ? ((cause as NodeJS.ErrnoException).code ?? cause.message) : String(cause);
  return new Error(`${verb} ${path.split('?')[0]} failed: ${oneLine(detail)}`, { cause });
}

function readBody(res: http.IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    res.on('data', (c: Buffer) => chunks.push(c));
    res.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    res.on('error', reject);
    // 'aborted' without 'error' happens when the socket dies mid-body on older Node lines.
    res.on('aborted', () => reject(new Error('response aborted')));
  });
}
