/**
 * The request pipeline and the in-process handle. For each request: match the route, check
 * the guard, inject faults (api routes only), run the handler, write the reply, count it
 * and log one access line. Any error that is not an HttpError becomes a 500, so no input
 * can take the process down.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { pino, type Logger } from 'pino';
import { ApiKeyRing, BearerAuth, defaultAccountOf, parseApiKeyEntry } from './auth';
import { FaultController } from './faults';
import { errorReply, HttpError, writeHugeReply, writeReply, writeReplySlowly, writeReplyTrickled, type Reply } from './http';
import { DataFile } from './persistence';
import { matchRoute, type Route } from './router';
import { buildRoutes } from './routes';
import { RequestStats } from './stats';
import { BucketStore } from './store';
import { DEFAULT_REGIONS, ErrorCode, type ProviderHandle, type ProviderOptions } from './types';

/** Default of {@link ProviderOptions.activationDelayMs}. */
export const DEFAULT_ACTIVATION_DELAY_MS = 5000;
/** Default of {@link ProviderOptions.maxBodyBytes}. */
export const DEFAULT_MAX_BODY_BYTES = 64 * 1024;

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

function nonNegativeInt(value: number, name: string): number {
  if (!Number.isInteger(value) || value < 0) throw new Error(`${name} must be a non-negative integer`);
  return value;
}

/** The caller's request id when it is safe to echo and log, else a fresh one. */
function requestId(header: string | string[] | undefined): string {
  return typeof header === 'string' && REQUEST_ID.test(header) ? header : randomUUID();
}

