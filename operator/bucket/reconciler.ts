/**
 * The StorageBucket orchestrator: read from cache -> connect -> preplan -> (observe -> plan)
 * -> execute one step -> write status only when it changed -> return an Action. All decisions
 * live in plan.ts; this file turns them into calls and is the only place that logs and records
 * events. A Ready bucket is not polled for drift here: the drift scanner lists the provider in
 * bulk and names the buckets that need an observation (see drift-scanner.ts).
 */
import { randomUUID } from 'node:crypto';
import type { V1Service } from '@kubernetes/client-node';
import type { BucketPhase, StorageBucket } from '../api/v1';
import {
  ADOPT_ANNOTATION, BUCKET_FINALIZER, IDEMPOTENCY_KEY_ANNOTATION, PAUSED_ANNOTATION, StorageBucketSpec, formatFieldErrors, validate,
} from '../api/v1';
import { isProviderError, type ProviderBucket } from '../provider-client';
import {
  done, findCondition, isAlreadyExists, isConflict, keyOf, Priority, requeueAfter, TerminalError, type Action,
  type Cache, type Condition, type KubeObject, type ObjectKey, type ReconcileContext, type Reconciler, type Request,
  type ResourceKind,
} from '../runtime';
import type { DriftMetrics } from './lifecycle-metrics';
import { connect, ConnectError, type ConnectDeps, type Connection } from './connect';
import { SECRET, SERVICE, STORAGE_BUCKET } from './kinds';
import { desiredSecret, desiredService, isControlledBy, secretNeedsApply, serviceNeedsApply, type OwnedSecret } from './owned';
import { assertNever, isObserveOnly, plan, preplan, type Observation, type Step } from './plan';
import { ConditionType, EventReason, Reason } from './reasons';
import { nextStatus, statusEqual, type ConditionFacts, type StatusFacts } from './status';
import { NAME_TAG, NAMESPACE_TAG, operatorTags } from './tags';
import type { EventSink, ObjectWriter } from './writer';

/** Dependencies of {@link BucketReconciler}. */
export interface BucketReconcilerDeps extends ConnectDeps {
  readonly buckets: Cache<StorageBucket>;
  /** Counts provider-side changes the operator corrected. @default not counted */
  readonly driftMetrics?: DriftMetrics;
  /** Owned Secrets: only those labelled as the operator's, data condensed to hashes. */
  readonly ownedSecrets: Cache<OwnedSecret>;
  /** Owned Services: only those labelled as the operator's. */
  readonly services: Cache<V1Service>;
  readonly writer: ObjectWriter;
  readonly events: EventSink;
  /** Poll interval while the provider is Provisioning or Resizing. @default 3000 */
  readonly pollIntervalMs?: number;
  /**
   * Read interval of observed buckets (managementPolicy Observe), which the drift scan cannot
   * cover: the operator does not tag them. @default 60000
   */
  readonly driftIntervalMs?: number;
  /** The drift scan's latest findings; a named bucket is observed instead of trusted. @default none */
  readonly driftReports?: { reported(key: ObjectKey): boolean };
  /** @default () => new Date() */
  readonly now?: () => Date;
  /** Idempotency key generator. @default crypto.randomUUID */
  readonly newKey?: () => string;
  /** Spreads requeues so buckets created together do not poll together. @default ±10 % */
  readonly jitter?: (ms: number) => number;
}

const SYNCED: ConditionFacts = { status: 'True', reason: Reason.ReconcileSuccess };

/** Retry interval while the provider rejects the credentials. */
const CREDENTIALS_RETRY_MS = 5 * 60_000;


/** Reconciles StorageBuckets against the provider. */
export class BucketReconciler implements Reconciler {
  private readonly pollMs: number;
  private readonly driftMs: number;
  private readonly now: () => Date;
  private readonly newKey: () => string;
  private readonly jitter: (ms: number) => number;

