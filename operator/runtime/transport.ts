/**
 * The HTTP machinery under `KubeClient`: one keep-alive agent per client, TLS from the
 * `RestConfig`, the bearer token (or exec-plugin certificate) fetched per request so it can
 * rotate, deadlines, the request counter and hook. It knows paths and bodies, not kinds:
 * the verbs in client.ts build those.
 */
import http from 'node:http';
import https from 'node:https';
import { Counter, type Registry } from 'prom-client';
import { ApiError, apiErrorFrom } from './api-errors';
import { oneLine } from './client-internal';
import type { RestConfig } from './rest-config';

/** Request verbs as counted by `rest_client_requests_total` (LIST and WATCH split off GET). */
export type Verb = 'GET' | 'LIST' | 'WATCH' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/** Called once per finished request; `code` is the HTTP status or '<error>' for transport failures. */
export type RequestHook = (verb: Verb, code: string) => void;

/** Options of a `Transport` (and so of a `KubeClient`). */
export interface TransportOptions {
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

/** One request as the verbs describe it. */
export interface TransportRequest {
  /** What the request counter and error messages call it. */
  readonly verb: Verb;
  readonly method: string;
  /** Path and query, relative to the server URL's own path. */
  readonly path: string;
  readonly body?: string;
  readonly contentType?: string;
  readonly signal?: AbortSignal;
  /** 0 disables the deadline (watches). @default the transport's request timeout */
  readonly timeoutMs?: number;
}

/** An open 200 response read chunk by chunk (a watch); `close` ends the socket. */
export interface ResponseStream {
  /** Chunk read failures reject as transport errors (plain `Error` with the cause). */
  readonly chunks: AsyncIterator<Buffer>;
  close(): void;
}

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

/** Sends requests to one API server; one per client, since it owns the connection pool. */
export class Transport {
  private readonly config: RestConfig;
  private readonly tls: https.RequestOptions;
  private readonly server: URL;
  private readonly agent: http.Agent;
  private readonly timeoutMs: number;
  private readonly userAgent: string;
  private readonly onRequest?: RequestHook;
  private readonly counter?: Counter<'verb' | 'code' | 'host'>;

  constructor(opts: TransportOptions) {
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

  /**
   * Sends `r` and parses a 2xx JSON answer. Any other status throws an `ApiError` (with the
   * Retry-After header when the Status did not say); a failed connection or body read
   * throws a plain `Error` whose cause is the socket error.
   */
  async json<T>(r: TransportRequest): Promise<T> {
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

  /**
   * Opens `r` as a stream (a watch): resolves once the server answered 200; another status
   * throws an `ApiError` whose fallback message starts with `what`.
   */
  async stream(r: TransportRequest, what: string): Promise<ResponseStream> {
    const { req, res } = await this.open(r);
    if (res.statusCode !== 200) {
      try {
        throw apiErrorFrom(res.statusCode ?? 0, await readBody(res), `${what}: HTTP ${res.statusCode}`);
      } finally {
        req.destroy();
      }
    }
    const inner = (res as AsyncIterable<Buffer>)[Symbol.asyncIterator]();
    const chunks: AsyncIterator<Buffer> = {
      next: async () => {
        try {
          return await inner.next();
        } catch (err) {
          throw transportError(r.verb, r.path, err);
        }
      },
    };
    // Destroying the request ends the socket when the consumer stops early (break, throw,
    // abort): a half-read watch would otherwise keep the connection and the server-side
    // watcher alive.
    return { chunks, close: () => req.destroy() };
  }

  /** Closes idle pooled connections; in-flight requests (watches) are not interrupted. */
  close(): void {
    this.agent.destroy();
  }

  /** Sends a request and resolves with the response head; the deadline also covers the body. */
  private async open(r: TransportRequest): Promise<{ req: http.ClientRequest; res: http.IncomingMessage }> {
    r.signal?.throwIfAborted();
    const timeoutMs = r.timeoutMs ?? this.timeoutMs;
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
      if (timeoutMs > 0) {
        timer = setTimeout(() => req.destroy(new Error(`timed out after ${timeoutMs}ms`)), timeoutMs);
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

/** A connection-level failure: names the request (no query, which may carry selectors) and the socket error code. */
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
