/**
 * Event filters for controllers, after controller-runtime's predicates. A predicate may
 * filter creates, updates and deletes; an unset method lets the event through, so the
 * usual predicates only judge updates and never hide a creation or a deletion.
 */
import type { KubeObject } from './types';

/** Decides whether an informer event should enqueue a reconcile. */
export interface Predicate<T extends KubeObject = KubeObject> {
  create?(obj: T): boolean;
  update?(oldObj: T, newObj: T): boolean;
  delete?(obj: T): boolean;
}

/** Passes create events through `p`; an unset method passes. */
export function allowCreate<T extends KubeObject>(p: Predicate<T>, obj: T): boolean {
  return p.create ? p.create(obj) : true;
}

/** Passes update events through `p`; an unset method passes. */
export function allowUpdate<T extends KubeObject>(p: Predicate<T>, oldObj: T, newObj: T): boolean {
  return p.update ? p.update(oldObj, newObj) : true;
}

/** Passes delete events through `p`; an unset method passes. */
export function allowDelete<T extends KubeObject>(p: Predicate<T>, obj: T): boolean {
  return p.delete ? p.delete(obj) : true;
}

/** Lets an event through only when every predicate does (empty: always). */
export function and<T extends KubeObject>(...ps: Predicate<T>[]): Predicate<T> {
  return {
    create: (o) => ps.every((p) => allowCreate(p, o)),
    update: (a, b) => ps.every((p) => allowUpdate(p, a, b)),
    delete: (o) => ps.every((p) => allowDelete(p, o)),
  };
}

/** Lets an event through when any predicate does (empty: never). */
export function or<T extends KubeObject>(...ps: Predicate<T>[]): Predicate<T> {
  return {
    create: (o) => ps.some((p) => allowCreate(p, o)),
    update: (a, b) => ps.some((p) => allowUpdate(p, a, b)),
    delete: (o) => ps.some((p) => allowDelete(p, o)),
  };
}

/** Inverts every event kind of `p` (an unset method counts as "pass", so it becomes "drop"). */
export function not<T extends KubeObject>(p: Predicate<T>): Predicate<T> {
  return {
    create: (o) => !allowCreate(p, o),
    update: (a, b) => !allowUpdate(p, a, b),
    delete: (o) => !allowDelete(p, o),
  };
}

/** Updates pass when resourceVersion changed: drops the no-op updates of periodic resyncs. */
export const resourceVersionChanged: Predicate = {
  update: (a, b) => a.metadata?.resourceVersion !== b.metadata?.resourceVersion,
};

/** Updates pass when labels changed. */
export const labelsChanged: Predicate = {
  update: (a, b) => !recordEqual(a.metadata?.labels, b.metadata?.labels),
};

/** Updates pass when annotations changed (all of them, or only `keys` when given). */
export function annotationsChanged(keys?: readonly string[]): Predicate {
  return {
    update: (a, b) => !recordEqual(a.metadata?.annotations, b.metadata?.annotations, keys),
  };
}

/**
 * Updates pass when metadata.generation changed (a spec edit), and also — because a
 * reconciler must act on them though they do not bump the generation — when deletion
 * starts (deletionTimestamp newly set), when finalizers change, and when annotations change
 * (all of them, or only `keys`). Status-only writes, including the controller's own, are
 * dropped, which is what breaks the write-status/see-update/reconcile loop.
 */
export function generationChangedOrAnnotations(keys?: readonly string[]): Predicate {
  const annotations = annotationsChanged(keys);
  return {
    update: (a, b) =>
      a.metadata?.generation !== b.metadata?.generation ||
      // Only the moment deletion starts: later status-only writes while deleting would
      // otherwise requeue the object at once on every write, bypassing the error backoff.
      (a.metadata?.deletionTimestamp == null && b.metadata?.deletionTimestamp != null) ||
      !listEqual(a.metadata?.finalizers, b.metadata?.finalizers) ||
      allowUpdate(annotations, a, b),
  };
}

/** `generationChangedOrAnnotations()` watching every annotation: the usual For predicate. */
export const generationChanged: Predicate = generationChangedOrAnnotations();

function recordEqual(a: Record<string, string> | undefined, b: Record<string, string> | undefined, keys?: readonly string[]): boolean {
  const x = a ?? {};
  const y = b ?? {};
  const names = keys ?? [...new Set([...Object.keys(x), ...Object.keys(y)])];
  return names.every((k) => x[k] === y[k]);
}

function listEqual(a: readonly string[] | undefined, b: readonly string[] | undefined): boolean {
  const x = a ?? [];
  const y = b ?? [];
  return x.length === y.length && x.every((v, i) => v === y[i]);
}
