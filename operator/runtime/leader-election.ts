/**
 * Lease-based leader election (coordination.k8s.io/v1), after client-go's leaderelection:
 * expiry is judged by when this replica last saw the lease change, on its own clock, so
 * clock skew between replicas cannot hand the lease to two holders.
 */
import { hostname } from 'node:os';
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { isConflict } from './api-errors';
import type { KubeClient } from './client';
import { realClock, sleep, type Clock } from './clock';
import { microTime } from './events';
import type { KubeObject, ResourceKind } from './types';

/** coordination.k8s.io/v1 Lease. */
export const Leases: ResourceKind = { group: 'coordination.k8s.io', version: 'v1', kind: 'Lease', plural: 'leases', namespaced: true };

/** The fields of a Lease's spec that leader election reads and writes. */
export interface LeaseSpec {
  holderIdentity?: string;
  leaseDurationSeconds?: number;
  /** RFC 3339 with microseconds (a MicroTime), as the API server sends and expects it. */
  acquireTime?: string;
  renewTime?: string;
  leaseTransitions?: number;
}

/** A coordination.k8s.io/v1 Lease as it comes off the wire. */
export interface Lease extends KubeObject {
  spec?: LeaseSpec;
}

/**
 * The part of `KubeClient` leader election uses: get, create, and update, whose
 * `metadata.resourceVersion` makes every write conditional (409 when someone wrote first).
 */
export type LeaseClient = Pick<KubeClient, 'get' | 'create' | 'update'>;

/** Where the lease lives and how it is timed; durations default to controller-runtime's. */
export interface LeaderElectionConfig {
  readonly namespace: string;
  readonly name: string;
  /** @default `${hostname}_${uuid}` */
  readonly identity?: string;
  /** How long others wait, after last seeing the lease change, before taking it. @default 15000 */
  readonly leaseDurationMs?: number;
  /** How long the leader keeps trying to renew before it gives up leading. @default 10000 */
  readonly renewDeadlineMs?: number;
  /** Interval between acquire or renew attempts. @default 2000 */
  readonly retryPeriodMs?: number;
  /** Clear the lease on graceful stop so a successor takes over at once. @default true */
  readonly releaseOnCancel?: boolean;
}

/** Lifecycle hooks; they run synchronously inside the election loop, so keep them short. */
export interface LeaderCallbacks {
  onStartedLeading?(): void;
  /** Leadership ended: lost, or given up on stop. */
  onStoppedLeading?(): void;
  /** Another (or this) identity was seen holding the lease. */
  onNewLeader?(identity: string): void;
}

/** Reports the `leader_election_master_status` gauge. */
export interface LeaderMetrics {
  setLeader(name: string, isLeader: boolean): void;
}

/** How `run` ended: `lost` means leadership ended while the caller still wanted it. */
export type ElectionOutcome = 'lost' | 'stopped';

/** Options of `LeaderElector`. */
export interface LeaderElectorOptions {
  readonly client: LeaseClient;
  readonly config: LeaderElectionConfig;
  readonly logger: Logger;
  readonly callbacks?: LeaderCallbacks;
  readonly metrics?: LeaderMetrics;
  /** @default realClock */
  readonly clock?: Clock;
}

// client-go's JitterFactor: spreads the retries of several standbys.
const JITTER = 1.2;

type Attempt = 'acquired' | 'held' | 'conflict' | 'error';

/** Runs for a lease: acquires it, renews it, and releases it on graceful stop. */
export class LeaderElector {
  readonly identity: string;
  private readonly cfg: Required<Omit<LeaderElectionConfig, 'identity'>>;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private leading = false;
  /** Last lease read or written, and when (local clock) its resourceVersion last changed. */
  private observed?: Lease;
  private observedAt = 0;
  private lastRenewAt = 0;
  /** Local time since when every attempt has failed with an API error; undefined when fine. */
  private failingSince?: number;
  private running = false;

