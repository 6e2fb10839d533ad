/**
 * The drift scanner: once per drift interval, on the leader only, lists each provider account's
 * managed buckets in pages (one call per 1,000 buckets instead of one GET per bucket), compares
 * them with the cache and sends the buckets that differ to the StorageBucket controller. Those
 * reconciles observe the bucket at the provider and correct it; every other Ready bucket is
 * left alone, trusting its status.
 *
 * No tenant's endpoint can take the scan from the others (issue 32). Each account's list has a
 * deadline well inside the interval (a quarter of it, at most 30 s), on the injected clock. The
 * scan slots are shared out by flow, as the work queue shares its workers: the flow of an account
 * is the namespaces of the configs that reach it, so a tenant with many slow accounts holds at
 * most its share of the slots (`flowShare`) while another tenant's account waits, and the
 * tenants take turns; a slot nobody else wants is still used. An account's findings are recorded
 * and sent the moment its own list ends, not when the slowest account's does.
 */
import type { Logger } from 'pino';
import type { Counter, Registry } from 'prom-client';
import { BucketMetric } from '../api/metric-names';
import type { BucketProviderConfig, StorageBucket } from '../api/v1';
import { isProviderError, LIST_PAGE_LIMIT, NOT_JSON, UNUSABLE_LIST } from '../provider-client';
import { flowShare, KeyChannel, keyOf, realClock, registeredCounter, sleep, type Cache, type Clock, type Manager, type Runnable } from '../runtime';
import { connect, ConnectError, type ConnectDeps, type Connection } from './connect';
import { compare, DriftReports, type DriftFinding } from './drift';
import { ScanStates, type ScanFailureReason, type ScanState } from './drift-scan-state';
import { statusTrusted } from './plan';
import { MANAGED_FILTER } from './tags';
import type { EventSink } from './writer';

/** Dependencies of {@link DriftScanner}. */
export interface DriftScannerDeps extends ConnectDeps {
  readonly buckets: Cache<StorageBucket>;
  /** This cluster's identity: a listed bucket without it in its owner tags has drifted. */
  readonly clusterId: string;
  /** Where findings are kept for the reconciler. */
  readonly reports: DriftReports;
  /** The StorageBucket controller's channel. */
  readonly channel: KeyChannel;
  readonly logger: Logger;
  /** Time between the end of one scan and the start of the next. @default 60000 */
  readonly intervalMs?: number;
  /**
   * How long one account's list may take, all pages together. @default {@link defaultAccountDeadlineMs}
   * of the interval: a quarter of it, at least 1 s and at most 30 s
   */
  readonly accountDeadlineMs?: number;
  /**
   * Accounts listed at once (scan slots). While another tenant's account waits, one tenant's
   * accounts hold at most an equal share of them. @default 4
   */
  readonly concurrency?: number;
  /** Each config's latest scan outcome, for the config controller to report. @default a private one */
  readonly states?: ScanStates;
  /** The config controller's channel: a config whose scan outcome changed is sent there. */
  readonly configChannel?: KeyChannel;
  /** Warning and recovery Events on the config whose account's scan failed. */
  readonly events?: EventSink;
  /** Registers `bucketoperator_drift_scan_failures_total{reason}`. */
  readonly registry?: Registry;
  /** @default realClock */
  readonly clock?: Clock;
}

/** What one scan did, for logs and tests. */
export interface ScanSummary {
  /** Provider accounts listed successfully. */
  readonly accounts: number;
  /** Accounts whose list failed; their previous findings stand. */
  readonly failedAccounts: number;
  readonly findings: readonly DriftFinding[];
}

interface Group {
  readonly conn: Connection;
  readonly buckets: StorageBucket[];
  /** The configs whose buckets are in this account, by `namespace/name`. */
  readonly configs: Map<string, BucketProviderConfig>;
}

/** One account's outcome: findings to record (unless undefined: keep the previous ones) and its state. */
interface AccountOutcome {
  readonly findings?: DriftFinding[];
  readonly state: ScanState;
}

/** Event reasons of the scan, on BucketProviderConfigs. */
export const ScanEventReason = { DriftScanFailed: 'DriftScanFailed', DriftScanRecovered: 'DriftScanRecovered' } as const;

