/**
 * Reads a provider error answer into what may reach a StorageBucket's status. The endpoint is
 * user-chosen, so its body may be anything (an internal service's page, a proxy's JSON); only
 * the provider contract's `{code, message}` with a code of the contract gets through, and its
 * message is bounded to one line of printable text. Anything else becomes a fixed message, so
 * status and events can never reflect another service's body to namespace viewers.
 *
 * An error body is read only up to {@link MAX_ERROR_BODY_BYTES} (exchange.ts stops reading
 * there and drops the socket): a contract error is a short line, so a longer body is not one,
 * and a 400 MB error page never sits in memory.
 */

/**
 * Most bytes of an error answer that are read: a contract error is well under 1 KiB (its
 * message is shown cut to {@link MAX_PROVIDER_MESSAGE} characters anyway).
 */
export const MAX_ERROR_BODY_BYTES = 16 * 1024;

/** Error codes of the provider contract (provider/README.md, "HTTP API"). */
export const PROVIDER_ERROR_CODES: ReadonlySet<string> = new Set([
  'NotFound',
  'MethodNotAllowed',
  'Unauthorized',
  'Forbidden',
  'ValidationFailed',
  'MalformedJSON',
  'UnsupportedMediaType',
  'PayloadTooLarge',
  'IdempotencyKeyReused',
  'BucketDeleted',
  'IdempotencyKeyRevoked',
  'PreconditionFailed',
  'NotReady',
  'Throttled',
  'ServiceUnavailable',
  'InternalError',
  'BadRequest',
]);

/** Longest provider message that reaches status. */
export const MAX_PROVIDER_MESSAGE = 160;

/** The parts of an error answer that may be shown. */
export interface ProviderErrorBody {
  /** A contract code, or `HTTP<status>` when the body was not a contract error. */
  readonly code: string;
  /** Empty when the provider gave none; a fixed text when the body was not a contract error. */
  readonly detail: string;
}

/** Fixed text for an answer that is not a provider error body. */
export const NOT_A_PROVIDER_ERROR = 'the endpoint did not answer with a provider error body';

/**
 * Fixed text for a redirect. The client never follows one (the API key would go to wherever
 * the endpoint points), and the Location is not shown: it is the endpoint's to choose.
 */
export const REDIRECT_NOT_FOLLOWED = 'the endpoint answered with a redirect, which is not followed; set the endpoint to the final address';

/**
 * Parses `text`, the body of an answer with HTTP `status`; never throws. `truncated`: the body
 * was longer than what was read, so it is no contract error, whatever its start looks like.
 */
export function readProviderErrorBody(status: number, text: string, truncated = false): ProviderErrorBody {
  const fallback: ProviderErrorBody = { code: `HTTP${status}`, detail: text.trim() === '' && !truncated ? '' : NOT_A_PROVIDER_ERROR };
  if (status >= 300 && status < 400) return { code: `HTTP${status}`, detail: REDIRECT_NOT_FOLLOWED };
  if (truncated) return fallback;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return fallback;
  }
  if (typeof parsed !== 'object' || parsed === null) return fallback;
  const { code, message } = parsed as { code?: unknown; message?: unknown };
  if (typeof code !== 'string' || !PROVIDER_ERROR_CODES.has(code)) return fallback;
  return { code, detail: typeof message === 'string' ? boundMessage(message) : '' };
}

/** First line, printable characters only, at most {@link MAX_PROVIDER_MESSAGE}. */
function boundMessage(message: string): string {
  const line = (message.split(/\r?\n/)[0] ?? '').replace(/[^\x20-\x7e]/g, '').trim();
  return line.length > MAX_PROVIDER_MESSAGE ? `${line.slice(0, MAX_PROVIDER_MESSAGE - 3)}...` : line;
}
