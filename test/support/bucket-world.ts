/**
 * Plain in-memory fakes for unit tests of the bucket orchestrator: an object store with the
 * API server's optimistic concurrency (resourceVersion preconditions, AlreadyExists), a
 * provider with idempotency keys and revocation, and an event list. Tests assert on the state
 * these hold after a reconcile, never on the calls made.
 */
import { ReleasedObjects } from '../../operator/bucket/released';
import pino from 'pino';
import type { StorageBucket } from '../../operator/api/v1';
import { BUCKET_FINALIZER } from '../../operator/api/v1';
import { ConnectError, type Connection } from '../../operator/bucket/connect';
import { BucketReconciler, type BucketReconcilerDeps } from '../../operator/bucket/reconciler';
import type { EventSink, ObjectWriter, WriteFailures } from '../../operator/bucket/writer';
import {
  ProviderError,
  type CreateBucketRequest,
  type ProviderBucket,
  type ProviderClient,
  type UpdateBucketRequest,
} from '../../operator/provider-client';
import {
  ApiError,
  IndexedCache,
  type Action,
  type KubeObject,
  type ObjectKey,
  type ReconcileContext,
  type ResourceKind,
} from '../../operator/runtime';

/** The provider API endpoint the fake connection reports. */
export const FAKE_ENDPOINT = 'http://provider.example';
/** The cluster identity the world's reconciler runs with (DEFAULT_TAGS carry it). */
export const FAKE_CLUSTER = 'cluster-1';
/** The provider account the fake provider's key belongs to at first. */
export const FAKE_ACCOUNT = 'acct-1';

const key = (kind: ResourceKind | string, k: ObjectKey) => `${typeof kind === 'string' ? kind : kind.kind}/${k.namespace ?? ''}/${k.name}`;

/** Objects by kind and key, with resourceVersions and the API server's write rules. */
export class FakeStore implements ObjectWriter {
  private readonly objects = new Map<string, KubeObject>();
  private rv = 100;
  /** Error thrown by the next status patch, once. */
  failNextStatusPatch?: Error;
  /** Error thrown by the next create of that kind, once. */
  readonly failNextCreate = new Map<string, Error>();

  /** Stores `obj` as if created by someone else, returning the stored copy. */
  put<T extends KubeObject>(kind: string, obj: T): T {
    const stored = structuredClone({ ...obj, metadata: { ...obj.metadata, resourceVersion: String(++this.rv) } });
    this.objects.set(key(kind, { namespace: obj.metadata?.namespace ?? '', name: obj.metadata?.name ?? '' }), stored);
    return structuredClone(stored);
  }

  /** The stored object, or undefined. */
  read<T extends KubeObject>(kind: string, name: string, namespace = 'ns1'): T | undefined {
    const o = this.objects.get(key(kind, { namespace, name }));
    return o ? (structuredClone(o) as T) : undefined;
  }

  private mustRead<T extends KubeObject>(kind: ResourceKind, obj: KubeObject): T {
    const live = this.read<T>(kind.kind, obj.metadata?.name ?? '', obj.metadata?.namespace ?? '');
    if (!live) throw new ApiError(404, 'NotFound', `${kind.kind} ${obj.metadata?.name ?? ''} not found`);
    return live;
  }

  private precondition(kind: ResourceKind, obj: KubeObject): KubeObject {
    const live = this.mustRead<KubeObject>(kind, obj);
    if (obj.metadata?.resourceVersion && obj.metadata.resourceVersion !== live.metadata?.resourceVersion) {
      throw new ApiError(409, 'Conflict', 'the object has been modified; please apply your changes to the latest version and try again');
    }
    return live;
  }

  private save<T extends KubeObject>(kind: ResourceKind, obj: KubeObject & { status?: unknown }): T {
    const deleting = obj.metadata?.deletionTimestamp !== undefined;
    if (deleting && (obj.metadata?.finalizers ?? []).length === 0) {
      this.objects.delete(key(kind, { namespace: obj.metadata?.namespace ?? '', name: obj.metadata?.name ?? '' }));
      return structuredClone(obj) as T;
    }
    return this.put(kind.kind, obj) as T;
  }

  async addFinalizer<T extends KubeObject>(kind: ResourceKind, obj: T, finalizer: string): Promise<T> {
    const live = this.precondition(kind, obj);
    return this.save<T>(kind, { ...live, metadata: { ...live.metadata, finalizers: [...(live.metadata?.finalizers ?? []), finalizer] } });
  }

