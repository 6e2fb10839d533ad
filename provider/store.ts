/**
 * The provider's state: buckets, consumed and revoked idempotency keys, with the API's rules.
 *
 * Phases are computed from timestamps instead of timers: a bucket records when its
 * transition ends (`transitionEndsAt`) and reads settle it. So nothing leaks timers, a fake
 * clock makes tests exact, and a bucket loaded from disk after a restart is in exactly the
 * phase it would have had. Late commits (the `lateCommitOnCreate` fault) work the same way:
 * each records when it is due, and every entry point first commits (or discards) the ones
 * that are due, in order, so from outside a late commit happens exactly at its time. The
 * store throws HttpError because its rules are the API's rules; the HTTP API is its only
 * client.
 *
 * Every bucket, idempotency key and revocation belongs to an account, as in a real cloud: a
 * call made for an account sees only that account's buckets (another account's bucket id is
 * a 404 exactly like a missing one) and its own keys. Calls without an account are the
 * admin's view: reads and changes see every account, new buckets go to the default account.
 */
import { randomBytes } from 'node:crypto';
import { HttpError } from './http';
import { encodeContinue, sortedTags } from './validation';
import {
  ErrorCode,
  type AdminBucketPatch,
  type Bucket,
  type BucketList,
  type BucketPhase,
  type CreateBucketRequest,
  type LateCommitReport,
  type ListBucketsQuery,
  type StoreView,
  type UpdateBucketRequest,
} from './types';

/** A bucket as stored: epoch-millisecond times and the end of its current transition. */
export interface BucketRecord {
  id: string;
  /** The account the bucket belongs to; never a key. */
  account: string;
  region: string;
  sizeGB: number;
  encrypted: boolean;
  tags: Record<string, string>;
  phase: BucketPhase;
  idempotencyKey?: string;
  createdAt: number;
  updatedAt: number;
  /** When a Provisioning or Resizing bucket becomes Active; absent when no transition runs. */
  transitionEndsAt?: number;
}

/** A consumed idempotency key. It outlives its bucket so a replay after delete is a 410. */
export interface IdempotencyRecord {
  /** Keys are scoped per account: two accounts may use the same key for different buckets. */
  account: string;
  key: string;
  bucketId: string;
  /** Canonical JSON of the create request, to tell a replay from a reuse. */
  fingerprint: string;
}

/**
 * Everything the store holds that must survive a restart, in a JSON-safe form. Pending late
 * commits are left out on purpose: one lost by a restart never commits, like a request the
 * provider had not finished when it went down.
 */
export interface StoreSnapshot {
  version: 1;
  buckets: SavedBucket[];
  idempotencyKeys: SavedIdempotencyKey[];
  /**
   * Keys no create may ever commit with, written before accounts existed: they belong to the
   * default account. Absent in files written before revocation existed.
   */
  revokedKeys?: string[];
  /** Keys no create may ever commit with, per account. Absent in files written before accounts. */
  revoked?: RevokedKey[];
}

/** A bucket as saved; files written before accounts existed have no `account`. */
export type SavedBucket = Omit<BucketRecord, 'account'> & { account?: string };

/** An idempotency key as saved; files written before accounts existed have no `account`. */
export type SavedIdempotencyKey = Omit<IdempotencyRecord, 'account'> & { account?: string };

/** A revoked idempotency key of an account. */
export interface RevokedKey {
  account: string;
  key: string;
}

/** Account every new bucket goes to when the store is given none. */
export const DEFAULT_ACCOUNT = 'default';

/** One map key for an account-scoped idempotency key; JSON keeps any two pairs apart. */
function scoped(account: string, key: string): string {
  return JSON.stringify([account, key]);
}

/** A create held by the `lateCommitOnCreate` fault, committed or discarded at `dueAt`. */
interface LateCommit {
  account: string;
  req: CreateBucketRequest;
  idempotencyKey: string | undefined;
  dueAt: number;
}

/** Result of {@link BucketStore.create}. */
export interface CreateResult {
  /** `replayed` when the idempotency key already produced this bucket. */
  outcome: 'created' | 'replayed';
  bucket: Bucket;
}

