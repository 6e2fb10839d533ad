/**
 * One HTTP exchange with a provider endpoint, bounded in bytes and in time. The endpoint is
 * chosen by a tenant, so its answers are untrusted input (Go's `http.MaxBytesReader`, client-go's
 * per-request deadline):
 *
 * - a success body larger than `maxBytes` is refused on its Content-Length before a byte is
 *   read, and otherwise cut as soon as the count passes the cap; a body whose JSON values pass
 *   their budget (json-budget.ts) is cut the same way. The socket is destroyed, never drained.
 * - an error body is read up to {@link MAX_ERROR_BODY_BYTES} and the rest is never read: only
 *   its status, and a contract `{code, message}` that fits, are ever used.
 * - the socket's idle timeout and a deadline for the whole exchange (retries on a stale
 *   kept-alive socket included) each destroy the socket when they pass.
 *
 * Redirects are never followed (Node's http does not): a 3xx is an error answer like any other,
 * so the API key is never sent to a host the tenant's endpoint names.
 */
import http from 'node:http';
import https from 'node:https';
import { MAX_ERROR_BODY_BYTES } from './error-body';
import { ProviderAnswerTooLargeError, ProviderTimeoutError } from './errors';
import { JsonValueCounter, jsonValueBudget } from './json-budget';

/** What one exchange may cost. */
export interface ExchangeLimits {
  /** Largest success body, bytes. */
  readonly maxBytes: number;
  /** Socket idle timeout, ms. */
  readonly idleMs: number;
  /** The whole exchange's deadline, ms, as configured (for the message). */
  readonly deadlineMs: number;
  /** `performance.now()` by which it must have ended. */
  readonly deadlineAt: number;
}

/** One request. */
export interface ExchangeRequest {
  readonly url: URL;
  readonly method: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly payload: string | undefined;
  readonly agent: http.Agent;
  readonly signal: AbortSignal | undefined;
  /** The operation's name in messages, e.g. `get`. */
  readonly operation: string;
}

/** An answer read within its limits. */
export interface Answer {
  readonly status: number;
  /** The body; for an error answer, at most {@link MAX_ERROR_BODY_BYTES} of it. */
  readonly text: string;
  /** Body bytes read. */
  readonly bytes: number;
  /** True when an error body was longer than what was read. */
  readonly truncated: boolean;
  readonly retryAfter: string | undefined;
}

/** Errors of a request sent on a kept-alive socket the server had already closed. */
const STALE_SOCKET_CODES = new Set(['ECONNRESET', 'EPIPE']);
/** Attempts of one call while each fails on a stale kept-alive socket (each stale socket is dropped). */
const MAX_STALE_SOCKET_ATTEMPTS = 3;

/** The Content-Length header as a number, when it is one. */
function contentLength(header: string | undefined): number | undefined {
  if (header === undefined || !/^\d+$/.test(header)) return undefined;
  return Number(header);
}

/**
 * Sends `r` and reads its answer within `limits`. Rejects with a ProviderAnswerTooLargeError or
 * a ProviderTimeoutError past a limit, or with the transport's own error (a reset, an abort).
 */
export function exchange(r: ExchangeRequest, limits: ExchangeLimits, attempt = 1): Promise<Answer> {
  const host = r.url.host;
  return new Promise<Answer>((resolve, reject) => {
    let settled = false;
    const settle = (then: () => void): void => {
      if (settled) return;
      settled = true;
      clearTimeout(deadline);
      then();
    };
    // Destroying the request destroys its socket (a kept-alive one leaves the pool) and the
    // response with it: nothing more is read, whatever the endpoint still sends.
    const fail = (err: Error): void =>
      settle(() => {
        req.destroy(err);
        reject(err);
      });
    const timeout = (timeoutKind: 'idle' | 'deadline'): void =>
      fail(
        new ProviderTimeoutError({
          operation: r.operation,
          host,
          timeoutKind,
          timeoutMs: timeoutKind === 'idle' ? limits.idleMs : limits.deadlineMs,
        }),
      );
    const deadline = setTimeout(() => timeout('deadline'), Math.max(0, limits.deadlineAt - performance.now()));
    const tooLarge = (limitKind: 'bytes' | 'values', limit: number, bytesRead: number): void =>
      fail(new ProviderAnswerTooLargeError({ operation: r.operation, host, limit, limitKind, bytesRead }));

    const isHttps = r.url.protocol === 'https:';
    const req = (isHttps ? https : http).request(
      r.url,
      { method: r.method, headers: r.headers, agent: r.agent, timeout: limits.idleMs, signal: r.signal },
      (res) => {
        const status = res.statusCode ?? 0;
        const ok = status >= 200 && status < 300;
        const ra = res.headers['retry-after'];
        const retryAfter = Array.isArray(ra) ? ra[0] : ra;
        const declared = contentLength(res.headers['content-length']);
        const answer = (text: string, bytes: number, truncated: boolean): void =>
          settle(() => {
            // An error body left unread would otherwise stay queued on a kept-alive socket.
            if (truncated) req.destroy();
            resolve({ status, text, bytes, truncated, retryAfter });
          });
        if (ok && declared !== undefined && declared > limits.maxBytes) {
          tooLarge('bytes', limits.maxBytes, 0);
          return;
        }
        if (!ok && declared !== undefined && declared > MAX_ERROR_BODY_BYTES) {
          answer('', 0, true);
          return;
        }
        const cap = ok ? limits.maxBytes : MAX_ERROR_BODY_BYTES;
        const budget = jsonValueBudget(limits.maxBytes);
        const values = ok ? new JsonValueCounter(budget) : undefined;
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          if (settled) return;
          if (size + chunk.length > cap) {
            if (ok) {
              tooLarge('bytes', cap, size + chunk.length);
              return;
            }
            chunks.push(chunk.subarray(0, cap - size));
            answer(Buffer.concat(chunks).toString('utf8'), cap, true);
            return;
          }
          if (values && !values.add(chunk)) {
            tooLarge('values', budget, size + chunk.length);
            return;
          }
          chunks.push(chunk);
          size += chunk.length;
        });
        res.on('end', () => answer(Buffer.concat(chunks, size).toString('utf8'), size, false));
        res.on('error', fail);
        // A response closed before its end without an error (seen when a socket is cut mid-body).
        res.on('close', () => {
          if (!res.complete) fail(Object.assign(new Error('provider answer ended early'), { code: 'ECONNRESET' }));
        });
      },
    );
    req.on('timeout', () => timeout('idle'));
    req.on('error', (err: NodeJS.ErrnoException) => {
      if (settled) return;
      // A kept-alive socket the provider closed as this request went out (its idle timeout):
      // the request goes again on another socket, as Node's documentation advises. Should the
      // first one have reached the provider after all, repeating it is still safe: creates
      // carry their idempotency key, and every other call is idempotent.
      if (req.reusedSocket && STALE_SOCKET_CODES.has(err.code ?? '') && attempt < MAX_STALE_SOCKET_ATTEMPTS && !r.signal?.aborted) {
        settle(() => resolve(exchange(r, limits, attempt + 1)));
        return;
      }
      fail(err);
    });
    req.end(r.payload);
  });
}
