/**
 * A bearer token read from a file and re-read when the file changes: the kubelet rotates
 * projected ServiceAccount tokens in place (an atomic symlink swap), and a token read once at
 * startup stops working after about an hour.
 */
import { readFile, stat } from 'node:fs/promises';
import { errorDetail, type CredentialSource, type Credentials } from './rest-config';

/** Options of `TokenFileSource`. */
export interface TokenFileOptions {
  /**
   * Re-read at least this often even when the file looks unchanged (a filesystem with coarse
   * timestamps), as client-go's cached token source does. @default 60000
   */
  readonly maxAgeMs?: number;
  /**
   * Serve the cached token without looking at the file for this long after the last look.
   * The kubelet rotates a projected token at 80 % of its lifetime, so a rotation noticed a
   * second late changes nothing, while a `stat` per request is a thread-pool round trip on
   * every API call. A 401 looks at once (`invalidate`). @default 1000
   */
  readonly checkIntervalMs?: number;
  /** Wall-clock milliseconds. @default Date.now */
  readonly now?: () => number;
}

/**
 * Serves the token in `path`. At most once per `checkIntervalMs` a request costs one `stat`;
 * the file is read again when its inode, size or modification time changed, or after
 * `maxAgeMs`. When a re-read fails the last good token is kept (the API server then says
 * whether it still works).
 */
export class TokenFileSource implements CredentialSource {
  private readonly maxAgeMs: number;
  private readonly checkIntervalMs: number;
  private readonly now: () => number;
  private cached?: { readonly creds: Credentials; readonly version: string; readonly readAt: number };
  /** When the file was last looked at; undefined forces a look. */
  private checkedAt?: number;

  constructor(
    readonly path: string,
    opts: TokenFileOptions = {},
  ) {
    this.maxAgeMs = opts.maxAgeMs ?? 60_000;
    this.checkIntervalMs = opts.checkIntervalMs ?? 1000;
    this.now = opts.now ?? Date.now;
  }

  async get(): Promise<Credentials> {
    const now = this.now();
    if (this.cached && this.checkedAt !== undefined && now - this.checkedAt < this.checkIntervalMs) return this.cached.creds;
    this.checkedAt = now;
    let version: string;
    try {
      const st = await stat(this.path, { bigint: true });
      version = `${st.ino}:${st.size}:${st.mtimeNs}`;
    } catch (err) {
      if (this.cached) return this.cached.creds;
      throw new Error(`cannot read token file ${this.path}: ${errorDetail(err)}`, { cause: err });
    }
    const c = this.cached;
    if (c && c.version === version && this.now() - c.readAt < this.maxAgeMs) return c.creds;
    try {
      const token = (await readFile(this.path, 'utf8')).trim();
      if (token === '') throw new Error('file is empty');
      this.cached = { creds: { token }, version, readAt: this.now() };
      return this.cached.creds;
    } catch (err) {
      if (c) return c.creds;
      throw new Error(`cannot read token file ${this.path}: ${errorDetail(err)}`, { cause: err });
    }
  }

  /** Forces a re-read on the next request: a 401 may mean the file changed unnoticed. */
  invalidate(): void {
    this.checkedAt = undefined;
    if (this.cached) this.cached = { ...this.cached, version: '' };
  }
}