  constructor(private readonly d: BucketReconcilerDeps) {
    this.pollMs = d.pollIntervalMs ?? 3000;
    this.driftMs = d.driftIntervalMs ?? 60_000;
    this.now = d.now ?? (() => new Date());
    this.newKey = d.newKey ?? randomUUID;
    this.jitter = d.jitter ?? ((ms) => Math.round(ms * (0.9 + Math.random() * 0.2)));
  }

  async reconcile(req: Request, ctx: ReconcileContext): Promise<Action> {
    const bucket = this.d.buckets.get(req);
    if (!bucket) return done();
    const deleting = Boolean(bucket.metadata.deletionTimestamp);
    const hasFinalizer = (bucket.metadata.finalizers ?? []).includes(BUCKET_FINALIZER);
    if (deleting && !hasFinalizer) return done();

    try {
      if (bucket.metadata.annotations?.[PAUSED_ANNOTATION] === 'true') {
        await this.writeStatus(bucket, {
          phase: bucket.status?.phase ?? 'Pending',
          ready: this.currentReady(bucket, { status: 'False', reason: Reason.ReconcilePaused, message: `reconciliation paused by ${PAUSED_ANNOTATION}` }),
          synced: { status: 'False', reason: Reason.ReconcilePaused, message: `reconciliation paused by ${PAUSED_ANNOTATION}` },
          observedGeneration: bucket.status?.observedGeneration,
        });
        return done();
      }
      if (deleting && (bucket.spec.deletionPolicy === 'Orphan' || isObserveOnly(bucket))) {
        // Needs no provider call, so neither a config, a Secret nor a reachable provider. No
        // Event either: it would be written about an object that is about to vanish.
        await this.d.writer.removeFinalizer(STORAGE_BUCKET, bucket, BUCKET_FINALIZER);
        ctx.logger.info({ msg: 'released finalizer', orphaned: true, bucketID: bucket.status?.id });
        return done();
      }
      if (!deleting) {
        const errors = validate(StorageBucketSpec, bucket.spec);
        if (errors.length > 0) {
          const message = formatFieldErrors('spec', errors);
          await this.writeStatus(bucket, {
            phase: 'Failed',
            ready: { status: 'False', reason: Reason.InvalidSpec, message },
            synced: { status: 'False', reason: Reason.InvalidSpec, message },
          });
          this.d.events.event(bucket, 'Warning', EventReason.InvalidSpec, 'Validate', message);
          throw new TerminalError(`invalid spec: ${message}`);
        }
      }

      let conn: Connection;
      try {
        conn = await connect(this.d, bucket, ctx.signal);
      } catch (err) {
        if (!(err instanceof ConnectError)) throw err;
        return await this.notConnected(bucket, err, ctx);
      }
      const first = preplan(bucket, { endpoint: conn.endpoint, driftReported: this.d.driftReports?.reported(req) ?? false });
      if (first.type !== 'observe') return await this.execute(bucket, conn, undefined, first, ctx);
      const obs = await this.observe(conn, bucket, ctx.signal);
      return await this.execute(bucket, conn, obs, plan(bucket, obs, conn.endpoint), ctx);
    } catch (err) {
      return this.failed(bucket, err, ctx);
    }
  }

  /**
   * Adds the finalizer and mints the idempotency key in ONE metadata write, before any create.
   * The write carries the resourceVersion the object was read at, so a stale cache fails with
   * Conflict instead of minting a second key. A key minted here has never been sent, so the
   * create follows at once, without asking the provider about it first.
   */
  private async prepare(bucket: StorageBucket, conn: Connection, ctx: ReconcileContext): Promise<Action> {
    const finalizers = bucket.metadata.finalizers ?? [];
    const change: { finalizers?: string[]; annotations?: Record<string, string> } = {};
    if (!finalizers.includes(BUCKET_FINALIZER)) change.finalizers = [...finalizers, BUCKET_FINALIZER];
    const key = bucket.metadata.annotations?.[IDEMPOTENCY_KEY_ANNOTATION] ? undefined : this.newKey();
    if (key) change.annotations = { [IDEMPOTENCY_KEY_ANNOTATION]: key };
    const prepared = await this.d.writer.patchMetadata(STORAGE_BUCKET, bucket, change);
    ctx.logger.debug('added finalizer and idempotency key');
    const adopting = Boolean(bucket.metadata.annotations?.[ADOPT_ANNOTATION]);
    if (!key || adopting || bucket.status?.id) return done();
    return this.create(prepared, conn, key, ctx);
  }

