/**
 * The HTTP machinery under `KubeClient`, built like client-go's: HTTP/2 when the server
 * offers it by ALPN (every request and watch a stream, sessions pooled in h2-pool.ts),
 * HTTP/1.1 otherwise, with watches on an agent of their own so they can never hold the
 * sockets requests need. TLS from the `RestConfig`, the bearer token (or exec-plugin
 * certificate) fetched per request so it can rotate, the proxy from the environment,
 * Retry-After on 429/503, the client-side QPS limit, deadlines that start when a request is
 * sent (not while it waits for a socket), the request counter and hook. It knows paths and
 * bodies, not kinds: the verbs in client.ts build those.
 */
import http from 'node:http';
import type http2 from 'node:http2';
import https from 'node:https';
import type { Readable } from 'node:stream';
import type tls from 'node:tls';
import type { Counter, Registry } from 'prom-client';
import { registeredCounter } from './registered-counter';
import { ApiError, apiErrorFrom } from './api-errors';
import { oneLine } from './client-internal';
import { RequestThrottle } from './client-throttle';
import { realClock, sleep, type Clock } from './clock';
import { ConnectingAgent, bareHost, connectTls, type Endpoint } from './connect';
import { H2Pool, type ClientCert } from './h2-pool';
import { proxyFor } from './proxy';
import type { Credentials, RestConfig } from './rest-config';

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
  /** Upper bound of concurrent HTTP/1.1 request sockets (watches have their own). @default 32 */
  readonly maxSockets?: number;
  /**
   * Client-side limit of non-watch requests per second; 0 or less disables it (what
   * controller-runtime does by default, relying on the server's Priority and Fairness).
   * @default DEFAULT_QPS
   */
  readonly qps?: number;
  /** @default DEFAULT_BURST */
  readonly burst?: number;
  /** Retries of a 429/503 answer that carries Retry-After, as client-go's 10. @default 10 */
  readonly maxRetries?: number;
  /** Use HTTP/2 when the server offers it. @default true */
  readonly http2?: boolean;
  /** HTTP/2 health check: ping a session that read nothing this long. @default 30000 */
  readonly readIdleTimeoutMs?: number;
  /**
   * HTTP/2: destroy a session whose ping (the health check's, or the one after a request given up
   * on it) is not answered in time. @default 15000
   */
  readonly pingTimeoutMs?: number;
  /** For the QPS limiter and Retry-After waits. @default realClock */
  readonly clock?: Clock;
}

/**
 * Default client-side QPS. client-go alone would use 5 (burst 10); controller-runtime
 * v0.25 turns the limit off (-1). Ours stays on as a guard against a hot loop, set above
 * what an API server sustains (~250 writes/s on the test machine), so a converge of
 * thousands of objects is paced by the server, not by us.
 */
export const DEFAULT_QPS = 500;

/** Default client-side burst; see `DEFAULT_QPS`. */
export const DEFAULT_BURST = 1000;

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

/** An open 200 response read chunk by chunk (a watch); `close` ends the stream (or socket). */
export interface ResponseStream {
  /** Chunk read failures reject as transport errors (plain `Error` with the cause). */
  readonly chunks: AsyncIterator<Buffer>;
  close(): void;
}

const METRIC_NAME = 'rest_client_requests_total';
const CONNECTIONS_METRIC = 'rest_client_connections_total';

function connectionCounter(registry: Registry): Counter<'protocol' | 'lane' | 'host'> {
  const help = 'Connections opened to the Kubernetes API server, by negotiated protocol (h2 or http/1.1) and lane (request, watch).';
  return registeredCounter(registry, CONNECTIONS_METRIC, help, ['protocol', 'lane', 'host']);
}

function requestCounter(registry: Registry): Counter<'verb' | 'code' | 'host'> {
  const help = 'Number of HTTP requests to the Kubernetes API server, partitioned by verb, status code and host.';
  return registeredCounter(registry, METRIC_NAME, help, ['verb', 'code', 'host']);
}

/** Which pool a request travels in: watches never share a connection slot with requests. */
type Lane = 'request' | 'watch';

