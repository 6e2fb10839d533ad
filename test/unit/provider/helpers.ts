/**
 * Small HTTP client and fixtures for the provider tests. Uses node:http directly so tests
 * can send exactly the bytes and headers they mean (wrong content types, no auth, ...).
 */
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { Writable } from 'node:stream';
import { pino, type Logger } from 'pino';
import { startProvider, type ProviderHandle, type ProviderOptions } from '../../../provider';
import { HttpError } from '../../../provider/http';
import { BucketStore } from '../../../provider/store';
import type { CreateBucketRequest } from '../../../provider/types';

/** Key accepted by {@link start}'s providers. */
export const API_KEY = 'test-api-key-0123456789';
/** Admin token of {@link start}'s providers. */
export const ADMIN_TOKEN = 'test-admin-token-9876543210';

/** A parsed response. */
export interface Response {
  status: number;
  headers: IncomingHttpHeaders;
  /** Parsed JSON when the body was JSON, else the raw text. */
  body: unknown;
  text: string;
}

/** Options of {@link call}. */
export interface CallOptions {
  method?: string;
  headers?: Record<string, string>;
  /** Objects are sent as JSON with Content-Type application/json; strings and buffers as is. */
  body?: unknown;
  /** Default: `Bearer API_KEY`; pass null to send no Authorization header. */
  auth?: string | null;
}

/** Sends one request and reads the whole response. Rejects on socket errors. */
export function call(baseUrl: string, path: string, opts: CallOptions = {}): Promise<Response> {
  const headers: Record<string, string> = { ...opts.headers };
  const auth = opts.auth === undefined ? `Bearer ${API_KEY}` : opts.auth;
  if (auth !== null) headers.authorization = auth;
  let payload: Buffer | undefined;
  if (Buffer.isBuffer(opts.body)) payload = opts.body;
  else if (typeof opts.body === 'string') payload = Buffer.from(opts.body);
  else if (opts.body !== undefined) {
    payload = Buffer.from(JSON.stringify(opts.body));
    headers['content-type'] ??= 'application/json';
  }
  if (payload !== undefined) headers['content-length'] = String(payload.length);
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${baseUrl}${path}`, { method: opts.method ?? 'GET', headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', reject);
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let body: unknown = text;
        if ((res.headers['content-type'] ?? '').startsWith('application/json')) body = JSON.parse(text) as unknown;
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body, text });
      });
    });
    req.on('error', reject);
    req.end(payload);
  });
}

/** A valid create body. */
export function createBody(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return { region: 'us-east-1', sizeGB: 10, ...overrides };
}

/** POST /buckets with an idempotency key. */
export function create(baseUrl: string, key: string, body: unknown = createBody()): Promise<Response> {
  return call(baseUrl, '/buckets', { method: 'POST', body, headers: { 'idempotency-key': key } });
}

/** Starts a provider with test credentials and short delays. */
export function start(opts: Partial<ProviderOptions> = {}): Promise<ProviderHandle> {
  return startProvider({
    apiKeys: [API_KEY],
    adminToken: ADMIN_TOKEN,
    activationDelayMs: 50,
    ...opts,
  });
}

/** A logger writing JSON lines into memory. */
export function captureLogger(): { logger: Logger; lines: () => string[] } {
  const chunks: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, cb) {
      chunks.push(chunk.toString('utf8'));
      cb();
    },
  });
  return {
    logger: pino({ level: 'debug' }, sink),
    lines: () =>
      chunks
        .join('')
        .split('\n')
        .filter((l) => l !== ''),
  };
}

/** The fake clock's start for store tests. */
export const STORE_T0 = Date.parse('2030-01-01T00:00:00Z');

/** A store on a fake clock (`clock.t`, starting at {@link STORE_T0}) that counts its changes. */
export function storeFixture(opts: { resizeDelayMs: number }): { store: BucketStore; clock: { t: number }; changes: () => number } {
  const clock = { t: STORE_T0 };
  let changes = 0;
  const store = new BucketStore({
    activationDelayMs: 1000,
    resizeDelayMs: opts.resizeDelayMs,
    now: () => clock.t,
    onChange: () => {
      changes += 1;
    },
  });
  return { store, clock, changes: () => changes };
}

/** A valid create request, with `over` replacing fields. */
export const createRequest = (over: Partial<CreateBucketRequest> = {}): CreateBucketRequest => ({
  region: 'us-east-1',
  sizeGB: 10,
  encrypted: false,
  tags: {},
  ...over,
});

/** The HttpError `fn` throws; fails when it throws nothing or something else. */
export function httpError(fn: () => unknown): HttpError {
  try {
    fn();
  } catch (err) {
    if (err instanceof HttpError) return err;
    throw err;
  }
  throw new Error('expected an HttpError');
}