/** Settings of a {@link BucketStore}. */
export interface StoreOptions {
  activationDelayMs: number;
  resizeDelayMs: number;
  now: () => number;
  /** Called after every mutation, e.g. to schedule a save. */
  onChange?: () => void;
  /**
   * Account of new buckets made without one, and of buckets and keys loaded from a file
   * written before accounts existed. @default {@link DEFAULT_ACCOUNT}
   */
  defaultAccount?: string;
}

function fingerprint(req: CreateBucketRequest): string {
  return JSON.stringify({ region: req.region, sizeGB: req.sizeGB, encrypted: req.encrypted, tags: sortedTags(req.tags) });
}

/** The 404 for an absent bucket. */
export function bucketNotFound(id: string): HttpError {
  return new HttpError(404, ErrorCode.NotFound, `bucket ${id} not found`);
}

/** The 410 for a create with a revoked key. */
function keyRevoked(): HttpError {
  return new HttpError(410, ErrorCode.IdempotencyKeyRevoked, 'this Idempotency-Key was revoked; no create with it will commit; use a new key');
}

function sameTags(a: Record<string, string>, b: Record<string, string>): boolean {
  return JSON.stringify(sortedTags(a)) === JSON.stringify(sortedTags(b));
}

/** Buckets and idempotency keys in memory, with the rules of the bucket API. */
export class BucketStore implements StoreView {
  private readonly buckets = new Map<string, BucketRecord>();
  /** By {@link scoped} account and key. */
  private readonly keys = new Map<string, IdempotencyRecord>();
  /** By {@link scoped} account and key. */
  private readonly revoked = new Set<string>();
  /** Each account's bucket ids, so a tenant's list does not walk every tenant's buckets. */
  private readonly byAccount = new Map<string, Set<string>>();
  /** Each account's ids in order, rebuilt lazily after that account's creates and deletes. */
  private readonly sortedByAccount = new Map<string, string[]>();
  /** Ordered by `dueAt` (ties in arrival order). */
  private pending: LateCommit[] = [];
  private readonly lateCounts = { committed: 0, revoked: 0, keyUsed: 0 };
  /** Ids in order, rebuilt lazily after creates and deletes. */
  private sortedIds: string[] | undefined;

  private readonly defaultAccount: string;

  /** @param options delays, clock, change hook and default account. */
  constructor(private readonly options: StoreOptions) {
    this.defaultAccount = options.defaultAccount ?? DEFAULT_ACCOUNT;
  }

  /**
   * Creates a bucket, or replays the one an idempotency key already created.
   * Runs synchronously from lookup to insert, so concurrent requests with one key cannot
   * both create.
   */
  create(req: CreateBucketRequest, idempotencyKey?: string, account: string = this.defaultAccount): CreateResult {
    this.settlePending();
    const print = fingerprint(req);
    if (idempotencyKey !== undefined) {
      if (this.revoked.has(scoped(account, idempotencyKey))) throw keyRevoked();
      const seen = this.keys.get(scoped(account, idempotencyKey));
      if (seen !== undefined) {
        if (seen.fingerprint !== print) {
          throw new HttpError(409, ErrorCode.IdempotencyKeyReused, 'Idempotency-Key was already used with a different request body');
        }
        const existing = this.buckets.get(seen.bucketId);
        if (existing === undefined) {
          throw new HttpError(410, ErrorCode.BucketDeleted, `bucket ${seen.bucketId} created with this Idempotency-Key was deleted; use a new key`);
        }
        return { outcome: 'replayed', bucket: this.view(existing) };
      }
    }
    return { outcome: 'created', bucket: this.view(this.insert(account, req, idempotencyKey, this.options.now())) };
  }

  /**
   * True when a create with this key would make a new bucket now (no key, or one neither
   * consumed nor revoked), i.e. when the `lateCommitOnCreate` fault may hold it. Replays and
   * refusals are answered at once, as they would be without the fault.
   */
  wouldCreate(idempotencyKey: string | undefined, account: string = this.defaultAccount): boolean {
    this.settlePending();
    if (idempotencyKey === undefined) return true;
    const id = scoped(account, idempotencyKey);
    return !this.keys.has(id) && !this.revoked.has(id);
  }