/** A response head and its body, whichever protocol carried it. */
interface Exchange {
  readonly status: number;
  readonly headers: Record<string, string | string[] | number | undefined>;
  readonly body: Readable;
  /** Ends the exchange early (cancels the stream or destroys the socket). */
  destroy(): void;
  /** Tells the connection's health check that the body delivered data (HTTP/2). */
  readonly read?: () => void;
}

/** Sends requests to one API server; one per client, since it owns the connections. */
export class Transport {
  private readonly config: RestConfig;
  private readonly tls: https.RequestOptions;
  private readonly server: URL;
  private readonly endpoint: Endpoint;
  private readonly timeoutMs: number;
  private readonly userAgent: string;
  private readonly onRequest?: RequestHook;
  private readonly counter?: Counter<'verb' | 'code' | 'host'>;
  private readonly connections?: Counter<'protocol' | 'lane' | 'host'>;
  private readonly throttle: RequestThrottle;
  private readonly clock: Clock;
  private readonly maxRetries: number;
  private readonly agents: Record<Lane, ConnectingAgent>;
  private readonly pools: Record<Lane, H2Pool>;
  /** Decided by the first TLS handshake's ALPN answer; plain http is always HTTP/1.1. */
  private mode: 'h2' | 'h1' | undefined;
  private probing?: Promise<'h2' | 'h1'>;

  constructor(opts: TransportOptions) {
    this.config = opts.restConfig;
    this.server = new URL(this.config.server);
    this.tls = tlsOptions(this.config);
    this.timeoutMs = opts.requestTimeoutMs ?? 30_000;
    this.userAgent = opts.userAgent ?? 'bucketoperator';
    this.onRequest = opts.onRequest;
    this.counter = opts.registry ? requestCounter(opts.registry) : undefined;
    this.connections = opts.registry ? connectionCounter(opts.registry) : undefined;
    this.clock = opts.clock ?? realClock;
    this.throttle = new RequestThrottle({ qps: opts.qps ?? DEFAULT_QPS, burst: opts.burst ?? DEFAULT_BURST, clock: this.clock });
    this.maxRetries = opts.maxRetries ?? 10;
    const secure = this.server.protocol === 'https:';
    const proxy = proxyFor(this.config.proxy, this.server);
    this.endpoint = {
      host: bareHost(this.server),
      port: Number(this.server.port || (secure ? 443 : 80)),
      tls: this.tls as tls.ConnectionOptions,
      ...(proxy ? { proxy } : {}),
    };
    if (!secure || opts.http2 === false) this.mode = 'h1';
    const agent = (lane: Lane, maxSockets: number): ConnectingAgent =>
      new ConnectingAgent({
        keepAlive: true,
        maxSockets,
        secure,
        ...(proxy ? { proxy } : {}),
        connectTimeoutMs: this.timeoutMs,
        onConnection: () => this.connections?.inc({ protocol: 'http/1.1', lane, host: this.server.host }),
      });
    // Each watch holds its socket for minutes: they get as many as they need, apart from requests.
    this.agents = { request: agent('request', opts.maxSockets ?? 32), watch: agent('watch', Infinity) };
    const pool = (lane: Lane): H2Pool =>
      new H2Pool({
        origin: `https://${this.server.host}`,
        connect: (cert) => this.connectH2(cert),
        ...(opts.readIdleTimeoutMs !== undefined ? { readIdleTimeoutMs: opts.readIdleTimeoutMs } : {}),
        ...(opts.pingTimeoutMs !== undefined ? { pingTimeoutMs: opts.pingTimeoutMs } : {}),
        onSession: () => this.connections?.inc({ protocol: 'h2', lane, host: this.server.host }),
      });
    this.pools = { request: pool('request'), watch: pool('watch') };
  }

  /** The protocol in use once the first connection negotiated it. */
  protocol(): 'h2' | 'http/1.1' | undefined {
    return this.mode === undefined ? undefined : this.mode === 'h2' ? 'h2' : 'http/1.1';
  }

