/**
 * The two per-write invariants of the model (test/support/model/invariants.ts checkWrite),
 * judged from two snapshots instead of an audit log, since a real provider does not say who
 * wrote. Between the last quiescent point and this one (provider-side actions of the run are
 * folded into the earlier snapshot as they are made, so they never count):
 *
 * - noForeignWrite: a bucket whose tags named a StorageBucket X that stayed live throughout
 *   (same uid, not deleting, not deleted or re-created by the run) was retagged to name another
 *   object, or updated or deleted by another object's reconcile (from the operator's log), or
 *   deleted with no logged writer.
 * - noForeignWrite, too: a bucket tagged by another cluster was changed or deleted.
 * - observeNeverWrites: an object that was Observe throughout (and whose policy the run did not
 *   touch) made a logged write, got a bucket tagged with its name, or the bucket it observes
 *   changed while no other object named that bucket.
 *
 * A change with no logged writer is not judged (a real provider does not say who wrote).
 */
import type { StorageBucket } from '../../../operator/api/v1';
import { ADOPT_ANNOTATION } from '../../../operator/api/v1';
import { Invariant, namesObject, objectName, taggedByOtherCluster, where, type Violation } from '../model/invariants';
import type { PlacedBucket } from '../model/provider';
import type { Snapshot } from './observe';
import type { LoggedWrite } from './operator-log';

const uidOf = (o: StorageBucket) => o.metadata.uid ?? '';
const describeBucket = (b: PlacedBucket) => where({ ...b, id: b.bucket.id });

function sameContent(a: PlacedBucket, b: PlacedBucket): boolean {
  return (
    a.bucket.sizeGB === b.bucket.sizeGB &&
    a.bucket.encrypted === b.bucket.encrypted &&
    JSON.stringify(a.bucket.tags) === JSON.stringify(b.bucket.tags)
  );
}

/** Ids named by objects other than `self` (status.id or adopt-id), in either snapshot. */
function namedByOthers(id: string, self: StorageBucket, objects: readonly StorageBucket[]): StorageBucket[] {
  return objects.filter((o) => uidOf(o) !== uidOf(self) && (o.status?.id === id || o.metadata.annotations?.[ADOPT_ANNOTATION] === id));
}

/**
 * Judges the interval from `before` to `after`. `touched`: `namespace/name` of objects the run
 * deleted, re-created, created or whose managementPolicy it set in the interval; `logged`: the
 * provider writes the operator logged in the interval.
 */
export function checkInterval(before: Snapshot, after: Snapshot, touched: ReadonlySet<string>, logged: readonly LoggedWrite[] = []): Violation[] {
  const out: Violation[] = [];
  const nowById = new Map(after.buckets.map((b) => [b.bucket.id, b]));
  const thenById = new Map(before.buckets.map((b) => [b.bucket.id, b]));
  const stayedLive = (o: StorageBucket): StorageBucket | undefined => {
    if (touched.has(objectName(o)) || o.metadata.deletionTimestamp) return undefined;
    const later = after.objects.find((x) => uidOf(x) === uidOf(o));
    return later && !later.metadata.deletionTimestamp ? later : undefined;
  };
  const everyone = [...before.objects, ...after.objects];

  // Another cluster's objects are live as far as this one can tell: their buckets never change.
  for (const then of before.buckets) {
    if (!taggedByOtherCluster(then.bucket.tags)) continue;
    const now = nowById.get(then.bucket.id);
    if (!now || !sameContent(then, now)) {
      out.push({
        invariant: Invariant.noForeignWrite,
        detail: `${describeBucket(then)}, tagged by another cluster, was ${now ? 'changed' : 'deleted'}`,
      });
    }
  }

  for (const then of before.buckets) {
    const owner = before.objects.find((o) => namesObject(then.bucket.tags, o));
    const live = owner && stayedLive(owner);
    if (!owner || !live) continue;
    const isOwner = (w: LoggedWrite) => w.namespace === owner.metadata.namespace && w.name === owner.metadata.name;
    const writers = logged.filter((w) => w.id === then.bucket.id && w.op !== 'create');
    const foreign = writers.filter((w) => !isOwner(w));
    const now = nowById.get(then.bucket.id);
    if (foreign.length > 0) {
      out.push({
        invariant: Invariant.noForeignWrite,
        detail: `${describeBucket(then)}, whose tags named live StorageBucket ${objectName(owner)}, was ${foreign.map((w) => `${w.op}d by the reconcile of ${w.namespace}/${w.name}`).join(', ')}`,
      });
      continue;
    }
    if (!now) {
      if (writers.length === 0) {
        out.push({
          invariant: Invariant.noForeignWrite,
          detail: `${describeBucket(then)} was deleted (no reconcile logged it) while its tags named live StorageBucket ${objectName(owner)} (not being deleted)`,
        });
      }
      continue;
    }
    if (!namesObject(now.bucket.tags, live) && everyone.some((o) => uidOf(o) !== uidOf(owner) && namesObject(now.bucket.tags, o))) {
      out.push({
        invariant: Invariant.noForeignWrite,
        detail: `${describeBucket(then)} was retagged from live StorageBucket ${objectName(owner)} to ${now.bucket.tags['kubernetes-namespace'] ?? '?'}/${now.bucket.tags['kubernetes-name'] ?? '?'}`,
      });
    }
  }

  for (const obj of before.objects) {
    if (obj.spec.managementPolicy !== 'Observe') continue;
    const live = stayedLive(obj);
    if (!live || live.spec.managementPolicy !== 'Observe') continue;
    for (const w of logged) {
      if (w.namespace === obj.metadata.namespace && w.name === obj.metadata.name) {
        out.push({
          invariant: Invariant.observeNeverWrites,
          detail: `the reconcile of StorageBucket ${objectName(obj)} (Observe throughout) logged a provider ${w.op} of ${w.id}`,
        });
      }
    }
    for (const b of after.buckets) {
      if (!thenById.has(b.bucket.id) && namesObject(b.bucket.tags, obj)) {
        out.push({
          invariant: Invariant.observeNeverWrites,
          detail: `${describeBucket(b)}, tagged with StorageBucket ${objectName(obj)} (Observe throughout), was created`,
        });
      }
    }
    for (const id of new Set([obj.status?.id, obj.metadata.annotations?.[ADOPT_ANNOTATION], live.status?.id])) {
      if (!id) continue;
      const then = thenById.get(id);
      const now = nowById.get(id);
      if (!then || namedByOthers(id, obj, everyone).length > 0) continue;
      if (!now || !sameContent(then, now)) {
        out.push({
          invariant: Invariant.observeNeverWrites,
          detail: `${describeBucket(then)}, observed by StorageBucket ${objectName(obj)} (Observe throughout, named by no other object), was ${now ? 'changed' : 'deleted'}`,
        });
      }
    }
  }
  return out;
}