  /**
   * Accepts a create that commits `delayMs` from now. Until then nothing shows it: a lookup by
   * the key finds nothing and another create with the key makes its own bucket. When due, it
   * commits only if the key is still unused and not revoked, so a key makes one bucket at most.
   */
  commitLater(req: CreateBucketRequest, idempotencyKey: string | undefined, delayMs: number, account: string = this.defaultAccount): void {
    this.settlePending();
    const late: LateCommit = { account, req, idempotencyKey, dueAt: this.options.now() + delayMs };
    // Stable insertion keeps arrival order among commits due at the same time.
    const at = this.pending.findIndex((p) => p.dueAt > late.dueAt);
    if (at === -1) this.pending.push(late);
    else this.pending.splice(at, 0, late);
  }

  /**
   * Fences a key: from now on no create with it commits, neither a new request (410
   * IdempotencyKeyRevoked) nor a late commit still pending. Idempotent. Returns the live bucket
   * the key made, which is kept: whoever revokes decides whether it is theirs to delete.
   */
  revokeIdempotencyKey(key: string, account: string = this.defaultAccount): Bucket | undefined {
    // A commit due before this call happened before it, so the answer must include it.
    this.settlePending();
    const id = scoped(account, key);
    if (!this.revoked.has(id)) {
      this.revoked.add(id);
      this.changed();
    }
    const seen = this.keys.get(id);
    const record = seen === undefined ? undefined : this.buckets.get(seen.bucketId);
    return record === undefined ? undefined : this.view(record);
  }

  /** Pending late commits and what became of the due ones. */
  lateCommits(): LateCommitReport {
    this.settlePending();
    return {
      pending: this.pending.map((p) => ({
        ...(p.idempotencyKey !== undefined ? { idempotencyKey: p.idempotencyKey } : {}),
        commitAt: new Date(p.dueAt).toISOString(),
      })),
      committed: this.lateCounts.committed,
      discarded: { revoked: this.lateCounts.revoked, keyUsed: this.lateCounts.keyUsed },
    };
  }

  /** The bucket, or undefined when absent (or, given an account, another account's). */
  get(id: string, account?: string): Bucket | undefined {
    this.settlePending();
    const record = this.record(id, account);
    return record === undefined ? undefined : this.view(record);
  }

  /** Number of buckets. */
  count(): number {
    this.settlePending();
    return this.buckets.size;
  }

  /** Every bucket, ordered by id. */
  list(): Bucket[] {
    this.settlePending();
    return this.ids().map((id) => this.view(this.mustRecord(id)));
  }

  /**
   * One page of buckets matching the query, ordered by id: the account's buckets, or every
   * account's when none is given (an idempotency key is then looked up in the default account).
   */
  query(q: ListBucketsQuery, account?: string): BucketList {
    this.settlePending();
    let candidates: string[];
    if (q.idempotencyKey !== undefined) {
      const seen = this.keys.get(scoped(account ?? this.defaultAccount, q.idempotencyKey));
      candidates = seen !== undefined && this.buckets.has(seen.bucketId) ? [seen.bucketId] : [];
    } else {
      candidates = account === undefined ? this.ids() : this.accountIds(account);
    }
    const items: Bucket[] = [];
    let more = false;
    for (const id of candidates) {
      if (q.after !== undefined && id <= q.after) continue;
      const record = this.mustRecord(id);
      if (!q.tags.every(([k, v]) => Object.hasOwn(record.tags, k) && record.tags[k] === v)) continue;
      if (items.length === q.limit) {
        more = true;
        break;
      }
      items.push(this.view(record));
    }
    const last = items.at(-1);
    return more && last !== undefined ? { items, continue: encodeContinue(last.id) } : { items };
  }

  /** Applies a client update: size may only grow, and not while Provisioning. */
  update(id: string, req: UpdateBucketRequest, account?: string): Bucket {
    this.settlePending();
    const record = this.record(id, account);
    if (record === undefined) throw bucketNotFound(id);
    this.settle(record);
    if (record.phase === 'Provisioning') {
      throw new HttpError(409, ErrorCode.NotReady, `bucket ${id} is still Provisioning`);
    }
    if (req.sizeGB !== undefined && req.sizeGB < record.sizeGB) {
      throw new HttpError(422, ErrorCode.ValidationFailed, `sizeGB: may only grow (current ${record.sizeGB})`);
    }
    const now = this.options.now();
    let changed = false;
    if (req.sizeGB !== undefined && req.sizeGB !== record.sizeGB) {
      record.sizeGB = req.sizeGB;
      record.phase = 'Resizing';
      record.transitionEndsAt = now + this.options.resizeDelayMs;
      changed = true;
    }
    if (req.encrypted !== undefined && req.encrypted !== record.encrypted) {
      record.encrypted = req.encrypted;
      changed = true;
    }
    if (req.tags !== undefined && !sameTags(req.tags, record.tags)) {
      record.tags = sortedTags(req.tags);
      changed = true;
    }
    if (changed) {
      record.updatedAt = now;
      this.changed();
    }
    return this.view(record);
  }

