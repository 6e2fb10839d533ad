/**
 * The StorageBucket orchestrator: it reads, calls and writes; plan.ts decides and failure.ts
 * classifies failures. One reconcile asks {@link decide} for the next step, gathers the fact
 * it needs (connection, provider observation) until it gets one, executes that step and
 * writes status only when it changed. This is the only place that logs and records Events.
 * A Ready bucket is not polled for drift here: the drift scanner lists the provider in bulk
 * and names the buckets that need an observation (see drift-scanner.ts).
 */
import { ReleasedObjects } from './released';
import { randomBytes } from 'node:crypto';
import type { V1Service } from '@kubernetes/client-node';
import type { StorageBucket } from '../api/v1';
import { BUCKET_FINALIZER, CREATE_TARGET_ANNOTATION, IDEMPOTENCY_KEY_ANNOTATION } from '../api/v1';
import {
  done,
  isConflict,
  Priority,
  requeueAfter,
  TerminalError,
  type Action,
  type Cache,
  type ObjectKey,
  type ReconcileContext,
  type Reconciler,
  type Request,
} from '../runtime';
import { remainingAfterDelete } from './cleanup';
import { ConnectError, type Connection } from './connect';
import type { CrdGuard } from './crd-guard';
import { externalClient, type ExternalClient } from './external';
import { classifyFailure } from './failure';
import { STORAGE_BUCKET } from './kinds';
import type { DriftMetrics } from './lifecycle-metrics';
import type { OwnedSecret } from './owned';
import { OwnedObjects } from './owned-sync';
import { othersInCache } from './others';
import { createTarget, mintKey } from './ownership';
import { assertNever, decide, type ConnectedTo, type DecisionFacts, type Observation, type Step } from './plan';
import { EventReason } from './reasons';
import { nextStatus, statusEqual, type StatusFacts } from './status';
import { stepStatus, type StepFacts } from './step-status';
import { settled, type EventSink, type ObjectWriter, type WriteFailures } from './writer';

/** Dependencies of {@link BucketReconciler}. */
export interface BucketReconcilerDeps {
  /** Buckets whose finalizer this reconciler removed; shared across reconcilers in tests. @default a fresh one */
  readonly released?: ReleasedObjects;
  readonly buckets: Cache<StorageBucket>;
  /**
   * This cluster's identity (`--cluster-id`, by default the kube-system namespace's uid):
   * written to the provider bucket's owner tags, and a bucket tagged with another is never
   * taken, changed or deleted.
   */
  readonly clusterId: string;
  /** Whether the StorageBucket CRD is being deleted, asked for each deleting object (crd-guard.ts). @default never */
  readonly crd?: CrdGuard;
  /** Resolves the bucket's provider connection; throws {@link ConnectError} when it cannot. */
  readonly connect: (bucket: StorageBucket, signal: AbortSignal) => Promise<Connection>;
  /** Owned Secrets: only those labelled as the operator's, data condensed to hashes. */
  readonly ownedSecrets: Cache<OwnedSecret>;
  /** Owned Services: only those labelled as the operator's. */
  readonly services: Cache<V1Service>;
  /** apiVersion of the owned objects' owner references (see OwnedObjects). @default v1 */
  readonly ownerApiVersion?: string;
  readonly writer: ObjectWriter;
  readonly events: EventSink;
  /** Told about status writes that fail while a failure is being reported. @default ignored */
  readonly writeFailures?: WriteFailures;
  /** Counts provider-side changes the operator corrected. @default not counted */
  readonly driftMetrics?: DriftMetrics;
  /** Poll interval while the provider is Provisioning or Resizing. @default 3000 */
  readonly pollIntervalMs?: number;
  /**
   * Read interval of observed buckets (managementPolicy Observe), which the drift scan cannot
   * cover: the operator does not tag them. @default 60000
   */
  readonly driftIntervalMs?: number;
  /** The namespace the caches are limited to, if any (see others.ts). @default all */
  readonly watchedNamespace?: string;
  /** The drift scan's latest findings; a named bucket is observed instead of trusted. @default none */
  readonly driftReports?: { reported(key: ObjectKey): boolean };
  /** @default () => new Date() */
  readonly now?: () => Date;
  /** The nonce of each new idempotency key (the key is `<uid>.<nonce>`, see ownership.ts). @default {@link randomNonce} */
  readonly newKey?: () => string;
  /** Spreads requeues so buckets created together do not poll together. @default ±10 % */
  readonly jitter?: (ms: number) => number;
}

