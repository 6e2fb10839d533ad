/**
 * The user, provider and operator actions a model run is made of: what they are, how to
 * generate a random list of them from a seed, how to apply one to a world, and how to say it
 * in one line. Actions name objects by `namespace/name` and provider buckets by a number
 * taken modulo the buckets that exist when it runs, so any sub-list of a failing list (what
 * the shrinker tries) still runs and means something close.
 */
import type { BucketProviderConfig, StorageBucket } from '../../../operator/api/v1';
import {
  ADOPT_ANNOTATION,
  API_VERSION,
  CREATE_TARGET_ANNOTATION,
  IDEMPOTENCY_KEY_ANNOTATION,
  MANAGED_BY_VALUE,
  PAUSED_ANNOTATION,
  RECONCILE_REQUESTED_ANNOTATION,
} from '../../../operator/api/v1';
import { CLUSTER_TAG, MANAGED_BY_TAG, NAME_TAG, NAMESPACE_TAG, UID_TAG } from '../../../operator/bucket/tags';
import type { ProviderBucket } from '../../../operator/provider-client';
import { where } from './invariants';
import type { Prng } from './prng';
import type { Runner } from './runner';
import { CONFIG_NAME, CREDENTIALS, ENDPOINTS, KINDS, NAMESPACES, OTHER_CLUSTER, type CredentialName, type ModelWorld } from './world';

/** Names the generator uses for StorageBuckets (in each namespace). */
export const OBJECT_NAMES = ['b1', 'b2', 'b3'] as const;

/** A StorageBucket by namespace and name. */
export interface ObjRef {
  readonly ns: string;
  readonly name: string;
}

/** One step of a model run. */
export type ModelAction =
  | {
      readonly type: 'create';
      readonly obj: ObjRef;
      readonly sizeGB: number;
      readonly encrypted: boolean;
      readonly deletionPolicy: 'Delete' | 'Orphan';
      readonly policy: 'Full' | 'Observe';
      /** Adopt (Full) or observe (Observe) an existing provider bucket, chosen modulo those that exist. */
      readonly adopt?: number;
    }
  | { readonly type: 'grow'; readonly obj: ObjRef }
  | { readonly type: 'requestReconcile'; readonly obj: ObjRef }
  | { readonly type: 'setAdopt'; readonly obj: ObjRef; readonly adopt: number | null }
  | { readonly type: 'setPolicy'; readonly obj: ObjRef; readonly policy: 'Full' | 'Observe' }
  | { readonly type: 'setDeletionPolicy'; readonly obj: ObjRef; readonly policy: 'Delete' | 'Orphan' }
  | { readonly type: 'pause'; readonly obj: ObjRef; readonly paused: boolean }
  | { readonly type: 'delete'; readonly obj: ObjRef }
  /** Delete, let the operator finish (a few reconciles), and apply the same manifest again. */
  | { readonly type: 'recreate'; readonly obj: ObjRef }
  /** Copy a manifest with all its annotations (the idempotency key too) under another name. */
  | { readonly type: 'copy'; readonly from: ObjRef; readonly to: ObjRef }
  /**
   * A manifest taken from the maker of provider bucket #adopt (its idempotency key annotation
   * with it), applied as `obj` with `policy` and an adopt-id naming that bucket.
   */
  | { readonly type: 'createWithKeyOf'; readonly obj: ObjRef; readonly adopt: number; readonly policy: 'Full' | 'Observe' }
  /**
   * A user copies one value of `from` into the live `to`: an annotation (a hand edit; the shipped
   * admission policy refuses it, the operator must not need that) or the whole provider part of
   * the status (a status write).
   */
  | { readonly type: 'copyValue'; readonly from: ObjRef; readonly to: ObjRef; readonly what: 'key' | 'createTarget' | 'status' }
  /**
   * The object vanishes without its finalizer running (a lost cluster, etcd restored), and a
   * backup brings it back: the same metadata and finalizers, a new uid, no status.
   */
  | { readonly type: 'restore'; readonly obj: ObjRef }
  /**
   * Another cluster's operator, sharing the account of `obj`'s config, makes a bucket for its
   * own object of the same namespace and name (tagged with its cluster, made with its own key).
   */
  | { readonly type: 'otherCluster'; readonly obj: ObjRef }
  | { readonly type: 'setSecret'; readonly ns: string; readonly secret: CredentialName }
  | { readonly type: 'setEndpoint'; readonly ns: string; readonly endpoint: number }
  | { readonly type: 'providerDelete'; readonly pick: number }
  | { readonly type: 'providerChange'; readonly pick: number; readonly change: 'shrink' | 'grow' | 'encryption' | 'stripTags' | 'dropManagedBy' }
  /** A bucket made at the provider outside the operator (something to adopt or observe). */
  | { readonly type: 'providerSeed'; readonly endpoint: number; readonly account: string }
  /** The next provider write commits but its answer never arrives (a reset, a crash mid-call). */
  | { readonly type: 'loseNextAnswer' }
  | { readonly type: 'restart' }
  /** One reconcile of one key, now: interleaves the operator with the user. */
  | { readonly type: 'step'; readonly obj: ObjRef }
  /** One reconcile of one key from a cache that has not seen the object's latest write (or its deletion). */
  | { readonly type: 'laggingStep'; readonly obj: ObjRef }
  | { readonly type: 'quiesce' };

