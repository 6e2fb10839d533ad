/**
 * The mock provider's own store logic (provider/store.ts), in process, behind clients shaped
 * like the operator's {@link ProviderClient}: no HTTP, but the same validation
 * (provider/validation.ts), the same per-account scoping of buckets and idempotency keys, and
 * the same error codes and statuses the HTTP client would raise. Every call is written to an
 * audit log with the actor that made it, so invariants can judge each provider write.
 *
 * The store's bucket ids are random; the clients show stable aliases instead (`bucket-` and
 * a 12-digit counter per endpoint, so ids repeat across endpoints as they may between real
 * providers), which keeps a run reproducible from its seed.
 *
 * To add a call (e.g. `GET /account`, "who am I"), add it to the object {@link clientFor}
 * returns; it knows the account the key belongs to.
 */
import type {
  CreateBucketRequest,
  DeleteBucketOptions,
  ProviderBucket,
  ProviderClient,
  UpdateBucketRequest,
} from '../../../operator/provider-client';
import { ProviderError } from '../../../operator/provider-client';
import { HttpError } from '../../../provider/http';
import { BucketStore, type StoreSnapshot } from '../../../provider/store';
import { DEFAULT_REGIONS, type Bucket } from '../../../provider/types';
import { parseCreate, parseIdempotencyKey, parseUpdate } from '../../../provider/validation';

/** Who made a provider call. */
export type Actor =
  | { readonly kind: 'reconcile'; readonly namespace: string; readonly name: string; readonly uid: string; readonly observe: boolean }
  | { readonly kind: 'driftScan' }
  | { readonly kind: 'user' };

/** Provider operations, as the audit log names them. */
export type ProviderOp = 'account' | 'get' | 'findByKey' | 'list' | 'revoke' | 'create' | 'update' | 'delete';

/** Operations that change something at the provider. */
export const WRITE_OPS: ReadonlySet<ProviderOp> = new Set(['revoke', 'create', 'update', 'delete']);

/** One provider call as the audit log keeps it. */
export interface ProviderCall {
  readonly endpoint: string;
  readonly account: string;
  readonly op: ProviderOp;
  readonly actor: Actor;
  /** The bucket addressed (update, delete, get) or made (create). */
  readonly id?: string;
  /** The bucket as it was before an update or delete. */
  readonly before?: ProviderBucket;
  /** The bucket after a create or update. */
  readonly after?: ProviderBucket;
  readonly ok: boolean;
}

/** A provider bucket with where it lives. */
export interface PlacedBucket {
  readonly endpoint: string;
  readonly account: string;
  readonly bucket: ProviderBucket;
}

/** Settings of {@link ModelProviders}. */
export interface ModelProvidersOptions {
  /** Endpoints served, each by a store of its own. */
  readonly endpoints: readonly string[];
  /** API key -> account, valid at every endpoint. */
  readonly keys: Readonly<Record<string, string>>;
  /** The model clock, epoch ms. */
  readonly now: () => number;
  /** @default 1000 */
  readonly activationDelayMs?: number;
}

/** One endpoint: a store and the aliases of its ids. */
class Endpoint {
  readonly store: BucketStore;
  private readonly toAlias = new Map<string, string>();
  private readonly toReal = new Map<string, string>();
  private next = 0;

  constructor(
    readonly url: string,
    now: () => number,
    delayMs: number,
  ) {
    this.store = new BucketStore({ activationDelayMs: delayMs, resizeDelayMs: delayMs, now });
  }

  /** The state as plain data. */
  dump(): EndpointState {
    return { store: this.store.snapshot(), aliases: [...this.toAlias], next: this.next };
  }

  /** Replaces the state with one {@link Endpoint.dump} returned. */
  load(state: EndpointState): void {
    this.store.restore(structuredClone(state.store));
    this.toAlias.clear();
    this.toReal.clear();
    for (const [real, alias] of state.aliases) {
      this.toAlias.set(real, alias);
      this.toReal.set(alias, real);
    }
    this.next = state.next;
  }

  alias(realId: string): string {
    let a = this.toAlias.get(realId);
    if (!a) {
      a = `bucket-${String(++this.next).padStart(12, '0')}`;
      this.toAlias.set(realId, a);
      this.toReal.set(a, realId);
    }
    return a;
  }

  real(alias: string): string {
    return this.toReal.get(alias) ?? `unknown-${alias}`;
  }