  constructor(private readonly opts: LeaderElectorOptions) {
    const c = opts.config;
    this.identity = c.identity ?? `${hostname()}_${randomUUID()}`;
    this.cfg = {
      namespace: c.namespace,
      name: c.name,
      leaseDurationMs: c.leaseDurationMs ?? 15_000,
      renewDeadlineMs: c.renewDeadlineMs ?? 10_000,
      retryPeriodMs: c.retryPeriodMs ?? 2_000,
      releaseOnCancel: c.releaseOnCancel ?? true,
    };
    const { leaseDurationMs, renewDeadlineMs, retryPeriodMs } = this.cfg;
    if (!(leaseDurationMs > renewDeadlineMs)) {
      throw new Error(`leaseDurationMs (${leaseDurationMs}) must be greater than renewDeadlineMs (${renewDeadlineMs})`);
    }
    if (!(renewDeadlineMs > JITTER * retryPeriodMs) || !(retryPeriodMs > 0)) {
      throw new Error(`renewDeadlineMs (${renewDeadlineMs}) must exceed ${JITTER} * retryPeriodMs (${retryPeriodMs})`);
    }
    if (!c.namespace || !c.name) throw new Error('leader election needs a lease namespace and name');
    this.clock = opts.clock ?? realClock;
    this.logger = opts.logger.child({ lease: `${c.namespace}/${c.name}`, identity: this.identity });
    opts.metrics?.setLeader(c.name, false);
  }

  /** True while this replica holds the lease and has renewed it within the deadline. */
  isLeader(): boolean {
    return this.leading;
  }

  /** Holder of the lease as last observed ('' when free or unknown). */
  observedLeader(): string {
    return this.observed?.spec?.holderIdentity ?? '';
  }

  /**
   * Health of the election: a message while this replica cannot reach the lease for longer
   * than renewDeadline (a leader that cannot renew, a standby that could never take over).
   */
  check(): string | undefined {
    if (this.failingSince === undefined) return undefined;
    const failingMs = this.clock.now() - this.failingSince;
    if (failingMs <= this.cfg.renewDeadlineMs) return undefined;
    return `lease ${this.cfg.namespace}/${this.cfg.name} unreachable for ${Math.round(failingMs)} ms`;
  }

  /**
   * Campaigns until leading, then renews until `signal` aborts (resolves 'stopped', after
   * releasing the lease when configured) or a renewal misses renewDeadline (resolves
   * 'lost'). Never rejects.
   */
  async run(signal: AbortSignal): Promise<ElectionOutcome> {
    if (this.running) throw new Error('LeaderElector.run is already running');
    this.running = true;
    try {
      if (!(await this.acquire(signal))) return 'stopped';
      this.setLeading(true);
      this.opts.callbacks?.onStartedLeading?.();
      const outcome = await this.renew(signal);
      this.setLeading(false);
      if (outcome === 'stopped' && this.cfg.releaseOnCancel) await this.release();
      this.opts.callbacks?.onStoppedLeading?.();
      return outcome;
    } finally {
      this.running = false;
    }
  }

  private async acquire(signal: AbortSignal): Promise<boolean> {
    this.logger.info('Attempting to acquire leader lease');
    for (;;) {
      if (signal.aborted) return false;
      if ((await this.tryAcquireOrRenew(signal)) === 'acquired') {
        this.logger.info('Successfully acquired lease');
        return true;
      }
      if (!(await this.pause(this.cfg.retryPeriodMs * (1 + Math.random() * (JITTER - 1)), signal))) return false;
    }
  }

