/**
 * Shared vocabulary of the mock storage provider: the wire shapes of its HTTP API and the
 * options of its in-process handle. Nothing here knows about Kubernetes.
 */
import type { Logger } from 'pino';

/** Lifecycle phase of a bucket as reported on the wire. */
export type BucketPhase = 'Provisioning' | 'Active' | 'Resizing';

/** All phases, in the order a new bucket goes through them. */
export const BUCKET_PHASES: readonly BucketPhase[] = ['Provisioning', 'Active', 'Resizing'];

/** A bucket exactly as the HTTP API returns it (times are ISO-8601 strings). */
export interface Bucket {
  id: string;
  /**
   * The account the bucket belongs to: the `ACCOUNT` of an `ACCOUNT:KEY` entry, else `acct-`
   * and the first 12 hex digits of the key's SHA-256. Never the key.
   */
  account: string;
  region: string;
  sizeGB: number;
  encrypted: boolean;
  tags: Record<string, string>;
  phase: BucketPhase;
  /** Host name only (no path), so a Kubernetes ExternalName Service can point at it. */
  endpoint: string;
  idempotencyKey?: string;
  createdAt: string;
  updatedAt: string;
}

/** Answer of `GET /account`: the account the request's API key belongs to. */
export interface AccountInfo {
  account: string;
}

/** Body of `POST /buckets` after validation, with defaults applied. */
export interface CreateBucketRequest {
  region: string;
  sizeGB: number;
  encrypted: boolean;
  tags: Record<string, string>;
}

/** Body of `PATCH /buckets/{id}` after validation; absent fields are left unchanged. */
export interface UpdateBucketRequest {
  sizeGB?: number;
  encrypted?: boolean;
  /** Replaces the whole tag map (not a merge). */
  tags?: Record<string, string>;
}

/** Body of `PATCH /admin/buckets/{id}`: sets fields directly, bypassing every rule. */
export interface AdminBucketPatch {
  sizeGB?: number;
  encrypted?: boolean;
  /** A phase set here is sticky: it does not end by itself. */
  phase?: BucketPhase;
  tags?: Record<string, string>;
}

/** Query of `GET /buckets` after validation. */
export interface ListBucketsQuery {
  idempotencyKey?: string;
  /** Every pair must match (AND). */
  tags: Array<[string, string]>;
  limit: number;
  /** Id of the last bucket of the previous page. */
  after?: string;
}

/** One page of `GET /buckets`. */
export interface BucketList {
  items: Bucket[];
  /** Present only when more items follow; pass it back as `continue`. */
  continue?: string;
}

/** Stable machine-readable error codes of the JSON error body `{ code, message }`. */
export const ErrorCode = {
  NotFound: 'NotFound',
  MethodNotAllowed: 'MethodNotAllowed',
  Unauthorized: 'Unauthorized',
  Forbidden: 'Forbidden',
  ValidationFailed: 'ValidationFailed',
  MalformedJSON: 'MalformedJSON',
  UnsupportedMediaType: 'UnsupportedMediaType',
  PayloadTooLarge: 'PayloadTooLarge',
  IdempotencyKeyReused: 'IdempotencyKeyReused',
  BucketDeleted: 'BucketDeleted',
  IdempotencyKeyRevoked: 'IdempotencyKeyRevoked',
  /** A conditional delete (`If-Tags`) whose tags the bucket does not carry. */
  PreconditionFailed: 'PreconditionFailed',
  /** `POST /admin/api-keys` with a key that already belongs to another account. */
  Conflict: 'Conflict',
  NotReady: 'NotReady',
  Throttled: 'Throttled',
  ServiceUnavailable: 'ServiceUnavailable',
  InternalError: 'InternalError',
  BadRequest: 'BadRequest',
} as const;

/** One of the values of {@link ErrorCode}. */
export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

/** JSON body of every error response. */
export interface ErrorBody {
  code: ErrorCode;
  message: string;
}

/** Answer of `POST /idempotency-keys/{key}/revoke`. */
export interface RevokeResult {
  /** The live bucket the key made, or null when it made none or it was deleted. */
  bucket: Bucket | null;
}

/** A create accepted under the `lateCommitOnCreate` fault that has not committed yet. */
export interface PendingCommit {
  /** Absent when the create sent no key. */
  idempotencyKey?: string;
  /** ISO-8601 time the create commits (or is discarded). */
  commitAt: string;
}

/** What became of the creates held by the `lateCommitOnCreate` fault (`GET /admin/late-commits`). */
export interface LateCommitReport {
  /** Not yet due, oldest first. */
  pending: PendingCommit[];
  /** Made a bucket when due. */
  committed: number;
  /** Made nothing when due: the key had been revoked, or a create with it had committed meanwhile. */
  discarded: { revoked: number; keyUsed: number };
}

