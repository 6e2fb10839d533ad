/** Small pure helpers for building converted objects. */
import type { V1ObjectMeta } from '@kubernetes/client-node';

/**
 * `value` without its undefined-valued keys: a conversion writes a field only when the source
 * has it, so absent stays absent (defaults are the API server's job, in each version).
 */
export function compact<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}

/**
 * `metadata` with annotation `key` set to `value`, or removed when `value` is undefined. The
 * input is not changed. Removing the last annotation drops the empty map, as the API server's
 * ObjectMeta encoding does, so a key added and removed again leaves no trace.
 */
export function withAnnotation(metadata: V1ObjectMeta, key: string, value: string | undefined): V1ObjectMeta {
  const annotations = metadata.annotations ?? {};
  if (value === undefined) {
    if (!Object.hasOwn(annotations, key)) return metadata;
    const rest = Object.fromEntries(Object.entries(annotations).filter(([k]) => k !== key));
    const { annotations: _dropped, ...others } = metadata;
    return Object.keys(rest).length > 0 ? { ...others, annotations: rest } : others;
  }
  return { ...metadata, annotations: { ...annotations, [key]: value } };
}
