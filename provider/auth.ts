/**
 * Bearer-token checks. Keys are kept only as SHA-256 digests and compared with
 * timingSafeEqual over digests of equal length, so neither a key's content nor its length
 * leaks through timing, and no error message ever echoes what the client sent.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { HttpError } from './http';
import { ErrorCode } from './types';

function digest(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}

/** Checks `Authorization: Bearer <token>` headers against a fixed set of secrets. */
export class BearerAuth {
  private readonly digests: readonly Buffer[];

  /**
   * @param secrets accepted tokens; must not be empty.
   * @param realm what the tokens guard, used only in messages (e.g. "API key").
   */
  constructor(
    secrets: readonly string[],
    private readonly realm: string,
  ) {
    if (secrets.length === 0) throw new Error(`at least one ${realm} is required`);
    if (secrets.some((s) => s.length === 0)) throw new Error(`an empty ${realm} is not allowed`);
    this.digests = secrets.map(digest);
  }

  /** Throws 401 when the header is missing or malformed and 403 when the token is wrong. */
  check(header: string | undefined): void {
    const match = header === undefined ? null : /^Bearer +(\S+) *$/i.exec(header);
    if (match === null || match[1] === undefined) {
      throw new HttpError(401, ErrorCode.Unauthorized, 'missing or malformed Authorization header; expected Bearer token', {
        'WWW-Authenticate': 'Bearer',
      });
    }
    const candidate = digest(match[1]);
    // Compare against every key without stopping early, so timing does not tell which matched.
    let ok = false;
    for (const d of this.digests) ok = timingSafeEqual(candidate, d) || ok;
    if (!ok) throw new HttpError(403, ErrorCode.Forbidden, `${this.realm} not accepted`);
  }
}
