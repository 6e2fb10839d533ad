/**
 * The manager runs everything in one process, in controller-runtime's order: probe and
 * metrics servers, informers and their sync, leader election, then controllers. It takes an
 * AbortSignal for shutdown; reading OS signals is main.ts's job.
 */
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { realClock, type Clock } from './clock';
import type { ControllerManager } from './builder';
import type { Controller } from './controller';
import { CheckSet, ProbeServers, eventLoopCheck, type BoundAddresses, type Check } from './health';
import { LeaderElector, type LeaderElectionConfig, type LeaseClient } from './leader-election';
import { Metrics } from './metrics';
import type { Informer, InformerSource, KubeObject } from './types';
import { WriteFailureReporter } from './write-failures';

/** Endpoint of the controller's own readiness, below the Pod's. */
const CONTROLLER_READYZ = 'readyz/controller';

/** Leader election settings of a manager. */
export interface ManagerLeaderElection extends LeaderElectionConfig {
  readonly enabled: boolean;
}

/** Options of `Manager`. */
export interface ManagerOptions {
  /**
   * The REST client leader election reads and writes its Lease with (the operator's
   * `KubeClient`); required when leader election is enabled.
   */
  readonly client?: LeaseClient;
  readonly logger: Logger;
  /** The shared informer factory. */
  readonly informers: InformerSource;
  /** Restrict every controller's informers to this namespace; all when unset. */
  readonly namespace?: string;
  /** @default disabled */
  readonly leaderElection?: ManagerLeaderElection;
  /** "host:port" for /metrics; "0" disables; port 0 picks a free port. @default ":8080" */
  readonly metricsBindAddress?: string;
  /** "host:port" for /healthz and /readyz; "0" disables. @default ":8081" */
  readonly healthProbeBindAddress?: string;
  /**
   * Whether /readyz, the Pod's readiness, includes the controller's (its informers synced and
   * watching, its Lease renewed). A Service follows Pod readiness, so a Pod that serves
   * something behind one (a webhook) leaves it out: a controller problem must not take that
   * service away from every replica (controller-runtime's /readyz holds only the checks added
   * to it, a webhook's among them). The controller's readiness is at /readyz/controller either way.
   * @default true
   */
  readonly readyzIncludesController?: boolean;
  /** Budget for draining in-flight reconciles on shutdown. @default 30000 */
  readonly gracefulShutdownTimeoutMs?: number;
  /** Registry for /metrics. @default a new one */
  readonly registry?: Registry;
  /** @default realClock */
  readonly clock?: Clock;
}

/**
 * Work beside the controllers that must run on the leader only, such as a periodic check
 * against an external system (controller-runtime's leader-election Runnable).
 */
export interface Runnable {
  /** Names it in logs. */
  readonly name: string;
  /**
   * Runs until `signal` aborts: started with the controllers, aborted before they drain or
   * at once when leadership is lost. A rejection is logged; it does not stop the manager.
   */
  start(signal: AbortSignal): Promise<void>;
}

/** Thrown by `Manager.start` when leadership is lost: the process should exit and restart. */
export class LeaderElectionLostError extends Error {
  override readonly name = 'LeaderElectionLostError';
}

/** Runs controllers with shared informers, probes, metrics and optional leader election. */
export class Manager implements ControllerManager {
  readonly logger: Logger;
  readonly informers: InformerSource;
  readonly metrics: Metrics;
  readonly namespace?: string;
  readonly clock: Clock;
  /** Liveness checks (/healthz). */
  readonly healthz = new CheckSet('healthz');
  /** Readiness checks of the Pod (/readyz): what a Service in front of it needs. */
  readonly readyz = new CheckSet('readyz');
  /** The controller's readiness (/readyz/controller): informers synced and watching, Lease renewed. */
  readonly controllerReadyz = new CheckSet(CONTROLLER_READYZ);
  /**
   * The process's one reporter of failed API writes (Events, status): counted on /metrics,
   * and one warning per kind across every writer that shares it.
   */
  readonly writeFailures: WriteFailureReporter;
  private readonly controllers: Controller[] = [];
  private readonly runnables: Runnable[] = [];
  private readonly elector?: LeaderElector;
  private readonly servers: ProbeServers;
  private readonly graceMs: number;
  private started = false;
  private controllersRunning = false;
  private readonly listeningDeferred = deferred<BoundAddresses>();
  private readonly electedDeferred = deferred<void>();
  private readonly leadingDeferred = deferred<void>();