/** Everything an action acts on. */
export interface ActionEnv {
  readonly world: ModelWorld;
  readonly runner: Runner;
}

const ACCOUNTS = Object.values(CREDENTIALS).map((c) => c.account);

function randomObj(rng: Prng): ObjRef {
  return { ns: rng.pick(NAMESPACES), name: rng.weighted<string>([...OBJECT_NAMES.map((n, i) => [n, i === 2 ? 1 : 3] as const)]) };
}

const WEIGHTS: readonly (readonly [ModelAction['type'], number])[] = [
  ['create', 18],
  ['grow', 5],
  ['requestReconcile', 3],
  ['setAdopt', 3],
  ['setPolicy', 5],
  ['setDeletionPolicy', 4],
  ['pause', 5],
  ['delete', 10],
  ['recreate', 5],
  ['copy', 5],
  ['createWithKeyOf', 2],
  ['copyValue', 2],
  ['restore', 2],
  ['otherCluster', 2],
  ['setSecret', 4],
  ['setEndpoint', 4],
  ['providerDelete', 4],
  ['providerChange', 5],
  ['providerSeed', 3],
  ['loseNextAnswer', 3],
  ['restart', 4],
  ['step', 12],
  ['laggingStep', 4],
  ['quiesce', 10],
];

/** One random action. */
export function randomAction(rng: Prng): ModelAction {
  const type = rng.weighted(WEIGHTS);
  switch (type) {
    case 'create': {
      const policy = rng.chance(0.2) ? 'Observe' : 'Full';
      const adopt = policy === 'Observe' || rng.chance(0.15) ? rng.int(0, 99) : undefined;
      return {
        type,
        obj: randomObj(rng),
        sizeGB: rng.pick([10, 20]),
        encrypted: rng.chance(0.3),
        deletionPolicy: rng.chance(0.25) ? 'Orphan' : 'Delete',
        policy,
        ...(adopt !== undefined ? { adopt } : {}),
      };
    }
    case 'grow':
    case 'requestReconcile':
    case 'delete':
    case 'recreate':
    case 'step':
    case 'laggingStep':
      return { type, obj: randomObj(rng) };
    case 'setAdopt':
      return { type, obj: randomObj(rng), adopt: rng.chance(0.3) ? null : rng.int(0, 99) };
    case 'setPolicy':
      return { type, obj: randomObj(rng), policy: rng.chance(0.5) ? 'Observe' : 'Full' };
    case 'setDeletionPolicy':
      return { type, obj: randomObj(rng), policy: rng.chance(0.5) ? 'Orphan' : 'Delete' };
    case 'pause':
      return { type, obj: randomObj(rng), paused: rng.chance(0.5) };
    case 'copy':
      return { type, from: randomObj(rng), to: randomObj(rng) };
    case 'createWithKeyOf':
      return { type, obj: randomObj(rng), adopt: rng.int(0, 99), policy: rng.chance(0.5) ? 'Observe' : 'Full' };
    case 'copyValue':
      return { type, from: randomObj(rng), to: randomObj(rng), what: rng.pick(['key', 'createTarget', 'status'] as const) };
    case 'restore':
    case 'otherCluster':
      return { type, obj: randomObj(rng) };
    case 'setSecret':
      return { type, ns: rng.pick(NAMESPACES), secret: rng.pick(Object.keys(CREDENTIALS) as CredentialName[]) };
    case 'setEndpoint':
      return { type, ns: rng.pick(NAMESPACES), endpoint: rng.int(0, ENDPOINTS.length - 1) };
    case 'providerDelete':
      return { type, pick: rng.int(0, 99) };
    case 'providerChange':
      return { type, pick: rng.int(0, 99), change: rng.pick(['shrink', 'grow', 'encryption', 'stripTags', 'dropManagedBy'] as const) };
    case 'providerSeed':
      return { type, endpoint: rng.int(0, ENDPOINTS.length - 1), account: rng.pick(ACCOUNTS) };
    case 'loseNextAnswer':
    case 'restart':
    case 'quiesce':
      return { type };
    default: {
      const never: never = type;
      throw new Error(`unknown action ${String(never)}`);
    }
  }
}

