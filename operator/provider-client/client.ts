/**
 * HTTP client of the storage provider. One {@link ProviderClients} per process owns the
 * keep-alive agents, one rate limiter per provider account (shared by every bucket using it)
 * and the provider metrics; `client(endpoint, apiKey)` is cheap and made per reconcile.
 *
 * An account is an endpoint's origin plus the API key sent to it: what the provider meters
 * and throttles. Limiting per account rather than per endpoint keeps tenants that share a
 * provider (each with its own key) from spending each other's calls. Accounts are named by a
 * digest of both ({@link providerAccount}); the key itself is never a map key, a label or a
 * log field. An account unused for `accountIdleMs` is dropped with its metric series, so
 * memory and series follow the accounts in use.
 *
 * Every call is bounded in bytes and in time (exchange.ts): an endpoint that answers too much
 * or too slowly costs its own tenant a failed call with a reason that says so
 * (ProviderAnswerTooLargeError, ProviderTimeoutError), never the process its
 * memory or a worker its whole reconcile deadline.
 */
import { createHash } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import { Counter, Histogram, type Registry } from 'prom-client';
import { BucketMetric } from '../api/metric-names';
import { guardedLookup, type Resolver } from './endpoint-policy';
import { readProviderErrorBody } from './error-body';
import { ProviderAnswerTooLargeError, ProviderError } from './errors';
import { exchange, type Answer } from './exchange';
import { DEFAULT_MAX_IN_FLIGHT_PER_ACCOUNT, InFlightLimit, TokenBucket } from './rate-limiter';
import type { AccountInfo, CreateBucketRequest, ProviderBucket, RevokeIdempotencyKeyResponse, UpdateBucketRequest } from './types';

/** Options of {@link ProviderClients}. */
export interface ProviderClientsOptions {
  /** Registry the call histogram is registered on. */
  readonly registry?: Registry;
  /**
   * Socket idle timeout, ms: a call whose socket is silent this long (no connection, no
   * headers, no body byte) is given up. @default 10000
   */
  readonly timeoutMs?: number;
  /**
   * Deadline of a whole call, ms, from the request to the last byte of the answer; the idle
   * timeout alone lets a body trickled a byte at a time run on. @default {@link DEFAULT_DEADLINE_MS}
   */
  readonly deadlineMs?: number;
  /** Largest answer body, bytes, but for list pages. @default {@link DEFAULT_MAX_ANSWER_BYTES} */
  readonly maxAnswerBytes?: number;
  /** Largest list page body (`GET /buckets`), bytes. @default {@link DEFAULT_MAX_LIST_PAGE_BYTES} */
  readonly maxListPageBytes?: number;
  /** Most bytes of all the pages of one {@link ProviderClient.listBuckets} together. @default {@link DEFAULT_MAX_LIST_BYTES} */
  readonly maxListBytes?: number;
  /** Calls per second per account (endpoint plus API key). @default 20 */
  readonly qps?: number;
  /** Burst per account. @default 40 */
  readonly burst?: number;
  /**
   * Calls in flight per account; more wait for one to end, so a slow endpoint holds no more
   * sockets than this (rate-limiter.ts). @default {@link DEFAULT_MAX_IN_FLIGHT_PER_ACCOUNT}
   */
  readonly maxInFlightPerAccount?: number;
  /**
   * An account with no call for this long is forgotten: its limiter (then full, so nothing is
   * lost) and its metric series. @default 600000 (10 minutes)
   */
  readonly accountIdleMs?: number;
  /** Clock of the limiters and of idleness (tests). @default Date.now */
  readonly now?: () => number;
  /** Sleep on that clock, rejecting once the signal aborts (tests). @default a Node timer */
  readonly sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /**
   * Allow endpoints that are (or resolve to) link-local or cloud metadata addresses; see
   * endpoint-policy.ts. @default false
   */
  readonly allowLinkLocalEndpoints?: boolean;
  /** Resolver behind that check (tests resolve names to chosen addresses). @default dns.lookup */
  readonly resolve?: Resolver;
}

/** A provider account (endpoint origin plus API key), named without revealing the key. */
export interface ProviderAccount {
  /** Full SHA-256 hex digest of origin and key: the limiter's map key. */
  readonly id: string;
  /** Its first 12 hex digits: the metric label `account`, short enough for dashboards. */
  readonly label: string;
}

