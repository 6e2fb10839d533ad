/**
 * The properties every run must keep. Two are judged at each provider write, as it is made
 * (who wrote, and whose bucket it was); the others at each quiescent point and after the
 * final teardown. Ownership is read from the provider bucket's tags: `kubernetes-namespace`
 * and `kubernetes-name` name the object, and `kubernetes-uid`, when present, must match its
 * uid (so a re-created object of the same name is another object). Other tags (a cluster
 * id, say) are ignored; "ours" is `managed-by=bucketoperator`.
 */
import type { StorageBucket } from '../../../operator/api/v1';
import { BUCKET_FINALIZER, MANAGED_BY_VALUE, PAUSED_ANNOTATION } from '../../../operator/api/v1';
import { CLUSTER_TAG, MANAGED_BY_TAG, NAME_TAG, NAMESPACE_TAG, UID_TAG } from '../../../operator/bucket/tags';
import type { ModelApiServer } from './api-server';
import type { PlacedBucket, ProviderCall } from './provider';
import { OTHER_CLUSTER } from './world';

/**
 * True when `tags` name an object of the other cluster the model's actions make buckets for
 * (whose objects this model cannot see, so they count as live).
 */
export function taggedByOtherCluster(tags: Readonly<Record<string, string>>): boolean {
  return tags[CLUSTER_TAG] === OTHER_CLUSTER;
}

/** The invariants, by name. */
export const Invariant = {
  /** Never two provider buckets whose tags name one live object. */
  oneBucketPerObject: 'oneBucketPerObject',
  /** Never a provider bucket changed or deleted while its tags name another live object or another cluster. */
  noForeignWrite: 'noForeignWrite',
  /** Every Full object that is Ready (and not paused) has exactly one bucket, the one its status names. */
  readyHasOneBucket: 'readyHasOneBucket',
  /** A reconcile of an object with managementPolicy Observe makes no provider write. */
  observeNeverWrites: 'observeNeverWrites',
  /** Deleting every StorageBucket leaves no object and no bucket of ours, but those released on purpose. */
  teardownLeavesNothing: 'teardownLeavesNothing',
  /** The world settles: reconciles stop writing within a bounded number of rounds. */
  quiescence: 'quiescence',
} as const;

/** Name of an invariant. */
export type InvariantName = (typeof Invariant)[keyof typeof Invariant];

/** One broken invariant, with what shows it. */
export interface Violation {
  readonly invariant: InvariantName;
  readonly detail: string;
}

/** True when `tags` name `obj` as the owner (uid too, when the tags carry one). */
export function namesObject(tags: Readonly<Record<string, string>>, obj: StorageBucket): boolean {
  if (tags[NAMESPACE_TAG] !== obj.metadata.namespace || tags[NAME_TAG] !== obj.metadata.name) return false;
  const uid = tags[UID_TAG];
  return uid === undefined || uid === obj.metadata.uid;
}

/** `namespace/name` of an object. */
export function objectName(obj: { metadata: { namespace?: string; name?: string } }): string {
  return `${obj.metadata.namespace ?? ''}/${obj.metadata.name ?? ''}`;
}

