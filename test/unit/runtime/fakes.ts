/**
 * In-memory stand-ins for the informer seam of operator/runtime/types.ts: plain objects
 * that store what they are given and call the handlers, with no API server behind them.
 */
import type { Logger } from 'pino';
import { ApiError } from '../../../operator/runtime/api-errors';
import type { ControllerManager } from '../../../operator/runtime/builder';
import type { Controller, ControllerDeps } from '../../../operator/runtime/controller';
import { Leases, type Lease, type LeaseClient } from '../../../operator/runtime/leader-election';
import { createLogger } from '../../../operator/runtime/logging';
import {
  keyOf,
  keyString,
  type Cache,
  type Informer,
  type InformerEventHandler,
  type InformerOptions,
  type InformerSource,
  type KubeObject,
  type ObjectKey,
  type ResourceKind,
} from '../../../operator/runtime/types';

/** A fake informer whose cache and events are driven by the test. */
export class FakeInformer<T extends KubeObject> implements Informer<T> {
  readonly handlers: InformerEventHandler<T>[] = [];
  readonly objects = new Map<string, T>();
  started = false;
  readonly cache: Cache<T>;

  constructor(readonly kind: ResourceKind) {
    const objects = this.objects;
    this.cache = {
      get: (key: ObjectKey) => objects.get(keyString(key)),
      list: (namespace?: string) => [...objects.values()].filter((o) => !namespace || o.metadata?.namespace === namespace),
      byIndex: () => [],
      addIndex: () => undefined,
    };
  }

  addEventHandler(handler: InformerEventHandler<T>): void {
    this.handlers.push(handler);
  }
  start(): void {
    this.started = true;
  }
  async stop(): Promise<void> {
    this.started = false;
  }
  hasSynced(): boolean {
    return true;
  }
  async waitForSync(): Promise<void> {}
  isWatching(): boolean {
    return this.started;
  }

  /** Stores `obj` and fires add (as a live event unless `initialList`) or update. */
  upsert(obj: T, { initialList = false }: { initialList?: boolean } = {}): void {
    const key = keyString(keyOf(obj));
    const old = this.objects.get(key);
    this.objects.set(key, obj);
    for (const h of this.handlers) {
      if (old) h.onUpdate?.(old, obj);
      else h.onAdd?.(obj, initialList);
    }
  }

  /** Removes `obj` and fires delete. */
  remove(obj: T): void {
    this.objects.delete(keyString(keyOf(obj)));
    for (const h of this.handlers) h.onDelete?.(obj);
  }
}

/** Hands out one FakeInformer per kind. */
export class FakeInformerSource implements InformerSource {
  readonly byKind = new Map<string, FakeInformer<KubeObject>>();
  readonly requests: Array<{ kind: string; opts?: InformerOptions }> = [];

  informerFor<T extends KubeObject>(kind: ResourceKind, opts?: InformerOptions): Informer<T> {
    this.requests.push({ kind: kind.kind, ...(opts ? { opts } : {}) });
    return this.informer(kind) as unknown as Informer<T>;
  }

  informer(kind: ResourceKind): FakeInformer<KubeObject> {
    let inf = this.byKind.get(kind.kind);
    if (!inf) {
      inf = new FakeInformer<KubeObject>(kind);
      this.byKind.set(kind.kind, inf);
    }
    return inf;
  }
}

/**
 * A `ControllerManager` that only keeps what `complete()` registers, for tests that start and
 * stop one controller themselves instead of through a `Manager`.
 */
export function standalone(deps: ControllerDeps): ControllerManager & { readonly added: Controller[] } {
  const added: Controller[] = [];
  return { ...deps, added, add: (c: Controller) => added.push(c) };
}

/** A JSON logger whose parsed lines land in `lines`. */
export function captureLogger(): { logger: Logger; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  // A plain write() sink keeps capture synchronous, so assertions never race the logger.
  const sink = {
    write(msg: string): void {
      for (const line of msg.split('\n')) {
        if (line.trim()) lines.push(JSON.parse(line) as Record<string, unknown>);
      }
    },
  };
  return { logger: createLogger({ level: 'debug' }, sink), lines };
}

/** Lets pending promise callbacks and immediates run. */
export async function settle(rounds = 5): Promise<void> {
  for (let i = 0; i < rounds; i++) await new Promise((r) => setImmediate(r));
}

/** A namespaced ResourceKind for tests. */
export function testKind(kind: string, group = 'example.com', version = 'v1'): ResourceKind {
  return { group, version, kind, plural: `${kind.toLowerCase()}s`, namespaced: true };
}

/** An API error as the runtime's KubeClient raises it. */
export function httpError(status: number): ApiError {
  return new ApiError(status, status === 404 ? 'NotFound' : status === 409 ? 'Conflict' : 'InternalError', `HTTP ${status}`);
}

/** An in-memory Lease with resourceVersion checks, as the API server does them. */
export interface LeaseStore extends LeaseClient {
  lease?: Lease;
  /** Every call fails with this HTTP status while set. */
  failWith?: number;
  writes: number;
}

/** A `LeaseClient` over one in-memory Lease; any other kind is a test bug. */
export function leaseStore(): LeaseStore {
  let rv = 0;
  const check = (kind: ResourceKind): void => {
    if (store.failWith) throw httpError(store.failWith);
    if (kind !== Leases) throw new Error(`leaseStore only stores Leases, not ${kind.kind}`);
  };
  const store: LeaseStore = {
    writes: 0,
    async get<T extends KubeObject>(kind: ResourceKind): Promise<T> {
      check(kind);
      if (!store.lease) throw httpError(404);
      return structuredClone(store.lease) as T;
    },
    async create<T extends KubeObject>(kind: ResourceKind, body: T): Promise<T> {
      check(kind);
      if (store.lease) throw new ApiError(409, 'AlreadyExists', 'lease already exists');
      store.writes++;
      store.lease = { ...structuredClone(body), metadata: { ...body.metadata, resourceVersion: String(++rv) } };
      return structuredClone(store.lease) as T;
    },
    async update<T extends KubeObject>(kind: ResourceKind, body: T): Promise<T> {
      check(kind);
      if (body.metadata?.resourceVersion !== store.lease?.metadata?.resourceVersion) throw httpError(409);
      store.writes++;
      store.lease = { ...structuredClone(body), metadata: { ...body.metadata, resourceVersion: String(++rv) } };
      return structuredClone(store.lease) as T;
    },
  };
  return store;
}