/** The Warning each key rotation records: why the old key could not be used. */
const ROTATION_NOTES = {
  vanished: [EventReason.BucketMissing, 'provider bucket {id} no longer exists; creating a new one'],
  foreign: [EventReason.ForeignIdempotencyKey, "the idempotency key belongs to another object's bucket; minted a new one"],
  spent: [EventReason.BucketMissing, 'the provider refused the idempotency key (its bucket was deleted); minted a new one'],
} as const;

/**
 * Random bytes in a key's nonce. The uid before it already makes the key this object's alone;
 * the nonce only has to tell this object's keys apart and be unguessable until the create is
 * sent, which 64 bits do. As 16 hex characters rather than a UUID's 36 it takes 40 bytes off
 * every stored StorageBucket, which holds the key twice (annotation and status).
 */
const NONCE_BYTES = 8;

/** A fresh nonce for {@link mintKey}: {@link NONCE_BYTES} random bytes in hex. */
export function randomNonce(): string {
  return randomBytes(NONCE_BYTES).toString('hex');
}

/** Decisions per reconcile; each replan follows a call whose answer is new, so a few suffice. */
const MAX_DECISIONS = 6;

/** An executed step's answer that stands in for an observation: decide again with it. */
interface Replan {
  readonly replan: Observation;
}

/** Reconciles StorageBuckets against the provider. */
export class BucketReconciler implements Reconciler {
  private readonly pollMs: number;
  private readonly driftMs: number;
  private readonly now: () => Date;
  private readonly newKey: () => string;
  private readonly jitter: (ms: number) => number;
  private readonly released: ReleasedObjects;
  private readonly owned: OwnedObjects;

  constructor(private readonly d: BucketReconcilerDeps) {
    this.owned = new OwnedObjects(d);
    this.pollMs = d.pollIntervalMs ?? 3000;
    this.driftMs = d.driftIntervalMs ?? 60_000;
    this.now = d.now ?? (() => new Date());
    this.newKey = d.newKey ?? randomNonce;
    this.jitter = d.jitter ?? ((ms) => Math.round(ms * (0.9 + Math.random() * 0.2)));
    this.released = d.released ?? new ReleasedObjects();
  }

  async reconcile(req: Request, ctx: ReconcileContext): Promise<Action> {
    const cached = this.d.buckets.get(req);
    if (!cached) return done();
    // Released by this process already; the cache has not seen the object go yet.
    if (cached.metadata.deletionTimestamp && this.released.has(cached.metadata.uid)) return done();
    // The object as last written in this reconcile: decisions after a step's write, and a
    // failure's report, go against the resourceVersion that is current, not the one the
    // reconcile started from.
    const seen = { bucket: cached };
    let facts: DecisionFacts = {
      driftReported: this.d.driftReports?.reported(req) ?? false,
      clusterId: this.d.clusterId,
      ...othersInCache(this.d.buckets, cached, this.d.watchedNamespace),
    };
    let conn: Connection | undefined;
    // Why the account lookup failed, if it did: raised only when a decision needs the account.
    let accountFailure: { readonly err: unknown } | undefined;
    try {
      if (cached.metadata.deletionTimestamp && this.d.crd) facts = { ...facts, crdDeleting: await this.d.crd.deleting() };
      for (let i = 0; i < MAX_DECISIONS; i++) {
        const bucket = seen.bucket;
        const next = decide(bucket, facts);
        if (next.type === 'connect') {
          try {
            conn = await this.d.connect(bucket, ctx.signal);
            const configDeleting = Boolean(conn.config.metadata.deletionTimestamp);
            // The provider's name for the account (asked once per account and kept): a bucket
            // recorded in another account is never recreated or released here, see plan.ts. A
            // failed lookup fails the reconcile only if a decision needs the account.
            const accountId = await conn.client.accountId(ctx.signal).catch((err: unknown) => {
              accountFailure = { err };
              return undefined;
            });
            facts = { ...facts, connection: { endpoint: conn.endpoint, ...(accountId === undefined ? {} : { accountId }), configDeleting } };
          } catch (err) {
            if (!(err instanceof ConnectError)) throw err;
            facts = { ...facts, connection: { failure: { reason: err.reason, message: err.message } } };
          }
          continue;
        }
        if (next.type === 'account') {
          if (accountFailure) throw accountFailure.err;
          const accountId = await mustConnect(conn).client.accountId(ctx.signal);
          facts = { ...facts, connection: { ...(facts.connection as ConnectedTo), accountId } };
          continue;
        }
        if (next.type === 'observe') {
          facts = { ...facts, observation: await this.external(conn).observe(bucket, next.fence, ctx.signal) };
          continue;
        }
        const to = facts.connection && 'endpoint' in facts.connection ? facts.connection : undefined;
        const result = await this.execute(bucket, conn, to, facts.observation, next, seen, ctx);
        if (!('replan' in result)) return result;
        facts = { ...facts, observation: result.replan };
      }
      throw new Error(`no decision for bucket ${req.namespace}/${req.name} after ${MAX_DECISIONS} steps`);
    } catch (err) {
      return this.failed(seen.bucket, err, ctx);
    }
  }

