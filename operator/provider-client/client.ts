/**
 * HTTP client of the storage provider. One {@link ProviderClients} per process owns the
 * keep-alive agents, one rate limiter per endpoint (shared by every bucket using it) and the
 * call-duration histogram; `client(endpoint, apiKey)` is cheap and made per reconcile.
 */
import http from 'node:http';
import https from 'node:https';
import { Histogram, type Registry } from 'prom-client';
import { BucketMetric } from '../api/metric-names';
import { guardedLookup, type Resolver } from './endpoint-policy';
import { readProviderErrorBody } from './error-body';
import { ProviderError } from './errors';
import { TokenBucket } from './rate-limiter';
import type { CreateBucketRequest, ProviderBucket, RevokeIdempotencyKeyResponse, UpdateBucketRequest } from './types';

/** Options of {@link ProviderClients}. */
export interface ProviderClientsOptions {
  /** Registry the call histogram is registered on. */
  readonly registry?: Registry;
  /** Per-request timeout, ms. @default 10000 */
  readonly timeoutMs?: number;
  /** Calls per second per endpoint. @default 20 */
  readonly qps?: number;
  /** Burst per endpoint. @default 40 */
  readonly burst?: number;
  /**
   * Allow endpoints that are (or resolve to) link-local or cloud metadata addresses; see
   * endpoint-policy.ts. @default false
   */
  readonly allowLinkLocalEndpoints?: boolean;
  /** Resolver behind that check (tests resolve names to chosen addresses). @default dns.lookup */
  readonly resolve?: Resolver;
}

/** Provider operations, named as in the metric label `operation`. */
export type ProviderOperation = 'get' | 'list' | 'create' | 'update' | 'delete' | 'revoke';

/** Largest page the provider serves; fewer, bigger pages cost fewer rate-limited calls. */
export const LIST_PAGE_LIMIT = 1000;

/** Filter of {@link ProviderClient.listBuckets}. */
export interface ListBucketsFilter {
  /** Every pair must match (the provider ANDs them). */
  readonly tags?: Readonly<Record<string, string>>;
}

/** Provider calls the operator makes; every one is idempotent. */
export interface ProviderClient {
  getBucket(id: string, signal?: AbortSignal): Promise<ProviderBucket | undefined>;
  findByIdempotencyKey(key: string, signal?: AbortSignal): Promise<ProviderBucket | undefined>;
  /**
   * Every bucket matching `filter`, following the provider's continue tokens; one call (and
   * one rate-limiter token) per page of up to {@link LIST_PAGE_LIMIT}.
   */
  listBuckets(filter: ListBucketsFilter, signal?: AbortSignal): Promise<ProviderBucket[]>;
  /**
   * Revokes `key`: no create with it can commit from now on, not even one already in flight
   * whose answer never came. Resolves the live bucket the key made, if any; that bucket is not
   * deleted (it may be another object's, when the key was copied with a manifest). Idempotent.
   * A 404 is an error, not "no bucket": the provider has no such route, so nothing was fenced.
   */
  revokeIdempotencyKey(key: string, signal?: AbortSignal): Promise<ProviderBucket | undefined>;
  createBucket(req: CreateBucketRequest, idempotencyKey: string, signal?: AbortSignal): Promise<ProviderBucket>;
  updateBucket(id: string, req: UpdateBucketRequest, signal?: AbortSignal): Promise<ProviderBucket>;
  /** Deletes; resolves `false` when the bucket was already gone. */
  deleteBucket(id: string, signal?: AbortSignal): Promise<boolean>;
}

/** Factory and shared state of provider clients. */
export class ProviderClients {
  private readonly limiters = new Map<string, TokenBucket>();
  private readonly httpAgent: http.Agent;
  private readonly httpsAgent: https.Agent;
  private readonly duration: Histogram<'operation' | 'code'>;
  private readonly timeoutMs: number;
  /** Whether link-local and metadata endpoints are allowed (connect() checks literal hosts). */
  readonly allowLinkLocalEndpoints: boolean;

