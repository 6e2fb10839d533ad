/**
 * The controller around the reconciler, as far as ordering goes: watch events become keys
 * through the same mappings and predicates setup.ts registers, a requeue or a retryable error
 * puts the key back, a TerminalError leaves it until the object changes. {@link Runner.quiesce}
 * runs rounds (each one poll interval of model time) until nothing is queued, then a drift
 * tick (a drift interval, a scan, the periodic re-checks), and stops when a whole tick writes
 * nothing anywhere. Bounded: a world that never settles is reported, not waited for.
 */
import type { BucketProviderConfig, StorageBucket } from '../../../operator/api/v1';
import { MANAGED_BY_LABEL, MANAGED_BY_VALUE } from '../../../operator/api/v1';
import { generationChangedOrAnnotations, isTerminalError, keyString, type ObjectKey } from '../../../operator/runtime';
import type { WatchEvent } from './api-server';
import { WRITE_OPS } from './provider';
import { DRIFT_MS, KINDS, POLL_MS, type ModelWorld } from './world';

const forPredicate = generationChangedOrAnnotations();

/** How a quiescence ended. */
export type QuiesceResult = { readonly quiet: true } | { readonly quiet: false; readonly reason: string };

/** Limits of one quiescence. */
export interface QuiesceLimits {
  /** Rounds of reconciles in all. @default 60 */
  readonly rounds?: number;
  /** Drift ticks in all. @default 6 */
  readonly ticks?: number;
}

function parseKey(k: string): ObjectKey {
  const [namespace = '', name = ''] = k.split('/');
  return { namespace, name };
}

/** Queues keys from events and runs reconciles in a deterministic order. */
export class Runner {
  /** Keys due now. */
  private readonly queued = new Set<string>();
  /** Keys that asked to be checked again after a long interval. */
  private readonly periodic = new Set<string>();
  /**
   * Uids of StorageBuckets that went while their policy kept the provider bucket
   * (deletionPolicy Orphan, managementPolicy Observe), or without their finalizer running (a
   * restore): their buckets may stay.
   */
  readonly releasedUids = new Set<string>();

  constructor(private readonly world: ModelWorld) {}

  /** A count that moves with every write to the API server or the provider. */
  private writes(): number {
    return this.world.providers.audit.filter((c) => c.ok && WRITE_OPS.has(c.op)).length + this.apiWrites;
  }
  /** Events seen so far: every API write makes one. */
  private apiWrites = 0;

  /** Turns pending watch events into queued keys. */
  absorb(): void {
    for (const e of this.world.api.drainEvents()) {
      this.apiWrites++;
      if (e.kind === KINDS.bucket && e.type === 'delete') {
        const b = e.obj as StorageBucket;
        if (b.spec.deletionPolicy === 'Orphan' || b.spec.managementPolicy === 'Observe') this.releasedUids.add(b.metadata.uid ?? '');
      }
      for (const k of this.keysFor(e)) this.queued.add(keyString(k));
    }
  }