  constructor(private readonly opts: ManagerOptions) {
    this.logger = opts.logger;
    this.informers = opts.informers;
    this.metrics = new Metrics(opts.registry ? { registry: opts.registry } : {});
    this.writeFailures = new WriteFailureReporter({ logger: opts.logger.child({ component: 'writes' }), metrics: this.metrics });
    this.clock = opts.clock ?? realClock;
    this.graceMs = opts.gracefulShutdownTimeoutMs ?? 30_000;
    if (opts.namespace) this.namespace = opts.namespace;
    const le = opts.leaderElection;
    if (le?.enabled) {
      if (!opts.client) throw new Error('leader election needs a client for its Lease');
      this.elector = new LeaderElector({
        client: opts.client,
        config: le,
        logger: opts.logger.child({ component: 'leader-election' }),
        metrics: this.metrics,
        clock: this.clock,
        callbacks: { onStartedLeading: () => this.leadingDeferred.resolve() },
      });
    }
    this.servers = new ProbeServers({
      metricsBindAddress: opts.metricsBindAddress ?? ':8080',
      healthProbeBindAddress: opts.healthProbeBindAddress ?? ':8081',
      registry: this.metrics.registry,
      healthz: this.healthz,
      readyz: this.readyz,
      more: [this.controllerReadyz],
      logger: opts.logger,
    });
    this.healthz.add('ping', () => undefined);
    const controllerChecks: Array<[string, Check]> = [['informers', () => this.checkInformers()]];
    const elector = this.elector;
    if (elector) {
      controllerChecks.push([
        'leader-election',
        () => {
          const problem = elector.check();
          if (problem) throw new Error(problem);
        },
      ]);
    }
    for (const [name, check] of controllerChecks) {
      this.controllerReadyz.add(name, check);
      if (opts.readyzIncludesController ?? true) this.readyz.add(name, check);
    }
  }

  /** Identity used in the lease; undefined without leader election. */
  get identity(): string | undefined {
    return this.elector?.identity;
  }

  /**
   * Registers a controller; it starts once the caches synced and leadership is held.
   * `ControllerBuilder.complete` calls this, so callers of `newControllerManagedBy` never do.
   */
  add(controller: Controller): this {
    if (this.started) throw new Error(`cannot add controller "${controller.name}" to a started manager`);
    if (this.controllers.some((c) => c.name === controller.name)) {
      throw new Error(`a controller named "${controller.name}" is already registered`);
    }
    this.controllers.push(controller);
    return this;
  }

  /** Registers a runnable; it starts with the controllers (after winning the election, if enabled). */
  addRunnable(runnable: Runnable): this {
    if (this.started) throw new Error(`cannot add runnable "${runnable.name}" to a started manager`);
    this.runnables.push(runnable);
    return this;
  }

  /** Adds a liveness check. */
  addHealthzCheck(name: string, check: Check): this {
    this.healthz.add(name, check);
    return this;
  }

  /** Adds a readiness check of the Pod (/readyz). */
  addReadyzCheck(name: string, check: Check): this {
    // /readyz/controller is the controller's set: a check of that name could not be reached.
    if (`readyz/${name}` === CONTROLLER_READYZ) throw new Error(`readyz check name "${name}" is taken by /${CONTROLLER_READYZ}`);
    this.readyz.add(name, check);
    return this;
  }

  /** True while this replica holds the lease, or (without leader election) runs its controllers. */
  isLeader(): boolean {
    return this.elector ? this.elector.isLeader() : this.controllersRunning;
  }

  /** Resolves with the bound addresses once the servers listen. */
  listening(): Promise<BoundAddresses> {
    return this.listeningDeferred.promise;
  }

  /** Resolves once controllers have been started (after winning the election, if enabled). */
  elected(): Promise<void> {
    return this.electedDeferred.promise;
  }