  async patchMetadata<T extends KubeObject>(
    kind: ResourceKind,
    obj: T,
    change: { finalizers?: readonly string[]; annotations?: Readonly<Record<string, string>> },
  ): Promise<T> {
    const live = this.precondition(kind, obj);
    const metadata = { ...live.metadata };
    if (change.finalizers) metadata.finalizers = [...change.finalizers];
    if (change.annotations) metadata.annotations = { ...metadata.annotations, ...change.annotations };
    return this.save<T>(kind, { ...live, metadata });
  }

  async removeFinalizer<T extends KubeObject>(kind: ResourceKind, obj: T, finalizer: string): Promise<void> {
    const live = this.read<KubeObject>(kind.kind, obj.metadata?.name ?? '', obj.metadata?.namespace ?? '');
    if (!live) return;
    this.save(kind, { ...live, metadata: { ...live.metadata, finalizers: (live.metadata?.finalizers ?? []).filter((f) => f !== finalizer) } });
  }

  async patchStatus<T extends KubeObject>(kind: ResourceKind, obj: T, status: Record<string, unknown>): Promise<T> {
    const fail = this.failNextStatusPatch;
    if (fail) {
      this.failNextStatusPatch = undefined;
      throw fail;
    }
    // As kube-writer: preconditioned on the resourceVersion the status was computed from.
    const live = this.precondition(kind, obj);
    return this.save<T>(kind, { ...live, status });
  }

  async apply(kind: ResourceKind, obj: KubeObject): Promise<void> {
    this.put(kind.kind, obj);
  }

  async create(kind: ResourceKind, obj: KubeObject): Promise<void> {
    const fail = this.failNextCreate.get(kind.kind);
    if (fail) {
      this.failNextCreate.delete(kind.kind);
      throw fail;
    }
    if (this.read(kind.kind, obj.metadata?.name ?? '', obj.metadata?.namespace ?? ''))
      throw new ApiError(409, 'AlreadyExists', `${kind.kind} already exists`);
    this.put(kind.kind, obj);
  }

  async get<T extends KubeObject>(kind: ResourceKind, k: ObjectKey): Promise<T | undefined> {
    return this.read<T>(kind.kind, k.name, k.namespace ?? '');
  }

  async configHasUsers(config: ObjectKey): Promise<boolean> {
    return this.all<StorageBucket>('StorageBucket').some((b) => b.metadata.namespace === config.namespace && b.spec.providerRef.name === config.name);
  }

  /** Every stored object of `kind`. */
  all<T extends KubeObject>(kind: string): T[] {
    return [...this.objects.entries()].filter(([k]) => k.startsWith(`${kind}/`)).map(([, v]) => structuredClone(v) as T);
  }
}

/** A provider with the contract's idempotency: keys replay, a deleted bucket's key is spent. */
export class FakeProvider implements ProviderClient {
  readonly buckets = new Map<string, ProviderBucket>();
  private readonly byKey = new Map<string, string>();
  readonly revoked = new Set<string>();
  private next = 1;
  /** Count of calls that change something at the provider. */
  writes = 0;
  /** Count of all calls. */
  calls = 0;
  /** Errors thrown by the next call of an operation, once each. */
  readonly failNext = new Map<keyof ProviderClient, ProviderError>();
  /**
   * The account the connection's key belongs to. Set another to model a Secret that now holds
   * another account's key: as at a real cloud, that account sees none of the first's buckets.
   */
  account = FAKE_ACCOUNT;
  /** When true, the next create commits and its answer is lost (a reset), once. */
  loseNextCreateAnswer = false;
  /** The request each key was first used with, as the provider's fingerprint. */
  private readonly requests = new Map<string, string>();

  /** True when the current account sees `b` (a seeded bucket without an account is everyone's). */
  private visible(b: ProviderBucket | undefined): ProviderBucket | undefined {
    return b && (b.account === undefined || b.account === this.account) ? b : undefined;
  }

  /** Not counted as a call: the real client asks once per account and keeps the answer. */
  async accountId(): Promise<string> {
    const err = this.failNext.get('accountId');
    if (err) {
      this.failNext.delete('accountId');
      throw err;
    }
    return this.account;
  }

  /** Adds a bucket as if someone created it outside the operator. */
  seed(b: Partial<ProviderBucket> & { id: string }): ProviderBucket {
    const full: ProviderBucket = {
      region: 'us-east-1',
      sizeGB: 10,
      encrypted: false,
      phase: 'Active',
      endpoint: `${b.id}.storage.example`,
      tags: {},
      ...b,
    };
    this.buckets.set(full.id, full);
    return full;
  }

  private enter(op: keyof ProviderClient): void {
    this.calls++;
    const err = this.failNext.get(op);
    if (err) {
      this.failNext.delete(op);
      throw err;
    }
  }

