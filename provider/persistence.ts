/**
 * Optional JSON data file for the store. Writes are debounced (a burst of creates costs one
 * write) and atomic (temp file in the same directory, fsync, rename, fsync of the
 * directory), so a crash leaves either the old or the new state, never a torn file.
 */
import { randomBytes } from 'node:crypto';
import { open, readFile, rename, unlink } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import type { Logger } from 'pino';
import { BUCKET_PHASES } from './types';
import type { RevokedKey, SavedBucket, SavedIdempotencyKey, StoreSnapshot } from './store';

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Absent in files written before accounts existed: such records belong to the default account. */
function isOptionalAccount(value: unknown): boolean {
  return value === undefined || typeof value === 'string';
}

function isBucketRecord(value: unknown): value is SavedBucket {
  return (
    isObject(value) &&
    typeof value.id === 'string' &&
    isOptionalAccount(value.account) &&
    typeof value.region === 'string' &&
    typeof value.sizeGB === 'number' &&
    typeof value.encrypted === 'boolean' &&
    isObject(value.tags) &&
    Object.values(value.tags).every((v) => typeof v === 'string') &&
    typeof value.phase === 'string' &&
    (BUCKET_PHASES as readonly string[]).includes(value.phase) &&
    (value.idempotencyKey === undefined || typeof value.idempotencyKey === 'string') &&
    typeof value.createdAt === 'number' &&
    typeof value.updatedAt === 'number' &&
    (value.transitionEndsAt === undefined || typeof value.transitionEndsAt === 'number')
  );
}

function isIdempotencyRecord(value: unknown): value is SavedIdempotencyKey {
  return (
    isObject(value) &&
    isOptionalAccount(value.account) &&
    typeof value.key === 'string' &&
    typeof value.bucketId === 'string' &&
    typeof value.fingerprint === 'string'
  );
}

function isRevokedKey(value: unknown): value is RevokedKey {
  return isObject(value) && typeof value.account === 'string' && typeof value.key === 'string';
}

/** Checks the shape of a parsed data file; a file this code did not write is refused. */
export function parseSnapshot(value: unknown): StoreSnapshot {
  if (!isObject(value) || value.version !== 1) throw new Error('unsupported data file version');
  const { buckets, idempotencyKeys, revokedKeys, revoked } = value;
  if (!Array.isArray(buckets) || !buckets.every(isBucketRecord)) throw new Error('data file has malformed buckets');
  if (!Array.isArray(idempotencyKeys) || !idempotencyKeys.every(isIdempotencyRecord)) {
    throw new Error('data file has malformed idempotency keys');
  }
  // Each later field only adds (revocation, then accounts), so files stay version 1 and
  // every older file still loads.
  const out: StoreSnapshot = { version: 1, buckets, idempotencyKeys };
  if (revokedKeys !== undefined) {
    if (!Array.isArray(revokedKeys) || !revokedKeys.every((k) => typeof k === 'string')) {
      throw new Error('data file has malformed revoked keys');
    }
    out.revokedKeys = revokedKeys;
  }
  if (revoked !== undefined) {
    if (!Array.isArray(revoked) || !revoked.every(isRevokedKey)) throw new Error('data file has malformed revoked keys');
    out.revoked = revoked;
  }
  return out;
}

/** Writes `data` to `path` atomically. */
export async function writeFileAtomic(path: string, data: string): Promise<void> {
  const dir = dirname(path);
  const tmp = join(dir, `.${basename(path)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`);
  try {
    const file = await open(tmp, 'w', 0o600);
    try {
      await file.writeFile(data, 'utf8');
      await file.sync();
    } finally {
      await file.close();
    }
    await rename(tmp, path);
  } catch (err) {
    await unlink(tmp).catch(() => undefined);
    throw err;
  }
  // The rename is durable only once the directory entry is on disk; some file systems
  // refuse to fsync a directory, which costs only that last guarantee.
  try {
    const d = await open(dir, 'r');
    try {
      await d.sync();
    } finally {
      await d.close();
    }
  } catch {
    // best effort, see above
  }
}

/** Settings of a {@link DataFile}. */
export interface DataFileOptions {
  path: string;
  debounceMs: number;
  /** Produces the state to write; called when a write starts, so it is always the latest. */
  snapshot: () => StoreSnapshot;
  logger: Logger;
}

/** A debounced, atomic JSON store file. */
export class DataFile {
  private dirty = false;
  private timer: NodeJS.Timeout | undefined;
  private writing: Promise<void> | undefined;

  /** @param options path, debounce, state source and logger. */
  constructor(private readonly options: DataFileOptions) {}

  /** The saved state, or undefined when the file does not exist yet. */
  async load(): Promise<StoreSnapshot | undefined> {
    let text: string;
    try {
      text = await readFile(this.options.path, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw new Error(`cannot read data file ${this.options.path}`, { cause: err });
    }
    try {
      return parseSnapshot(JSON.parse(text));
    } catch (err) {
      throw new Error(`cannot load data file ${this.options.path}`, { cause: err });
    }
  }

  /** Marks the state changed; a write follows within the debounce interval. */
  schedule(): void {
    this.dirty = true;
    // A write in progress picks the change up when it finishes.
    if (this.timer !== undefined || this.writing !== undefined) return;
    this.timer = setTimeout(() => this.startWrite(), this.options.debounceMs);
    // A pending save must not keep a finished process alive; close() flushes it anyway.
    this.timer.unref();
  }

  /** Writes any pending change now and waits for it; rejects when the write fails. */
  async flush(): Promise<void> {
    if (this.timer !== undefined) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    await this.writing;
    if (this.dirty) {
      const ok = await this.drain();
      if (!ok) throw new Error(`cannot write data file ${this.options.path}`);
    }
  }

  private startWrite(): void {
    this.timer = undefined;
    this.writing = this.drain().then((ok) => {
      this.writing = undefined;
      // A change made after the last write began but before this callback ran would
      // otherwise wait for the next change. After a failure, the next change retries
      // instead, so a full disk does not become a tight retry loop.
      if (ok && this.dirty) this.schedule();
    });
  }

  /** Writes until no change is pending; false when a write failed (already logged). */
  private async drain(): Promise<boolean> {
    while (this.dirty) {
      this.dirty = false;
      try {
        await writeFileAtomic(this.options.path, JSON.stringify(this.options.snapshot()));
      } catch (err) {
        this.dirty = true;
        this.options.logger.error({ err, path: this.options.path }, 'cannot write data file');
        return false;
      }
    }
    return true;
  }
}