  /** Asks the provider about the bucket this object refers to; changes nothing. */
  private async observe(conn: Connection, bucket: StorageBucket, signal: AbortSignal): Promise<Observation> {
    const id = bucket.status?.id ?? bucket.metadata.annotations?.[ADOPT_ANNOTATION];
    let found: ProviderBucket | undefined;
    if (id) found = await conn.client.getBucket(id, signal);
    if (found) return { exists: true, bucket: found };
    // No recorded id, or it vanished: a create with the current key may have happened without
    // its answer reaching us (the crash window), so look the key up before creating.
    return this.observeKey(conn, bucket, signal);
  }

  /** Asks the provider for the live bucket made with the current idempotency key. */
  private async observeKey(conn: Connection, bucket: StorageBucket, signal: AbortSignal): Promise<Observation> {
    const key = bucket.metadata.annotations?.[IDEMPOTENCY_KEY_ANNOTATION];
    if (!key) return { exists: false };
    const byKey = await conn.client.findByIdempotencyKey(key, signal);
    if (!byKey) return { exists: false };
    // A key copied along with a manifest finds the original's bucket; names, unlike uids,
    // survive a backup and restore, so they tell ours from someone else's.
    const mine = byKey.tags[NAMESPACE_TAG] === bucket.metadata.namespace && byKey.tags[NAME_TAG] === bucket.metadata.name;
    return mine ? { exists: true, bucket: byKey } : { exists: false, foreignKey: true };
  }