/**
 * Lists the provider in bulk every drift interval and enqueues the buckets that differ. Every
 * account is scanned on its own: with its own deadline and page limit, a few at a time, so an
 * account whose provider answers slowly, with something that is not a list, or with paging that
 * never ends stops only its own scan (shown on its configs' status, an Event and a metric), and
 * every other account is still scanned on time.
 */
export class DriftScanner implements Runnable {
  readonly name = 'drift-scanner';
  private readonly intervalMs: number;
  private readonly deadlineMs: number;
  private readonly concurrency: number;
  private readonly clock: Clock;
  private readonly states: ScanStates;
  private readonly failures?: Counter<'reason'>;

  constructor(private readonly d: DriftScannerDeps) {
    this.intervalMs = d.intervalMs ?? 60_000;
    this.deadlineMs = d.accountDeadlineMs ?? defaultAccountDeadlineMs(this.intervalMs);
    this.concurrency = Math.max(1, d.concurrency ?? 4);
    this.clock = d.clock ?? realClock;
    this.states = d.states ?? new ScanStates();
    if (d.registry) this.failures = driftScanFailures(d.registry);
  }

  /** Scans at once (a new leader knows nothing of the provider yet), then every interval. */
  async start(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      try {
        await this.scan(signal);
      } catch (err) {
        if (signal.aborted) return;
        this.d.logger.error({ err }, 'Drift scan failed');
      }
      await sleep(this.clock, this.intervalMs, signal).catch(() => undefined);
    }
  }

  /** One pass over every account; sends each account's findings to the controller as its list ends. */
  async scan(signal?: AbortSignal): Promise<ScanSummary> {
    const groups = await this.groups(signal);
    const findings: DriftFinding[] = [];
    let failedAccounts = 0;
    await runByFlow(
      [...groups.entries()],
      ([, group]) => scanFlow(group),
      this.concurrency,
      async ([account, group]) => {
        const outcome = await this.scanAccount(group, signal);
        signal?.throwIfAborted();
        if (!outcome.state.ok) failedAccounts += 1;
        if (outcome.findings) {
          // Recorded before it is sent: the reconcile the key starts consults the record.
          this.d.reports.record(account, outcome.findings);
          findings.push(...outcome.findings);
        }
        for (const [configKey, config] of group.configs) this.report(configKey, config, outcome.state);
        for (const f of outcome.findings ?? []) {
          this.d.logger.debug({ namespace: f.key.namespace, name: f.key.name, bucketID: f.id, reason: f.reason }, 'Drift found; reconciling');
          this.d.channel.send(f.key);
        }
      },
    );
    signal?.throwIfAborted();
    this.d.reports.retain(new Set(groups.keys()));
    this.states.retain(new Set([...groups.values()].flatMap((g) => [...g.configs.keys()])));
    return { accounts: groups.size - failedAccounts, failedAccounts, findings };
  }

  /** Lists one account within its deadline; never throws except when `signal` (the stop) fired. */
  private async scanAccount(group: Group, signal: AbortSignal | undefined): Promise<AccountOutcome> {
    // On the injected clock, as the interval is: the deadline is the scanner's own time.
    const deadline = new AbortController();
    const timer = this.clock.setTimeout(
      () => deadline.abort(new DOMException(`drift scan of an account passed its ${this.deadlineMs} ms deadline`, 'TimeoutError')),
      this.deadlineMs,
    );
    const both = signal ? AbortSignal.any([signal, deadline.signal]) : deadline.signal;
    // Twice the pages the cached buckets need, and room for what other clusters keep there:
    // more than that is paging that does not end.
    const maxPages = Math.max(100, 2 * Math.ceil(group.buckets.length / LIST_PAGE_LIMIT));
    try {
      const listed = await group.conn.client.listBuckets({ tags: MANAGED_FILTER }, both, { maxPages });
      return { findings: compare(group.buckets, listed, group.conn.endpoint, this.d.clusterId), state: { ok: true } };
    } catch (err) {
      signal?.throwIfAborted();
      const state = scanFailure(err, deadline.signal.aborted, this.deadlineMs);
      this.failures?.inc({ reason: state.reason });
      this.d.logger.info(
        { err, endpoint: group.conn.endpoint, buckets: group.buckets.length, reason: state.reason },
        'Drift scan of an account failed',
      );
      // Rejected credentials are for each bucket to report in its status; any other failure
      // keeps the previous findings until the next scan.
      const findings =
        isProviderError(err) && err.isAuthError
          ? group.buckets.map((b) => ({ key: keyOf(b), id: b.status?.id ?? '', reason: 'missing' as const }))
          : undefined;
      return { ...(findings ? { findings } : {}), state };
    } finally {
      this.clock.clearTimeout(timer);
    }
  }

  /** Records a config's outcome; a change goes to the config controller and, when it fails or recovers, an Event. */
  private report(configKey: string, config: BucketProviderConfig, state: ScanState): void {
    const before = this.states.get(configKey);
    if (!this.states.set(configKey, state)) return;
    const [namespace = '', name = ''] = configKey.split('/');
    this.d.configChannel?.send({ namespace, name });
    if (!state.ok) this.d.events?.event(config, 'Warning', ScanEventReason.DriftScanFailed, 'DriftScan', state.message);
    else if (before && !before.ok) {
      this.d.events?.event(config, 'Normal', ScanEventReason.DriftScanRecovered, 'DriftScan', 'drift scan of the provider account succeeded again');
    }
  }

  /** The buckets that trust their status, by provider account, with the configs they come through. */
  private async groups(signal: AbortSignal | undefined): Promise<Map<string, Group>> {
    const groups = new Map<string, Group>();
    const byConfig = new Map<string, Connection | undefined>();
    for (const bucket of this.d.buckets.list()) {
      if (bucket.metadata.deletionTimestamp || !bucket.status?.providerEndpoint) continue;
      const configKey = `${bucket.metadata.namespace ?? ''}/${bucket.spec.providerRef.name}`;
      if (!byConfig.has(configKey)) byConfig.set(configKey, await this.connect(bucket, signal));
      const conn = byConfig.get(configKey);
      if (!conn || !statusTrusted(bucket, { endpoint: conn.endpoint })) continue;
      let group = groups.get(conn.account);
      if (!group) {
        group = { conn, buckets: [], configs: new Map() };
        groups.set(conn.account, group);
      }
      group.buckets.push(bucket);
      group.configs.set(configKey, conn.config);
    }
    return groups;
  }

  private async connect(bucket: StorageBucket, signal: AbortSignal | undefined): Promise<Connection | undefined> {
    try {
      return await connect(this.d, bucket, signal);
    } catch (err) {
      // A bucket without a usable config says so in its own status; nothing to list for it.
      if (err instanceof ConnectError) return undefined;
      throw err;
    }
  }
}

