/**
 * The drift scanner: once per drift interval, on the leader only, lists each provider account's
 * managed buckets in pages (one call per 1,000 buckets instead of one GET per bucket), compares
 * them with the cache and sends the buckets that differ to the StorageBucket controller. Those
 * reconciles observe the bucket at the provider and correct it; every other Ready bucket is
 * left alone, trusting its status.
 */
import type { Logger } from 'pino';
import type { StorageBucket } from '../api/v1';
import { isProviderError } from '../provider-client';
import { KeyChannel, keyOf, realClock, sleep, type Cache, type Clock, type Manager, type Runnable } from '../runtime';
import { connect, ConnectError, type ConnectDeps, type Connection } from './connect';
import { compare, DriftReports, type DriftFinding } from './drift';
import { statusTrusted } from './plan';
import { MANAGED_FILTER } from './tags';

/** Dependencies of {@link DriftScanner}. */
export interface DriftScannerDeps extends ConnectDeps {
  readonly buckets: Cache<StorageBucket>;
  /** Where findings are kept for the reconciler. */
  readonly reports: DriftReports;
  /** The StorageBucket controller's channel. */
  readonly channel: KeyChannel;
  readonly logger: Logger;
  /** Time between the end of one scan and the start of the next. @default 60000 */
  readonly intervalMs?: number;
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
}

/** Lists the provider in bulk every drift interval and enqueues the buckets that differ. */
export class DriftScanner implements Runnable {
  readonly name = 'drift-scanner';
  private readonly intervalMs: number;
  private readonly clock: Clock;

  constructor(private readonly d: DriftScannerDeps) {
    this.intervalMs = d.intervalMs ?? 60_000;
    this.clock = d.clock ?? realClock;
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

  /** One pass over every account; sends each finding to the controller. */
  async scan(signal?: AbortSignal): Promise<ScanSummary> {
    const groups = await this.groups();
    const findings: DriftFinding[] = [];
    let failedAccounts = 0;
    for (const [account, group] of groups) {
      let found: DriftFinding[];
      try {
        const listed = await group.conn.client.listBuckets({ tags: MANAGED_FILTER }, signal);
        found = compare(group.buckets, listed, group.conn.endpoint);
      } catch (err) {
        if (signal?.aborted || !isProviderError(err)) throw err;
        failedAccounts += 1;
        this.d.logger.info({ err, endpoint: group.conn.endpoint, buckets: group.buckets.length }, 'Drift scan could not list the provider');
        // Rejected credentials are for each bucket to report in its status; any other failure
        // keeps the previous findings until the next scan.
        if (!err.isAuthError) continue;
        found = group.buckets.map((b) => ({ key: keyOf(b), id: b.status?.id ?? '', reason: 'missing' as const }));
      }
      this.d.reports.record(account, found);
      findings.push(...found);
    }
    this.d.reports.retain(new Set(groups.keys()));
    for (const f of findings) {
      this.d.logger.debug({ namespace: f.key.namespace, name: f.key.name, bucketID: f.id, reason: f.reason }, 'Drift found; reconciling');
      this.d.channel.send(f.key);
    }
    return { accounts: groups.size - failedAccounts, failedAccounts, findings };
  }

  /** The buckets that trust their status, by provider account. */
  private async groups(): Promise<Map<string, Group>> {
    const groups = new Map<string, Group>();
    const byConfig = new Map<string, Connection | undefined>();
    for (const bucket of this.d.buckets.list()) {
      if (bucket.metadata.deletionTimestamp || !bucket.status?.providerEndpoint) continue;
      const configKey = `${bucket.metadata.namespace ?? ''}/${bucket.spec.providerRef.name}`;
      if (!byConfig.has(configKey)) byConfig.set(configKey, await this.connect(bucket));
      const conn = byConfig.get(configKey);
      if (!conn || !statusTrusted(bucket, conn.endpoint)) continue;
      let group = groups.get(conn.account);
      if (!group) {
        group = { conn, buckets: [] };
        groups.set(conn.account, group);
      }
      group.buckets.push(bucket);
    }
    return groups;
  }

  private async connect(bucket: StorageBucket): Promise<Connection | undefined> {
    try {
      return await connect(this.d, bucket);
    } catch (err) {
      // A bucket without a usable config says so in its own status; nothing to list for it.
      if (err instanceof ConnectError) return undefined;
      throw err;
    }
  }
}

/** Options of {@link driftScan}. */
export interface DriftScanOptions extends ConnectDeps {
  readonly buckets: Cache<StorageBucket>;
  /** @default 60000 */
  readonly intervalMs?: number;
}

/**
 * Registers a drift scanner on `mgr` (leader only) and returns what the StorageBucket
 * controller needs from it: the channel to watch and the findings its reconciler consults.
 */
export function driftScan(mgr: Manager, opts: DriftScanOptions): { channel: KeyChannel; reports: DriftReports } {
  const channel = new KeyChannel();
  const reports = new DriftReports();
  mgr.addRunnable(new DriftScanner({ ...opts, reports, channel, logger: mgr.logger.child({ component: 'drift-scanner' }), clock: mgr.clock }));
  return { channel, reports };
}