  /** Runs `step`; `obs` is undefined when preplan decided without asking the provider. */
  private async execute(bucket: StorageBucket, conn: Connection, obs: Observation | undefined, step: Step, ctx: ReconcileContext): Promise<Action> {
    const log = ctx.logger.child({ bucketID: obs?.exists ? obs.bucket.id : bucket.status?.id });
    switch (step.type) {
      case 'prepare':
        return this.prepare(bucket, conn, ctx);

      case 'rotateKey': {
        const key = this.newKey();
        // Persisted (with a resourceVersion precondition) BEFORE the create that uses it.
        const rotated = await this.d.writer.patchMetadata(STORAGE_BUCKET, bucket, { annotations: { [IDEMPOTENCY_KEY_ANNOTATION]: key } });
        if (step.reason === 'vanished') {
          const note = `provider bucket ${bucket.status?.id ?? ''} no longer exists; creating a new one`;
          this.d.events.event(bucket, 'Warning', EventReason.BucketMissing, 'Observe', note);
          log.info({ msg: 'provider bucket missing; recreating' });
        } else {
          this.d.events.event(bucket, 'Warning', EventReason.ForeignIdempotencyKey, 'Observe', 'the idempotency key belongs to another object\'s bucket; minted a new one');
          log.info({ msg: 'foreign idempotency key replaced' });
        }
        return this.create(rotated, conn, key, ctx);
      }

      case 'create':
        return this.create(bucket, conn, step.idempotencyKey, ctx);

      case 'update': {
        const external = obs?.exists ? obs.bucket : undefined;
        const grows = step.patch.sizeGB !== undefined && external !== undefined && step.patch.sizeGB > external.sizeGB;
        const updated = await conn.client.updateBucket(step.id, step.patch, ctx.signal);
        // A new generation means the user asked for the change; otherwise the provider drifted.
        // Restoring only our own tags (an adopted bucket, one tagged before managed-by existed)
        // is bookkeeping no user acts on, so it records no Event.
        const requested = bucket.metadata.generation !== bucket.status?.observedGeneration;
        const reason = requested ? EventReason.ResizingBucket : EventReason.CorrectedDrift;
        if (step.patch.sizeGB !== undefined || step.patch.encrypted !== undefined) {
          const { tags: _tags, ...visible } = step.patch;
          this.d.events.event(bucket, 'Normal', reason, 'Update', `updating provider bucket ${step.id}: ${JSON.stringify(visible)}`);
        }
        log.info({ msg: 'updating provider bucket', patch: step.patch });
        if (!requested) for (const field of Object.keys(step.patch)) this.d.driftMetrics?.driftCorrected(field);
        this.recordAdoption(bucket, step.id);
        await this.writeStatus(bucket, {
          observation: { exists: true, bucket: updated },
          providerEndpoint: conn.endpoint,
          phase: updated.phase === 'Active' ? 'Active' : updated.phase,
          ready: { status: 'False', reason: grows ? Reason.Resizing : Reason.Updating, message: 'the provider is applying a change' },
          synced: SYNCED,
        });
        return this.poll();
      }

      case 'delete': {
        // No status write and no Event: the object is about to go, and a failed delete is
        // reported by failed() from this same snapshot, so nothing flips back and forth.
        const existed = await conn.client.deleteBucket(step.id, ctx.signal);
        log.info({ msg: existed ? 'deleted provider bucket' : 'provider bucket already gone' });
        if (!existed && step.ifGone === 'lookUpKey') {
          // Gone by id, but the current key may have made another bucket: plan from the key.
          const byKey = await this.observeKey(conn, bucket, ctx.signal);
          return this.execute(bucket, conn, byKey, plan(bucket, byKey, conn.endpoint), ctx);
        }
        // Cleanup succeeded, so the finalizer may go.
        await this.d.writer.removeFinalizer(STORAGE_BUCKET, bucket, BUCKET_FINALIZER);
        return done();
      }

      case 'removeFinalizer': {
        await this.d.writer.removeFinalizer(STORAGE_BUCKET, bucket, BUCKET_FINALIZER);
        log.info({ msg: 'released finalizer', orphaned: step.orphaned });
        return done();
      }

      case 'upToDate': {
        const status = bucket.status ?? {};
        // Rewrites nothing when Synced was already True; the owned objects come from the status.
        const current = await this.writeStatus(bucket, {
          phase: 'Active',
          ready: { status: 'True', reason: Reason.Available, message: '' },
          synced: SYNCED,
        });
        await this.ensureOwned(current, conn, { id: status.id ?? '', endpoint: status.endpoint ?? '', region: status.region ?? bucket.spec.region });
        return done();
      }

      case 'none': {
        if (bucket.metadata.deletionTimestamp || !obs?.exists) return done();
        const external = obs.bucket;
        if (step.waiting) {
          const current = await this.writeStatus(bucket, {
            observation: obs,
            providerEndpoint: conn.endpoint,
            phase: step.waiting,
            ready: { status: 'False', reason: step.waiting === 'Provisioning' ? Reason.Provisioning : Reason.Resizing, message: `the provider reports ${step.waiting}` },
            synced: SYNCED,
          });
          await this.ensureOwned(current, conn, external);
          return this.poll();
        }
        const wasReady = findCondition(bucket.status?.conditions as Condition[] | undefined, ConditionType.Ready)?.status === 'True';
        this.recordAdoption(bucket, external.id);
        // Status first: a failing owned-object write must not hide that the bucket is ready.
        const current = await this.writeStatus(bucket, {
          observation: obs,
          providerEndpoint: conn.endpoint,
          phase: 'Active',
          ready: { status: 'True', reason: Reason.Available, message: '' },
          synced: SYNCED,
        });
        await this.ensureOwned(current, conn, external);
        if (!wasReady) {
          this.d.events.event(bucket, 'Normal', EventReason.BucketReady, 'Observe', `provider bucket ${external.id} is ready`);
          log.info({ msg: 'bucket ready' });
        }
        // No drift requeue: the drift scanner lists the provider and names what differs.
        return done();
      }

      case 'mirror': {
        if (!obs?.exists) {
          const id = bucket.status?.id ?? bucket.metadata.annotations?.[ADOPT_ANNOTATION] ?? '';
          await this.writeStatus(bucket, {
            phase: 'Pending',
            ready: { status: 'False', reason: Reason.ObservedBucketNotFound, message: `provider bucket ${id} does not exist; checking again every drift interval` },
            synced: SYNCED,
          });
          return requeueAfter(this.jitter(this.driftMs));
        }
        const external = obs.bucket;
        const active = external.phase === 'Active';
        const wasReady = findCondition(bucket.status?.conditions as Condition[] | undefined, ConditionType.Ready)?.status === 'True';
        const current = await this.writeStatus(bucket, {
          observation: obs,
          providerEndpoint: conn.endpoint,
          phase: active ? 'Active' : external.phase === 'Resizing' ? 'Resizing' : 'Provisioning',
          ready: active
            ? { status: 'True', reason: Reason.Available, message: 'observed (managementPolicy Observe)' }
            : { status: 'False', reason: external.phase === 'Resizing' ? Reason.Resizing : Reason.Provisioning, message: `the provider reports ${external.phase}` },
          synced: SYNCED,
        });
        await this.ensureOwned(current, conn, external);
        if (active && !wasReady) this.d.events.event(bucket, 'Normal', EventReason.BucketReady, 'Observe', `observing provider bucket ${external.id} (managementPolicy Observe)`);
        return requeueAfter(this.jitter(active ? this.driftMs : this.pollMs));
      }

      case 'blocked': {
        await this.writeStatus(bucket, {
          phase: 'Failed',
          ready: { status: 'False', reason: step.reason, message: step.message },
          synced: { status: 'False', reason: step.reason, message: step.message },
        });
        throw new TerminalError(step.message);
      }

      default:
        return assertNever(step);
    }
  }