  /**
   * Sends `r` and parses a 2xx JSON answer. Any other status throws an `ApiError` (with the
   * Retry-After header when the Status did not say); a failed connection or body read
   * throws a plain `Error` whose cause is the socket error.
   */
  async json<T>(r: TransportRequest): Promise<T> {
    const ex = await this.send(r, 'request');
    let text: string;
    try {
      text = await readBody(ex.body);
    } catch (err) {
      throw transportError(r.verb, r.path, err);
    }
    if (ex.status < 200 || ex.status >= 300) throw errorOf(ex, text, `${r.verb} ${r.path.split('?')[0]}: HTTP ${ex.status}`);
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
    const ex = await this.send(r, 'watch');
    if (ex.status !== 200) {
      try {
        throw errorOf(ex, await readBody(ex.body).catch(() => ''), `${what}: HTTP ${ex.status}`);
      } finally {
        ex.destroy();
      }
    }
    const inner = (ex.body as AsyncIterable<Buffer>)[Symbol.asyncIterator]();
    const chunks: AsyncIterator<Buffer> = {
      next: async () => {
        try {
          const next = await inner.next();
          if (!next.done) ex.read?.();
          return next;
        } catch (err) {
          throw transportError(r.verb, r.path, err);
        }
      },
    };
    // Ending the stream when the consumer stops early (break, throw, abort): a half-read
    // watch would otherwise keep the stream and the server-side watcher alive.
    return { chunks, close: () => ex.destroy() };
  }

  /**
   * Closes the connections: HTTP/2 sessions gracefully (open streams finish), HTTP/1.1
   * agents at once.
   */
  close(): void {
    this.pools.request.close();
    this.pools.watch.close();
    this.agents.request.destroy();
    this.agents.watch.destroy();
  }

  /**
   * One request with client-go's retry of 429/503 answers that say Retry-After: wait that
   * long and send again, at most `maxRetries` times and never past the request's deadline
   * or its signal. Requests (not watches) first wait for the client-side QPS limit.
   */
  private async send(r: TransportRequest, lane: Lane): Promise<Exchange> {
    const timeoutMs = r.timeoutMs ?? this.timeoutMs;
    let deadline: number | undefined;
    for (let attempt = 0; ; attempt++) {
      if (lane === 'request') await this.throttle.wait(r.signal);
      deadline ??= timeoutMs > 0 ? this.clock.now() + timeoutMs : undefined;
      const remaining = deadline === undefined ? 0 : Math.max(1, deadline - this.clock.now());
      const ex = await this.open(r, lane, remaining);
      if ((ex.status !== 429 && ex.status !== 503) || attempt >= this.maxRetries) return ex;
      const text = await readBody(ex.body).catch(() => '');
      const err = errorOf(ex, text, `${r.verb} ${r.path.split('?')[0]}: HTTP ${ex.status}`);
      const waitMs = (err.retryAfterSeconds ?? 0) * 1000;
      if (!(waitMs > 0) || (deadline !== undefined && this.clock.now() + waitMs >= deadline)) throw err;
      await sleep(this.clock, waitMs, r.signal);
    }
  }

  /** One attempt; resolves with the response head. The deadline also covers the body. */
  private async open(r: TransportRequest, lane: Lane, timeoutMs: number): Promise<Exchange> {
    r.signal?.throwIfAborted();
    const creds = (await this.config.credentials?.get()) ?? {};
    const mode = this.mode ?? (await this.negotiate(r, creds));
    try {
      const ex = mode === 'h2' ? await this.openH2(r, lane, timeoutMs, creds) : await this.openH1(r, lane, timeoutMs, creds);
      this.count(r.verb, String(ex.status));
      // The credential expired or was revoked early: fetch a fresh one for the next request.
      if (ex.status === 401) this.config.credentials?.invalidate?.();
      return ex;
    } catch (err) {
      this.count(r.verb, '<error>');
      throw r.signal?.aborted ? r.signal.reason : transportError(r.verb, r.path, err);
    }
  }

  /** The first TLS handshake tells whether the server speaks h2; later requests reuse the answer. */
  private negotiate(r: TransportRequest, creds: Credentials): Promise<'h2' | 'h1'> {
    // The request's own client certificate: a server that requires one would refuse the probe.
    const ep = creds.cert && creds.key ? { ...this.endpoint, tls: { ...this.endpoint.tls, cert: creds.cert, key: creds.key } } : this.endpoint;
    this.probing ??= connectTls(ep, ['h2', 'http/1.1'], this.timeoutMs).then(
      (socket) => {
        const mode = socket.alpnProtocol === 'h2' ? 'h2' : 'h1';
        socket.destroy();
        this.mode = mode;
        return mode;
      },
      (err: unknown) => {
        this.probing = undefined;
        this.count(r.verb, '<error>');
        throw transportError(r.verb, r.path, err);
      },
    );
    return this.probing;
  }