/**
 * The account `apiKey` is at `endpoint`: one per origin and key, whatever the path. A rotated
 * key is a new account (a fresh limiter and fresh series); the old one idles out.
 */
export function providerAccount(endpoint: string, apiKey: string): ProviderAccount {
  const origin = URL.canParse(endpoint) ? new URL(endpoint).origin : endpoint;
  const id = createHash('sha256').update(origin).update('\0').update(apiKey).digest('hex');
  return { id, label: id.slice(0, 12) };
}

/** Per-account state of {@link ProviderClients}. */
interface AccountState {
  readonly label: string;
  readonly limiter: TokenBucket;
  /** Seats: calls of the account holding a socket at once. */
  readonly seats: InFlightLimit;
  /** Calls started and not yet finished: an account is never dropped mid-call. */
  inFlight: number;
  lastUsed: number;
  /** `code_class` values this account has series for, to remove them with it. */
  readonly codeClasses: Set<string>;
  /**
   * The provider's name for the account (GET /account), asked once: concurrent first callers
   * share the one request; a failed answer is forgotten so the next caller asks again.
   */
  accountId?: Promise<string>;
}

/**
 * Default of {@link ProviderClientsOptions.maxAnswerBytes}: 1 MiB. An answer is one bucket, an
 * account or an error; the largest bucket the provider allows (50 tags of 128 + 256
 * characters) is about 20 KiB of JSON, so this is fifty times any honest answer, and in line
 * with the 1.5 MiB etcd keeps an object to. Eight workers reading one each stay near 8 MiB.
 */
export const DEFAULT_MAX_ANSWER_BYTES = 1024 * 1024;

/**
 * Default of {@link ProviderClientsOptions.maxListPageBytes}: 16 MiB, a page of
 * {@link LIST_PAGE_LIMIT} buckets at 16 KiB each (an operator-made bucket is under 1 KiB), as
 * controller-runtime allows a list what it would refuse one object. The value budget
 * (json-budget.ts) keeps such a page's parse to a few times its size.
 */
export const DEFAULT_MAX_LIST_PAGE_BYTES = 16 * 1024 * 1024;

/**
 * Default of {@link ProviderClientsOptions.maxListBytes}: 64 MiB for every page of one list
 * together (a list keeps what it read until its last page), over 60,000 operator-made buckets
 * in one account, more than one operator's cache holds under its 256 MiB limit.
 */
export const DEFAULT_MAX_LIST_BYTES = 64 * 1024 * 1024;

/**
 * Default of {@link ProviderClientsOptions.deadlineMs}: 20 s, twice the idle timeout. A
 * reconcile ends at its first failed call, so a trickling endpoint holds a worker this long,
 * a third of the 60 s reconcile deadline, and a list page fails with its own reason before
 * the drift scan's 30 s per account runs out.
 */
export const DEFAULT_DEADLINE_MS = 20_000;

/** Provider operations, named as in the metric label `operation`. */
export type ProviderOperation = 'account' | 'get' | 'list' | 'create' | 'update' | 'delete' | 'revoke';

/** Largest page the provider serves; fewer, bigger pages cost fewer rate-limited calls. */
export const LIST_PAGE_LIMIT = 1000;

/**
 * Code of a ProviderError for a 2xx answer whose body is not JSON. Retryable: the endpoint, not
 * the bucket, is at fault, and may answer properly later (a proxy's maintenance page).
 */
export const NOT_JSON = 'NotJson';

/**
 * Code of a ProviderError for a list answer that cannot be used (not a list, paging that never
 * ends). Retryable, as {@link NOT_JSON}.
 */
export const UNUSABLE_LIST = 'UnusableList';

function unusableList(what: string, detail: string): ProviderError {
  return new ProviderError(`provider list is unusable: ${what}`, { status: 200, code: `${UNUSABLE_LIST}.${detail}`, retryable: true });
}

/**
 * One page of a bucket list, checked: an object with an `items` array of at most `limit`
 * buckets (the page size asked for) and an optional string `continue`.
 */