/** Answers bytes that are not HTTP at all; Node's parser reports them here, not as requests. */
function onClientError(err: NodeJS.ErrnoException, socket: Socket): void {
  if (err.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy();
    return;
  }
  const tooLarge = err.code === 'HPE_HEADER_OVERFLOW';
  const body = JSON.stringify({
    code: ErrorCode.BadRequest,
    message: tooLarge ? 'request headers too large' : 'malformed HTTP request',
  });
  const status = tooLarge ? '431 Request Header Fields Too Large' : '400 Bad Request';
  socket.end(
    `HTTP/1.1 ${status}\r\nContent-Type: application/json; charset=utf-8\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}

interface Pipeline {
  routes: readonly Route[];
  apiAuth: ApiKeyRing;
  adminAuth: BearerAuth | undefined;
  faults: FaultController;
  stats: RequestStats;
  logger: Logger;
  /** Set by close(): answers then carry Connection: close so keep-alive sockets end. */
  closing: boolean;
}

/** A request's reply; `faulted`: it passed an api route's auth, so faults apply to it. */
interface Dispatched {
  reply: Reply;
  route: string;
  faulted: boolean;
}

async function dispatch(p: Pipeline, req: IncomingMessage, url: URL): Promise<Dispatched> {
  const method = req.method ?? 'GET';
  const match = matchRoute(p.routes, method, url.pathname);
  if (match.kind === 'none') {
    return { route: '*', reply: errorReply(new HttpError(404, ErrorCode.NotFound, 'no such route')), faulted: false };
  }
  const route = match.route.template;
  let faulted = false;
  try {
    if (match.kind === 'wrongMethod') {
      throw new HttpError(405, ErrorCode.MethodNotAllowed, `method ${method} not allowed`, { Allow: match.allow });
    }
    const guard = match.route.guard;
    const account = guard === 'api' ? p.apiAuth.check(req.headers.authorization) : undefined;
    if (guard === 'admin') {
      if (p.adminAuth === undefined) throw new HttpError(404, ErrorCode.NotFound, 'no such route');
      p.adminAuth.check(req.headers.authorization);
    }
    if (guard === 'api') {
      faulted = true;
      const latency = p.faults.latencyMs();
      if (latency > 0) await sleep(latency);
      const hostile = p.faults.hostile(`${url.pathname}${url.search}`);
      if (hostile !== undefined) return { route, reply: hostile, faulted };
      const fault = p.faults.decide();
      if (fault !== undefined) throw fault;
    }
    return { route, reply: await match.handler({ req, params: match.params, query: url.searchParams, account }), faulted };
  } catch (err) {
    if (err instanceof HttpError) return { route, reply: errorReply(err), faulted };
    // A client that went away mid-body is not a server fault worth an error log.
    if (!req.destroyed) p.logger.error({ err }, 'request failed');
    return { route, reply: errorReply(new HttpError(500, ErrorCode.InternalError, 'internal error')), faulted };
  }
}

async function handle(p: Pipeline, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const started = performance.now();
  const reqId = requestId(req.headers['x-request-id']);
  const method = req.method ?? 'GET';
  res.setHeader('X-Request-Id', reqId);
  let url: URL;
  try {
    url = new URL(req.url ?? '/', 'http://provider.invalid');
  } catch {
    url = new URL('http://provider.invalid/');
  }
  const { reply, route, faulted } = await dispatch(p, req, url);
  let status: number | 'dropped';
  if (reply.kind === 'drop') {
    req.socket.destroy();
    status = 'dropped';
  } else if (reply.kind === 'reset') {
    req.socket.resetAndDestroy();
    status = 'dropped';
  } else if (reply.kind === 'huge') {
    if (p.closing) res.setHeader('Connection', 'close');
    status = await writeHugeReply(res, reply);
  } else {
    // Other unread bodies are drained by Node to keep the connection alive; an oversized
    // one may be huge, so close instead of reading it all.
    if ((reply.status === 413 && !req.complete) || p.closing) res.setHeader('Connection', 'close');
    const dripMs = reply.kind === 'empty' ? 0 : (reply.dripMs ?? 0);
    const trickleMs = faulted && reply.kind !== 'empty' ? p.faults.trickleIntervalMs() : 0;
    if (trickleMs > 0) status = await writeReplyTrickled(res, reply, trickleMs);
    else status = dripMs > 0 ? await writeReplySlowly(res, reply, dripMs) : writeReply(res, reply);
  }
  p.stats.record(method, route, status);
  p.logger.info({ reqId, method, path: url.pathname, status, durationMs: Math.round((performance.now() - started) * 100) / 100 }, 'request');
}

/** Adds a key for the handle; the admin route answers the same cases with HTTP statuses. */
function addApiKey(keys: ApiKeyRing, key: string, account: string = defaultAccountOf(key)): string {
  if (keys.add(key, account) === 'conflict') throw new Error('this API key already belongs to another account');
  return account;
}

/**
 * Starts the mock storage provider and resolves once it listens.
 *
 * @throws when the options are invalid, the data file cannot be loaded or the port is taken.
 */
export async function startProvider(opts: ProviderOptions): Promise<ProviderHandle> {
  const logger = opts.logger ?? pino({ level: 'silent' });
  const regions = opts.regions ?? DEFAULT_REGIONS;
  if (regions.length === 0) throw new Error('at least one region is required');
  const activationDelayMs = nonNegativeInt(opts.activationDelayMs ?? DEFAULT_ACTIVATION_DELAY_MS, 'activationDelayMs');
  const resizeDelayMs = nonNegativeInt(opts.resizeDelayMs ?? activationDelayMs, 'resizeDelayMs');
  const maxBodyBytes = nonNegativeInt(opts.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES, 'maxBodyBytes');
  const shutdownGraceMs = nonNegativeInt(opts.shutdownGraceMs ?? 2000, 'shutdownGraceMs');
  if (opts.apiKeys.length === 0) throw new Error('at least one API key is required');
  const apiAuth = new ApiKeyRing(opts.apiKeys.map(parseApiKeyEntry));
  const adminAuth = opts.adminToken === undefined ? undefined : new BearerAuth([opts.adminToken], 'admin token');

  let dataFile: DataFile | undefined;
  const store = new BucketStore({
    activationDelayMs,
    resizeDelayMs,
    now: opts.now ?? Date.now,
    defaultAccount: apiAuth.defaultAccount,
    onChange: () => dataFile?.schedule(),
  });
  if (opts.dataFile !== undefined) {
    dataFile = new DataFile({
      path: opts.dataFile,
      debounceMs: nonNegativeInt(opts.persistDebounceMs ?? 50, 'persistDebounceMs'),
      snapshot: () => store.snapshot(),
      logger,
    });
    const saved = await dataFile.load();
    if (saved !== undefined) store.restore(saved);
  }

  const faults = new FaultController(opts.faults);
  const stats = new RequestStats();
  const pipeline: Pipeline = {
    routes: buildRoutes({ store, faults, stats, keys: apiAuth, regions, maxBodyBytes, adminEnabled: adminAuth !== undefined }),
    apiAuth,
    adminAuth,
    faults,
    stats,
    logger,
    closing: false,
  };

  const server: Server = createServer((req, res) => {
    handle(pipeline, req, res).catch((err: unknown) => {
      // Only writing the reply can get here (dispatch catches everything else).
      logger.error({ err }, 'cannot write response');
      res.destroy();
    });
  });
  server.on('clientError', onClientError);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, opts.host ?? '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  const url = `http://${host}:${address.port}`;
  logger.info({ url, regions, dataFile: opts.dataFile, buckets: store.count() }, 'provider listening');

  let closing: Promise<void> | undefined;
  return {
    url,
    port: address.port,
    faults,
    store,
    addApiKey: (key, account) => addApiKey(apiAuth, key, account),
    stats: () => stats.snapshot(),
    resetStats: () => stats.reset(),
    close: () => {
      closing ??= (async () => {
        pipeline.closing = true;
        const closed = new Promise<void>((resolve) => server.close(() => resolve()));
        server.closeIdleConnections();
        const cut = setTimeout(() => server.closeAllConnections(), shutdownGraceMs);
        cut.unref();
        await closed;
        clearTimeout(cut);
        await dataFile?.flush();
        logger.info('provider stopped');
      })();
      return closing;
    },
  };
}