  async getBucket(id: string): Promise<ProviderBucket | undefined> {
    this.enter('getBucket');
    return this.visible(this.buckets.get(id));
  }

  async findByIdempotencyKey(k: string): Promise<ProviderBucket | undefined> {
    this.enter('findByIdempotencyKey');
    const id = this.byKey.get(`${this.account}/${k}`);
    return id ? this.visible(this.buckets.get(id)) : undefined;
  }

  async revokeIdempotencyKey(k: string): Promise<ProviderBucket | undefined> {
    this.enter('revokeIdempotencyKey');
    this.writes++;
    this.revoked.add(`${this.account}/${k}`);
    const id = this.byKey.get(`${this.account}/${k}`);
    return id ? this.visible(this.buckets.get(id)) : undefined;
  }

  async listBuckets(filter: { tags?: Readonly<Record<string, string>> } = {}): Promise<ProviderBucket[]> {
    this.enter('listBuckets');
    const match = (b: ProviderBucket) => Object.entries(filter.tags ?? {}).every(([k, v]) => b.tags[k] === v);
    return [...this.buckets.values()].filter((b) => this.visible(b) && match(b));
  }

  async createBucket(req: CreateBucketRequest, k: string): Promise<ProviderBucket> {
    this.enter('createBucket');
    if (this.revoked.has(`${this.account}/${k}`)) throw new ProviderError('idempotency key revoked', { status: 410, code: 'IdempotencyKeyRevoked' });
    const made = this.byKey.get(`${this.account}/${k}`);
    // As the provider: another request under a used key is refused before anything else.
    const request = JSON.stringify(req);
    if (made && this.requests.get(`${this.account}/${k}`) !== request) {
      throw new ProviderError('Idempotency-Key was already used with a different request body', { status: 409, code: 'IdempotencyKeyReused' });
    }
    if (made) {
      const b = this.buckets.get(made);
      if (!b) throw new ProviderError('bucket created with this key was deleted', { status: 410, code: 'BucketDeleted' });
      return b;
    }
    this.writes++;
    const id = `bucket-${String(this.next++).padStart(6, '0')}`;
    const b: ProviderBucket = {
      id,
      region: req.region,
      sizeGB: req.sizeGB,
      encrypted: req.encrypted,
      phase: 'Provisioning',
      endpoint: `${id}.storage.example`,
      tags: { ...req.tags },
      idempotencyKey: k,
      account: this.account,
    };
    this.buckets.set(id, b);
    this.byKey.set(`${this.account}/${k}`, id);
    this.requests.set(`${this.account}/${k}`, request);
    if (this.loseNextCreateAnswer) {
      this.loseNextCreateAnswer = false;
      throw new ProviderError('provider create failed: ECONNRESET', { status: 0, code: 'ECONNRESET' });
    }
    return b;
  }

  async updateBucket(id: string, req: UpdateBucketRequest): Promise<ProviderBucket> {
    this.enter('updateBucket');
    const b = this.visible(this.buckets.get(id));
    if (!b) throw new ProviderError(`bucket ${id} not found`, { status: 404, code: 'BucketNotFound' });
    this.writes++;
    const next = { ...b, ...req, tags: req.tags ? { ...req.tags } : b.tags };
    this.buckets.set(id, next);
    return next;
  }

  async deleteBucket(id: string, _signal?: AbortSignal, opts: { ifTags?: Readonly<Record<string, string>> } = {}): Promise<boolean> {
    this.enter('deleteBucket');
    const b = this.visible(this.buckets.get(id));
    if (b && opts.ifTags && !Object.entries(opts.ifTags).every(([k, v]) => b.tags[k] === v)) {
      throw new ProviderError('the bucket does not carry the tags If-Tags names', { status: 412, code: 'PreconditionFailed' });
    }
    this.writes++;
    return b !== undefined && this.buckets.delete(id);
  }
}

/** Events recorded, as `type reason: note`. */
export class FakeEvents implements EventSink {
  readonly recorded: string[] = [];
  event(_regarding: KubeObject, type: string, reason: string, _action: string, note: string): void {
    this.recorded.push(`${type} ${reason}: ${note}`);
  }
}

/** Write failures reported, as `resource verb: message`. */
export class FakeWriteFailures implements WriteFailures {
  readonly reported: string[] = [];
  report(what: { resource: string; verb: string }, err: unknown): void {
    this.reported.push(`${what.resource} ${what.verb}: ${err instanceof Error ? err.message : String(err)}`);
  }
}

