/**
 * Errors of the provider seam. One class with the facts a caller decides on: the HTTP status
 * (0 for transport failures), the provider's code, whether retrying can help, and how long the
 * provider asked us to wait. Messages never carry request headers or the API key.
 *
 * Two subclasses name the client's own limits, so a caller can tell "the endpoint is down" from
 * "the endpoint answered more, or more slowly, than we take": {@link ProviderAnswerTooLargeError}
 * and {@link ProviderTimeoutError}. Their messages name the limit and the endpoint's host (never
 * its path, query or userinfo) and are stable for a given limit, so a condition carrying one is
 * written once, not at every retry.
 */

/** An unsuccessful provider call. */
export class ProviderError extends Error {
  /** HTTP status, or 0 when no usable response arrived (timeout, reset, refused, cut short). */
  public readonly status: number;
  /** The provider's error code, e.g. ValidationFailed, or a transport code like ETIMEDOUT. */
  public readonly code: string;
  /** True when the same call may succeed later (5xx, 429, transport errors). */
  public readonly retryable: boolean;
  /** Delay the provider asked for (429/503 Retry-After), in ms. */
  public readonly retryAfterMs: number | undefined;

  /**
   * @param opts.retryable overrides the status's own answer, for an answer whose status says
   * success but whose body cannot be used (the endpoint may serve a usable one later).
   */
  constructor(message: string, opts: { status: number; code: string; retryAfterMs?: number; retryable?: boolean; cause?: unknown }) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = 'ProviderError';
    this.status = opts.status;
    this.code = opts.code;
    this.retryAfterMs = opts.retryAfterMs;
    this.retryable = opts.retryable ?? (opts.status === 0 || opts.status === 408 || opts.status === 429 || opts.status >= 500);
  }

  /** True for 401/403: the configured API key is missing, wrong or not allowed. */
  get isAuthError(): boolean {
    return this.status === 401 || this.status === 403;
  }

  /** True for 404. */
  get isNotFound(): boolean {
    return this.status === 404;
  }
}

/** Code of a {@link ProviderAnswerTooLargeError}. */
export const ANSWER_TOO_LARGE = 'AnswerTooLarge';

/** Which limit a {@link ProviderAnswerTooLargeError} hit. */
export type AnswerLimit =
  /** One answer's bytes (announced by Content-Length, or counted while reading). */
  | 'bytes'
  /** One answer's JSON values (see `json-budget.ts`): what JSON.parse would spend memory on. */
  | 'values'
  /** The bytes of every page of one bucket list together. */
  | 'listTotal';

/**
 * An answer larger than the client takes: refused on its Content-Length before a byte of it
 * was read, or cut (the socket destroyed) as soon as it passed the limit. No usable response
 * arrived, so `status` is 0; retryable, since an endpoint may be fixed without any object of
 * ours changing.
 */
export class ProviderAnswerTooLargeError extends ProviderError {
  /** The limit that was passed: bytes, or JSON values for `values`. */
  public readonly limit: number;
  /** Which limit. */
  public readonly limitKind: AnswerLimit;
  /** Body bytes read before the call was cut: 0 when refused on Content-Length. */
  public readonly bytesRead: number;

  constructor(opts: { operation: string; host: string; limit: number; limitKind: AnswerLimit; bytesRead: number }) {
    super(`provider ${opts.operation} failed: ${tooLargeText(opts.host, opts.limitKind, opts.limit)}`, {
      status: 0,
      code: ANSWER_TOO_LARGE,
    });
    this.name = 'ProviderAnswerTooLargeError';
    this.limit = opts.limit;
    this.limitKind = opts.limitKind;
    this.bytesRead = opts.bytesRead;
  }
}

/** Code of a {@link ProviderTimeoutError}, the transport code Node uses for the same. */
export const TIMED_OUT = 'ETIMEDOUT';

/** Which clock a {@link ProviderTimeoutError} ran out on. */
export type TimeoutKind =
  /** The socket was silent this long (Node's socket timeout). */
  | 'idle'
  /** The whole call, request to last byte of the answer, took this long. */
  | 'deadline';

/** A call the client gave up on: its socket was destroyed. Retryable (status 0). */
export class ProviderTimeoutError extends ProviderError {
  /** Which timeout. */
  public readonly timeoutKind: TimeoutKind;
  /** Its length, ms. */
  public readonly timeoutMs: number;

  constructor(opts: { operation: string; host: string; timeoutKind: TimeoutKind; timeoutMs: number }) {
    const what =
      opts.timeoutKind === 'idle'
        ? `${opts.host} sent nothing for ${formatDuration(opts.timeoutMs)} (the idle timeout)`
        : `${opts.host} did not finish answering within ${formatDuration(opts.timeoutMs)} (the call deadline)`;
    super(`provider ${opts.operation} failed: ${what}`, { status: 0, code: TIMED_OUT });
    this.name = 'ProviderTimeoutError';
    this.timeoutKind = opts.timeoutKind;
    this.timeoutMs = opts.timeoutMs;
  }
}

function tooLargeText(host: string, kind: AnswerLimit, limit: number): string {
  switch (kind) {
    case 'bytes':
      return `the answer from ${host} is larger than ${formatBytes(limit)} (the answer size limit)`;
    case 'values':
      return `the answer from ${host} holds more than ${limit} JSON values (the answer size limit)`;
    case 'listTotal':
      return `the bucket list from ${host} is larger than ${formatBytes(limit)} in total (the list size limit)`;
  }
}

/** `1 MiB`, `512 KiB`, or plain bytes when not a whole number of either. */
export function formatBytes(n: number): string {
  if (n >= 1024 * 1024 && n % (1024 * 1024) === 0) return `${n / (1024 * 1024)} MiB`;
  if (n >= 1024 && n % 1024 === 0) return `${n / 1024} KiB`;
  return `${n} bytes`;
}

/** `20 s`, or ms when not whole seconds. */
export function formatDuration(ms: number): string {
  return ms >= 1000 && ms % 1000 === 0 ? `${ms / 1000} s` : `${ms} ms`;
}

/** Narrows `err` to a ProviderError. */
export function isProviderError(err: unknown): err is ProviderError {
  return err instanceof ProviderError;
}
