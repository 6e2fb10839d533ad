/**
 * Transforms every informer applies by default, after controller-runtime's
 * `cache.TransformStripManagedFields`: fields no controller reads but that make up much of
 * an object's size (managedFields often outweigh the rest of the object).
 */
import type { KubeObject, Transform } from './types';

/** The annotation `kubectl apply` stores a full copy of the applied object in. */
export const LAST_APPLIED_ANNOTATION = 'kubectl.kubernetes.io/last-applied-configuration';

/**
 * Drops `metadata.managedFields` and the last-applied annotation, in place. Writes never need
 * them from the cache: server-side apply sends intent, and patches carry only a resourceVersion.
 */
export const stripManagedFields: Transform = (obj: KubeObject): KubeObject => {
  const meta = obj.metadata;
  if (!meta) return obj;
  delete meta.managedFields;
  const annotations = meta.annotations;
  if (annotations && LAST_APPLIED_ANNOTATION in annotations) {
    delete annotations[LAST_APPLIED_ANNOTATION];
    // An empty map reads the same as none to every predicate, and costs a little memory.
    if (Object.keys(annotations).length === 0) delete meta.annotations;
  }
  return obj;
};

/** Runs `first`, then `second` (when given) on its result. */
export function chainTransforms(first: Transform | undefined, second: Transform | undefined): Transform | undefined {
  if (!first) return second;
  if (!second) return first;
  return (obj) => second(first(obj));
}