  /** Removes a bucket (given an account, only one of its own); its idempotency key stays consumed. */
  /**
   * Deletes bucket `id` of `account`. `ifTags`: only if the bucket carries every one of these
   * tags now (412 PreconditionFailed otherwise, nothing deleted), checked in the same step.
   */
  delete(id: string, account?: string, ifTags?: readonly (readonly [string, string])[]): void {
    this.settlePending();
    const record = this.record(id, account);
    if (record === undefined) throw bucketNotFound(id);
    if (ifTags && !ifTags.every(([k, v]) => record.tags[k] === v)) {
      throw new HttpError(412, ErrorCode.PreconditionFailed, `bucket ${id} does not carry the tags If-Tags names`);
    }
    this.buckets.delete(id);
    this.byAccount.get(record.account)?.delete(id);
    this.sortedByAccount.delete(record.account);
    this.sortedIds = undefined;
    this.changed();
  }

  /** Sets fields directly, bypassing every rule, to simulate drift. */
  adminPatch(id: string, patch: AdminBucketPatch): Bucket | undefined {
    this.settlePending();
    const record = this.buckets.get(id);
    if (record === undefined) return undefined;
    this.settle(record);
    if (patch.sizeGB !== undefined) record.sizeGB = patch.sizeGB;
    if (patch.encrypted !== undefined) record.encrypted = patch.encrypted;
    if (patch.tags !== undefined) record.tags = sortedTags(patch.tags);
    if (patch.phase !== undefined) {
      record.phase = patch.phase;
      // An admin-set phase is sticky so a test can hold a bucket in any phase.
      delete record.transitionEndsAt;
    }
    record.updatedAt = this.options.now();
    this.changed();
    return this.view(record);
  }

  /** Removes a bucket behind the client's back; false when absent. */
  adminDelete(id: string): boolean {
    this.settlePending();
    if (!this.buckets.has(id)) return false;
    this.delete(id);
    return true;
  }

  /** A deep copy of the state, safe to serialise. */
  snapshot(): StoreSnapshot {
    // The write that calls this saves what is due too, so no further write is asked for.
    this.settlePending(false);
    return {
      version: 1,
      buckets: [...this.buckets.values()].map((r) => ({ ...r, tags: { ...r.tags } })),
      idempotencyKeys: [...this.keys.values()].map((k) => ({ ...k })),
      revoked: [...this.revoked].sort().map((id) => {
        const [account, key] = JSON.parse(id) as [string, string];
        return { account, key };
      }),
    };
  }

  /** Replaces the state with a snapshot, e.g. one loaded from disk. Does not call onChange. */
  restore(snapshot: StoreSnapshot): void {
    this.buckets.clear();
    this.keys.clear();
    this.revoked.clear();
    this.byAccount.clear();
    this.sortedByAccount.clear();
    this.pending = [];
    // What a file written before accounts holds belongs to the default account.
    const fallback = this.defaultAccount;
    for (const r of snapshot.buckets) {
      const account = r.account ?? fallback;
      this.buckets.set(r.id, { ...r, account, tags: sortedTags(r.tags) });
      this.accountSet(account).add(r.id);
    }
    for (const k of snapshot.idempotencyKeys) {
      const account = k.account ?? fallback;
      this.keys.set(scoped(account, k.key), { ...k, account });
    }
    for (const k of snapshot.revokedKeys ?? []) this.revoked.add(scoped(fallback, k));
    for (const k of snapshot.revoked ?? []) this.revoked.add(scoped(k.account, k.key));
    this.sortedIds = undefined;
  }