  /**
   * Polls a create or change the provider is still applying. A user is waiting on it, so it
   * queues at normal priority: a restart backlog (low) must not hold up a new bucket's Ready.
   */
  private poll(): Action {
    return requeueAfter(this.jitter(this.pollMs), { priority: Priority.Normal });
  }

  private async create(bucket: StorageBucket, conn: Connection, key: string, ctx: ReconcileContext): Promise<Action> {
    let created: ProviderBucket;
    try {
      created = await conn.client.createBucket(
        {
          region: bucket.spec.region,
          sizeGB: bucket.spec.sizeGB,
          encrypted: bucket.spec.encrypted ?? false,
          tags: operatorTags(bucket),
        },
        key,
        ctx.signal,
      );
    } catch (err) {
      if (isProviderError(err) && err.status === 410) {
        // The bucket made with this key was deleted behind our back; the key is spent.
        await this.d.writer.patchMetadata(STORAGE_BUCKET, bucket, { annotations: { [IDEMPOTENCY_KEY_ANNOTATION]: this.newKey() } });
        // The annotation change is an event the For predicate passes, so the create with the
        // new key follows from the watch; no fixed immediate requeue that skips the backoff.
        return done();
      }
      throw err;
    }
    this.d.events.event(bucket, 'Normal', EventReason.CreatedBucket, 'Create', `created provider bucket ${created.id}`);
    ctx.logger.info({ msg: 'created provider bucket', bucketID: created.id });
    await this.writeStatus(bucket, {
      observation: { exists: true, bucket: created },
      providerEndpoint: conn.endpoint,
      phase: created.phase === 'Active' ? 'Active' : 'Provisioning',
      ready: { status: 'False', reason: Reason.Provisioning, message: 'the provider reports Provisioning' },
      synced: SYNCED,
    });
    return this.poll();
  }