/**
 * Default deadline of one account's list: a quarter of the drift interval (at least 1 s, at
 * most 30 s), so a slow account is given up well before the next scan is due.
 */
export function defaultAccountDeadlineMs(intervalMs: number): number {
  return Math.min(30_000, Math.max(1000, Math.floor(intervalMs / 4)));
}

/**
 * The flow of an account's scan: the namespaces of the configs that reach it. A tenant's own
 * accounts share its flow however many it makes; an account two tenants reach is a flow of its own.
 */
function scanFlow(group: Group): string {
  const namespaces = new Set<string>();
  for (const configKey of group.configs.keys()) namespaces.add(configKey.slice(0, configKey.indexOf('/')));
  return [...namespaces].sort().join(',');
}

/**
 * Runs `task` on every item, at most `slots` at once, the flows taking turns: a free slot goes
 * to the next flow in turn that holds fewer than `flowShare(slots, active flows)` slots, so while
 * another flow waits no flow holds more than its share. When every waiting flow is at its share
 * the slot still goes to the next in turn: no slot idles while an item waits. Rejects with the
 * first rejection of a task (the others run on, as under `Promise.all`).
 */
async function runByFlow<T>(items: readonly T[], flowOf: (item: T) => string, slots: number, task: (item: T) => Promise<void>): Promise<void> {
  /** Items not started, by flow; the Map's order is the order of turns. */
  const waiting = new Map<string, T[]>();
  for (const item of items) {
    const flow = flowOf(item);
    const list = waiting.get(flow);
    if (list) list.push(item);
    else waiting.set(flow, [item]);
  }
  /** Slots held, by flow. */
  const running = new Map<string, number>();
  /** Flows with items waiting or running. */
  let active = waiting.size;
  let inFlight = 0;
  const pick = (): [string, T] | undefined => {
    const cap = flowShare(slots, active);
    let chosen: string | undefined;
    // A flow at its share holds at least one slot, so this passes over at most `slots` flows.
    for (const flow of waiting.keys()) {
      if ((running.get(flow) ?? 0) < cap) {
        chosen = flow;
        break;
      }
    }
    chosen ??= waiting.keys().next().value;
    const list = chosen === undefined ? undefined : waiting.get(chosen);
    const item = list?.shift();
    if (chosen === undefined || list === undefined || item === undefined) return undefined;
    // To the back of the turns, or out of them once it has nothing left to start.
    waiting.delete(chosen);
    if (list.length > 0) waiting.set(chosen, list);
    return [chosen, item];
  };
  await new Promise<void>((resolve, reject) => {
    const fill = (): void => {
      for (let next = inFlight < slots ? pick() : undefined; next; next = inFlight < slots ? pick() : undefined) {
        const [flow, item] = next;
        inFlight++;
        running.set(flow, (running.get(flow) ?? 0) + 1);
        task(item).then(() => {
          inFlight--;
          const left = (running.get(flow) ?? 1) - 1;
          if (left > 0) running.set(flow, left);
          else running.delete(flow);
          if (left === 0 && !waiting.has(flow)) active--;
          fill();
        }, reject);
      }
      if (inFlight === 0 && waiting.size === 0) resolve();
    };
    fill();
  });
}

