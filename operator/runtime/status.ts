/**
 * Status writes: one JSON merge patch on the `/status` subresource, holding only what
 * differs from the status the controller last saw, and nothing at all when nothing differs.
 *
 * Why a merge patch and not server-side apply: the reconciler computes the status it wants
 * from the cached object, so a diff against that object is exact and small; fields other
 * writers own are untouched because they are not in the patch; and there is no per-field
 * ownership to keep consistent with how the CRD declares its lists. Lists (conditions) are
 * replaced whole, which suits a status computed whole by one controller. The status
 * subresource also makes the write unable to touch spec or metadata.
 */
import type { KubeClient, WriteOptions } from './client';
import type { KubeObject, ResourceKind } from './types';

/** The client capability `patchStatus` needs. */
export type StatusPatcher = Pick<KubeClient, 'patchStatus'>;

/** Options of `patchStatus`. */
export interface PatchStatusOptions extends WriteOptions {
  /**
   * Send `metadata.resourceVersion` along, so a status computed from a stale object fails
   * with Conflict instead of landing. Off by default: one leader writes a status derived
   * from the latest cache state, and a stale write is corrected by the next reconcile.
   * @default false
   */
  readonly optimistic?: boolean;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Structural equality of JSON values (key order ignored; `undefined` members ignored). */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a) || Array.isArray(b)) {
    return Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((x, i) => jsonEqual(x, b[i]));
  }
  if (isPlainObject(a) && isPlainObject(b)) {
    const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
    for (const k of keys) if (!jsonEqual(a[k], b[k])) return false;
    return true;
  }
  return false;
}

/**
 * The RFC 7386 merge patch turning `from` into `to`, or `undefined` when they are equal.
 * Removed members become `null`; arrays and scalars are sent whole when they differ. (A
 * `null` inside `to` cannot be expressed: merge patch reads it as "remove".)
 */
export function mergePatchDiff(from: unknown, to: unknown): unknown {
  if (jsonEqual(from, to)) return undefined;
  if (!isPlainObject(from) || !isPlainObject(to)) return to === undefined ? null : to;
  const patch: Record<string, unknown> = {};
  for (const k of new Set([...Object.keys(from), ...Object.keys(to)])) {
    if (to[k] === undefined) {
      if (from[k] !== undefined) patch[k] = null;
      continue;
    }
    const sub = mergePatchDiff(from[k], to[k]);
    if (sub !== undefined) patch[k] = sub;
  }
  return patch;
}

/**
 * Writes `desired` as the status of `obj` if it differs from `obj.status`; returns the
 * object the server stored, or `obj` itself when there was nothing to write (so callers can
 * tell by identity whether a write happened).
 */
export async function patchStatus<T extends KubeObject & { status?: unknown }>(
  client: StatusPatcher,
  kind: ResourceKind,
  obj: T,
  desired: unknown,
  opts: PatchStatusOptions = {},
): Promise<T> {
  const diff = mergePatchDiff(obj.status ?? {}, desired);
  if (diff === undefined) return obj;
  const name = obj.metadata?.name;
  if (!name) throw new Error('object has no metadata.name');
  const patch: Record<string, unknown> = { status: diff };
  if (opts.optimistic) patch.metadata = { resourceVersion: obj.metadata?.resourceVersion };
  const { optimistic: _optimistic, ...writeOpts } = opts;
  return client.patchStatus<T>(kind, obj.metadata?.namespace ?? '', name, patch, 'merge', writeOpts);
}