/** Statuses a `failNext` fault may answer with. */
export type FaultStatus = 429 | 500 | 502 | 503 | 504;

/** Statuses the `errorRate` fault may answer with. */
export type FaultErrorStatus = 500 | 502 | 503 | 504;

/**
 * Complete fault configuration. Faults apply only to authenticated requests to the API-key
 * routes, in this order: `latencyMs`, the hostile modes (`resetRate`, `redirectTo`,
 * `hugeAnswerBytes`, `malformedJson`), `outage`, `failNext`, `throttleRate`, `errorRate`; then,
 * for a create that would make a new bucket, `lateCommitOnCreate`, and after a successful
 * create, `dropAfterCommitOnCreate`; `trickleIntervalMs` slows whatever answer is sent.
 */
export interface FaultConfig {
  /** Delay added before every `/buckets` request is handled. */
  latencyMs: number;
  /** Fraction (0..1) of requests answered with `errorStatus`. */
  errorRate: number;
  errorStatus: FaultErrorStatus;
  /** Fraction (0..1) of requests answered 429 with `Retry-After`. */
  throttleRate: number;
  /** Value of the `Retry-After` header on 429 answers. */
  retryAfterSeconds: number;
  /**
   * After a new bucket is committed by `POST /buckets`, destroy the socket instead of
   * answering. A number is a fraction (0..1, so 1 means always); `{ count }` drops exactly
   * that many creates, then stops. Replays of an existing key are never dropped.
   */
  dropAfterCommitOnCreate: number | { count: number };
  /**
   * The next `count` creates that would make a new bucket are accepted and never answered:
   * the request is held until the client gives up, and the bucket is committed `delayMs`
   * after the request arrived, unless its key was revoked or consumed by another create in
   * the meantime. Until then a lookup by the key finds nothing. Counts down to zero.
   */
  lateCommitOnCreate: { count: number; delayMs: number } | null;
  /** Every `/buckets` request answers 503. */
  outage: boolean;
  /** Answer exactly the next `count` requests with `status`; counts down to zero. */
  failNext: { status: FaultStatus; count: number } | null;
  /** Seed of the generator behind every rate; the same seed gives the same sequence. */
  seed: number;
  /**
   * List faults apply to `GET /buckets` without `idempotencyKey` (the drift scan's list),
   * after the faults above, for the account `listFaultAccount` or, when null, every account,
   * in this order: `listErrorStatus`, `listEmptyObject`, `listNotJson`, `listRepeatContinue`;
   * `listSlowBodyMs` drips whichever 200 body is answered.
   */
  listErrorStatus: FaultStatus | null;
  /** Answer `200 {}`: JSON, but no `items`. */
  listEmptyObject: boolean;
  /** Answer 200 with a body that is not JSON. */
  listNotJson: boolean;
  /** Every page carries the same non-empty `continue` token, which leads back to the first page. */
  listRepeatContinue: boolean;
  /** Send the body in small pieces spread over this many milliseconds; 0 sends it at once. */
  listSlowBodyMs: number;
  /** The only account the list faults apply to; null means every account. */
  listFaultAccount: string | null;
  // Hostile modes: what a broken or hostile endpoint does to its clients. They apply to the
  // same requests as the faults above, after `latencyMs` and before `outage`, in this order:
  // `resetRate`, `redirectTo`, `hugeAnswerBytes`, `malformedJson` (each answers in place of
  // the handler, which never runs); `trickleIntervalMs` then slows whatever answer is sent.
  /** Fraction (0..1) of requests whose connection is reset (TCP RST) with no answer at all. */
  resetRate: number;
  /** Answer `307` with `Location:` this absolute http(s) URL plus the request's path and query. */
  redirectTo: string | null;
  /** Answer with a JSON body of exactly this many bytes, streamed (0: off). */
  hugeAnswerBytes: number;
  /** Send that body without Content-Length (chunked), so only reading it tells its size. */
  hugeAnswerChunked: boolean;
  /** Status of that answer: 200, or an error status with a `{code, message}` body. */
  hugeAnswerStatus: HugeAnswerStatus;
  /** Answer 200 `application/json` with a document cut short: not JSON. */
  malformedJson: boolean;
  /** Send every answer's body one byte per this many ms, headers at once (0: off). */
  trickleIntervalMs: number;
}

/** Statuses a `hugeAnswerBytes` answer may carry. */
export type HugeAnswerStatus = 200 | FaultStatus;

/** Any subset of a {@link FaultConfig}; missing fields take their defaults. */
export type FaultSettings = Partial<FaultConfig>;

