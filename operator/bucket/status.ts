/**
 * Computes a StorageBucket's next status from what one reconcile learned. Pure: the same
 * facts give the same status, and lastTransitionTime only moves when a condition's status
 * does, so an unchanged world produces an identical status and no write.
 */
import type { BucketPhase, StorageBucket, StorageBucketStatus } from '../api/v1';
import { RECONCILE_REQUESTED_ANNOTATION } from '../api/v1';
import { conditionsEqual, findCondition, setCondition, type Condition, type ConditionStatus } from '../runtime';
import { recordedKey } from './ownership';
import { ConditionType, Reason, TERMINAL_REASONS } from './reasons';
import type { Observation } from './plan';

/** One condition's desired value. */
export interface ConditionFacts {
  readonly status: ConditionStatus;
  readonly reason: Reason;
  readonly message?: string;
  /** The generation this condition speaks for. @default the object's current generation */
  readonly observedGeneration?: number;
}

/** What a reconcile learned, as input to {@link nextStatus}. */
export interface StatusFacts {
  /** Provider facts, when the provider was asked. */
  readonly observation?: Observation;
  readonly phase: BucketPhase;
  readonly ready: ConditionFacts;
  readonly synced: ConditionFacts;
  /**
   * The generation the status speaks for. Paths that did not act on the spec (a transient
   * failure, a pause) keep the old one, so `kubectl wait` never mistakes them for done.
   * @default the object's current generation
   */
  readonly observedGeneration?: number;
  /** Provider endpoint the observation came from. */
  readonly providerEndpoint?: string;
}

/** Returns the status the object should have after this reconcile. */
export function nextStatus(bucket: StorageBucket, facts: StatusFacts, now: Date): StorageBucketStatus {
  const prev = bucket.status ?? {};
  const generation = bucket.metadata.generation;
  const external = facts.observation?.exists ? facts.observation.bucket : undefined;
  let conditions = prev.conditions as Condition[] | undefined;
  conditions = setCondition(
    conditions,
    { type: ConditionType.Ready, ...facts.ready, observedGeneration: facts.ready.observedGeneration ?? generation },
    now,
  );
  conditions = setCondition(
    conditions,
    { type: ConditionType.Synced, ...facts.synced, observedGeneration: facts.synced.observedGeneration ?? generation },
    now,
  );
  conditions = kstatusConditions(conditions, facts, generation, now);

  const out: StorageBucketStatus = { phase: facts.phase, conditions };
  const observed = 'observedGeneration' in facts ? facts.observedGeneration : generation;
  if (observed !== undefined) out.observedGeneration = observed;
  // What the provider reports wins; without a fresh observation the last known values stay.
  // The key only when minted for this object: an observed bucket's key is never ours.
  const key = recordedKey(bucket, external);
  if (key) out.idempotencyKey = key;
  const id = external?.id ?? prev.id;
  if (id) out.id = id;
  const endpoint = external?.endpoint ?? prev.endpoint;
  if (endpoint) out.endpoint = endpoint;
  const size = external?.sizeGB ?? prev.sizeGB;
  if (size !== undefined) out.sizeGB = size;
  const providerEndpoint = (external ? facts.providerEndpoint : undefined) ?? prev.providerEndpoint;
  if (providerEndpoint) out.providerEndpoint = providerEndpoint;
  const account = external?.account ?? prev.account;
  if (account) out.account = account;
  const region = external?.region ?? prev.region;
  if (region) out.region = region;
  const encrypted = external?.encrypted ?? prev.encrypted;
  if (encrypted !== undefined) out.encrypted = encrypted;
  // Every reconcile that gets as far as computing status has handled the request, whether
  // it succeeded or not (as Flux's lastHandledReconcileAt): the conditions tell the outcome.
  const requested = bucket.metadata.annotations?.[RECONCILE_REQUESTED_ANNOTATION] ?? prev.lastHandledReconcileAt;
  if (requested) out.lastHandledReconcileAt = requested;
  return out;
}

/**
 * The kstatus "abnormal-true" conditions, derived from Ready and Synced so they can never
 * disagree: Stalled while a terminal reason blocks progress, Reconciling while the operator
 * works towards a Ready it has not reached (not while paused). Absent when they do not apply,
 * which kstatus reads as False.
 */
function kstatusConditions(conditions: Condition[], facts: StatusFacts, generation: number | undefined, now: Date): Condition[] {
  const terminal = [facts.ready, facts.synced].find((c) => c.status === 'False' && TERMINAL_REASONS.has(c.reason));
  const paused = facts.synced.reason === Reason.ReconcilePaused;
  const reconciling = !terminal && !paused && facts.ready.status !== 'True';
  let out = conditions.filter((c) => c.type !== ConditionType.Stalled && c.type !== ConditionType.Reconciling);
  const keep = (type: string) => conditions.filter((c) => c.type === type);
  if (terminal) {
    out = setCondition(
      [...out, ...keep(ConditionType.Stalled)],
      { type: ConditionType.Stalled, status: 'True', reason: terminal.reason, message: terminal.message, observedGeneration: generation },
      now,
    );
  }
  if (reconciling) {
    out = setCondition(
      [...out, ...keep(ConditionType.Reconciling)],
      { type: ConditionType.Reconciling, status: 'True', reason: facts.ready.reason, message: facts.ready.message, observedGeneration: generation },
      now,
    );
  }
  return out;
}

/**
 * The Ready condition as it stands, so a transient failure or a pause does not flip it. A
 * bucket that has none yet gets `initial` (False with a reason and message): kstatus and Flux
 * read Ready from the first reconcile, and `kubectl get` should never show an empty READY.
 */
export function keepReady(bucket: StorageBucket, initial: ConditionFacts): ConditionFacts {
  const c = findCondition(bucket.status?.conditions as Condition[] | undefined, ConditionType.Ready);
  if (!c) return initial;
  return { status: c.status, reason: c.reason as Reason, message: c.message, observedGeneration: c.observedGeneration };
}

/** True when two statuses carry the same information (condition order and time format aside). */
export function statusEqual(a: StorageBucketStatus | undefined, b: StorageBucketStatus | undefined): boolean {
  const x = a ?? {};
  const y = b ?? {};
  const scalar = [
    'id',
    'phase',
    'observedGeneration',
    'idempotencyKey',
    'endpoint',
    'sizeGB',
    'providerEndpoint',
    'region',
    'encrypted',
    'lastHandledReconcileAt',
  ] as const;
  return scalar.every((k) => x[k] === y[k]) && conditionsEqual(x.conditions as Condition[] | undefined, y.conditions as Condition[] | undefined);
}
