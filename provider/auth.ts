/**
 * Bearer-token checks and the accounts API keys belong to. Keys are kept only as SHA-256
 * digests; no error message ever echoes what the client sent.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { HttpError } from './http';
import { ErrorCode } from './types';

function digest(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}

/** Account names a key line may carry (`ACCOUNT:KEY`): short, printable, safe in JSON and logs. */
const ACCOUNT_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/;

/** A key and the account it belongs to. */
export interface ApiKeyEntry {
  key: string;
  account: string;
}

/** True when `name` may be used as an account name. */
export function isAccountName(name: string): boolean {
  return ACCOUNT_NAME.test(name);
}

/**
 * The account of a key that names none: `acct-` and the first 12 hex digits of the key's
 * SHA-256, so it is stable across restarts and tells nothing useful about the key.
 */
export function defaultAccountOf(key: string): string {
  return `acct-${digest(key).toString('hex').slice(0, 12)}`;
}

/**
 * Reads one configured key: `ACCOUNT:KEY` when the part before the first colon is a valid
 * account name and a key follows, else the whole value is the key and is an account of its own.
 */
export function parseApiKeyEntry(value: string): ApiKeyEntry {
  const colon = value.indexOf(':');
  if (colon > 0 && colon < value.length - 1) {
    const account = value.slice(0, colon);
    if (isAccountName(account)) return { key: value.slice(colon + 1), account };
  }
  return { key: value, account: defaultAccountOf(value) };
}

function bearer(header: string | undefined): string {
  const match = header === undefined ? null : /^Bearer +(\S+) *$/i.exec(header);
  if (match === null || match[1] === undefined) {
    throw new HttpError(401, ErrorCode.Unauthorized, 'missing or malformed Authorization header; expected Bearer token', {
      'WWW-Authenticate': 'Bearer',
    });
  }
  return match[1];
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
    const candidate = digest(bearer(header));
    // Compare against every key without stopping early, so timing does not tell which matched.
    let ok = false;
    for (const d of this.digests) ok = timingSafeEqual(candidate, d) || ok;
    if (!ok) throw new HttpError(403, ErrorCode.Forbidden, `${this.realm} not accepted`);
  }
}

/** Outcome of {@link ApiKeyRing.add}. */
export type AddKeyOutcome = 'added' | 'unchanged';

/**
 * The API keys and their accounts; keys can be added at run time. A lookup is a map lookup
 * by the key's SHA-256 digest: with a thousand tenants a compare against every key per
 * request would cost more than the request, and the timing of a lookup by digest tells an
 * attacker nothing about any key (they would need a preimage of the digest prefix).
 */
export class ApiKeyRing {
  private readonly accounts = new Map<string, string>();
  /** The account of the first key: old data files without accounts belong to it. */
  readonly defaultAccount: string;

  /** @param entries the keys at start (`ACCOUNT:KEY` already split); must not be empty. */
  constructor(entries: readonly ApiKeyEntry[]) {
    const first = entries[0];
    if (first === undefined) throw new Error('at least one API key is required');
    this.defaultAccount = first.account;
    for (const e of entries) {
      if (this.add(e.key, e.account) === 'conflict') throw new Error('an API key is configured for two accounts');
    }
  }

  /**
   * Adds a key to an account. Adding a key again to the same account changes nothing;
   * to another account it is refused (`conflict`), since a key names exactly one account.
   */
  add(key: string, account: string): AddKeyOutcome | 'conflict' {
    if (key.length === 0) throw new Error('an empty API key is not allowed');
    // A Bearer header cannot carry whitespace, so such a key could never be used.
    if (/\s/.test(key)) throw new Error('an API key must not contain whitespace');
    if (!isAccountName(account)) throw new Error('an account name must be 1-63 characters of A-Za-z0-9._- starting with a letter or digit');
    const id = digest(key).toString('hex');
    const known = this.accounts.get(id);
    if (known === account) return 'unchanged';
    if (known !== undefined) return 'conflict';
    this.accounts.set(id, account);
    return 'added';
  }

  /** Number of keys. */
  size(): number {
    return this.accounts.size;
  }

  /** The caller's account; throws 401 when the header is missing or malformed and 403 when the key is unknown. */
  check(header: string | undefined): string {
    const account = this.accounts.get(digest(bearer(header)).toString('hex'));
    if (account === undefined) throw new HttpError(403, ErrorCode.Forbidden, 'API key not accepted');
    return account;
  }
}