/** A placed bucket in one line: `bucket-...1 at provider-a/alpha`. */
export function where(b: { endpoint: string; account: string; id?: string }): string {
  const host = b.endpoint.replace(/^https:\/\//, '').replace(/\.example$/, '');
  return `${b.id ?? '?'} at ${host}/${b.account}`;
}

/** The live StorageBucket the tags name, if any. */
function ownerOf(api: ModelApiServer, tags: Readonly<Record<string, string>>): StorageBucket | undefined {
  const namespace = tags[NAMESPACE_TAG];
  const name = tags[NAME_TAG];
  if (!namespace || !name) return undefined;
  const live = api.read<StorageBucket>('StorageBucket', { namespace, name });
  return live && namesObject(tags, live) ? live : undefined;
}

/** Judges one provider write before it is made. */
export function checkWrite(api: ModelApiServer, call: Omit<ProviderCall, 'ok' | 'after'>): Violation[] {
  const out: Violation[] = [];
  const actor = call.actor;
  const by = actor.kind === 'reconcile' ? `${actor.namespace}/${actor.name}` : actor.kind;
  if (actor.kind === 'reconcile' && actor.observe) {
    out.push({
      invariant: Invariant.observeNeverWrites,
      detail: `${call.op} ${where({ ...call, id: call.id })} by ${by}, whose managementPolicy is Observe`,
    });
  }
  if ((call.op === 'update' || call.op === 'delete') && call.before) {
    const owner = ownerOf(api, call.before.tags);
    const self = actor.kind === 'reconcile' && owner && owner.metadata.namespace === actor.namespace && owner.metadata.name === actor.name;
    if (owner && !self) {
      out.push({
        invariant: Invariant.noForeignWrite,
        detail: `${call.op} of ${where({ ...call, id: call.id })} by ${by}, whose tags name live StorageBucket ${objectName(owner)}`,
      });
    } else if (taggedByOtherCluster(call.before.tags)) {
      out.push({
        invariant: Invariant.noForeignWrite,
        detail: `${call.op} of ${where({ ...call, id: call.id })} by ${by}, whose tags name cluster ${call.before.tags[CLUSTER_TAG] ?? ''}`,
      });
    }
  }
  return out;
}

function readyTrue(b: StorageBucket): boolean {
  const conditions = (b.status?.conditions ?? []) as { type: string; status: string }[];
  return conditions.some((c) => c.type === 'Ready' && c.status === 'True');
}

/** Judges a quiescent world: one bucket per object; a Ready Full object has its one bucket. */
export function checkQuiescent(objects: readonly StorageBucket[], buckets: readonly PlacedBucket[]): Violation[] {
  const out: Violation[] = [];
  for (const obj of objects) {
    const mine = buckets.filter((b) => namesObject(b.bucket.tags, obj));
    if (mine.length > 1) {
      out.push({
        invariant: Invariant.oneBucketPerObject,
        detail: `StorageBucket ${objectName(obj)} has ${mine.length} provider buckets: ${mine.map((b) => where({ ...b, id: b.bucket.id })).join(', ')}`,
      });
    }
    const full = (obj.spec.managementPolicy ?? 'Full') === 'Full';
    const paused = obj.metadata.annotations?.[PAUSED_ANNOTATION] === 'true';
    if (!full || paused || obj.metadata.deletionTimestamp || !readyTrue(obj)) continue;
    const named = mine.filter((b) => b.bucket.id === obj.status?.id);
    if (mine.length !== 1 || named.length !== 1) {
      out.push({
        invariant: Invariant.readyHasOneBucket,
        detail: `StorageBucket ${objectName(obj)} is Ready with status.id ${obj.status?.id ?? '(none)'} at ${obj.status?.providerEndpoint ?? '?'}, but its tagged buckets are [${mine.map((b) => where({ ...b, id: b.bucket.id })).join(', ')}]`,
      });
    }
  }
  return out;
}

/**
 * Judges the world after every StorageBucket was deleted: nothing of ours may be left, but
 * buckets of objects deleted with deletionPolicy Orphan or managementPolicy Observe
 * (`releasedUids`), which are kept on purpose.
 */
export function checkTeardown(objects: readonly StorageBucket[], buckets: readonly PlacedBucket[], releasedUids: ReadonlySet<string>): Violation[] {
  const out: Violation[] = [];
  for (const obj of objects) {
    const conditions = (obj.status?.conditions ?? []) as { type: string; status: string; reason?: string }[];
    const ready = conditions.find((c) => c.type === 'Ready');
    const fin = (obj.metadata.finalizers ?? []).includes(BUCKET_FINALIZER) ? 'with' : 'without';
    out.push({
      invariant: Invariant.teardownLeavesNothing,
      detail: `StorageBucket ${objectName(obj)} still exists after deletion (${fin} finalizer; Ready ${ready?.status ?? '?'} ${ready?.reason ?? ''})`,
    });
  }
  for (const b of buckets) {
    if (b.bucket.tags[MANAGED_BY_TAG] !== MANAGED_BY_VALUE || taggedByOtherCluster(b.bucket.tags)) continue;
    const uid = b.bucket.tags[UID_TAG];
    if (uid !== undefined && releasedUids.has(uid)) continue;
    const owner = `${b.bucket.tags[NAMESPACE_TAG] ?? '?'}/${b.bucket.tags[NAME_TAG] ?? '?'} (${uid ?? 'no uid'})`;
    out.push({
      invariant: Invariant.teardownLeavesNothing,
      detail: `provider bucket ${where({ ...b, id: b.bucket.id })} of ${owner} is left after every StorageBucket was deleted`,
    });
  }
  return out;
}