  /** Applies the owned Secret and Service when the cached copies differ from the desired ones. */
  private async ensureOwned(bucket: StorageBucket, conn: Connection, external: Pick<ProviderBucket, 'id' | 'endpoint' | 'region'>): Promise<void> {
    const access = { id: external.id, endpoint: external.endpoint, region: external.region, providerEndpoint: conn.endpoint };
    const secret = desiredSecret(bucket, access);
    await this.ensureOne(bucket, SECRET, secret, this.d.ownedSecrets, (live) => secretNeedsApply(secret, live));
    const service = desiredService(bucket, access);
    await this.ensureOne(bucket, SERVICE, service, this.d.services, (live) => serviceNeedsApply(service, live));
  }

  /**
   * Brings one owned object in line without ever taking over someone else's. The cache holds
   * only objects labelled as ours, so a miss means "absent, or not labelled": the object is
   * created (a POST fails on an existing name, where an apply would take it over), and only
   * when one exists is it read once and applied if this bucket controls it, which also labels
   * one made before the label existed.
   */
  private async ensureOne<L extends KubeObject>(
    bucket: StorageBucket, kind: ResourceKind, desired: KubeObject, cache: Cache<L>, needsApply: (live: L) => boolean,
  ): Promise<void> {
    const key = keyOf(desired);
    let live = cache.get(key);
    if (!live) {
      try {
        await this.d.writer.create(kind, desired);
        return;
      } catch (err) {
        if (!isAlreadyExists(err)) throw err;
      }
      live = await this.d.writer.get<L>(kind, key);
      // Deleted since the create failed: the next attempt creates it.
      if (!live) throw new Error(`${kind.kind} ${key.namespace}/${key.name} vanished while being created`);
    }
    if (this.mayWrite(bucket, kind.kind, live) && needsApply(live)) await this.d.writer.apply(kind, desired);
  }

  /** The first status write of an adopted bucket (update or ready) records the adoption. */
  private recordAdoption(bucket: StorageBucket, id: string): void {
    if (bucket.status?.id || !bucket.metadata.annotations?.[ADOPT_ANNOTATION]) return;
    this.d.events.event(bucket, 'Normal', EventReason.AdoptedBucket, 'Adopt', `adopted provider bucket ${id}`);
  }

  /** An existing object that some other owner controls is never taken over (it may be an app's own). */
  private mayWrite(bucket: StorageBucket, kind: string, live: KubeObject): boolean {
    if (isControlledBy(live, bucket)) return true;
    this.d.events.event(bucket, 'Warning', EventReason.OwnedObjectConflict, 'Apply', `${kind} ${live.metadata?.name ?? ''} exists and is not controlled by this StorageBucket; left untouched`);
    return false;
  }

  private async notConnected(bucket: StorageBucket, err: ConnectError, ctx: ReconcileContext): Promise<Action> {
    const status = bucket.status ?? {};
    if (bucket.metadata.deletionTimestamp && !status.id && !bucket.metadata.annotations?.[IDEMPOTENCY_KEY_ANNOTATION]) {
      // Nothing was ever created at a provider, so there is nothing to clean up.
      await this.d.writer.removeFinalizer(STORAGE_BUCKET, bucket, BUCKET_FINALIZER);
      return done();
    }
    const wrote = await this.writeStatus(bucket, {
      phase: status.phase ?? 'Pending',
      ready: { status: 'False', reason: err.reason, message: err.message },
      synced: { status: 'False', reason: err.reason, message: err.message },
    });
    if (wrote !== bucket) this.d.events.event(bucket, 'Warning', err.reason, 'Connect', err.message);
    ctx.logger.debug({ msg: 'waiting for provider configuration', reason: err.reason });
    // The config and Secret watches bring the bucket back when they appear.
    return done();
  }