/** `length` random actions from `rng`. */
export function randomActions(rng: Prng, length: number): ModelAction[] {
  return Array.from({ length }, () => randomAction(rng));
}

const key = (o: ObjRef) => ({ namespace: o.ns, name: o.name });
const ref = (o: ObjRef) => `${o.ns}/${o.name}`;

/** The provider bucket `pick` names among those that exist now, for adoption targets. */
function adoptTargetBucket(world: ModelWorld, pick: number): ProviderBucket | undefined {
  const all = world.providers.all();
  return all.length === 0 ? undefined : all[pick % all.length]?.bucket;
}

/** The distinct provider bucket ids that exist now, for adoption targets. */
function adoptTarget(world: ModelWorld, pick: number): string | undefined {
  const ids = [...new Set(world.providers.all().map((b) => b.bucket.id))];
  return ids.length === 0 ? undefined : ids[pick % ids.length];
}

function manifest(world: ModelWorld, a: Extract<ModelAction, { type: 'create' }>): StorageBucket {
  return createManifest(a, a.obj.ns, a.adopt !== undefined ? adoptTarget(world, a.adopt) : undefined);
}

/** The StorageBucket a `create` action applies, in `namespace`, adopting or observing `target` if any. */
export function createManifest(a: Extract<ModelAction, { type: 'create' }>, namespace: string, target: string | undefined): StorageBucket {
  return {
    apiVersion: API_VERSION,
    kind: 'StorageBucket',
    metadata: { name: a.obj.name, namespace, ...(target ? { annotations: { [ADOPT_ANNOTATION]: target } } : {}) },
    spec: {
      region: 'us-east-1',
      sizeGB: a.sizeGB,
      encrypted: a.encrypted,
      providerRef: { name: CONFIG_NAME },
      deletionPolicy: a.deletionPolicy,
      managementPolicy: a.policy,
    },
  };
}

function userManifest(live: StorageBucket): StorageBucket {
  const annotations = { ...live.metadata.annotations };
  delete annotations[IDEMPOTENCY_KEY_ANNOTATION];
  return {
    apiVersion: API_VERSION,
    kind: 'StorageBucket',
    metadata: { name: live.metadata.name, namespace: live.metadata.namespace, annotations },
    spec: structuredClone(live.spec),
  };
}

function edit(world: ModelWorld, o: ObjRef, change: (b: StorageBucket) => StorageBucket): boolean {
  return world.api.userUpdate<StorageBucket>(KINDS.bucket, key(o), change) !== undefined;
}

function annotate(b: StorageBucket, k: string, v: string | null): StorageBucket {
  const annotations = { ...b.metadata.annotations };
  if (v === null) delete annotations[k];
  else annotations[k] = v;
  return { ...b, metadata: { ...b.metadata, annotations } };
}

/**
 * Applies `a` to the world; returns the line that tells what happened (with the bucket ids
 * it resolved to), or a line ending in "(no-op)" when it had nothing to act on.
 */