/** Everything one orchestrator test needs, wired to a {@link BucketReconciler}. */
export class BucketWorld {
  readonly store = new FakeStore();
  readonly provider = new FakeProvider();
  readonly events = new FakeEvents();
  readonly writeFailures = new FakeWriteFailures();
  /** When set, connect fails with this reason. */
  connectFailure?: ConnectError;
  /** When true, the config the connection comes from is being deleted. */
  configDeleting = false;
  /** When set, the reconciler reads this bucket instead of the stored one (a lagging cache). */
  staleBucket?: StorageBucket;
  private keys = 0;
  /** Kept across reconciles, as the one reconciler of a running operator keeps it. */
  private readonly released = new ReleasedObjects();

  /** Stores `bucket` (as the API server would, with a fresh resourceVersion). */
  apply(bucket: StorageBucket): StorageBucket {
    return this.store.put('StorageBucket', bucket);
  }

  /** The stored bucket. */
  bucket(name = 'b1'): StorageBucket | undefined {
    return this.store.read<StorageBucket>('StorageBucket', name);
  }

  /** Runs one reconcile of `name`; resolves its Action or rejects with what the runner gets. */
  async reconcile(name = 'b1', overrides: Partial<BucketReconcilerDeps> = {}): Promise<Action> {
    const buckets = new IndexedCache<StorageBucket>();
    // The cache holds every stored bucket; the one reconciled may be a stale copy.
    for (const b of this.store.all<StorageBucket>('StorageBucket')) buckets.upsert(b);
    if (this.staleBucket) buckets.upsert(this.staleBucket);
    const connection: Connection = {
      client: this.provider,
      endpoint: FAKE_ENDPOINT,
      account: 'account-1',
      config: {
        apiVersion: 'storage.avalonhosting.example/v1',
        kind: 'BucketProviderConfig',
        metadata: { name: 'default', namespace: 'ns1' },
        spec: { endpoint: FAKE_ENDPOINT, secretRef: { name: 's' } },
      },
    };
    const reconciler = new BucketReconciler({
      buckets,
      clusterId: FAKE_CLUSTER,
      connect: async () => {
        if (this.connectFailure) throw this.connectFailure;
        if (!this.configDeleting) return connection;
        return {
          ...connection,
          config: { ...connection.config, metadata: { ...connection.config.metadata, deletionTimestamp: new Date('2026-06-01T00:00:00Z') } },
        };
      },
      ownedSecrets: cacheOf(this.store.all('Secret')),
      services: cacheOf(this.store.all('Service')),
      writer: this.store,
      events: this.events,
      writeFailures: this.writeFailures,
      now: () => new Date('2026-06-01T00:00:00Z'),
      newKey: () => `key-${++this.keys}`,
      jitter: (ms) => ms,
      released: this.released,
      ...overrides,
    });
    const ctx: ReconcileContext = { logger: pino({ level: 'silent' }), reconcileID: 'r1', signal: new AbortController().signal, priority: 0 };
    return reconciler.reconcile({ namespace: 'ns1', name }, ctx);
  }

  /**
   * Reconciles as the controller would: again after a requeue, and again after a pass that
   * changed the object (its watch event), until neither happens or `limit` passes ran.
   */
  async settle(name = 'b1', limit = 8): Promise<Action | Error> {
    let last: Action | Error = new Error('not run');
    for (let i = 0; i < limit; i++) {
      const before = this.bucket(name)?.metadata.resourceVersion;
      try {
        last = await this.reconcile(name);
      } catch (err) {
        return err as Error;
      }
      if (last.type === 'done' && this.bucket(name)?.metadata.resourceVersion === before) return last;
      // The provider finishes provisioning between polls.
      for (const [id, b] of this.provider.buckets) if (b.phase !== 'Active') this.provider.buckets.set(id, { ...b, phase: 'Active' });
    }
    return last;
  }

  /** Marks the stored bucket deleted, as `kubectl delete` does while finalizers remain. */
  delete(name = 'b1'): void {
    const b = this.bucket(name);
    if (!b) throw new Error(`no bucket ${name}`);
    if ((b.metadata.finalizers ?? []).length === 0) return;
    this.store.put('StorageBucket', { ...b, metadata: { ...b.metadata, deletionTimestamp: new Date('2026-06-01T00:00:00Z') } });
  }

  /** True while the stored bucket still carries the operator's finalizer. */
  hasFinalizer(name = 'b1'): boolean {
    return (this.bucket(name)?.metadata.finalizers ?? []).includes(BUCKET_FINALIZER);
  }
}

function cacheOf<T extends KubeObject>(objects: T[]): IndexedCache<T> {
  const c = new IndexedCache<T>();
  for (const o of objects) c.upsert(o);
  return c;
}