  private async renew(signal: AbortSignal): Promise<ElectionOutcome> {
    this.lastRenewAt = this.clock.now();
    let attemptAt = this.lastRenewAt;
    for (;;) {
      // Attempts start a retry period apart, however long the last one took: renewals keep
      // their cadence while the API server is slow, instead of drifting by its latency.
      const next = attemptAt + this.cfg.retryPeriodMs;
      if (!(await this.pause(Math.max(0, next - this.clock.now()), signal))) return 'stopped';
      attemptAt = this.clock.now();
      const deadline = this.lastRenewAt + this.cfg.renewDeadlineMs;
      const attempt = await this.withDeadline((s) => this.renewOnce(s), deadline - this.clock.now(), signal);
      if (signal.aborted && attempt !== 'acquired') return 'stopped';
      if (attempt === 'acquired') {
        this.lastRenewAt = this.clock.now();
        continue;
      }
      if (attempt === 'held') {
        this.logger.error({ holder: this.observedLeader() }, 'Leader lease taken by another replica');
        return 'lost';
      }
      if (this.clock.now() >= deadline) {
        this.logger.error({ renewDeadlineMs: this.cfg.renewDeadlineMs }, 'Failed to renew leader lease in time');
        return 'lost';
      }
    }
  }

  /**
   * The leader's renewal, with client-go's fast path: one conditional update of the lease as
   * last observed (no read first), which is half the requests and half the latency of a
   * renewal. Any failure (409 because the lease moved on, or an error) falls back to a read
   * and decides from what it shows.
   */
  private async renewOnce(signal: AbortSignal): Promise<Attempt> {
    const lease = this.observed;
    if (lease && lease.spec?.holderIdentity === this.identity) {
      try {
        return this.succeeded(await this.opts.client.update<Lease>(Leases, { ...lease, spec: this.specFor(lease.spec) }, { signal }));
      } catch (err) {
        if (signal.aborted) return this.failed(err, 'update');
        this.logger.debug({ err }, 'Optimistic lease renewal failed; reading the lease');
      }
    }
    return this.tryAcquireOrRenew(signal);
  }

  /** One read-modify-write of the lease, with resourceVersion as the optimistic lock. */
  private async tryAcquireOrRenew(signal: AbortSignal): Promise<Attempt> {
    const { namespace, name } = this.cfg;
    // A stop (or the renew deadline) aborts the request itself, so nothing hangs behind it.
    const opts = { signal };
    let current: Lease;
    try {
      current = await this.opts.client.get<Lease>(Leases, namespace, name, opts);
    } catch (err) {
      if (statusOf(err) !== 404) return this.failed(err, 'read');
      try {
        const created = await this.opts.client.create<Lease>(Leases, { metadata: { name, namespace }, spec: this.specFor(undefined) }, opts);
        return this.succeeded(created);
      } catch (createErr) {
        return statusOf(createErr) === 409 ? this.conflict() : this.failed(createErr, 'create');
      }
    }
    this.observe(current);
    const holder = current.spec?.holderIdentity ?? '';
    const durationMs = (current.spec?.leaseDurationSeconds ?? 0) * 1000;
    if (holder && holder !== this.identity && this.observedAt + durationMs > this.clock.now()) {
      this.failingSince = undefined;
      return 'held';
    }
    try {
      const updated = await this.opts.client.update<Lease>(Leases, { ...current, spec: this.specFor(current.spec) }, opts);
      return this.succeeded(updated);
    } catch (err) {
      return statusOf(err) === 409 ? this.conflict() : this.failed(err, 'update');
    }
  }

  private specFor(previous: LeaseSpec | undefined): LeaseSpec {
    const now = microTime(new Date());
    const renewing = previous?.holderIdentity === this.identity;
    return {
      holderIdentity: this.identity,
      leaseDurationSeconds: Math.ceil(this.cfg.leaseDurationMs / 1000),
      acquireTime: renewing && previous?.acquireTime ? previous.acquireTime : now,
      renewTime: now,
      leaseTransitions: (previous?.leaseTransitions ?? 0) + (previous && !renewing ? 1 : 0),
    };
  }