export async function applyAction(env: ActionEnv, a: ModelAction, n: number): Promise<string> {
  const { world, runner } = env;
  const missing = (o: ObjRef) => `${describe(a)} (no-op: ${ref(o)} does not exist)`;
  switch (a.type) {
    case 'create': {
      if (world.api.read(KINDS.bucket, key(a.obj))) return `${describe(a)} (no-op: exists)`;
      const m = manifest(world, a);
      world.api.userCreate(KINDS.bucket, m);
      const adopt = m.metadata.annotations?.[ADOPT_ANNOTATION];
      return `${describe(a)}${adopt ? ` -> adopt-id ${adopt}` : ''}`;
    }
    case 'grow':
      return edit(world, a.obj, (b) => ({ ...b, spec: { ...b.spec, sizeGB: b.spec.sizeGB + 10 } })) ? describe(a) : missing(a.obj);
    case 'requestReconcile':
      return edit(world, a.obj, (b) => annotate(b, RECONCILE_REQUESTED_ANNOTATION, `req-${n}`)) ? describe(a) : missing(a.obj);
    case 'setAdopt': {
      const target = a.adopt === null ? null : (adoptTarget(world, a.adopt) ?? null);
      return edit(world, a.obj, (b) => annotate(b, ADOPT_ANNOTATION, target)) ? `${describe(a)} -> ${target ?? 'removed'}` : missing(a.obj);
    }
    case 'setPolicy':
      return edit(world, a.obj, (b) => ({ ...b, spec: { ...b.spec, managementPolicy: a.policy } })) ? describe(a) : missing(a.obj);
    case 'setDeletionPolicy':
      return edit(world, a.obj, (b) => ({ ...b, spec: { ...b.spec, deletionPolicy: a.policy } })) ? describe(a) : missing(a.obj);
    case 'pause':
      return edit(world, a.obj, (b) => annotate(b, PAUSED_ANNOTATION, a.paused ? 'true' : null)) ? describe(a) : missing(a.obj);
    case 'delete':
      if (!world.api.read(KINDS.bucket, key(a.obj))) return missing(a.obj);
      world.api.userDelete(KINDS.bucket, key(a.obj));
      return describe(a);
    case 'recreate': {
      const live = world.api.read<StorageBucket>(KINDS.bucket, key(a.obj));
      if (!live) return missing(a.obj);
      world.api.userDelete(KINDS.bucket, key(a.obj));
      for (let i = 0; i < 4 && world.api.read(KINDS.bucket, key(a.obj)); i++) await runner.step(key(a.obj));
      if (world.api.read(KINDS.bucket, key(a.obj))) return `${describe(a)} (deleted; still terminating, so not created again)`;
      world.api.userCreate(KINDS.bucket, userManifest(live));
      return describe(a);
    }
    case 'copy': {
      const from = world.api.read<StorageBucket>(KINDS.bucket, key(a.from));
      if (!from) return missing(a.from);
      if (world.api.read(KINDS.bucket, key(a.to))) return `${describe(a)} (no-op: ${ref(a.to)} exists)`;
      world.api.userCreate(KINDS.bucket, {
        apiVersion: API_VERSION,
        kind: 'StorageBucket',
        metadata: { name: a.to.name, namespace: a.to.ns, annotations: { ...from.metadata.annotations } },
        spec: structuredClone(from.spec),
      });
      return describe(a);
    }
    case 'createWithKeyOf': {
      if (world.api.read(KINDS.bucket, key(a.obj))) return `${describe(a)} (no-op: exists)`;
      const target = adoptTargetBucket(world, a.adopt);
      if (!target) return `${describe(a)} (no-op: no buckets)`;
      const m = createManifest(
        { type: 'create', obj: a.obj, sizeGB: 10, encrypted: false, deletionPolicy: 'Delete', policy: a.policy },
        a.obj.ns,
        target.id,
      );
      const annotations = { ...m.metadata.annotations, ...(target.idempotencyKey ? { [IDEMPOTENCY_KEY_ANNOTATION]: target.idempotencyKey } : {}) };
      world.api.userCreate(KINDS.bucket, { ...m, metadata: { ...m.metadata, annotations } });
      return `${describe(a)} -> adopt-id ${target.id}, key ${target.idempotencyKey ?? '(none)'}`;
    }
    case 'copyValue': {
      const from = world.api.read<StorageBucket>(KINDS.bucket, key(a.from));
      if (!from) return missing(a.from);
      if (a.what === 'status') {
        const status = from.status ?? {};
        const copied = { id: status.id, idempotencyKey: status.idempotencyKey, account: status.account, providerEndpoint: status.providerEndpoint };
        return world.api.userPatchStatus<StorageBucket>(KINDS.bucket, key(a.to), (s) => ({ ...s, ...JSON.parse(JSON.stringify(copied)) }))
          ? describe(a)
          : missing(a.to);
      }
      const k = a.what === 'key' ? IDEMPOTENCY_KEY_ANNOTATION : CREATE_TARGET_ANNOTATION;
      const v = from.metadata.annotations?.[k];
      if (v === undefined) return `${describe(a)} (no-op: ${ref(a.from)} has none)`;
      return edit(world, a.to, (b) => annotate(b, k, v)) ? describe(a) : missing(a.to);
    }
    case 'restore': {
      const live = world.api.read<StorageBucket>(KINDS.bucket, key(a.obj));
      if (!live) return missing(a.obj);
      world.api.vanish(KINDS.bucket, key(a.obj));
      // Its finalizer never ran, so its bucket may stay: the restored object (another uid) may
      // take it over only through the owner tags, never because it carries the same key.
      runner.releasedUids.add(live.metadata.uid ?? '');
      const { uid: _uid, resourceVersion: _rv, generation: _g, creationTimestamp: _c, deletionTimestamp: _d, ...meta } = live.metadata;
      world.api.userCreate(KINDS.bucket, { ...live, metadata: meta, status: undefined });
      return describe(a);
    }
    case 'otherCluster': {
      const config = world.api.read<BucketProviderConfig>(KINDS.config, { namespace: a.obj.ns, name: CONFIG_NAME });
      const cred = CREDENTIALS[(config?.spec.secretRef.name ?? 'cred-alpha') as CredentialName];
      const endpoint = config?.spec.endpoint ?? ENDPOINTS[0];
      const uid = `uid-other-${n}`;
      const tags = {
        [MANAGED_BY_TAG]: MANAGED_BY_VALUE,
        [NAMESPACE_TAG]: a.obj.ns,
        [NAME_TAG]: a.obj.name,
        [UID_TAG]: uid,
        [CLUSTER_TAG]: OTHER_CLUSTER,
      };
      const made = world.providers.seed(endpoint, cred.account, { region: 'us-east-1', sizeGB: 10, encrypted: false, tags }, `${uid}.k`);
      return `another cluster creates ${where({ endpoint, account: cred.account, id: made?.id })} for its ${ref(a.obj)}`;
    }
    case 'setSecret':
      world.api.userUpdate<BucketProviderConfig>(KINDS.config, { namespace: a.ns, name: CONFIG_NAME }, (c) => ({
        ...c,
        spec: { ...c.spec, secretRef: { ...c.spec.secretRef, name: a.secret } },
      }));
      return describe(a);
    case 'setEndpoint':
      world.api.userUpdate<BucketProviderConfig>(KINDS.config, { namespace: a.ns, name: CONFIG_NAME }, (c) => ({
        ...c,
        spec: { ...c.spec, endpoint: ENDPOINTS[a.endpoint] ?? ENDPOINTS[0] },
      }));
      return describe(a);
    case 'providerDelete': {
      const all = world.providers.all();
      const b = all[a.pick % Math.max(1, all.length)];
      if (!b) return `${describe(a)} (no-op: no buckets)`;
      world.providers.adminDelete(b.endpoint, b.bucket.id);
      return `provider deletes ${where({ ...b, id: b.bucket.id })}`;
    }
    case 'providerChange': {
      const all = world.providers.all();
      const b = all[a.pick % Math.max(1, all.length)];
      if (!b) return `${describe(a)} (no-op: no buckets)`;
      world.providers.adminPatch(b.endpoint, b.bucket.id, providerPatch(a.change, b.bucket));
      return `provider changes ${where({ ...b, id: b.bucket.id })}: ${a.change}`;
    }
    case 'providerSeed': {
      const endpoint = ENDPOINTS[a.endpoint] ?? ENDPOINTS[0];
      const made = world.providers.seed(endpoint, a.account, { region: 'us-east-1', sizeGB: 10, encrypted: false, tags: { team: 'elsewhere' } });
      return `provider: someone creates ${where({ endpoint, account: a.account, id: made?.id })} (untagged)`;
    }
    case 'loseNextAnswer':
      world.providers.loseNextWriteAnswer = true;
      return describe(a);
    case 'restart':
      runner.restart();
      return describe(a);
    case 'step':
      if (!world.api.read(KINDS.bucket, key(a.obj))) return missing(a.obj);
      await runner.step(key(a.obj));
      return describe(a);
    case 'laggingStep':
      if (!world.api.read(KINDS.bucket, key(a.obj)) && !world.api.lagging(KINDS.bucket, key(a.obj))) return missing(a.obj);
      await runner.step(key(a.obj), true);
      return describe(a);
    case 'quiesce':
      return describe(a);
    default: {
      const never: never = a;
      throw new Error(`unknown action ${JSON.stringify(never)}`);
    }
  }
}