  constructor(private readonly opts: ProviderClientsOptions = {}) {
    this.allowLinkLocalEndpoints = opts.allowLinkLocalEndpoints ?? false;
    // The agents check every address a host name resolves to before a socket connects, so a
    // DNS name pointing at a metadata service is refused like the literal address.
    const lookup = this.allowLinkLocalEndpoints ? {} : { lookup: guardedLookup(opts.resolve) };
    this.httpAgent = new http.Agent({ keepAlive: true, maxSockets: 32, ...lookup });
    this.httpsAgent = new https.Agent({ keepAlive: true, maxSockets: 32, ...lookup });
    this.timeoutMs = opts.timeoutMs ?? 10_000;
    this.duration = new Histogram({
      name: BucketMetric.providerCallDuration,
      help: 'Duration of storage provider API calls by operation and HTTP status code (0: no response).',
      labelNames: ['operation', 'code'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: opts.registry ? [opts.registry] : [],
    });
  }

  /** A client for `endpoint` authenticating with `apiKey`. */
  client(endpoint: string, apiKey: string): ProviderClient {
    const base = new URL(endpoint.endsWith('/') ? endpoint : `${endpoint}/`);
    const call = <T>(op: ProviderOperation, method: string, path: string, body?: unknown, headers?: Record<string, string>, signal?: AbortSignal) =>
      this.call<T>(base, apiKey, op, method, path, body, headers, signal);
    return {
      getBucket: async (id, signal) => {
        try {
          return await call<ProviderBucket>('get', 'GET', `buckets/${encodeURIComponent(id)}`, undefined, undefined, signal);
        } catch (err) {
          if (err instanceof ProviderError && err.isNotFound) return undefined;
          throw err;
        }
      },
      findByIdempotencyKey: async (key, signal) => {
        const res = await call<{ items: ProviderBucket[] }>(
          'list',
          'GET',
          `buckets?idempotencyKey=${encodeURIComponent(key)}`,
          undefined,
          undefined,
          signal,
        );
        return res.items[0];
      },
      listBuckets: async (filter, signal) => {
        const items: ProviderBucket[] = [];
        let token: string | undefined;
        do {
          const query = new URLSearchParams({ limit: String(LIST_PAGE_LIMIT) });
          for (const [k, v] of Object.entries(filter.tags ?? {})) query.append('tag', `${k}=${v}`);
          if (token !== undefined) query.set('continue', token);
          const page = await call<{ items: ProviderBucket[]; continue?: string }>(
            'list',
            'GET',
            `buckets?${query.toString()}`,
            undefined,
            undefined,
            signal,
          );
          items.push(...page.items);
          token = page.continue;
        } while (token !== undefined);
        return items;
      },
      revokeIdempotencyKey: async (key, signal) => {
        const res = await call<RevokeIdempotencyKeyResponse>(
          'revoke',
          'POST',
          `idempotency-keys/${encodeURIComponent(key)}/revoke`,
          undefined,
          undefined,
          signal,
        );
        return res.bucket ?? undefined;
      },
      createBucket: (req, key, signal) => call<ProviderBucket>('create', 'POST', 'buckets', req, { 'Idempotency-Key': key }, signal),
      updateBucket: (id, req, signal) => call<ProviderBucket>('update', 'PATCH', `buckets/${encodeURIComponent(id)}`, req, undefined, signal),
      deleteBucket: async (id, signal) => {
        try {
          await call<unknown>('delete', 'DELETE', `buckets/${encodeURIComponent(id)}`, undefined, undefined, signal);
          return true;
        } catch (err) {
          if (err instanceof ProviderError && err.isNotFound) return false;
          throw err;
        }
      },
    };
  }

  /** Closes idle keep-alive sockets. */
  close(): void {
    this.httpAgent.destroy();
    this.httpsAgent.destroy();
  }

  private limiter(base: URL): TokenBucket {
    let l = this.limiters.get(base.origin);
    if (!l) {
      l = new TokenBucket({ qps: this.opts.qps ?? 20, burst: this.opts.burst ?? 40 });
      this.limiters.set(base.origin, l);
    }
    return l;
  }

  private async call<T>(
    base: URL,
    apiKey: string,
    op: ProviderOperation,
    method: string,
    path: string,
    body: unknown,
    headers: Record<string, string> | undefined,
    signal: AbortSignal | undefined,
  ): Promise<T> {
    await this.limiter(base).take(signal);
    const url = new URL(path, base);
    const end = this.duration.startTimer({ operation: op });
    let code = 0;
    try {
      const res = await this.send(url, method, apiKey, body, headers, signal);
      code = res.status;
      if (res.status >= 200 && res.status < 300) {
        return (res.text ? JSON.parse(res.text) : undefined) as T;
      }
      throw toProviderError(op, res.status, res.text, res.retryAfter);
    } catch (err) {
      if (err instanceof ProviderError) throw err;
      const transport = (err as NodeJS.ErrnoException).code ?? 'ETRANSPORT';
      throw new ProviderError(`provider ${op} failed: ${transport}`, { status: 0, code: transport, cause: err });
    } finally {
      end({ code: String(code) });
    }
  }

  private send(
    url: URL,
    method: string,
    apiKey: string,
    body: unknown,
    extra: Record<string, string> | undefined,
    signal: AbortSignal | undefined,
  ): Promise<{ status: number; text: string; retryAfter: string | undefined }> {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const isHttps = url.protocol === 'https:';
    const headers: Record<string, string> = {
      accept: 'application/json',
      authorization: `Bearer ${apiKey}`,
      ...(payload === undefined ? {} : { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(payload)) }),
      ...extra,
    };
    return new Promise((resolve, reject) => {
      const req = (isHttps ? https : http).request(
        url,
        { method, headers, agent: isHttps ? this.httpsAgent : this.httpAgent, timeout: this.timeoutMs, signal },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('error', reject);
          res.on('end', () => {
            const ra = res.headers['retry-after'];
            resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8'), retryAfter: Array.isArray(ra) ? ra[0] : ra });
          });
        },
      );
      req.on('timeout', () => req.destroy(Object.assign(new Error('provider request timed out'), { code: 'ETIMEDOUT' })));
      req.on('error', reject);
      req.end(payload);
    });
  }
}

function toProviderError(op: ProviderOperation, status: number, text: string, retryAfter: string | undefined): ProviderError {
  const { code, detail } = readProviderErrorBody(status, text);
  const seconds = retryAfter === undefined ? NaN : Number(retryAfter);
  return new ProviderError(`provider ${op} failed: ${status} ${code}${detail ? `: ${detail}` : ''}`, {
    status,
    code,
    retryAfterMs: Number.isFinite(seconds) ? Math.max(0, seconds * 1000) : undefined,
  });
}