/** Run-time fault switch, shared by the handle and `PUT /admin/faults`. */
export interface FaultSwitch {
  /** The configuration in force, with counts showing what is left. */
  get(): FaultConfig;
  /**
   * Replaces the whole configuration (fields not given return to their defaults) and
   * reseeds the generator. Throws on invalid settings.
   */
  set(settings: FaultSettings): FaultConfig;
  /** Turns every fault off. */
  clear(): void;
}

/** Read and drift-injection access to the provider's buckets (every account's) from the same process. */
export interface StoreView {
  /** Every bucket of every account, ordered by id. */
  list(): Bucket[];
  get(id: string): Bucket | undefined;
  count(): number;
  /** Same effect as `PATCH /admin/buckets/{id}`; undefined when absent. */
  adminPatch(id: string, patch: AdminBucketPatch): Bucket | undefined;
  /** Same effect as `DELETE /admin/buckets/{id}`; false when absent. */
  adminDelete(id: string): boolean;
  /**
   * Same effect as `POST /idempotency-keys/{key}/revoke` made for `account` (default: the
   * first key's account): the live bucket the key made, if any.
   */
  revokeIdempotencyKey(key: string, account?: string): Bucket | undefined;
  /** Same answer as `GET /admin/late-commits`. */
  lateCommits(): LateCommitReport;
}

/** Request counters keyed `"<METHOD> <route template> <status>"`, e.g. `"GET /buckets/{id} 200"`. */
export interface ProviderStats {
  total: number;
  /** A dropped connection counts under the status `dropped`. */
  requests: Record<string, number>;
}

/** Options of {@link ProviderHandle}'s factory, `startProvider`. */
export interface ProviderOptions {
  /** @default 0 (an ephemeral port) */
  port?: number;
  /** @default '127.0.0.1' */
  host?: string;
  /**
   * Accepted bearer keys for `/buckets`; at least one is required. Each is an account of its
   * own, unless written `ACCOUNT:KEY`: keys sharing an ACCOUNT share its buckets. The first
   * key's account is the default one (see `StoreView.revokeIdempotencyKey`, old data files).
   */
  apiKeys: readonly string[];
  /** Enables `/admin/*` when set; those routes answer 404 otherwise. */
  adminToken?: string;
  /** @default ['us-east-1', 'us-west-2', 'eu-west-1', 'eu-central-1', 'ap-southeast-1'] */
  regions?: readonly string[];
  /** Time a new bucket stays Provisioning. @default 5000 */
  activationDelayMs?: number;
  /** Time a resized bucket stays Resizing. @default activationDelayMs */
  resizeDelayMs?: number;
  /** Persist buckets and idempotency keys to this JSON file. @default in memory only */
  dataFile?: string;
  /** Debounce of data file writes. @default 50 */
  persistDebounceMs?: number;
  /** Access and error logs. @default a silent logger */
  logger?: Logger;
  /** @default 65536 */
  maxBodyBytes?: number;
  /** Faults in force at start. */
  faults?: FaultSettings;
  /** Clock in epoch milliseconds; tests may pass a fake. @default Date.now */
  now?: () => number;
  /** Longest wait for in-flight requests on close before sockets are cut. @default 2000 */
  shutdownGraceMs?: number;
}

/** A running provider. */
export interface ProviderHandle {
  /** Base URL, e.g. `http://127.0.0.1:41234`. */
  url: string;
  port: number;
  faults: FaultSwitch;
  store: StoreView;
  /**
   * Same effect as `POST /admin/api-keys`: accepts `key` from now on, for `account` (default:
   * an account of its own). Returns the account. Throws when the key belongs to another account.
   */
  addApiKey(key: string, account?: string): string;
  stats(): ProviderStats;
  /** Zeroes the request counters. */
  resetStats(): void;
  /** Stops accepting, waits for in-flight requests, then flushes the data file. */
  close(): Promise<void>;
}

/** Regions accepted when none are configured. */
export const DEFAULT_REGIONS: readonly string[] = ['us-east-1', 'us-west-2', 'eu-west-1', 'eu-central-1', 'ap-southeast-1'];

/** Smallest and largest accepted `sizeGB`. */
export const SIZE_GB_MIN = 1;
/** @see SIZE_GB_MIN */
export const SIZE_GB_MAX = 10000;
/** Longest accepted `Idempotency-Key` header. */
export const IDEMPOTENCY_KEY_MAX = 255;
/** Default and largest `limit` of `GET /buckets`. */
export const LIST_LIMIT_DEFAULT = 100;
/** @see LIST_LIMIT_DEFAULT */
export const LIST_LIMIT_MAX = 1000;
