/**
 * Prometheus metrics of the runtime under controller-runtime's names, so existing
 * dashboards and alerts work unchanged. Each `Metrics` owns its own registry (never the
 * global default), so several managers can live in one test process.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { UnfinishedWorkProbe, WorkQueueMetrics, WorkQueueMetricsProvider } from './workqueue';

export { registeredCounter } from './registered-counter';

/** Result label of `controller_runtime_reconcile_total`. */
export type ReconcileResult = 'success' | 'error' | 'requeue' | 'requeue_after';

/** What a controller's runner reports. */
export interface ControllerMetrics {
  reconciled(result: ReconcileResult, seconds: number): void;
  /** Any failed reconcile, terminal or not. */
  incErrors(): void;
  incTerminalErrors(): void;
  setActiveWorkers(n: number): void;
  setMaxConcurrentReconciles(n: number): void;
}

/** Options of `Metrics`. */
export interface MetricsOptions {
  /** Registry to register on. @default a new Registry */
  readonly registry?: Registry;
  /** Register Node's process metrics (`collectDefaultMetrics`). @default true */
  readonly defaultMetrics?: boolean;
}

/** Sampling period of the event-loop delay metrics, in ms. */
export const EVENT_LOOP_PRECISION_MS = 100;

// controller-runtime's buckets, so histogram_quantile queries line up with Go operators.
const RECONCILE_BUCKETS = [
  0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5,
  5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50, 60,
];
// client-go's workqueue buckets: ExponentialBuckets(10e-9, 10, 12).
const QUEUE_BUCKETS = Array.from({ length: 12 }, (_, i) => 1e-8 * 10 ** i);

/** The runtime's metrics on one registry; other modules register theirs on `registry`. */
export class Metrics implements WorkQueueMetricsProvider {
  /** Served at /metrics; REST client and provider metrics register here too. */
  readonly registry: Registry;

  private readonly reconcileTotal: Counter<'controller' | 'result'>;
  private readonly reconcileErrors: Counter<'controller'>;
  private readonly terminalErrors: Counter<'controller'>;
  private readonly reconcileTime: Histogram<'controller'>;
  private readonly activeWorkers: Gauge<'controller'>;
  private readonly maxConcurrent: Gauge<'controller'>;
  private readonly depth: Gauge<'name'>;
  private readonly priorityDepth: Gauge<'name' | 'priority'>;
  private readonly adds: Counter<'name'>;
  private readonly retries: Counter<'name'>;
  private readonly queueDuration: Histogram<'name'>;
  private readonly workDuration: Histogram<'name'>;
  private readonly leaderStatus: Gauge<'name'>;
  /** Read at scrape time, so in-flight work is current without a polling timer. */
  private readonly probes = new Map<string, UnfinishedWorkProbe>();