  /** Stores a new bucket made at `at` and consumes its key; `notify` false skips onChange. */
  private insert(account: string, req: CreateBucketRequest, idempotencyKey: string | undefined, at: number, notify = true): BucketRecord {
    const record: BucketRecord = {
      id: this.newId(),
      account,
      region: req.region,
      sizeGB: req.sizeGB,
      encrypted: req.encrypted,
      tags: sortedTags(req.tags),
      phase: 'Provisioning',
      createdAt: at,
      updatedAt: at,
      transitionEndsAt: at + this.options.activationDelayMs,
    };
    if (idempotencyKey !== undefined) {
      record.idempotencyKey = idempotencyKey;
      this.keys.set(scoped(account, idempotencyKey), { account, key: idempotencyKey, bucketId: record.id, fingerprint: fingerprint(req) });
    }
    this.buckets.set(record.id, record);
    this.accountSet(account).add(record.id);
    this.sortedByAccount.delete(account);
    this.sortedIds = undefined;
    if (notify) this.changed();
    return record;
  }

  /**
   * Commits or discards every late commit that is due, oldest first. A key is consumed once:
   * a commit whose key a create consumed meanwhile (or a revoke fenced) makes nothing.
   *
   * @param notify false when the caller saves the result itself (the snapshot).
   */
  private settlePending(notify = true): void {
    const now = this.options.now();
    while (this.pending.length > 0 && (this.pending[0]?.dueAt ?? Infinity) <= now) {
      const late = this.pending.shift() as LateCommit;
      const key = late.idempotencyKey;
      const id = key === undefined ? undefined : scoped(late.account, key);
      if (id !== undefined && this.revoked.has(id)) {
        this.lateCounts.revoked += 1;
      } else if (id !== undefined && this.keys.has(id)) {
        this.lateCounts.keyUsed += 1;
      } else {
        this.insert(late.account, late.req, key, late.dueAt, notify);
        this.lateCounts.committed += 1;
      }
    }
  }

  private ids(): string[] {
    this.sortedIds ??= [...this.buckets.keys()].sort();
    return this.sortedIds;
  }

  private accountIds(account: string): string[] {
    let ids = this.sortedByAccount.get(account);
    if (ids === undefined) {
      ids = [...(this.byAccount.get(account) ?? [])].sort();
      this.sortedByAccount.set(account, ids);
    }
    return ids;
  }

  private accountSet(account: string): Set<string> {
    let ids = this.byAccount.get(account);
    if (ids === undefined) {
      ids = new Set();
      this.byAccount.set(account, ids);
    }
    return ids;
  }

  /** The record, unless absent or (given an account) another account's: both look the same. */
  private record(id: string, account: string | undefined): BucketRecord | undefined {
    const record = this.buckets.get(id);
    return record === undefined || (account !== undefined && record.account !== account) ? undefined : record;
  }

  private mustRecord(id: string): BucketRecord {
    const record = this.buckets.get(id);
    if (record === undefined) throw new Error(`store index out of sync for ${id}`);
    return record;
  }

  /**
   * Ends a finished transition in place. Not reported as a change: the outcome follows
   * from stored timestamps, so a saved copy without it settles the same way.
   */
  private settle(record: BucketRecord): void {
    if (record.transitionEndsAt !== undefined && this.options.now() >= record.transitionEndsAt) {
      record.phase = 'Active';
      record.updatedAt = Math.max(record.updatedAt, record.transitionEndsAt);
      delete record.transitionEndsAt;
    }
  }

  private view(record: BucketRecord): Bucket {
    this.settle(record);
    return {
      id: record.id,
      account: record.account,
      region: record.region,
      sizeGB: record.sizeGB,
      encrypted: record.encrypted,
      tags: { ...record.tags },
      phase: record.phase,
      endpoint: `https://${record.id}.${record.region}.storage.example`,
      ...(record.idempotencyKey !== undefined ? { idempotencyKey: record.idempotencyKey } : {}),
      createdAt: new Date(record.createdAt).toISOString(),
      updatedAt: new Date(record.updatedAt).toISOString(),
    };
  }

  private newId(): string {
    for (;;) {
      const id = `bucket-${randomBytes(6).toString('hex')}`;
      if (!this.buckets.has(id)) return id;
    }
  }

  private changed(): void {
    this.options.onChange?.();
  }
}