  private async connectH2(cert?: ClientCert): Promise<tls.TLSSocket> {
    const ep: Endpoint = cert ? { ...this.endpoint, tls: { ...this.endpoint.tls, cert: cert.cert, key: cert.key } } : this.endpoint;
    const socket = await connectTls(ep, ['h2'], this.timeoutMs);
    if (socket.alpnProtocol !== 'h2') {
      socket.destroy();
      throw new Error('server no longer offers HTTP/2');
    }
    return socket;
  }

  private headers(r: TransportRequest, creds: Credentials): http.OutgoingHttpHeaders {
    const headers: http.OutgoingHttpHeaders = { accept: 'application/json', 'user-agent': this.userAgent };
    if (creds.token) headers['authorization'] = `Bearer ${creds.token}`;
    if (r.body !== undefined) {
      headers['content-type'] = r.contentType ?? 'application/json';
      headers['content-length'] = Buffer.byteLength(r.body);
    }
    return headers;
  }

  /** A stream on a pooled session; the deadline starts once the stream has a session. */
  private async openH2(r: TransportRequest, lane: Lane, timeoutMs: number, creds: Credentials): Promise<Exchange> {
    const cert = creds.cert && creds.key ? { cert: creds.cert, key: creds.key } : undefined;
    const acquiring = this.pools[lane].acquire(cert);
    let gaveUp = false;
    // A slot granted after the caller gave up goes straight back, or the session would count a stream forever.
    acquiring.then(
      (s) => gaveUp && s.release(),
      () => undefined,
    );
    const slot = await withSignal(acquiring, r.signal, timeoutMs).catch((err: unknown) => {
      gaveUp = true;
      throw err;
    });
    const basePath = this.server.pathname.replace(/\/$/, '');
    let stream: http2.ClientHttp2Stream;
    try {
      stream = slot.session.request(
        { ':method': r.method, ':path': basePath + r.path, ...this.headers(r, creds) },
        { endStream: r.body === undefined },
      );
    } catch (err) {
      slot.release();
      throw err;
    }
    stream.on('close', () => slot.release());
    // No 'data' listener here: one would start the body flowing before its reader is attached.
    // Node emits 'response' on the next tick but pushes DATA read in the same go at once, so a
    // body arriving with its head (as kube-apiserver sends it) went to that listener alone, and
    // the request then waited for a body that had come and gone. The readers mark reads instead.
    const cancel = (err: Error): void => {
      if (!stream.destroyed) stream.destroy(err);
    };
    // Giving up (deadline, abort) may mean the connection is dead: the pool pings the session
    // and hands it out no more until the answer, as Go's transport does on a cancel.
    const giveUp = (err: Error): void => {
      slot.cancelled();
      cancel(err);
    };
    return new Promise<Exchange>((resolve, reject) => {
      let settled = false;
      let timer: NodeJS.Timeout | undefined;
      const onAbort = (): void => giveUp(r.signal?.reason instanceof Error ? r.signal.reason : new Error('aborted'));
      const cleanup = (): void => {
        if (timer) clearTimeout(timer);
        r.signal?.removeEventListener('abort', onAbort);
      };
      if (timeoutMs > 0) timer = setTimeout(() => giveUp(new Error(`timed out after ${timeoutMs}ms`)), timeoutMs);
      r.signal?.addEventListener('abort', onAbort, { once: true });
      stream.on('close', () => {
        cleanup();
        // A stream can close without an error and without a response (RST_STREAM NO_ERROR,
        // a session closed under it): without this the request would wait forever, its
        // deadline timer already cleared.
        if (!settled) {
          settled = true;
          reject(new Error(`stream closed before a response (HTTP/2 code ${stream.rstCode ?? 'none'})`));
        }
      });
      stream.on('error', (err) => {
        cleanup();
        if (!settled) {
          settled = true;
          reject(err);
        }
      });
      stream.on('response', (headers) => {
        slot.read();
        settled = true;
        resolve({
          status: Number(headers[':status'] ?? 0),
          headers,
          body: stream,
          destroy: () => cancel(new Error('closed')),
          read: () => slot.read(),
        });
      });
      stream.end(r.body);
    });
  }

