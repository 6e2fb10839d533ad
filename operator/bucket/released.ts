/**
 * Objects whose finalizer this process removed, by uid: the expectations Kubernetes' own
 * controllers keep for their writes. Removing the last finalizer of a deleting object ends
 * our part in it, but the informer cache shows the object with the finalizer until the
 * DELETED event arrives; a reconcile in that window (the key was re-added meanwhile) would
 * call the provider again for a bucket already deprovisioned. A uid is never reused, so once
 * released there is nothing left to do for it; entries expire after `ttlMs`.
 */
export class ReleasedObjects {
  private readonly at = new Map<string, number>();

  constructor(
    private readonly ttlMs = 300_000,
    private readonly now: () => number = Date.now,
  ) {}

  /** Records that the finalizer of `uid` was removed. */
  add(uid: string | undefined): void {
    if (!uid) return;
    const t = this.now();
    this.at.set(uid, t);
    // Maps iterate in insertion order, so the oldest entries come first.
    for (const [k, added] of this.at) {
      if (t - added < this.ttlMs) break;
      this.at.delete(k);
    }
  }

  /** True when this process removed the finalizer of `uid` within the last `ttlMs`. */
  has(uid: string | undefined): boolean {
    const added = uid ? this.at.get(uid) : undefined;
    return added !== undefined && this.now() - added < this.ttlMs;
  }
}