  private keysFor(e: WatchEvent): ObjectKey[] {
    const ns = e.obj.metadata?.namespace ?? '';
    const buckets = () => this.world.api.list<StorageBucket>(KINDS.bucket).filter((b) => b.metadata.namespace === ns);
    switch (e.kind) {
      case KINDS.bucket:
        if (e.type === 'update' && e.old && !(forPredicate.update?.(e.old, e.obj) ?? true)) return [];
        return [{ namespace: ns, name: e.obj.metadata?.name ?? '' }];
      case KINDS.config: {
        if (e.type === 'update' && e.old && !(forPredicate.update?.(e.old, e.obj) ?? true)) return [];
        const name = e.obj.metadata?.name;
        return buckets()
          .filter((b) => b.spec.providerRef.name === name)
          .map((b) => ({ namespace: ns, name: b.metadata.name ?? '' }));
      }
      case KINDS.secret:
      case KINDS.service: {
        const owned = [e.obj, e.old].some((o) => o?.metadata?.labels?.[MANAGED_BY_LABEL] === MANAGED_BY_VALUE);
        if (owned) {
          // Owned objects: updates and deletes reach the controlling bucket; creates are our own.
          if (e.type === 'add') return [];
          const ref = (e.obj.metadata?.ownerReferences ?? []).find((r) => r.controller);
          return ref ? [{ namespace: ns, name: ref.name }] : [];
        }
        if (e.kind !== KINDS.secret) return [];
        // A credential Secret: the buckets of every config naming it.
        const configs = this.world.api.list<BucketProviderConfig>(KINDS.config).filter((c) => c.metadata.namespace === ns);
        const names = new Set(configs.filter((c) => c.spec.secretRef.name === e.obj.metadata?.name).map((c) => c.metadata.name));
        return buckets()
          .filter((b) => names.has(b.spec.providerRef.name))
          .map((b) => ({ namespace: ns, name: b.metadata.name ?? '' }));
      }
      default:
        return [];
    }
  }

  /** A new operator process: the queue is lost, and the initial list enqueues every bucket. */
  restart(): void {
    this.world.restart();
    this.queued.clear();
    this.periodic.clear();
    this.absorb();
    for (const b of this.world.api.list<StorageBucket>(KINDS.bucket))
      this.queued.add(keyString({ namespace: b.metadata.namespace ?? '', name: b.metadata.name ?? '' }));
  }

  /**
   * Runs one reconcile of `key` now, whether queued or not, and queues what follows from it;
   * `lagging`: from a cache one write behind (see {@link ModelWorld.reconcile}).
   */
  async step(key: ObjectKey, lagging = false): Promise<void> {
    this.absorb();
    const k = keyString(key);
    this.queued.delete(k);
    this.periodic.delete(k);
    const out = await this.world.reconcile(key, { lagging });
    // The event that brings a lagging cache up to date enqueues the key again.
    if (lagging) this.queued.add(k);
    if (out instanceof Error) {
      if (!isTerminalError(out)) this.queued.add(k);
    } else if (out.type === 'requeueAfter') {
      if (out.afterMs <= POLL_MS * 2) this.queued.add(k);
      else this.periodic.add(k);
    }
    this.absorb();
  }

  /** Advances model time, as the provider and the requeues see it. */
  private advance(ms: number): void {
    this.world.clock += ms;
  }

  /** Runs until the world is quiet (see the module comment) or a limit is hit. */
  async quiesce(limits: QuiesceLimits = {}): Promise<QuiesceResult> {
    const maxRounds = limits.rounds ?? 60;
    const maxTicks = limits.ticks ?? 6;
    let rounds = 0;
    let ticks = 0;
    this.absorb();
    // Runs the queued keys, a poll interval apart, until none are left; a result when it never ends.
    const drain = async (): Promise<{ quiet: false; reason: string } | undefined> => {
      while (this.queued.size > 0) {
        if (++rounds > maxRounds) return { quiet: false, reason: `still busy after ${maxRounds} rounds: ${[...this.queued].sort().join(', ')}` };
        this.advance(POLL_MS);
        const keys = [...this.queued].sort();
        this.queued.clear();
        for (const k of keys) await this.step(parseKey(k));
      }
      return undefined;
    };
    for (;;) {
      const settling = await drain();
      if (settling) return settling;
      if (++ticks > maxTicks) return { quiet: false, reason: `writes still happening after ${maxTicks} drift intervals` };
      const before = this.writes();
      this.advance(DRIFT_MS);
      for (const k of await this.world.driftScan()) this.queued.add(keyString(k));
      for (const k of this.periodic) this.queued.add(k);
      this.periodic.clear();
      const afterScan = await drain();
      if (afterScan) return afterScan;
      if (this.writes() === before) return { quiet: true };
    }
  }
}