  /**
   * An HTTP/1.1 request on the lane's agent. The deadline starts when the request gets its
   * socket: waiting in the agent's queue is not the request's time.
   */
  private openH1(r: TransportRequest, lane: Lane, timeoutMs: number, creds: Credentials): Promise<Exchange> {
    // A certificate from an exec plugin replaces the static one for this request.
    const tlsOpts = creds.cert && creds.key ? { ...this.tls, cert: creds.cert, key: creds.key } : this.tls;
    const mod = this.server.protocol === 'http:' ? http : https;
    const basePath = this.server.pathname.replace(/\/$/, '');
    return new Promise((resolve, reject) => {
      let settled = false;
      // TLS material stays in the request options, which the agent uses to key its
      // connection pool: a rotated client certificate gets new connections.
      const req = mod.request({
        ...tlsOpts,
        agent: this.agents[lane],
        protocol: this.server.protocol,
        hostname: this.endpoint.host,
        port: this.endpoint.port,
        method: r.method,
        path: basePath + r.path,
        headers: this.headers(r, creds),
      });
      let timer: NodeJS.Timeout | undefined;
      const fail = (err: unknown): void => {
        cleanup();
        // After the response head arrived the failure surfaces while reading the body.
        if (!settled) {
          settled = true;
          reject(err);
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
        req.once('socket', () => {
          timer = setTimeout(() => req.destroy(new Error(`timed out after ${timeoutMs}ms`)), timeoutMs);
        });
      }
      r.signal?.addEventListener('abort', onAbort, { once: true });
      req.on('error', fail);
      req.on('response', (res) => {
        res.on('close', cleanup);
        settled = true;
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: res, destroy: () => req.destroy() });
      });
      req.end(r.body);
    });
  }

  private count(verb: Verb, code: string): void {
    this.counter?.inc({ verb, code, host: this.server.host });
    this.onRequest?.(verb, code);
  }
}

/** The ApiError of a non-2xx answer, with the Retry-After header when the Status did not say. */
function errorOf(ex: Exchange, text: string, fallback: string): ApiError {
  const err = apiErrorFrom(ex.status, text, fallback);
  const retryAfter = Number(ex.headers['retry-after']);
  if (err.retryAfterSeconds === undefined && Number.isFinite(retryAfter) && retryAfter > 0) {
    return new ApiError(err.status, err.reason, err.message, retryAfter);
  }
  return err;
}

/** Awaits `p`, giving up when `signal` aborts or `timeoutMs` (> 0) passes first. */
function withSignal<T>(p: Promise<T>, signal: AbortSignal | undefined, timeoutMs: number): Promise<T> {
  if (!signal && !(timeoutMs > 0)) return p;
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => {
      done();
      reject(signal?.reason);
    };
    const timer = timeoutMs > 0 ? setTimeout(() => (done(), reject(new Error(`timed out after ${timeoutMs}ms`))), timeoutMs) : undefined;
    const done = (): void => {
      if (timer) clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    p.then(
      (v) => (done(), resolve(v)),
      (e: unknown) => (done(), reject(e)),
    );
  });
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

function readBody(res: Readable): Promise<string> {
  return new Promise((resolve, reject) => {
    // A body that ended, or a stream closed, before this reader came would never emit again.
    if (res.readableEnded || res.destroyed) {
      reject(new Error('response ended before its body was read'));
      return;
    }
    const chunks: Buffer[] = [];
    res.on('data', (c: Buffer) => chunks.push(c));
    res.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    res.on('error', reject);
    // 'aborted' without 'error' happens when the socket dies mid-body on older Node lines.
    res.on('aborted', () => reject(new Error('response aborted')));
    // An HTTP/2 stream reset mid-body closes without 'end' or 'error'; settling twice is a no-op.
    res.on('close', () => reject(new Error('response closed before its end')));
  });
}
