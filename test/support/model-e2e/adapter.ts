/**
 * Applies the in-process model's actions (test/support/model/actions.ts) to the real world:
 * user actions become API writes as the admin user, provider actions become admin calls (or,
 * for a bucket made "by someone else", a create with an account's key), `restart` restarts the
 * operator process. The operator runs on its own, so `step` and `laggingStep` (one reconcile,
 * in the model) become a short pause that lets it interleave with the user; `quiesce` is the
 * runner's. The model's namespaces `ns1`/`ns2` map to the run's fresh namespaces; its two
 * endpoints to the two provider processes; bucket numbers pick among the buckets of this run
 * (tagged with its namespaces, or made by it) in the admin list's order.
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
import { PROVIDER_CONFIG, STORAGE_BUCKET } from '../../../operator/bucket/kinds';
import { CLUSTER_TAG, MANAGED_BY_TAG, NAME_TAG, NAMESPACE_TAG, UID_TAG } from '../../../operator/bucket/tags';
import { isConflict, isNotFound } from '../../../operator/runtime/api-errors';
import { createManifest, describe, providerPatch, type ModelAction, type ObjRef } from '../model/actions';
import { where } from '../model/invariants';
import type { PlacedBucket } from '../model/provider';
import { CONFIG_NAME, CREDENTIALS, OTHER_CLUSTER, type CredentialName } from '../model/world';
import { listObjects } from './observe';
import type { E2eStack } from './stack';

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const message = (err: unknown) => (err instanceof Error ? err.message : String(err));

/** The state of one seed's run that actions read and write. */
export class E2eRun {
  /** `namespace/name` (real) of objects whose identity or policy the run changed since the last quiescent point. */
  readonly touched = new Set<string>();
  /** Uids of objects deleted with deletionPolicy Orphan or managementPolicy Observe: their buckets stay on purpose. */
  readonly releasedUids = new Set<string>();
  /** Ids of buckets this run made at a provider as "someone else". */
  readonly seeded = new Set<string>();
  /** The world at the last quiescent point, with the run's provider-side actions folded in. */
  baseline: { objects: StorageBucket[]; buckets: PlacedBucket[] } = { objects: [], buckets: [] };

  constructor(
    readonly stack: E2eStack,
    /** Model namespace -> real namespace. */
    readonly nsMap: Readonly<Record<string, string>>,
  ) {}

  get namespaces(): string[] {
    return Object.values(this.nsMap);
  }

  ns(model: string): string {
    const real = this.nsMap[model];
    if (!real) throw new Error(`no namespace for model namespace ${model}`);
    return real;
  }

  private ref(o: ObjRef): string {
    return `${this.ns(o.ns)}/${o.name}`;
  }