export function checkListPage(page: unknown, limit = LIST_PAGE_LIMIT): { items: ProviderBucket[]; continue?: string } {
  if (typeof page !== 'object' || page === null || Array.isArray(page)) throw unusableList('the answer is not an object', 'NotAnObject');
  const { items, continue: token } = page as { items?: unknown; continue?: unknown };
  if (!Array.isArray(items)) throw unusableList('the answer has no items array', 'NoItems');
  if (items.length > limit) throw unusableList(`a page holds more than the ${limit} items asked for`, 'TooManyItems');
  if (items.some((b) => typeof b !== 'object' || b === null || typeof (b as { id?: unknown }).id !== 'string')) {
    throw unusableList('an item has no id', 'BadItem');
  }
  if (token !== undefined && token !== null && typeof token !== 'string') throw unusableList('continue is not a string', 'BadContinue');
  return { items: items as ProviderBucket[], ...(typeof token === 'string' && token !== '' ? { continue: token } : {}) };
}

/** Limits of one {@link ProviderClient.listBuckets}. */
export interface ListBucketsOptions {
  /** More pages than this is an unusable answer. @default unlimited */
  readonly maxPages?: number;
}

/** The header of a conditional delete: `k=v&k=v` (URL-encoded), every pair must be a tag of the bucket. */
export const IF_TAGS_HEADER = 'If-Tags';

/** Options of {@link ProviderClient.deleteBucket}. */
export interface DeleteBucketOptions {
  /** Delete only if the bucket carries all these tags; otherwise 412 PreconditionFailed. */
  readonly ifTags?: Readonly<Record<string, string>>;
}

/** Filter of {@link ProviderClient.listBuckets}. */
export interface ListBucketsFilter {
  /** Every pair must match (the provider ANDs them). */
  readonly tags?: Readonly<Record<string, string>>;
}

/** Provider calls the operator makes; every one is idempotent. */
export interface ProviderClient {
  /**
   * The account the API key belongs to, as the provider names it. Asked once per account
   * (the answer is kept with the account's limiter), so it costs one call per tenant.
   */
  accountId(signal?: AbortSignal): Promise<string>;
  getBucket(id: string, signal?: AbortSignal): Promise<ProviderBucket | undefined>;
  findByIdempotencyKey(key: string, signal?: AbortSignal): Promise<ProviderBucket | undefined>;
  /**
   * Every bucket matching `filter`, following the provider's continue tokens; one call (and
   * one rate-limiter token) per page of up to {@link LIST_PAGE_LIMIT}. An answer that is not a
   * list, a continue token that repeats, or more than `opts.maxPages` pages reject with a
   * ProviderError whose code starts with {@link UNUSABLE_LIST}.
   */
  listBuckets(filter: ListBucketsFilter, signal?: AbortSignal, opts?: ListBucketsOptions): Promise<ProviderBucket[]>;
  /**
   * Revokes `key`: no create with it can commit from now on, not even one already in flight
   * whose answer never came. Resolves the live bucket the key made, if any; that bucket is not
   * deleted (it may be another object's, when the key was copied with a manifest). Idempotent.
   * A 404 is an error, not "no bucket": the provider has no such route, so nothing was fenced.
   */
  revokeIdempotencyKey(key: string, signal?: AbortSignal): Promise<ProviderBucket | undefined>;
  createBucket(req: CreateBucketRequest, idempotencyKey: string, signal?: AbortSignal): Promise<ProviderBucket>;
  updateBucket(id: string, req: UpdateBucketRequest, signal?: AbortSignal): Promise<ProviderBucket>;
  /**
   * Deletes; resolves `false` when the bucket was already gone. With `opts.ifTags` the provider
   * deletes only if the bucket carries every one of those tags at that moment (as Azure's
   * `x-ms-if-tags`), and refuses with 412 PreconditionFailed otherwise: the check and the
   * delete are one step, so no value read earlier can stand in for the proof.
   */
  deleteBucket(id: string, signal?: AbortSignal, opts?: DeleteBucketOptions): Promise<boolean>;
}

/** A positive integer option, or its default; anything else is refused with its name. */
function positive(name: string, value: number | undefined, fallback: number): number {
  const v = value ?? fallback;
  if (!Number.isInteger(v) || v <= 0) throw new Error(`provider client: ${name}=${v} must be a positive integer`);
  return v;
}