  /** Turns a failure into status and the runner's retry decision. */
  private async failed(bucket: StorageBucket, err: unknown, ctx: ReconcileContext): Promise<Action> {
    if (err instanceof TerminalError) throw err;
    // A conflict (stale cache, concurrent writer) goes back through the runner's backoff:
    // no condition, and never a fixed fast requeue that a stuck cache would turn into a loop.
    if (isConflict(err) || !isProviderError(err)) throw err;
    const message = err.message;
    const phase: BucketPhase = bucket.status?.phase ?? 'Pending';
    const unchangedGeneration = bucket.status?.observedGeneration;
    if (err.isAuthError) {
      await this.writeStatus(bucket, {
        phase,
        ready: { status: 'False', reason: Reason.CredentialsRejected, message },
        synced: { status: 'False', reason: Reason.CredentialsRejected, message },
        observedGeneration: unchangedGeneration,
      }).catch(() => undefined);
      this.d.events.event(bucket, 'Warning', EventReason.CredentialsRejected, 'Connect', message);
      // A Secret rotation re-enqueues the bucket at once; the slow retry covers a provider
      // that was merely slow to accept a new key.
      ctx.logger.debug({ msg: 'credentials rejected; retrying later' });
      return requeueAfter(this.jitter(CREDENTIALS_RETRY_MS));
    }
    // 404 (gone between observe and act) and 409 (not ready yet) clear up on the next pass.
    const transient = err.retryable || err.status === 404 || err.status === 409;
    if (!transient) {
      await this.writeStatus(bucket, {
        phase: 'Failed',
        ready: { status: 'False', reason: Reason.InvalidSpec, message },
        synced: { status: 'False', reason: Reason.InvalidSpec, message },
      }).catch(() => undefined);
      this.d.events.event(bucket, 'Warning', EventReason.InvalidSpec, 'Provider', message);
      throw new TerminalError('provider rejected the bucket', { cause: err });
    }
    const throttled = err.status === 429;
    await this.writeStatus(bucket, {
      phase,
      ready: this.currentReady(bucket, { status: 'False', reason: throttled ? Reason.Throttled : Reason.ProviderUnavailable, message }),
      synced: { status: 'False', reason: throttled ? Reason.Throttled : Reason.ProviderUnavailable, message },
      observedGeneration: unchangedGeneration,
    }).catch(() => undefined);
    // Honour a real Retry-After; a missing or sub-second one falls back to the runner's backoff.
    if (err.retryAfterMs !== undefined && err.retryAfterMs >= 1000) return requeueAfter(this.jitter(err.retryAfterMs), { priority: ctx.priority });
    throw new Error(`cannot reconcile bucket ${bucket.metadata.namespace}/${bucket.metadata.name}`, { cause: err });
  }

  /**
   * The Ready condition as it stands, so a transient failure does not flip it. A bucket that
   * has none yet gets `initial` (False with a reason and message): kstatus and Flux read Ready
   * from the first reconcile, and `kubectl get` should never show an empty READY.
   */
  private currentReady(bucket: StorageBucket, initial: ConditionFacts): ConditionFacts {
    const c = findCondition(bucket.status?.conditions as Condition[] | undefined, ConditionType.Ready);
    if (!c) return initial;
    return { status: c.status, reason: c.reason as Reason, message: c.message, observedGeneration: c.observedGeneration };
  }

  /** Writes status when it changed; returns the object as it now stands. */
  private async writeStatus(bucket: StorageBucket, facts: StatusFacts): Promise<StorageBucket> {
    const next = nextStatus(bucket, facts, this.now());
    if (statusEqual(bucket.status, next)) return bucket;
    return this.d.writer.patchStatus(STORAGE_BUCKET, bucket, { ...next });
  }
}