  async read(o: ObjRef): Promise<StorageBucket | undefined> {
    try {
      return await this.stack.admin.get<StorageBucket>(STORAGE_BUCKET, this.ns(o.ns), o.name);
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  /** Read-modify-write of an object, retried on conflict; false when it does not exist. */
  private async edit(o: ObjRef, change: (b: StorageBucket) => StorageBucket): Promise<boolean> {
    for (let i = 0; ; i++) {
      const live = await this.read(o);
      if (!live) return false;
      try {
        await this.stack.admin.update(STORAGE_BUCKET, change(structuredClone(live)));
        return true;
      } catch (err) {
        if (isNotFound(err)) return false;
        if (!isConflict(err) || i >= 8) throw err;
      }
    }
  }

  private async editConfig(model: string, change: (c: BucketProviderConfig) => BucketProviderConfig): Promise<void> {
    for (let i = 0; ; i++) {
      const live = await this.stack.admin.get<BucketProviderConfig>(PROVIDER_CONFIG, this.ns(model), CONFIG_NAME);
      try {
        await this.stack.admin.update(PROVIDER_CONFIG, change(live));
        return;
      } catch (err) {
        if (!isConflict(err) || i >= 8) throw err;
      }
    }
  }

  /** Deletes an object as a user does, noting whether its bucket is released on purpose. */
  async deleteObject(live: StorageBucket): Promise<void> {
    if (live.spec.deletionPolicy === 'Orphan' || live.spec.managementPolicy === 'Observe') this.releasedUids.add(live.metadata.uid ?? '');
    this.touched.add(`${live.metadata.namespace ?? ''}/${live.metadata.name ?? ''}`);
    try {
      await this.stack.admin.delete(STORAGE_BUCKET, live.metadata.namespace ?? '', live.metadata.name ?? '');
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }

  /** Notes objects that are deleting with a policy that keeps their bucket (a policy set after the delete). */
  async noteReleased(): Promise<void> {
    for (const o of await listObjects(this.stack, this.namespaces)) {
      if (o.metadata.deletionTimestamp && (o.spec.deletionPolicy === 'Orphan' || o.spec.managementPolicy === 'Observe')) {
        this.releasedUids.add(o.metadata.uid ?? '');
      }
    }
  }

  /** Buckets of this run: tagged with its namespaces, or made by it. */
  scoped(buckets: readonly PlacedBucket[]): PlacedBucket[] {
    return buckets.filter((b) => this.seeded.has(b.bucket.id) || this.namespaces.includes(b.bucket.tags[NAMESPACE_TAG] ?? ''));
  }

  private async scopedNow(): Promise<PlacedBucket[]> {
    const per = await Promise.all(
      this.stack.providers.map(async (p) => (await p.buckets()).map((bucket) => ({ endpoint: p.url, account: bucket.account ?? '?', bucket }))),
    );
    return this.scoped(per.flat());
  }

  private async adoptTargetBucket(pick: number): Promise<PlacedBucket | undefined> {
    const all = await this.scopedNow();
    return all.length === 0 ? undefined : all[pick % all.length];
  }

  /**
   * Makes a bucket at provider `url` with the key of Secret `cred`, as someone else would
   * (retried once: a pending loseNextAnswer drops the first answer, and the key replays it).
   */
  private async providerCreate(url: string, cred: CredentialName, tags: Record<string, string>, key: string): Promise<PlacedBucket> {
    const create = () =>
      fetch(`${url}/buckets`, {
        method: 'POST',
        headers: { authorization: `Bearer ${this.stack.keys[cred]}`, 'content-type': 'application/json', 'idempotency-key': key },
        body: JSON.stringify({ region: 'us-east-1', sizeGB: 10, encrypted: false, tags }),
      });
    const res = await create().catch(() => create());
    const made = (await res.json()) as PlacedBucket['bucket'];
    if (!res.ok) throw new Error(`provider create: ${res.status} ${JSON.stringify(made)}`);
    this.seeded.add(made.id);
    const placed = { endpoint: url, account: CREDENTIALS[cred].account, bucket: made };
    this.baseline.buckets.push(placed);
    return placed;
  }

  private async adoptTarget(pick: number): Promise<string | undefined> {
    const ids = [...new Set((await this.scopedNow()).map((b) => b.bucket.id))];
    return ids.length === 0 ? undefined : ids[pick % ids.length];
  }

  private providerAt(url: string) {
    const p = this.stack.providers.find((x) => x.url === url);
    if (!p) throw new Error(`no provider at ${url}`);
    return p;
  }

  /** Applies `a`; returns the trace line. `n` is the action's index. */
  async apply(a: ModelAction, n: number): Promise<string> {
    try {
      return await this.applyUnchecked(a, n);
    } catch (err) {
      // A write the API refuses (admission, validation) is what a user would see: noted, not a failure of the run.
      return `${describe(a)} (refused: ${message(err).split('\n')[0] ?? ''})`;
    }
  }

  private async applyUnchecked(a: ModelAction, n: number): Promise<string> {
    const missing = (o: ObjRef) => `${describe(a)} (no-op: ${o.ns}/${o.name} does not exist)`;
    const edit = async (o: ObjRef, change: (b: StorageBucket) => StorageBucket) => ((await this.edit(o, change)) ? describe(a) : missing(o));
    switch (a.type) {
      case 'create': {
        if (await this.read(a.obj)) return `${describe(a)} (no-op: exists)`;
        const target = a.adopt !== undefined ? await this.adoptTarget(a.adopt) : undefined;
        this.touched.add(this.ref(a.obj));
        await this.stack.admin.create<StorageBucket>(STORAGE_BUCKET, createManifest(a, this.ns(a.obj.ns), target));
        return `${describe(a)}${target ? ` -> adopt-id ${target}` : ''}`;
      }
      case 'grow':
        return edit(a.obj, (b) => ({ ...b, spec: { ...b.spec, sizeGB: b.spec.sizeGB + 10 } }));
      case 'requestReconcile':
        return edit(a.obj, (b) => annotate(b, RECONCILE_REQUESTED_ANNOTATION, `req-${n}-${Date.now()}`));
      case 'setAdopt': {
        const target = a.adopt === null ? null : ((await this.adoptTarget(a.adopt)) ?? null);
        const line = await edit(a.obj, (b) => annotate(b, ADOPT_ANNOTATION, target));
        return line === describe(a) ? `${line} -> ${target ?? 'removed'}` : line;
      }
      case 'setPolicy':
        this.touched.add(this.ref(a.obj));
        return edit(a.obj, (b) => ({ ...b, spec: { ...b.spec, managementPolicy: a.policy } }));
      case 'setDeletionPolicy':
        return edit(a.obj, (b) => ({ ...b, spec: { ...b.spec, deletionPolicy: a.policy } }));
      case 'pause':
        return edit(a.obj, (b) => annotate(b, PAUSED_ANNOTATION, a.paused ? 'true' : null));
      case 'delete': {
        const live = await this.read(a.obj);
        if (!live) return missing(a.obj);
        await this.deleteObject(live);
        return describe(a);
      }
      case 'recreate': {
        const live = await this.read(a.obj);
        if (!live) return missing(a.obj);
        await this.deleteObject(live);
        // The model lets the operator run a few reconciles; here it gets up to 15 s to finish.
        for (let i = 0; i < 50 && (await this.read(a.obj)); i++) await sleep(300);
        if (await this.read(a.obj)) return `${describe(a)} (deleted; still terminating, so not created again)`;
        const annotations = { ...live.metadata.annotations };
        delete annotations[IDEMPOTENCY_KEY_ANNOTATION];
        await this.stack.admin.create<StorageBucket>(STORAGE_BUCKET, {
          apiVersion: API_VERSION,
          kind: 'StorageBucket',
          metadata: { name: a.obj.name, namespace: this.ns(a.obj.ns), annotations },
          spec: structuredClone(live.spec),
        });
        return describe(a);
      }
      case 'copy': {
        const from = await this.read(a.from);
        if (!from) return missing(a.from);
        if (await this.read(a.to)) return `${describe(a)} (no-op: ${a.to.ns}/${a.to.name} exists)`;
        this.touched.add(this.ref(a.to));
        await this.stack.admin.create<StorageBucket>(STORAGE_BUCKET, {
          apiVersion: API_VERSION,
          kind: 'StorageBucket',
          metadata: { name: a.to.name, namespace: this.ns(a.to.ns), annotations: { ...from.metadata.annotations } },
          spec: structuredClone(from.spec),
        });
        return describe(a);
      }
      case 'createWithKeyOf': {
        if (await this.read(a.obj)) return `${describe(a)} (no-op: exists)`;
        const target = await this.adoptTargetBucket(a.adopt);
        if (!target) return `${describe(a)} (no-op: no buckets)`;
        this.touched.add(this.ref(a.obj));
        const m = createManifest(
          { type: 'create', obj: a.obj, sizeGB: 10, encrypted: false, deletionPolicy: 'Delete', policy: a.policy },
          this.ns(a.obj.ns),
          target.bucket.id,
        );
        const key = target.bucket.idempotencyKey;
        const annotations = { ...m.metadata.annotations, ...(key ? { [IDEMPOTENCY_KEY_ANNOTATION]: key } : {}) };
        await this.stack.admin.create<StorageBucket>(STORAGE_BUCKET, { ...m, metadata: { ...m.metadata, annotations } });
        return `${describe(a)} -> adopt-id ${target.bucket.id}, key ${key ?? '(none)'}`;
      }
      case 'copyValue': {
        const from = await this.read(a.from);
        if (!from) return missing(a.from);
        const to = await this.read(a.to);
        if (!to) return missing(a.to);
        this.touched.add(this.ref(a.to));
        if (a.what === 'status') {
          const s = from.status ?? {};
          const patch = {
            status: JSON.parse(
              JSON.stringify({ id: s.id, idempotencyKey: s.idempotencyKey, account: s.account, providerEndpoint: s.providerEndpoint }),
            ) as unknown,
          };
          await this.stack.admin.patchStatus(STORAGE_BUCKET, to.metadata.namespace ?? '', to.metadata.name ?? '', patch, 'merge');
          return describe(a);
        }
        const k = a.what === 'key' ? IDEMPOTENCY_KEY_ANNOTATION : CREATE_TARGET_ANNOTATION;
        const v = from.metadata.annotations?.[k];
        if (v === undefined) return `${describe(a)} (no-op: ${a.from.ns}/${a.from.name} has none)`;
        return edit(a.to, (b) => annotate(b, k, v));
      }
      case 'restore': {
        const live = await this.read(a.obj);
        if (!live) return missing(a.obj);
        this.touched.add(this.ref(a.obj));
        // Gone without its finalizer running, as a lost cluster leaves it.
        await edit(a.obj, (b) => ({ ...b, metadata: { ...b.metadata, finalizers: [] } }));
        await this.deleteObject({ ...live, spec: { ...live.spec, deletionPolicy: 'Delete', managementPolicy: 'Full' } });
        this.releasedUids.add(live.metadata.uid ?? '');
        for (let i = 0; i < 50 && (await this.read(a.obj)); i++) await sleep(100);
        const {
          uid: _u,
          resourceVersion: _r,
          generation: _g,
          creationTimestamp: _c,
          deletionTimestamp: _d,
          managedFields: _m,
          ...meta
        } = live.metadata;
        await this.stack.admin.create<StorageBucket>(STORAGE_BUCKET, {
          apiVersion: API_VERSION,
          kind: 'StorageBucket',
          metadata: meta,
          spec: structuredClone(live.spec),
        });
        return describe(a);
      }
      case 'otherCluster': {
        const config = await this.stack.admin.get<BucketProviderConfig>(PROVIDER_CONFIG, this.ns(a.obj.ns), CONFIG_NAME);
        const url = config.spec.endpoint;
        const cred = config.spec.secretRef.name as CredentialName;
        const uid = `uid-other-${n}-${Date.now()}`;
        const tags = {
          [MANAGED_BY_TAG]: MANAGED_BY_VALUE,
          [NAMESPACE_TAG]: this.ns(a.obj.ns),
          [NAME_TAG]: a.obj.name,
          [UID_TAG]: uid,
          [CLUSTER_TAG]: OTHER_CLUSTER,
        };
        const made = await this.providerCreate(url, cred, tags, `${uid}.k`);
        return `another cluster creates ${where({ ...made, id: made.bucket.id })} for its ${this.ref(a.obj)}`;
      }
      case 'setSecret':
        await this.editConfig(a.ns, (c) => ({ ...c, spec: { ...c.spec, secretRef: { ...c.spec.secretRef, name: a.secret } } }));
        return describe(a);
      case 'setEndpoint': {
        const p = this.stack.providers[a.endpoint] ?? this.stack.providers[0];
        if (!p) throw new Error('no providers');
        await this.editConfig(a.ns, (c) => ({ ...c, spec: { ...c.spec, endpoint: p.url, insecure: true } }));
        return `${describe(a)} (${p.url})`;
      }
      case 'providerDelete': {
        const all = await this.scopedNow();
        const b = all[a.pick % Math.max(1, all.length)];
        if (!b) return `${describe(a)} (no-op: no buckets)`;
        await this.providerAt(b.endpoint).remove(b.bucket.id);
        this.baseline.buckets = this.baseline.buckets.filter((x) => x.bucket.id !== b.bucket.id);
        return `provider deletes ${where({ ...b, id: b.bucket.id })}`;
      }
      case 'providerChange': {
        const all = await this.scopedNow();
        const b = all[a.pick % Math.max(1, all.length)];
        if (!b) return `${describe(a)} (no-op: no buckets)`;
        await this.providerAt(b.endpoint).tamper(b.bucket.id, providerPatch(a.change, b.bucket));
        const after = (await this.providerAt(b.endpoint).buckets()).find((x) => x.id === b.bucket.id);
        this.baseline.buckets = this.baseline.buckets.filter((x) => x.bucket.id !== b.bucket.id);
        if (after) this.baseline.buckets.push({ ...b, bucket: after });
        return `provider changes ${where({ ...b, id: b.bucket.id })}: ${a.change}`;
      }
      case 'providerSeed': {
        const p = this.stack.providers[a.endpoint] ?? this.stack.providers[0];
        const cred = (Object.keys(CREDENTIALS) as CredentialName[]).find((c) => CREDENTIALS[c].account === a.account);
        if (!p || !cred) throw new Error(`no provider ${a.endpoint} or key of account ${a.account}`);
        // With a key, so a create whose answer a pending loseNextAnswer drops is retried and replayed.
        const made = await this.providerCreate(p.url, cred, { team: 'elsewhere' }, `someone-else-${n}-${Date.now()}`);
        return `provider: someone creates ${where({ ...made, id: made.bucket.id })} (untagged)`;
      }
      case 'loseNextAnswer':
        // The real providers can drop the answer of a create only (the bucket is committed).
        await Promise.all(this.stack.providers.map((p) => p.setFaults({ dropAfterCommitOnCreate: { count: 1 } })));
        return `${describe(a)} (the next create at each provider)`;
      case 'restart':
        await this.stack.restartOperator();
        return describe(a);
      case 'step':
      case 'laggingStep':
        await sleep(300);
        return `${describe(a)} (the operator runs on its own: a 300 ms pause)`;
      case 'quiesce':
        return describe(a);
      default: {
        const never: never = a;
        throw new Error(`unknown action ${JSON.stringify(never)}`);
      }
    }
  }
}

function annotate(b: StorageBucket, k: string, v: string | null): StorageBucket {
  const annotations = { ...b.metadata.annotations };
  if (v === null) delete annotations[k];
  else annotations[k] = v;
  return { ...b, metadata: { ...b.metadata, annotations } };
}