  view(b: Bucket): ProviderBucket {
    const id = this.alias(b.id);
    return {
      id,
      region: b.region,
      sizeGB: b.sizeGB,
      encrypted: b.encrypted,
      phase: b.phase,
      endpoint: b.endpoint.replace(b.id, id),
      tags: { ...b.tags },
      ...(b.idempotencyKey !== undefined ? { idempotencyKey: b.idempotencyKey } : {}),
      // As the provider's JSON carries it: the operator records it in status.account.
      account: b.account,
    };
  }
}

/** An {@link Endpoint}'s state as plain data. */
export interface EndpointState {
  readonly store: StoreSnapshot;
  readonly aliases: readonly (readonly [string, string])[];
  readonly next: number;
}

/** The store's HttpError as the HTTP client would have raised it. */
function asProviderError(op: string, err: unknown): unknown {
  if (!(err instanceof HttpError)) return err;
  return new ProviderError(`provider ${op} failed: ${err.status} ${err.code}: ${err.message}`, { status: err.status, code: err.code });
}

/** Every endpoint of the model with its accounts, the audit log and the fault switch. */
export class ModelProviders {
  private readonly endpoints = new Map<string, Endpoint>();
  /** Every call made through a client, oldest first. */
  readonly audit: ProviderCall[] = [];
  /** Who the next calls are made for; the runner sets it around each reconcile. */
  actor: Actor = { kind: 'user' };
  /** The next successful write commits but its answer is lost (a reset, or a crash before the reply). */
  loseNextWriteAnswer = false;
  /** Told about every write before it is made, with the bucket it addresses as it stands. */
  beforeWrite?: (call: Omit<ProviderCall, 'ok' | 'after'>) => void;

  constructor(private readonly opts: ModelProvidersOptions) {
    for (const url of opts.endpoints) this.endpoints.set(url, new Endpoint(url, opts.now, opts.activationDelayMs ?? 1000));
  }

  /** Every endpoint's state and the fault switch, as plain data (the audit log is not kept). */
  dump(): { readonly endpoints: readonly (readonly [string, EndpointState])[]; readonly loseNextWriteAnswer: boolean } {
    return { endpoints: [...this.endpoints].map(([url, ep]) => [url, ep.dump()] as const), loseNextWriteAnswer: this.loseNextWriteAnswer };
  }

  /** Replaces every endpoint's state with one {@link ModelProviders.dump} returned. */
  load(state: ReturnType<ModelProviders['dump']>): void {
    for (const [url, ep] of state.endpoints) this.endpoints.get(url)?.load(ep);
    this.loseNextWriteAnswer = state.loseNextWriteAnswer;
  }

  /** A client for `apiKey` at `endpoint`, as `ProviderClients.client` hands out. */
  client(endpoint: string, apiKey: string): ProviderClient {
    return clientFor(this, this.endpoints.get(endpoint), endpoint, this.opts.keys[apiKey]);
  }

  /** Every bucket at every endpoint, ordered by endpoint then id. */
  all(): PlacedBucket[] {
    const out: PlacedBucket[] = [];
    for (const ep of this.endpoints.values()) {
      const items = ep.store.list().map((b) => ({ endpoint: ep.url, account: b.account, bucket: ep.view(b) }));
      out.push(...items.sort((a, b) => (a.bucket.id < b.bucket.id ? -1 : 1)));
    }
    return out;
  }

  /** Deletes a bucket behind the operator's back; false when absent. */
  adminDelete(endpoint: string, id: string): boolean {
    const ep = this.endpoints.get(endpoint);
    return ep ? ep.store.adminDelete(ep.real(id)) : false;
  }

  /** Changes a bucket behind the operator's back (size, encryption, tags). */
  adminPatch(endpoint: string, id: string, patch: { sizeGB?: number; encrypted?: boolean; tags?: Record<string, string> }): void {
    const ep = this.endpoints.get(endpoint);
    ep?.store.adminPatch(ep.real(id), patch);
  }

  /** Creates a bucket outside the operator (by default with no idempotency key), e.g. for an adoption. */
  seed(endpoint: string, account: string, req: CreateBucketRequest, idempotencyKey?: string): ProviderBucket | undefined {
    const ep = this.endpoints.get(endpoint);
    if (!ep) return undefined;
    return ep.view(ep.store.create({ ...req, tags: { ...req.tags } }, idempotencyKey, account).bucket);
  }

  /** Records a call; used by the clients. */
  record(call: ProviderCall): void {
    this.audit.push(call);
  }
}

/**
 * The client of `account` at `ep`: the routes' translation of each call into the store, with
 * their validation and errors. No endpoint: a transport failure; no account: 401.
 */
