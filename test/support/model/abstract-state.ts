/**
 * The abstract state of a quiescent model world, as one string: what a decision of the
 * operator can depend on, with every generated name (uids, provider bucket ids, idempotency
 * keys) replaced by its order of first appearance. Two worlds with the same string behave the
 * same under every later action, up to those names, so the exhaustive search explores each
 * once. Left out on purpose: clocks, resourceVersions, condition messages and times, owned
 * Secrets and Services, and the operator's memory (a world is explored from a new process).
 */
import type { BucketProviderConfig, StorageBucket } from '../../../operator/api/v1';
import { ADOPT_ANNOTATION, CREATE_TARGET_ANNOTATION, IDEMPOTENCY_KEY_ANNOTATION, PAUSED_ANNOTATION } from '../../../operator/api/v1';
import { UID_TAG } from '../../../operator/bucket/tags';
import { KINDS, type ModelWorld } from './world';

/** Stable short names for generated values, by order of first appearance. */
class Names {
  private readonly seen = new Map<string, string>();
  constructor(private readonly prefix: string) {}
  of(value: string | undefined): string | undefined {
    if (value === undefined) return undefined;
    let n = this.seen.get(value);
    if (!n) {
      n = `${this.prefix}${this.seen.size + 1}`;
      this.seen.set(value, n);
    }
    return n;
  }
}

/** The abstract state of `world` with `releasedUids` (buckets that may stay), as one string. */
export function abstractState(world: ModelWorld, releasedUids: ReadonlySet<string>): string {
  const uids = new Names('U');
  const ids = new Names('B');
  const keys = new Names('K');
  // A minted key `<uid>.<nonce>` keeps its uid visible: whose uid it names is what matters.
  const key = (k: string | undefined) => {
    if (k === undefined) return undefined;
    const at = k.indexOf('.');
    return at > 0 ? `${uids.of(k.slice(0, at)) ?? ''}.${keys.of(k) ?? ''}` : keys.of(k);
  };
  const objects = world.api.list<StorageBucket>(KINDS.bucket).map((b) => {
    const a = b.metadata.annotations ?? {};
    const target = a[CREATE_TARGET_ANNOTATION]?.split(' ');
    const ready = (b.status?.conditions as { type: string; status: string; reason: string }[] | undefined)?.find((c) => c.type === 'Ready');
    return [
      `${b.metadata.namespace ?? ''}/${b.metadata.name ?? ''}`,
      uids.of(b.metadata.uid),
      b.spec.managementPolicy ?? 'Full',
      b.spec.deletionPolicy ?? 'Delete',
      b.spec.sizeGB,
      b.spec.encrypted ?? false,
      b.metadata.deletionTimestamp ? 'deleting' : '',
      (b.metadata.finalizers ?? []).length,
      ids.of(a[ADOPT_ANNOTATION]),
      key(a[IDEMPOTENCY_KEY_ANNOTATION]),
      target ? [uids.of(target[0]), target[1], target[2]] : undefined,
      a[PAUSED_ANNOTATION],
      ids.of(b.status?.id),
      key(b.status?.idempotencyKey),
      b.status?.account,
      b.status?.providerEndpoint,
      b.status?.phase,
      ready ? `${ready.status}:${ready.reason}` : undefined,
    ];
  });
  const configs = world.api
    .list<BucketProviderConfig>(KINDS.config)
    .map((c) => [c.metadata.namespace, c.spec.endpoint, c.spec.secretRef.name, c.metadata.deletionTimestamp ? 'deleting' : '']);
  const buckets = world.providers.all().map((p) => {
    const { [UID_TAG]: uid, ...tags } = p.bucket.tags;
    return [
      p.endpoint,
      p.account,
      ids.of(p.bucket.id),
      key(p.bucket.idempotencyKey),
      uids.of(uid),
      tags,
      p.bucket.sizeGB,
      p.bucket.encrypted,
      p.bucket.phase,
    ];
  });
  // Keys the provider has seen and revoked: a create with one is replayed or refused.
  const spent = world.providers
    .dump()
    .endpoints.map(([url, ep]) => [
      url,
      ep.store.idempotencyKeys.map((k) => `${k.account ?? ''}/${key(k.key) ?? ''}`).sort(),
      (ep.store.revoked ?? []).map((r) => `${r.account}/${key(r.key) ?? ''}`).sort(),
    ]);
  const released = [...releasedUids].map((u) => uids.of(u)).sort();
  return JSON.stringify({ objects, configs, buckets, spent, released, lose: world.providers.loseNextWriteAnswer });
}
