/**
 * Server-side apply of owned objects. The controller sends its whole intent for an object
 * under one field manager with `force: true`: it is the only rightful writer of those
 * fields, so it takes them back from anyone who changed them (kubectl edit, another tool)
 * instead of failing with Conflict, and fields it stops sending are pruned.
 */
import type { V1ObjectMeta, V1OwnerReference } from '@kubernetes/client-node';
import type { ApplyOptions, KubeClient } from './client';
import type { KubeObject, ResourceKind } from './types';

/** The client capability `applyObject` needs. */
export type Applier = Pick<KubeClient, 'apply'>;

/** Options of `applyObject`. */
export interface ApplyObjectOptions {
  readonly fieldManager: string;
  /** Take fields over from other managers. @default true */
  readonly force?: boolean;
  readonly dryRun?: boolean;
  readonly signal?: AbortSignal;
}

/** Options of `ownerReference`. */
export interface OwnerReferenceOptions {
  /** Marks the owner as the managing controller (at most one per object). @default true */
  readonly controller?: boolean;
  /** Foreground deletion of the owner waits for this object. @default true */
  readonly blockOwnerDeletion?: boolean;
}

/**
 * An ownerReference pointing at `owner`, so garbage collection deletes the owned object with
 * it and watches can map the owned object back to its owner. The owner must come from the
 * API (it needs apiVersion, kind, name and uid).
 */
export function ownerReference(owner: KubeObject, opts: OwnerReferenceOptions = {}): V1OwnerReference {
  const { apiVersion, kind } = owner;
  const name = owner.metadata?.name;
  const uid = owner.metadata?.uid;
  if (!apiVersion || !kind || !name || !uid) {
    throw new Error('owner needs apiVersion, kind, metadata.name and metadata.uid');
  }
  return {
    apiVersion,
    kind,
    name,
    uid,
    controller: opts.controller ?? true,
    blockOwnerDeletion: opts.blockOwnerDeletion ?? true,
  };
}

/**
 * Returns a copy of `obj` owned by `owner` (replacing any ownerReference to the same uid).
 * Owners must be cluster-scoped or in the object's namespace: the garbage collector treats
 * a cross-namespace owner as absent and would delete the object.
 */
export function withOwner<T extends KubeObject>(obj: T, owner: KubeObject, opts: OwnerReferenceOptions = {}): T {
  const ownerNs = owner.metadata?.namespace;
  if (ownerNs && ownerNs !== obj.metadata?.namespace) {
    throw new Error(`owner ${ownerNs}/${owner.metadata?.name ?? ''} is in another namespace than the owned object`);
  }
  const ref = ownerReference(owner, opts);
  const others = (obj.metadata?.ownerReferences ?? []).filter((r) => r.uid !== ref.uid);
  return { ...obj, metadata: { ...obj.metadata, ownerReferences: [...others, ref] } };
}

/**
 * The body an apply should send: server-populated metadata is removed (managedFields make
 * the request invalid; a stale resourceVersion would turn the apply into a conditional
 * write that fails with Conflict), and so is `status`, which the main resource ignores.
 */
export function applyConfiguration<T extends KubeObject>(obj: T): T {
  const { status: _status, ...rest } = obj as T & { status?: unknown };
  const meta: V1ObjectMeta = { ...rest.metadata };
  delete meta.managedFields;
  delete meta.resourceVersion;
  delete meta.uid;
  delete meta.creationTimestamp;
  delete meta.generation;
  delete meta.deletionTimestamp;
  delete meta.deletionGracePeriodSeconds;
  // Only optional members were removed, so the result is still a (partial) T.
  return { ...rest, metadata: meta } as T;
}

/** Applies `obj` (creating it when missing) and returns the object as stored. */
export async function applyObject<T extends KubeObject>(client: Applier, kind: ResourceKind, obj: T, opts: ApplyObjectOptions): Promise<T> {
  const applyOpts: ApplyOptions = {
    fieldManager: opts.fieldManager,
    force: opts.force ?? true,
    dryRun: opts.dryRun,
    signal: opts.signal,
  };
  return client.apply<T>(kind, applyConfiguration(obj), applyOpts);
}