function clientFor(p: ModelProviders, ep: Endpoint | undefined, url: string, account: string | undefined): ProviderClient {
  const enter = (op: ProviderOp): { ep: Endpoint; account: string } => {
    if (!ep) throw new ProviderError(`provider ${op} failed: ENOTFOUND`, { status: 0, code: 'ENOTFOUND' });
    if (!account) {
      p.record({ endpoint: url, account: '?', op, actor: p.actor, ok: false });
      throw new ProviderError(`provider ${op} failed: 401 Unauthorized: invalid API key`, { status: 401, code: 'Unauthorized' });
    }
    return { ep, account };
  };
  const run = <T>(
    op: ProviderOp,
    id: string | undefined,
    f: (e: Endpoint, acct: string) => { result: T; after?: ProviderBucket; id?: string },
    /** A condition the provider checks first: a call it refuses writes nothing, so it is not judged as a write. */
    precondition?: (b: Bucket | undefined) => void,
  ): T => {
    const { ep: e, account: acct } = enter(op);
    const before = id !== undefined ? e.store.get(e.real(id), acct) : undefined;
    const base = {
      endpoint: url,
      account: acct,
      op,
      actor: p.actor,
      ...(id !== undefined ? { id } : {}),
      ...(before ? { before: e.view(before) } : {}),
    };
    try {
      precondition?.(before);
    } catch (err) {
      p.record({ ...base, ok: false });
      throw asProviderError(op, err);
    }
    if (WRITE_OPS.has(op)) p.beforeWrite?.(base);
    let out: { result: T; after?: ProviderBucket; id?: string };
    try {
      out = f(e, acct);
    } catch (err) {
      p.record({ ...base, ok: false });
      throw asProviderError(op, err);
    }
    p.record({ ...base, ...(out.id !== undefined ? { id: out.id } : {}), ...(out.after ? { after: out.after } : {}), ok: true });
    if (WRITE_OPS.has(op) && p.loseNextWriteAnswer) {
      p.loseNextWriteAnswer = false;
      throw new ProviderError(`provider ${op} failed: ECONNRESET`, { status: 0, code: 'ECONNRESET' });
    }
    return out.result;
  };
  const wire = <T>(v: T): unknown => JSON.parse(JSON.stringify(v)) as unknown;
  return {
    // Not recorded: the real client asks once per account and keeps the answer.
    accountId: async () => enter('account').account,
    getBucket: async (id) =>
      run('get', id, (e, acct) => {
        const b = e.store.get(e.real(id), acct);
        return { result: b ? e.view(b) : undefined };
      }),
    findByIdempotencyKey: async (key) =>
      run('findByKey', undefined, (e, acct) => {
        const page = e.store.query({ idempotencyKey: parseIdempotencyKey(key), tags: [], limit: 100 }, acct);
        const b = page.items[0];
        return { result: b ? e.view(b) : undefined };
      }),
    listBuckets: async (filter) =>
      run('list', undefined, (e, acct) => {
        const tags = Object.entries(filter.tags ?? {});
        const items = e.store.query({ tags, limit: 100_000 }, acct).items.map((b) => e.view(b));
        return { result: items.sort((a, b) => (a.id < b.id ? -1 : 1)) };
      }),
    revokeIdempotencyKey: async (key) =>
      run('revoke', undefined, (e, acct) => {
        const b = e.store.revokeIdempotencyKey(parseIdempotencyKey(key) ?? '', acct);
        return { result: b ? e.view(b) : undefined };
      }),
    createBucket: async (req: CreateBucketRequest, key: string) =>
      run('create', undefined, (e, acct) => {
        const body = parseCreate(wire(req), DEFAULT_REGIONS);
        const made = e.view(e.store.create(body, parseIdempotencyKey(key), acct).bucket);
        return { result: made, after: made, id: made.id };
      }),
    updateBucket: async (id: string, req: UpdateBucketRequest) =>
      run('update', id, (e, acct) => {
        const after = e.view(e.store.update(e.real(id), parseUpdate(wire(req)), acct));
        return { result: after, after };
      }),
    deleteBucket: async (id: string, _signal?: AbortSignal, opts: DeleteBucketOptions = {}) => {
      try {
        return run(
          'delete',
          id,
          (e, acct) => {
            e.store.delete(e.real(id), acct);
            return { result: true };
          },
          (b) => {
            if (b && opts.ifTags && !Object.entries(opts.ifTags).every(([k, v]) => b.tags[k] === v)) {
              throw new HttpError(412, 'PreconditionFailed', 'the bucket does not carry the tags If-Tags names');
            }
          },
        );
      } catch (err) {
        if (err instanceof ProviderError && err.isNotFound) return false;
        throw err;
      }
    },
  };
}