/** One line for an action as generated (before it resolves bucket numbers). */
export function describe(a: ModelAction): string {
  switch (a.type) {
    case 'create':
      return `user creates ${ref(a.obj)} (${a.policy}, ${a.sizeGB} GB${a.encrypted ? ', encrypted' : ''}, ${a.deletionPolicy}${a.adopt !== undefined ? `, adopt #${a.adopt}` : ''})`;
    case 'grow':
      return `user grows ${ref(a.obj)} by 10 GB`;
    case 'requestReconcile':
      return `user annotates ${ref(a.obj)} reconcile-requested-at`;
    case 'setAdopt':
      return `user sets adopt-id of ${ref(a.obj)}${a.adopt === null ? ' (remove)' : ` #${a.adopt}`}`;
    case 'setPolicy':
      return `user sets managementPolicy ${a.policy} on ${ref(a.obj)}`;
    case 'setDeletionPolicy':
      return `user sets deletionPolicy ${a.policy} on ${ref(a.obj)}`;
    case 'pause':
      return `user ${a.paused ? 'pauses' : 'unpauses'} ${ref(a.obj)}`;
    case 'delete':
      return `user deletes ${ref(a.obj)}`;
    case 'recreate':
      return `user deletes ${ref(a.obj)} and applies its manifest again`;
    case 'copy':
      return `user copies ${ref(a.from)} with its annotations to ${ref(a.to)}`;
    case 'createWithKeyOf':
      return `user creates ${ref(a.obj)} (${a.policy}) from the manifest of bucket #${a.adopt}'s maker, adopt-id and idempotency key included`;
    case 'copyValue':
      return `user copies the ${a.what === 'status' ? 'status' : a.what === 'key' ? 'idempotency-key annotation' : 'create-target annotation'} of ${ref(a.from)} into ${ref(a.to)}`;
    case 'restore':
      return `${ref(a.obj)} vanishes without its finalizer and is restored from a backup (new uid, same metadata)`;
    case 'otherCluster':
      return `another cluster sharing the account creates a bucket for its own ${ref(a.obj)}`;
    case 'setSecret':
      return `user points config ${a.ns}/${CONFIG_NAME} at Secret ${a.secret} (account ${CREDENTIALS[a.secret].account})`;
    case 'setEndpoint':
      return `user points config ${a.ns}/${CONFIG_NAME} at ${ENDPOINTS[a.endpoint] ?? '?'}`;
    case 'providerDelete':
      return `provider deletes bucket #${a.pick}`;
    case 'providerChange':
      return `provider changes bucket #${a.pick}: ${a.change}`;
    case 'providerSeed':
      return `provider: someone creates a bucket at ${ENDPOINTS[a.endpoint] ?? '?'} in account ${a.account}`;
    case 'loseNextAnswer':
      return 'the answer of the next provider write is lost';
    case 'restart':
      return 'operator restarts';
    case 'step':
      return `operator reconciles ${ref(a.obj)} once`;
    case 'laggingStep':
      return `operator reconciles ${ref(a.obj)} once, from a cache one write behind`;
    case 'quiesce':
      return 'operator runs until quiet; invariants checked';
    default: {
      const never: never = a;
      return JSON.stringify(never);
    }
  }
}

/** The admin patch a `providerChange` action makes to `bucket` at the provider. */
export function providerPatch(
  change: Extract<ModelAction, { type: 'providerChange' }>['change'],
  bucket: ProviderBucket,
): { sizeGB?: number; encrypted?: boolean; tags?: Record<string, string> } {
  switch (change) {
    case 'shrink':
      return { sizeGB: Math.max(1, bucket.sizeGB - 5) };
    case 'grow':
      return { sizeGB: bucket.sizeGB + 5 };
    case 'encryption':
      return { encrypted: !bucket.encrypted };
    case 'stripTags':
      return { tags: {} };
    case 'dropManagedBy': {
      const tags = { ...bucket.tags };
      delete tags[MANAGED_BY_TAG];
      return { tags };
    }
  }
}
