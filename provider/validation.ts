/**
 * Turns untrusted JSON and query strings into typed requests. Every rejection is a 422
 * whose message starts with the offending field, so clients can point at their mistake.
 */
import { HttpError } from './http';
import {
  BUCKET_PHASES,
  ErrorCode,
  IDEMPOTENCY_KEY_MAX,
  LIST_LIMIT_DEFAULT,
  LIST_LIMIT_MAX,
  SIZE_GB_MAX,
  SIZE_GB_MIN,
  type AdminBucketPatch,
  type BucketPhase,
  type CreateBucketRequest,
  type ListBucketsQuery,
  type UpdateBucketRequest,
} from './types';

/** Most tags a bucket may carry. */
export const TAGS_MAX = 50;
/** Longest tag key. */
export const TAG_KEY_MAX = 128;
/** Longest tag value. */
export const TAG_VALUE_MAX = 256;

/** Pattern of bucket ids; anything else in a path cannot name a bucket. */
export const BUCKET_ID_PATTERN = /^bucket-[0-9a-f]{12}$/;

/** A 422 naming `field`. */
export function invalid(field: string, problem: string): HttpError {
  return new HttpError(422, ErrorCode.ValidationFailed, `${field}: ${problem}`);
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Rejects fields outside `allowed`, naming the first unknown one. */
function rejectUnknownFields(body: Record<string, unknown>, allowed: readonly string[], prefix = ''): void {
  for (const key of Object.keys(body)) {
    if (!allowed.includes(key)) throw invalid(`${prefix}${key}`, 'unknown field');
  }
}

function requireObject(body: unknown, what = 'body'): Record<string, unknown> {
  if (!isPlainObject(body)) throw invalid(what, 'must be a JSON object');
  return body;
}

function sizeGB(value: unknown, field = 'sizeGB'): number {
  if (typeof value !== 'number' || !Number.isInteger(value)) throw invalid(field, 'must be an integer');
  if (value < SIZE_GB_MIN || value > SIZE_GB_MAX) {
    throw invalid(field, `must be between ${SIZE_GB_MIN} and ${SIZE_GB_MAX}`);
  }
  return value;
}

function bool(value: unknown, field: string): boolean {
  if (typeof value !== 'boolean') throw invalid(field, 'must be a boolean');
  return value;
}

function tags(value: unknown): Record<string, string> {
  if (!isPlainObject(value)) throw invalid('tags', 'must be an object of string values');
  const entries = Object.entries(value);
  if (entries.length > TAGS_MAX) throw invalid('tags', `at most ${TAGS_MAX} tags`);
  // A null-prototype copy so keys like "__proto__" are plain data, never prototype changes.
  const out: Record<string, string> = Object.create(null) as Record<string, string>;
  for (const [key, v] of entries) {
    if (key.length === 0 || key.length > TAG_KEY_MAX) {
      throw invalid('tags', `keys must be 1 to ${TAG_KEY_MAX} characters`);
    }
    if (typeof v !== 'string') throw invalid(`tags.${key}`, 'must be a string');
    if (v.length > TAG_VALUE_MAX) throw invalid(`tags.${key}`, `at most ${TAG_VALUE_MAX} characters`);
    out[key] = v;
  }
  return sortedTags(out);
}

/** Tags with keys in sorted order, so equal maps serialise equally. */
export function sortedTags(input: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const key of Object.keys(input).sort()) {
    Object.defineProperty(out, key, { value: input[key], enumerable: true, writable: true, configurable: true });
  }
  return out;
}

function region(value: unknown, regions: readonly string[]): string {
  if (typeof value !== 'string') throw invalid('region', 'must be a string');
  if (!regions.includes(value)) throw invalid('region', `unknown region; expected one of ${regions.join(', ')}`);
  return value;
}

/** Validates a `POST /buckets` body and applies defaults. */
export function parseCreate(body: unknown, regions: readonly string[]): CreateBucketRequest {
  const obj = requireObject(body);
  rejectUnknownFields(obj, ['region', 'sizeGB', 'encrypted', 'tags']);
  if (obj.region === undefined) throw invalid('region', 'is required');
  if (obj.sizeGB === undefined) throw invalid('sizeGB', 'is required');
  return {
    region: region(obj.region, regions),
    sizeGB: sizeGB(obj.sizeGB),
    encrypted: obj.encrypted === undefined ? false : bool(obj.encrypted, 'encrypted'),
    tags: obj.tags === undefined ? {} : tags(obj.tags),
  };
}