  /** The provider seam over `conn`. */
  private external(conn: Connection | undefined): ExternalClient {
    return externalClient(mustConnect(conn).client, this.d.clusterId);
  }

  /** Runs `step`; `obs` is undefined when the step was decided without asking the provider. */
  private async execute(
    bucket: StorageBucket,
    conn: Connection | undefined,
    to: ConnectedTo | undefined,
    obs: Observation | undefined,
    step: Step,
    seen: { bucket: StorageBucket },
    ctx: ReconcileContext,
  ): Promise<Action | Replan> {
    const external = obs?.exists ? obs.bucket : undefined;
    const log = ctx.logger.child({ bucketID: external?.id ?? bucket.status?.id });
    const report = (facts: StepFacts = {}) => this.writeStatus(bucket, stepStatus(bucket, step, { providerEndpoint: conn?.endpoint, ...facts }));
    switch (step.type) {
      case 'nothing':
        return done();

      case 'paused':
        await report();
        return done();

      case 'blocked':
        if ((await report()) !== bucket) this.d.events.event(bucket, 'Warning', step.reason, 'Reconcile', step.message);
        if (step.recheck) return requeueAfter(this.jitter(this.driftMs));
        throw new TerminalError(step.message);

      case 'waitForConfig':
        // Warned once, when the condition appears; the config and Secret watches bring the bucket back.
        if ((await report()) !== bucket) this.d.events.event(bucket, 'Warning', step.reason, 'Connect', step.message);
        log.debug({ msg: 'waiting for provider configuration', reason: step.reason });
        return done();

      case 'prepare': {
        // ONE metadata write carrying the resourceVersion it was read at: a stale cache fails
        // with Conflict instead of minting a second key.
        const key = step.mintKey ? mintKey(bucket, this.newKey()) : undefined;
        const prepared = await this.d.writer.patchMetadata(STORAGE_BUCKET, bucket, {
          ...(step.addFinalizer ? { finalizers: [...(bucket.metadata.finalizers ?? []), BUCKET_FINALIZER] } : {}),
          ...(key ? { annotations: this.keyAnnotations(bucket, key, to) } : {}),
        });
        seen.bucket = prepared;
        log.debug('added finalizer and idempotency key');
        return step.createNow && key ? this.create(prepared, mustConnect(conn), key, step, ctx) : done();
      }

      case 'rotateKey': {
        const key = mintKey(bucket, this.newKey());
        // Persisted (with a resourceVersion precondition) BEFORE the create that uses it.
        const rotated = await this.d.writer.patchMetadata(STORAGE_BUCKET, bucket, { annotations: this.keyAnnotations(bucket, key, to) });
        seen.bucket = rotated;
        const [reason, note] = ROTATION_NOTES[step.reason];
        this.d.events.event(bucket, 'Warning', reason, 'Observe', note.replace('{id}', bucket.status?.id ?? ''));
        log.info({ msg: 'idempotency key replaced', why: step.reason });
        // Without createNow the annotation's watch event brings the create, through the queue.
        return step.createNow ? this.create(rotated, mustConnect(conn), key, step, ctx) : done();
      }

      case 'create':
        return this.create(bucket, mustConnect(conn), step.idempotencyKey, step, ctx);

      case 'update': {
        const updated = await this.external(conn).update(step.id, step.patch, ctx.signal);
        // Restoring only our own tags (an adopted bucket, one tagged before managed-by existed)
        // is bookkeeping no user acts on, so it records no Event.
        const { tags: _tags, ...visible } = step.patch;
        if (Object.keys(visible).length > 0) {
          const reason = step.requested ? EventReason.ResizingBucket : EventReason.CorrectedDrift;
          this.d.events.event(bucket, 'Normal', reason, 'Update', `updating provider bucket ${step.id}: ${JSON.stringify(visible)}`);
        }
        log.info({ msg: 'updating provider bucket', patch: step.patch });
        if (!step.requested) for (const field of Object.keys(step.patch)) this.d.driftMetrics?.driftCorrected(field);
        if (step.adopting) this.d.events.event(bucket, 'Normal', EventReason.AdoptedBucket, 'Adopt', `adopted provider bucket ${step.id}`);
        await report({ external: updated });
        return this.poll();
      }

      case 'delete': {
        // No status write and no Event: the object is about to go, and a failed delete is
        // reported by failed() from this same snapshot, so nothing flips back and forth.
        const provider = this.external(conn);
        const existed = await provider.delete(step.id, ctx.signal, step.ifTags);
        // Decided from the status alone, which named a bucket the provider does not show as
        // this object's, or not at all: that proves nothing gone, so decide on what it shows.
        if (existed === 'notProven' || (step.ifTags && !existed)) return { replan: await provider.observe(bucket, true, ctx.signal) };
        // The bucket deleted, which need not be the one `log` names (a leftover of this object's).
        ctx.logger.info({ msg: existed ? 'deleted provider bucket' : 'provider bucket already gone', bucketID: step.id });
        // Decided again on what is left: another bucket of this object, or the finalizer.
        return { replan: remainingAfterDelete(obs, step.id) };
      }

      case 'removeFinalizer':
        // No Event: it would be written about an object that is about to vanish.
        if (step.why === 'notOurs') log.warn({ msg: 'released finalizer without deleting the provider bucket: another StorageBucket owns it' });
        await this.d.writer.removeFinalizer(STORAGE_BUCKET, bucket, BUCKET_FINALIZER);
        this.released.add(bucket.metadata.uid);
        // The object vanishes with its CRD, so an info line (why: crdDeleting) and a counter say the bucket was kept.
        if (step.why === 'crdDeleting') this.d.crd?.released();
        // 'gone' follows the 'deleted provider bucket' line (or a bucket that never existed):
        // a second line per delete would only repeat it, at the logging cost of a mass delete.
        log[step.why === 'gone' ? 'debug' : 'info']({ msg: 'released finalizer', why: step.why });
        return done();

      case 'upToDate': {
        // Rewrites nothing when Synced was already True; the owned objects come from the status.
        const status = bucket.status ?? {};
        await settled(
          report(),
          this.owned.ensure(bucket, mustConnect(conn).endpoint, {
            id: status.id ?? '',
            endpoint: status.endpoint ?? '',
            region: status.region ?? bucket.spec.region,
          }),
        );
        return done();
      }

      case 'wait':
      case 'ready':
      case 'mirror': {
        if (step.type === 'ready' && step.adopting && external)
          this.d.events.event(bucket, 'Normal', EventReason.AdoptedBucket, 'Adopt', `adopted provider bucket ${external.id}`);
        // Status and owned objects at once (one round trip instead of three), each written
        // whatever the other's fate: a failing owned-object write must not hide that the
        // bucket is ready, nor a status conflict delay its Secret.
        await settled(report({ external }), external ? this.owned.ensure(bucket, mustConnect(conn).endpoint, external) : undefined);
        if (step.type !== 'wait' && step.announce) {
          // A bucket this operator made becomes Ready with no Event: CreatedBucket (or
          // AdoptedBucket) already named it, and the Ready condition's transition time says when,
          // so an Event would be one more API write per bucket that tells nothing new (Crossplane
          // records none either). A bucket only observed had no such Event, so it gets one.
          if (step.type === 'mirror')
            this.d.events.event(
              bucket,
              'Normal',
              EventReason.BucketReady,
              'Observe',
              `observing provider bucket ${external?.id ?? ''} (managementPolicy Observe)`,
            );
          log.info({ msg: 'bucket ready' });
        }
        if (step.type === 'wait') return this.poll();
        // Observed buckets are read one by one (the operator does not tag them); ours are left
        // to the drift scanner, which lists the provider and names what differs.
        if (step.type === 'mirror') return requeueAfter(this.jitter(step.recheck === 'poll' ? this.pollMs : this.driftMs));
        return done();
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

  /** A new key, and where creates with it go (written before any is sent). */
  private keyAnnotations(bucket: StorageBucket, key: string, to: ConnectedTo | undefined): Record<string, string> {
    return { [IDEMPOTENCY_KEY_ANNOTATION]: key, ...(to ? { [CREATE_TARGET_ANNOTATION]: createTarget(bucket, to) } : {}) };
  }

  /** Creates with `key`; a refusal of the key (410, 409 reused) is an answer to decide again on. */
  private async create(bucket: StorageBucket, conn: Connection, key: string, step: Step, ctx: ReconcileContext): Promise<Action | Replan> {
    const result = await this.external(conn).create(bucket, key, ctx.signal);
    if ('replan' in result) return result;
    const created = result.created;
    this.d.events.event(bucket, 'Normal', EventReason.CreatedBucket, 'Create', `created provider bucket ${created.id}`);
    ctx.logger.info({ msg: 'created provider bucket', bucketID: created.id });
    await this.writeStatus(bucket, stepStatus(bucket, step, { external: created, providerEndpoint: conn.endpoint }));
    return this.poll();
  }

  /** Reports a failure as failure.ts classifies it, then hands the runner its decision. */
  private async failed(bucket: StorageBucket, err: unknown, ctx: ReconcileContext): Promise<Action> {
    const policy = classifyFailure(err, bucket);
    if (policy.type === 'rethrow') throw err;
    try {
      await this.writeStatus(bucket, policy.status);
    } catch (writeErr) {
      // A stale snapshot must not overwrite a fresher status: the next pass reads again.
      if (isConflict(writeErr)) throw writeErr;
      // Anything else (missing RBAC, an API outage) is surfaced, but must not hide `err`.
      this.d.writeFailures?.report({ resource: 'storagebuckets/status', verb: 'patch' }, writeErr);
    }
    if (policy.event) this.d.events.event(bucket, 'Warning', policy.event.reason, policy.event.action, policy.event.note);
    if (policy.type === 'terminal') throw new TerminalError(policy.message, { cause: err });
    ctx.logger.debug({ msg: 'reconcile failed; retrying', reason: policy.status.synced.reason });
    if (policy.requeueAfterMs !== undefined) return requeueAfter(this.jitter(policy.requeueAfterMs), { priority: ctx.priority });
    throw new Error(`cannot reconcile bucket ${bucket.metadata.namespace}/${bucket.metadata.name}`, { cause: err });
  }

  /** Writes status when it changed; returns the object as it now stands. */
  private async writeStatus(bucket: StorageBucket, facts: StatusFacts | undefined): Promise<StorageBucket> {
    if (!facts) return bucket;
    const next = nextStatus(bucket, facts, this.now());
    if (statusEqual(bucket.status, next)) return bucket;
    return this.d.writer.patchStatus(STORAGE_BUCKET, bucket, { ...next });
  }
}

/** The connection every provider step was decided after; its absence is a bug, not a state. */
function mustConnect(conn: Connection | undefined): Connection {
  if (!conn) throw new Error('a provider step was decided before connecting');
  return conn;
}