/** Registers (or reuses) `bucketoperator_drift_scan_failures_total{reason}` on `registry`. */
export function driftScanFailures(registry: Registry): Counter<'reason'> {
  const help = "Provider accounts whose drift scan failed, by reason; each failure stops only that account's scan.";
  return registeredCounter(registry, BucketMetric.driftScanFailures, help, ['reason']);
}

/** Why an account's list failed, as the config's condition and the metric say it (pure). */
export function scanFailure(err: unknown, deadlineExceeded: boolean, deadlineMs: number): Extract<ScanState, { ok: false }> {
  const fail = (reason: ScanFailureReason, message: string) => ({ ok: false as const, reason, message: `drift scan: ${message}` });
  if (deadlineExceeded) return fail('DeadlineExceeded', `listing the provider account took longer than ${deadlineMs} ms`);
  if (!isProviderError(err)) return fail('UnusableAnswer', 'the provider answered with something that is not a bucket list');
  if (err.code.startsWith(UNUSABLE_LIST) || err.code === NOT_JSON) return fail('UnusableAnswer', err.message);
  if (err.isAuthError) return fail('CredentialsRejected', `the provider rejected the API key (HTTP ${err.status})`);
  if (err.status === 0) return fail('Unreachable', err.message);
  return fail('ProviderError', `the provider answered HTTP ${err.status}`);
}

/** Options of {@link driftScan}. */
export interface DriftScanOptions extends ConnectDeps {
  readonly buckets: Cache<StorageBucket>;
  /** This cluster's identity (see {@link DriftScannerDeps.clusterId}). */
  readonly clusterId: string;
  /** Warning and recovery Events on configs. */
  readonly events?: EventSink;
  /** @default 60000 */
  readonly intervalMs?: number;
}

/**
 * Registers a drift scanner on `mgr` (leader only) and returns what the StorageBucket
 * controller needs from it: the channel to watch and the findings its reconciler consults.
 */
export function driftScan(
  mgr: Manager,
  opts: DriftScanOptions,
): { channel: KeyChannel; reports: DriftReports; configChannel: KeyChannel; states: ScanStates } {
  const channel = new KeyChannel();
  const configChannel = new KeyChannel();
  const reports = new DriftReports();
  const states = new ScanStates();
  mgr.addRunnable(
    new DriftScanner({
      ...opts,
      reports,
      channel,
      configChannel,
      states,
      registry: mgr.metrics.registry,
      logger: mgr.logger.child({ component: 'drift-scanner' }),
      clock: mgr.clock,
    }),
  );
  return { channel, reports, configChannel, states };
}
