/**
 * The ConversionReview protocol (apiextensions.k8s.io/v1) around the pure `convert()`: what
 * the conversion webhook answers for a request body, decided without I/O so every answer is
 * table-tested. The HTTPS server (server.ts) only parses, calls {@link reviewConversion},
 * counts and writes.
 *
 * Rules the API server holds a webhook to, and how they are met here:
 * - `response.uid` echoes `request.uid`, also in a failure, or the API server discards the
 *   answer as not its own.
 * - `convertedObjects` has one object per request object, in the same order, each in
 *   `desiredAPIVersion`; the API server matches them up by position.
 * - One object that cannot be converted fails the whole review (`result.status: Failure`,
 *   no objects): a partial answer would be misread by position. The message names the object
 *   (index, kind, namespace/name) and why, and never quotes a field value, so nothing a user
 *   stored (a Secret reference is a name, but any string field could hold anything) reaches
 *   API server logs or the user's error through it.
 * - A body that is not a v1 ConversionReview request is a protocol error (HTTP 400), not a
 *   conversion failure: there is no uid to answer to.
 */
import { convert, CONVERTIBLE_API_VERSIONS } from '../api/convert';

/** The ConversionReview version the webhook speaks (the CRDs list only it in `conversionReviewVersions`). */
export const CONVERSION_REVIEW_API_VERSION = 'apiextensions.k8s.io/v1';

/** `request` of a ConversionReview, as the API server sends it. */
export interface ConversionRequest {
  readonly uid: string;
  readonly desiredAPIVersion: string;
  readonly objects: readonly unknown[];
}

/** `response.result`: a metav1.Status with the fields the API server reads. */
export type ConversionStatus = { readonly status: 'Success' } | { readonly status: 'Failure'; readonly message: string };

/** A ConversionReview carrying a response. */
export interface ConversionReviewResponse {
  readonly apiVersion: typeof CONVERSION_REVIEW_API_VERSION;
  readonly kind: 'ConversionReview';
  readonly response: {
    readonly uid: string;
    readonly convertedObjects: readonly unknown[];
    readonly result: ConversionStatus;
  };
}

/**
 * The version pair of a review, for metrics: `from` is the version (e.g. `v1`) of the request's
 * objects (`mixed` when they differ, `none` for an empty list), `to` the desired one; `unknown`
 * for a version the webhook does not convert and for a body that is not a review. Version
 * names only, so the label set stays small.
 */
export interface VersionPair {
  readonly from: string;
  readonly to: string;
}

/** What the webhook answers for one request body. */
export type ReviewOutcome =
  | { readonly kind: 'review'; readonly pair: VersionPair; readonly review: ConversionReviewResponse }
  | { readonly kind: 'invalid'; readonly pair: VersionPair; readonly message: string };

/**
 * The answer to the parsed request body `body`: a ConversionReview response (success or
 * failure), or `invalid` with a one-line reason when `body` is not a v1 ConversionReview
 * request.
 */
export function reviewConversion(body: unknown): ReviewOutcome {
  const steps = reviewSteps(body);
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
  }
}

/**
 * {@link reviewConversion} one object at a time: the generator yields after each object it
 * converted and returns the same outcome, so the server can let timers and I/O run between
 * the objects of a large review (slices.ts).
 */
export function* reviewSteps(body: unknown): Generator<void, ReviewOutcome, void> {
  const request = parseRequest(body);
  if (typeof request === 'string') return { kind: 'invalid', pair: { from: 'unknown', to: 'unknown' }, message: request };
  const pair = versionPair(request);
  const converted: unknown[] = [];
  for (const [index, object] of request.objects.entries()) {
    const result = convert(object, request.desiredAPIVersion);
    if (!result.ok)
      return { kind: 'review', pair, review: answer(request.uid, [], { status: 'Failure', message: failure(index, object, result.message) }) };
    converted.push(result.object);
    yield;
  }
  return { kind: 'review', pair, review: answer(request.uid, converted, { status: 'Success' }) };
}

function answer(uid: string, convertedObjects: unknown[], result: ConversionStatus): ConversionReviewResponse {
  return { apiVersion: CONVERSION_REVIEW_API_VERSION, kind: 'ConversionReview', response: { uid, convertedObjects, result } };
}

/** The request of `body`, or why it is not one. */
function parseRequest(body: unknown): ConversionRequest | string {
  if (!isRecord(body)) return 'body is not a JSON object';
  if (body['kind'] !== 'ConversionReview') return 'body is not a ConversionReview';
  if (body['apiVersion'] !== CONVERSION_REVIEW_API_VERSION) return `ConversionReview must be ${CONVERSION_REVIEW_API_VERSION}`;
  const request = body['request'];
  if (!isRecord(request)) return 'ConversionReview has no request';
  const { uid, desiredAPIVersion, objects } = request;
  if (typeof uid !== 'string' || uid === '') return 'ConversionReview request has no uid';
  if (typeof desiredAPIVersion !== 'string' || desiredAPIVersion === '') return 'ConversionReview request has no desiredAPIVersion';
  // The API server omits an empty list (omitempty), so absent means none.
  if (objects !== undefined && objects !== null && !Array.isArray(objects)) return 'ConversionReview request objects is not a list';
  return { uid, desiredAPIVersion, objects: Array.isArray(objects) ? objects : [] };
}

function versionPair(request: ConversionRequest): VersionPair {
  const froms = new Set(request.objects.map((o) => versionOf(isRecord(o) ? o['apiVersion'] : undefined)));
  const from = froms.size === 0 ? 'none' : froms.size === 1 ? [...froms][0]! : 'mixed';
  return { from, to: versionOf(request.desiredAPIVersion) };
}

/**
 * `v1` of `group/v1` for an apiVersion the webhook converts; `unknown` for anything else. A
 * label value from a request body: anyone who reaches the port can send one, so only the few
 * known versions ever become a series.
 */
function versionOf(apiVersion: unknown): string {
  if (typeof apiVersion !== 'string' || !CONVERTIBLE_API_VERSIONS.includes(apiVersion)) return 'unknown';
  return apiVersion.slice(apiVersion.lastIndexOf('/') + 1);
}

/** The failure message for object `index`: which object, and `reason` (which quotes no field value). */
function failure(index: number, object: unknown, reason: string): string {
  const meta = isRecord(object) && isRecord(object['metadata']) ? object['metadata'] : {};
  const name = typeof meta['name'] === 'string' ? meta['name'] : '';
  const namespace = typeof meta['namespace'] === 'string' ? meta['namespace'] : '';
  const id = namespace ? `${namespace}/${name}` : name;
  return `conversion webhook: object ${index}${id ? ` (${id})` : ''}: ${reason}`;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