  /** Gives the lease up: empty holder and 1 s duration, as client-go's ReleaseOnCancel. */
  private async release(): Promise<void> {
    const lease = this.observed;
    if (!lease || lease.spec?.holderIdentity !== this.identity) return;
    // The stop signal has fired already; the release gets renewDeadline, then the lease just expires.
    const bound = new AbortController();
    const timer = this.clock.setTimeout(() => bound.abort(new Error('lease release timed out')), this.cfg.renewDeadlineMs);
    try {
      try {
        this.observe(await this.releaseAt(lease, bound.signal));
      } catch (err) {
        // The stop may have aborted a renewal the server still committed: the lease moved on
        // from what we observed. Read it once and release it if it is still ours.
        if (!isConflict(err)) throw err;
        const current = await this.opts.client.get<Lease>(Leases, this.cfg.namespace, this.cfg.name, { signal: bound.signal });
        if (current.spec?.holderIdentity !== this.identity) return;
        this.observe(await this.releaseAt(current, bound.signal));
      }
      this.logger.info('Released leader lease');
    } catch (err) {
      // The lease then simply expires; a successor waits leaseDuration instead of nothing.
      this.logger.warn({ err }, 'Failed to release leader lease');
    } finally {
      this.clock.clearTimeout(timer);
    }
  }

  /** One conditional write of `lease` (its resourceVersion) as released. */
  private releaseAt(lease: Lease, signal: AbortSignal): Promise<Lease> {
    const now = microTime(new Date());
    return this.opts.client.update<Lease>(
      Leases,
      {
        ...lease,
        spec: { holderIdentity: '', leaseDurationSeconds: 1, acquireTime: now, renewTime: now, leaseTransitions: lease.spec?.leaseTransitions ?? 0 },
      },
      { signal },
    );
  }

  private observe(lease: Lease): void {
    const changed = lease.metadata?.resourceVersion !== this.observed?.metadata?.resourceVersion;
    const previousHolder = this.observedLeader();
    this.observed = lease;
    if (changed) this.observedAt = this.clock.now();
    const holder = this.observedLeader();
    if (holder && holder !== previousHolder) {
      if (holder !== this.identity) this.logger.info({ holder }, 'New leader observed');
      this.opts.callbacks?.onNewLeader?.(holder);
    }
  }

  private succeeded(lease: Lease): Attempt {
    this.failingSince = undefined;
    this.observe(lease);
    return 'acquired';
  }

  private conflict(): Attempt {
    // Another replica wrote first; the next attempt reads its record.
    this.failingSince = undefined;
    return 'conflict';
  }

  private failed(err: unknown, op: string): Attempt {
    this.failingSince ??= this.clock.now();
    this.logger.debug({ err, op }, 'Leader lease request failed');
    return 'error';
  }

  private setLeading(leading: boolean): void {
    this.leading = leading;
    this.opts.metrics?.setLeader(this.cfg.name, leading);
  }

  /** Sleeps; false when `signal` aborted instead. */
  private async pause(ms: number, signal: AbortSignal): Promise<boolean> {
    try {
      await sleep(this.clock, ms, signal);
      return true;
    } catch {
      return false;
    }
  }

  /**
   * A hung request must not stretch the renew deadline: at the deadline (or on stop) its
   * signal aborts it, and a late answer is ignored.
   */
  private async withDeadline(attempt: (signal: AbortSignal) => Promise<Attempt>, ms: number, stop: AbortSignal): Promise<Attempt> {
    const ctl = new AbortController();
    const onStop = (): void => ctl.abort(stop.reason);
    stop.addEventListener('abort', onStop, { once: true });
    let timer: unknown;
    const expired = new Promise<Attempt>((resolve) => {
      timer = this.clock.setTimeout(
        () => {
          ctl.abort(new Error('renew deadline passed'));
          resolve('error');
        },
        Math.max(0, ms),
      );
    });
    try {
      return await Promise.race([attempt(ctl.signal), expired]);
    } finally {
      this.clock.clearTimeout(timer);
      stop.removeEventListener('abort', onStop);
    }
  }
}

/** HTTP status of an `ApiError` (or anything with a numeric `status`/`code`). */
function statusOf(err: unknown): number | undefined {
  if (typeof err !== 'object' || err === null) return undefined;
  const e = err as { code?: unknown; status?: unknown };
  if (typeof e.status === 'number') return e.status;
  return typeof e.code === 'number' ? e.code : undefined;
}