  constructor(opts: MetricsOptions = {}) {
    this.registry = opts.registry ?? new Registry();
    const registers = [this.registry];
    const probes = this.probes;

    this.reconcileTotal = new Counter({
      name: 'controller_runtime_reconcile_total',
      help: 'Total number of reconciliations per controller',
      labelNames: ['controller', 'result'],
      registers,
    });
    this.reconcileErrors = new Counter({
      name: 'controller_runtime_reconcile_errors_total',
      help: 'Total number of reconciliation errors per controller',
      labelNames: ['controller'],
      registers,
    });
    this.terminalErrors = new Counter({
      name: 'controller_runtime_terminal_reconcile_errors_total',
      help: 'Total number of terminal reconciliation errors per controller',
      labelNames: ['controller'],
      registers,
    });
    this.reconcileTime = new Histogram({
      name: 'controller_runtime_reconcile_time_seconds',
      help: 'Length of time per reconciliation per controller',
      labelNames: ['controller'],
      buckets: RECONCILE_BUCKETS,
      registers,
    });
    this.activeWorkers = new Gauge({
      name: 'controller_runtime_active_workers',
      help: 'Number of currently used workers per controller',
      labelNames: ['controller'],
      registers,
    });
    this.maxConcurrent = new Gauge({
      name: 'controller_runtime_max_concurrent_reconciles',
      help: 'Maximum number of concurrent reconciles per controller',
      labelNames: ['controller'],
      registers,
    });
    this.depth = new Gauge({ name: 'workqueue_depth', help: 'Current depth of workqueue', labelNames: ['name'], registers });
    // A separate series rather than a priority label on workqueue_depth, so existing
    // queries of workqueue_depth{name} keep returning one series.
    this.priorityDepth = new Gauge({
      name: 'workqueue_depth_by_priority',
      help: 'Current depth of workqueue by priority',
      labelNames: ['name', 'priority'],
      registers,
    });
    this.adds = new Counter({
      name: 'workqueue_adds_total',
      help: 'Total number of adds handled by workqueue',
      labelNames: ['name'],
      registers,
    });
    this.retries = new Counter({
      name: 'workqueue_retries_total',
      help: 'Total number of retries handled by workqueue',
      labelNames: ['name'],
      registers,
    });
    this.queueDuration = new Histogram({
      name: 'workqueue_queue_duration_seconds',
      help: 'How long in seconds an item stays in workqueue before being requested',
      labelNames: ['name'],
      buckets: QUEUE_BUCKETS,
      registers,
    });
    this.workDuration = new Histogram({
      name: 'workqueue_work_duration_seconds',
      help: 'How long in seconds processing an item from workqueue takes',
      labelNames: ['name'],
      buckets: QUEUE_BUCKETS,
      registers,
    });
    new Gauge({
      name: 'workqueue_unfinished_work_seconds',
      help: "How many seconds of work has been done that is in progress and hasn't been observed by work_duration",
      labelNames: ['name'],
      registers,
      collect() {
        for (const [name, probe] of probes) this.set({ name }, probe.unfinishedWorkSeconds());
      },
    });
    new Gauge({
      name: 'workqueue_longest_running_processor_seconds',
      help: 'How many seconds has the longest running processor for workqueue been running',
      labelNames: ['name'],
      registers,
      collect() {
        for (const [name, probe] of probes) this.set({ name }, probe.longestRunningProcessorSeconds());
      },
    });
    this.leaderStatus = new Gauge({
      name: 'leader_election_master_status',
      help: 'Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master',
      labelNames: ['name'],
      registers,
    });
    // The event-loop delay monitor samples on a timer: prom-client's default 10 ms woke an idle
    // operator 100 times a second, 0.7 % of a core measured at rest (0.1 % at 100 ms); lags that
    // matter (an alert's) are far above 100 ms.
    if (opts.defaultMetrics ?? true) collectDefaultMetrics({ register: this.registry, eventLoopMonitoringPrecision: EVENT_LOOP_PRECISION_MS });
  }

  /** Metrics sink for the workqueue named `name` (implements `WorkQueueMetricsProvider`). */
  workqueue(name: string, probe: UnfinishedWorkProbe): WorkQueueMetrics {
    this.probes.set(name, probe);
    const labels = { name };
    // Touch every series so dashboards see zeros before the first event.
    this.depth.set(labels, 0);
    this.adds.inc(labels, 0);
    this.retries.inc(labels, 0);
    return {
      setDepth: (n) => this.depth.set(labels, n),
      setPriorityDepth: (priority, n) => this.priorityDepth.set({ name, priority: String(priority) }, n),
      incAdds: () => this.adds.inc(labels),
      incRetries: () => this.retries.inc(labels),
      observeQueueDuration: (s) => this.queueDuration.observe(labels, s),
      observeWorkDuration: (s) => this.workDuration.observe(labels, s),
    };
  }

  /** Metrics sink for the controller named `controller`. */
  controller(controller: string): ControllerMetrics {
    const labels = { controller };
    for (const result of ['success', 'error', 'requeue', 'requeue_after'] as const) {
      this.reconcileTotal.inc({ controller, result }, 0);
    }
    this.reconcileErrors.inc(labels, 0);
    this.terminalErrors.inc(labels, 0);
    this.activeWorkers.set(labels, 0);
    return {
      reconciled: (result, seconds) => {
        this.reconcileTotal.inc({ controller, result });
        this.reconcileTime.observe(labels, seconds);
      },
      incErrors: () => this.reconcileErrors.inc(labels),
      incTerminalErrors: () => this.terminalErrors.inc(labels),
      setActiveWorkers: (n) => this.activeWorkers.set(labels, n),
      setMaxConcurrentReconciles: (n) => this.maxConcurrent.set(labels, n),
    };
  }

  /** Sets `leader_election_master_status{name}` (1 leader, 0 backup). */
  setLeader(name: string, isLeader: boolean): void {
    this.leaderStatus.set({ name }, isLeader ? 1 : 0);
  }

  /** The exposition text, as served at /metrics. */
  async text(): Promise<string> {
    return this.registry.metrics();
  }
}