/** Factory and shared state of provider clients. */
export class ProviderClients {
  private readonly accounts = new Map<string, AccountState>();
  private readonly httpAgent: http.Agent;
  private readonly httpsAgent: https.Agent;
  private readonly duration: Histogram<'operation' | 'code'>;
  private readonly calls: Counter<'account' | 'code_class'>;
  private readonly throttled: Counter<'account'>;
  private readonly timeoutMs: number;
  private readonly deadlineMs: number;
  private readonly maxAnswerBytes: number;
  private readonly maxListPageBytes: number;
  private readonly maxListBytes: number;
  private readonly now: () => number;
  private readonly accountIdleMs: number;
  private lastSweep: number;
  /** Whether link-local and metadata endpoints are allowed (connect() checks literal hosts). */
  readonly allowLinkLocalEndpoints: boolean;

  constructor(private readonly opts: ProviderClientsOptions = {}) {
    this.allowLinkLocalEndpoints = opts.allowLinkLocalEndpoints ?? false;
    // The agents check every address a host name resolves to before a socket connects, so a
    // DNS name pointing at a metadata service is refused like the literal address.
    const lookup = this.allowLinkLocalEndpoints ? {} : { lookup: guardedLookup(opts.resolve) };
    this.httpAgent = new http.Agent({ keepAlive: true, maxSockets: 32, ...lookup });
    this.httpsAgent = new https.Agent({ keepAlive: true, maxSockets: 32, ...lookup });
    this.timeoutMs = positive('timeoutMs', opts.timeoutMs, 10_000);
    this.deadlineMs = positive('deadlineMs', opts.deadlineMs, DEFAULT_DEADLINE_MS);
    this.maxAnswerBytes = positive('maxAnswerBytes', opts.maxAnswerBytes, DEFAULT_MAX_ANSWER_BYTES);
    this.maxListPageBytes = positive('maxListPageBytes', opts.maxListPageBytes, DEFAULT_MAX_LIST_PAGE_BYTES);
    this.maxListBytes = positive('maxListBytes', opts.maxListBytes, DEFAULT_MAX_LIST_BYTES);
    this.now = opts.now ?? Date.now;
    this.accountIdleMs = opts.accountIdleMs ?? 600_000;
    this.lastSweep = this.now();
    const registers = opts.registry ? [opts.registry] : [];
    // The histogram stays fleet-wide: by account it would be ~150 series per tenant. The
    // per-account metrics are counters, at most 5 series per account in use (one per code
    // class plus the wait), so their cardinality follows the operator's tenants, not the cluster.
    this.calls = new Counter({
      name: BucketMetric.providerCalls,
      help: 'Storage provider API calls by account (a digest of endpoint and API key) and status class (2xx, 4xx, 5xx; 0xx: no response).',
      labelNames: ['account', 'code_class'],
      registers,
    });
    this.throttled = new Counter({
      name: BucketMetric.providerRateLimitWait,
      help: "Seconds provider calls waited for their account's client-side rate limiter (--provider-qps/--provider-burst).",
      labelNames: ['account'],
      registers,
    });
    this.duration = new Histogram({
      name: BucketMetric.providerCallDuration,
      help: 'Duration of storage provider API calls by operation and HTTP status code (0: no response).',
      labelNames: ['operation', 'code'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: opts.registry ? [opts.registry] : [],
    });
  }

  /** A client for `endpoint` authenticating with `apiKey`, rate-limited as its account. */
  client(endpoint: string, apiKey: string): ProviderClient {
    const base = new URL(endpoint.endsWith('/') ? endpoint : `${endpoint}/`);
    const account = providerAccount(endpoint, apiKey);
    this.sweepIdleAccounts();
    const sized = <T>(op: ProviderOperation, method: string, path: string, body?: unknown, headers?: Record<string, string>, signal?: AbortSignal) =>
      this.call<T>(base, account, apiKey, op, method, path, body, headers, signal);
    const call = async <T>(
      op: ProviderOperation,
      method: string,
      path: string,
      body?: unknown,
      headers?: Record<string, string>,
      signal?: AbortSignal,
    ) => (await sized<T>(op, method, path, body, headers, signal)).value;
    return {
      accountId: (signal) => {
        const state = this.account(account);
        const known = state.accountId;
        if (known) return known;
        const asked = (async () => {
          const info = await call<AccountInfo | undefined>('account', 'GET', 'account', undefined, undefined, signal);
          if (typeof info?.account !== 'string' || info.account === '') {
            throw new ProviderError('provider account answered without an account', { status: 200, code: 'BadAccount' });
          }
          return info.account;
        })();
        state.accountId = asked;
        asked.catch(() => {
          if (state.accountId === asked) state.accountId = undefined;
        });
        return asked;
      },
      getBucket: async (id, signal) => {
        try {
          return await call<ProviderBucket>('get', 'GET', `buckets/${encodeURIComponent(id)}`, undefined, undefined, signal);
        } catch (err) {
          if (err instanceof ProviderError && err.isNotFound) return undefined;
          throw err;
        }
      },
      findByIdempotencyKey: async (key, signal) => {
        const res = await call<unknown>('list', 'GET', `buckets?idempotencyKey=${encodeURIComponent(key)}`, undefined, undefined, signal);
        // The provider's default page (100) is the most a lookup can answer.
        return checkListPage(res, 100).items[0];
      },
      listBuckets: async (filter, signal, opts = {}) => {
        const items: ProviderBucket[] = [];
        const seen = new Set<string>();
        const maxPages = opts.maxPages ?? Number.POSITIVE_INFINITY;
        let token: string | undefined;
        let pages = 0;
        let bytes = 0;
        do {
          if (++pages > maxPages) throw unusableList(`more than ${maxPages} pages`, 'TooManyPages');
          const query = new URLSearchParams({ limit: String(LIST_PAGE_LIMIT) });
          for (const [k, v] of Object.entries(filter.tags ?? {})) query.append('tag', `${k}=${v}`);
          if (token !== undefined) query.set('continue', token);
          const answer = await sized<unknown>('list', 'GET', `buckets?${query.toString()}`, undefined, undefined, signal);
          // Every page read stays in memory until the last one: the pages together are capped too.
          bytes += answer.bytes;
          if (bytes > this.maxListBytes) {
            throw new ProviderAnswerTooLargeError({
              operation: 'list',
              host: base.host,
              limit: this.maxListBytes,
              limitKind: 'listTotal',
              bytesRead: bytes,
            });
          }
          const page = checkListPage(answer.value);
          for (const item of page.items) items.push(item);
          token = page.continue;
          // A token seen before would page forever: the provider's paging is broken.
          if (token !== undefined && seen.has(token)) throw unusableList('a continue token repeated', 'ContinueRepeated');
          if (token !== undefined) seen.add(token);
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
      deleteBucket: async (id, signal, opts = {}) => {
        const headers = opts.ifTags ? { [IF_TAGS_HEADER]: new URLSearchParams(Object.entries(opts.ifTags)).toString() } : undefined;
        try {
          await call<unknown>('delete', 'DELETE', `buckets/${encodeURIComponent(id)}`, undefined, headers, signal);
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

  /** Accounts with a limiter right now (tests, and a check that memory follows use). */
  accountCount(): number {
    return this.accounts.size;
  }

  private account(account: ProviderAccount): AccountState {
    let state = this.accounts.get(account.id);
    if (!state) {
      const limiter = new TokenBucket({
        qps: this.opts.qps ?? 20,
        burst: this.opts.burst ?? 40,
        now: this.now,
        ...(this.opts.sleep ? { sleep: this.opts.sleep } : {}),
      });
      const seats = new InFlightLimit(this.opts.maxInFlightPerAccount ?? DEFAULT_MAX_IN_FLIGHT_PER_ACCOUNT);
      state = { label: account.label, limiter, seats, inFlight: 0, lastUsed: this.now(), codeClasses: new Set() };
      this.accounts.set(account.id, state);
    }
    return state;
  }

  /**
   * Drops accounts idle for `accountIdleMs` with nothing in flight and a full bucket. Runs at
   * most once per half that period, so its walk over the accounts costs O(1) per call amortised.
   */
  private sweepIdleAccounts(): void {
    const now = this.now();
    if (now - this.lastSweep < this.accountIdleMs / 2) return;
    this.lastSweep = now;
    for (const [id, state] of this.accounts) {
      if (state.inFlight > 0 || now - state.lastUsed < this.accountIdleMs || !state.limiter.isIdle()) continue;
      this.accounts.delete(id);
      for (const codeClass of state.codeClasses) this.calls.remove({ account: state.label, code_class: codeClass });
      this.throttled.remove({ account: state.label });
    }
  }

  private async call<T>(
    base: URL,
    account: ProviderAccount,
    apiKey: string,
    op: ProviderOperation,
    method: string,
    path: string,
    body: unknown,
    headers: Record<string, string> | undefined,
    signal: AbortSignal | undefined,
  ): Promise<{ value: T; bytes: number }> {
    const state = await this.acquire(account, signal);
    const url = new URL(path, base);
    const end = this.duration.startTimer({ operation: op });
    let code = 0;
    try {
      // The deadline starts once the limiter let the call go: waiting for a token is the
      // account's own pace, bounded by the caller's signal.
      const res = await this.send(op, url, method, apiKey, body, headers, signal, performance.now() + this.deadlineMs);
      code = res.status;
      if (res.status >= 200 && res.status < 300) {
        try {
          return { value: (res.text ? JSON.parse(res.text) : undefined) as T, bytes: res.bytes };
        } catch {
          throw new ProviderError(`provider ${op} answered ${res.status} with a body that is not JSON`, {
            status: res.status,
            code: NOT_JSON,
            retryable: true,
          });
        }
      }
      throw toProviderError(op, res);
    } catch (err) {
      if (err instanceof ProviderError) throw err;
      const transport = (err as NodeJS.ErrnoException).code ?? 'ETRANSPORT';
      throw new ProviderError(`provider ${op} failed: ${transport}`, { status: 0, code: transport, cause: err });
    } finally {
      end({ code: String(code) });
      this.release(state, code);
    }
  }

  /**
   * Waits for a seat, then a token, of `account` and marks a call in flight on it (seat first:
   * a call that waits for a seat spends no token). An abort while waiting rejects with the
   * caller's own reason (a stop, a reconcile timeout): no provider failure.
   */
  private async acquire(account: ProviderAccount, signal: AbortSignal | undefined): Promise<AccountState> {
    const state = this.account(account);
    state.inFlight++;
    state.lastUsed = this.now();
    let seated = false;
    try {
      await state.seats.acquire(signal);
      seated = true;
      const waitedMs = await state.limiter.take(signal);
      if (waitedMs > 0) this.throttled.inc({ account: state.label }, waitedMs / 1000);
      return state;
    } catch (err) {
      if (seated) state.seats.release();
      state.inFlight--;
      throw err;
    }
  }

  /** Ends a call begun by {@link acquire}, counting it by status class for its account. */
  private release(state: AccountState, code: number): void {
    const codeClass = `${Math.floor(code / 100)}xx`;
    state.codeClasses.add(codeClass);
    this.calls.inc({ account: state.label, code_class: codeClass });
    state.seats.release();
    state.inFlight--;
    state.lastUsed = this.now();
  }

  private send(
    op: ProviderOperation,
    url: URL,
    method: string,
    apiKey: string,
    body: unknown,
    extra: Record<string, string> | undefined,
    signal: AbortSignal | undefined,
    deadlineAt: number,
  ): Promise<Answer> {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const headers: Record<string, string> = {
      accept: 'application/json',
      authorization: `Bearer ${apiKey}`,
      ...(payload === undefined ? {} : { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(payload)) }),
      ...extra,
    };
    const agent = url.protocol === 'https:' ? this.httpsAgent : this.httpAgent;
    const maxBytes = op === 'list' ? this.maxListPageBytes : this.maxAnswerBytes;
    return exchange(
      { url, method, headers, payload, agent, signal, operation: op },
      { maxBytes, idleMs: this.timeoutMs, deadlineMs: this.deadlineMs, deadlineAt },
    );
  }
}

function toProviderError(op: ProviderOperation, { status, text, truncated, retryAfter }: Answer): ProviderError {
  const { code, detail } = readProviderErrorBody(status, text, truncated);
  const seconds = retryAfter === undefined ? NaN : Number(retryAfter);
  return new ProviderError(`provider ${op} failed: ${status} ${code}${detail ? `: ${detail}` : ''}`, {
    status,
    code,
    retryAfterMs: Number.isFinite(seconds) ? Math.max(0, seconds * 1000) : undefined,
  });
}