/** Validates a `PATCH /buckets/{id}` body. Rules that need the bucket live in the store. */
export function parseUpdate(body: unknown): UpdateBucketRequest {
  const obj = requireObject(body);
  rejectUnknownFields(obj, ['sizeGB', 'encrypted', 'tags']);
  const out: UpdateBucketRequest = {};
  if (obj.sizeGB !== undefined) out.sizeGB = sizeGB(obj.sizeGB);
  if (obj.encrypted !== undefined) out.encrypted = bool(obj.encrypted, 'encrypted');
  if (obj.tags !== undefined) out.tags = tags(obj.tags);
  return out;
}

/** Validates a `PATCH /admin/buckets/{id}` body. */
export function parseAdminPatch(body: unknown): AdminBucketPatch {
  const obj = requireObject(body);
  rejectUnknownFields(obj, ['sizeGB', 'encrypted', 'phase', 'tags']);
  const out: AdminBucketPatch = {};
  if (obj.sizeGB !== undefined) out.sizeGB = sizeGB(obj.sizeGB);
  if (obj.encrypted !== undefined) out.encrypted = bool(obj.encrypted, 'encrypted');
  if (obj.tags !== undefined) out.tags = tags(obj.tags);
  if (obj.phase !== undefined) {
    if (typeof obj.phase !== 'string' || !(BUCKET_PHASES as readonly string[]).includes(obj.phase)) {
      throw invalid('phase', `must be one of ${BUCKET_PHASES.join(', ')}`);
    }
    out.phase = obj.phase as BucketPhase;
  }
  return out;
}

/**
 * Validates the `Idempotency-Key` header (or, with `field`, a key given elsewhere, such as a
 * path segment); undefined when absent.
 */
export function parseIdempotencyKey(header: string | string[] | undefined, field = 'Idempotency-Key'): string | undefined {
  if (header === undefined) return undefined;
  if (Array.isArray(header)) throw invalid(field, 'must be given once');
  if (header.length === 0) throw invalid(field, 'must not be empty');
  if (header.length > IDEMPOTENCY_KEY_MAX) throw invalid(field, `at most ${IDEMPOTENCY_KEY_MAX} characters`);
  return header;
}

/**
 * The `If-Tags` header of a conditional delete: `k=v&k=v`, URL-encoded (as Azure's
 * `x-ms-if-tags` makes a delete conditional on blob tags). Undefined when absent.
 */
export function parseIfTags(header: string | string[] | undefined): [string, string][] | undefined {
  if (header === undefined) return undefined;
  if (Array.isArray(header)) throw invalid('If-Tags', 'must be given once');
  const pairs = [...new URLSearchParams(header)];
  if (pairs.length === 0 || pairs.some(([k]) => k === '')) throw invalid('If-Tags', 'must be k=v pairs');
  return pairs;
}

/** Opaque page token: the base64url of the last id of the page. */
export function encodeContinue(lastId: string): string {
  return Buffer.from(lastId, 'utf8').toString('base64url');
}

function decodeContinue(token: string): string {
  const id = Buffer.from(token, 'base64url').toString('utf8');
  if (!BUCKET_ID_PATTERN.test(id)) throw invalid('continue', 'is not a token returned by this API');
  return id;
}

/** Validates the query of `GET /buckets`; unknown parameters are rejected. */
export function parseListQuery(params: URLSearchParams): ListBucketsQuery {
  const query: ListBucketsQuery = { tags: [], limit: LIST_LIMIT_DEFAULT };
  const once = (name: string): string | undefined => {
    const values = params.getAll(name);
    if (values.length > 1) throw invalid(name, 'must be given once');
    return values[0];
  };
  for (const name of new Set(params.keys())) {
    if (!['idempotencyKey', 'tag', 'limit', 'continue'].includes(name)) throw invalid(name, 'unknown query parameter');
  }
  const key = once('idempotencyKey');
  if (key !== undefined) query.idempotencyKey = parseIdempotencyKey(key);
  for (const pair of params.getAll('tag')) {
    const eq = pair.indexOf('=');
    if (eq <= 0) throw invalid('tag', 'must be key=value');
    query.tags.push([pair.slice(0, eq), pair.slice(eq + 1)]);
  }
  const limit = once('limit');
  if (limit !== undefined) {
    const n = Number(limit);
    if (!/^\d+$/.test(limit) || n < 1 || n > LIST_LIMIT_MAX) {
      throw invalid('limit', `must be an integer between 1 and ${LIST_LIMIT_MAX}`);
    }
    query.limit = n;
  }
  const token = once('continue');
  if (token !== undefined) query.after = decodeContinue(token);
  return query;
}