  /**
   * Runs until `signal` aborts, then stops taking work, drains in-flight reconciles within
   * gracefulShutdownTimeoutMs, releases the lease and closes the servers. Rejects with
   * `LeaderElectionLostError` when leadership is lost (controllers are stopped at once) and
   * with the cause when startup fails.
   */
  async start(signal: AbortSignal): Promise<void> {
    if (this.started) throw new Error('manager already started');
    this.started = true;
    const loopCheck = eventLoopCheck();
    this.healthz.add('event-loop', loopCheck.check);
    const informers = this.allInformers();
    const electionStop = new AbortController();
    let election: Promise<'lost' | 'stopped'> | undefined;
    const runnablesStop = new AbortController();
    let runnables: Promise<unknown> = Promise.resolve();
    try {
      this.listeningDeferred.resolve(await this.servers.start());
      for (const inf of informers) inf.start();
      try {
        await Promise.all(informers.map((inf) => inf.waitForSync(signal)));
      } catch (err) {
        // Stopping while the caches fill is a normal shutdown, not a failed start.
        if (signal.aborted) return;
        throw err;
      }
      this.logger.info({ informers: informers.length }, 'Caches synced');

      if (this.elector) {
        election = this.elector.run(electionStop.signal);
        await Promise.race([this.leadingDeferred.promise, aborted(signal), election]);
        if (signal.aborted || !this.elector.isLeader()) return;
      }

      this.logger.info({ controllers: this.controllers.map((c) => c.name) }, 'Starting controllers');
      const runAll = new AbortController();
      const running = Promise.all(this.controllers.map((c) => c.start(runAll.signal)));
      this.controllersRunning = true;
      runnables = Promise.all(
        this.runnables.map((r) =>
          r.start(runnablesStop.signal).catch((err: unknown) => this.logger.error({ err, runnable: r.name }, 'Runnable failed')),
        ),
      );
      this.electedDeferred.resolve();
      const ended = await Promise.race([
        aborted(signal).then(() => 'shutdown' as const),
        (election ?? new Promise<never>(() => undefined)).then(() => 'lost' as const),
        running.then(() => 'controllers-ended' as const),
      ]);

      if (ended === 'lost' && !signal.aborted) {
        // Another replica may already be reconciling: stop at once, no drain.
        await Promise.all(this.controllers.map((c) => c.stop(0)));
        throw new LeaderElectionLostError(`leader election lost for lease ${this.opts.leaderElection?.namespace}/${this.opts.leaderElection?.name}`);
      }
      runnablesStop.abort();
      this.logger.info({ graceMs: this.graceMs }, 'Stopping, draining in-flight reconciles');
      const deadline = this.clock.now() + this.graceMs;
      const drained = await Promise.all(this.controllers.map((c) => c.stop(Math.max(0, deadline - this.clock.now()))));
      if (drained.some((d) => !d)) this.logger.error('In-flight reconciles did not finish within the graceful shutdown timeout');
      runAll.abort();
      await running;
    } finally {
      // Idempotent after a drain; after a failure it stops whatever did start.
      runnablesStop.abort();
      await Promise.all(this.controllers.map((c) => c.stop(0)));
      await runnables;
      this.controllersRunning = false;
      // Release only after the drain, so no successor reconciles alongside our last reconciles.
      electionStop.abort();
      await election;
      loopCheck.stop();
      await Promise.all(informers.map((inf) => inf.stop()));
      await this.servers.stop();
      this.listeningDeferred.reject(new Error('manager stopped before its servers listened'));
      this.electedDeferred.reject(new Error('manager stopped before starting controllers'));
      this.logger.info('Manager stopped');
    }
  }

  private allInformers(): Informer<KubeObject>[] {
    const set = new Set<Informer<KubeObject>>();
    for (const c of this.controllers) for (const inf of c.informers) set.add(inf);
    return [...set];
  }

  private checkInformers(): void {
    const lagging = this.allInformers()
      .filter((inf) => !inf.hasSynced() || !inf.isWatching())
      .map((inf) => `${inf.kind.kind} (${inf.hasSynced() ? 'not watching' : 'not synced'})`);
    if (lagging.length > 0) throw new Error(`informers not ready: ${lagging.join(', ')}`);
  }
}

interface Deferred<T> {
  readonly promise: Promise<T>;
  resolve(value: T): void;
  reject(err: Error): void;
}

/** A promise settled from outside; settling twice is a no-op, rejections never go unhandled. */
function deferred<T>(): Deferred<T> {
  let resolve!: (v: T) => void;
  let reject!: (e: Error) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  promise.catch(() => undefined);
  return { promise, resolve, reject };
}

function aborted(signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
}
