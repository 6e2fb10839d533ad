/**
 * Error answers of the Kubernetes API server and the predicates callers branch on. Kept apart
 * from the transport so code that only classifies failures (reconcilers, leader election,
 * the write-failure reporter) does not depend on the HTTP machinery.
 */
import { isRecord, oneLine } from './client-internal';

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
  const reason = isRecord(parsed) && typeof parsed.reason === 'string' && parsed.reason !== '' ? parsed.reason : (DEFAULT_REASONS[code] ?? 'Unknown');
  const message = isRecord(parsed) && typeof parsed.message === 'string' && parsed.message !== '' ? oneLine(parsed.message) : fallbackMessage;
  const details = isRecord(parsed) && isRecord(parsed.details) ? parsed.details : undefined;
  const retry = details && typeof details.retryAfterSeconds === 'number' ? details.retryAfterSeconds : undefined;
  return new ApiError(code, reason, message, retry);
}
