/**
 * Watches the operator's Lease from outside, as a second replica would: every renewal shows as
 * a new `spec.renewTime`. A leader renews every retry period (2 s); a gap between two renewals
 * longer than 1.5 retry periods is a renewal that did not happen in time, whatever the operator
 * itself logs. The monitor reads the Lease with the harness's admin client, never the operator's.
 */
import { Leases, type Lease } from '../../operator/runtime/leader-election';
import type { KubeClient } from '../../operator/runtime/client';

/** What the monitor saw between start and stop. */
export interface LeaseReport {
  /** Distinct renewTime values seen. */
  readonly renewals: number;
  /** Renewals that should have happened but did not: sum over gaps of (gap / period - 1), for gaps over 1.5 periods. */
  readonly missed: number;
  /** Longest time between two renewals, in seconds. */
  readonly maxGapSeconds: number;
  /** How often the holder identity changed (a lost lease, or a restarted operator). */
  readonly holderChanges: number;
}

/**
 * Gaps between consecutive renewals -> the report's figures. Pure, so the counting rule is
 * unit-tested without a cluster.
 */
export function summarizeRenewals(renewTimesMs: readonly number[], holders: readonly string[], periodMs: number): LeaseReport {
  let missed = 0;
  let maxGap = 0;
  for (let i = 1; i < renewTimesMs.length; i++) {
    const gap = (renewTimesMs[i] ?? 0) - (renewTimesMs[i - 1] ?? 0);
    maxGap = Math.max(maxGap, gap);
    if (gap > 1.5 * periodMs) missed += Math.max(1, Math.round(gap / periodMs) - 1);
  }
  let holderChanges = 0;
  for (let i = 1; i < holders.length; i++) if (holders[i] !== holders[i - 1]) holderChanges += 1;
  return { renewals: renewTimesMs.length, missed, maxGapSeconds: Math.round(maxGap / 100) / 10, holderChanges };
}

/** Polls one Lease until stopped. */
export class LeaseMonitor {
  private readonly times: number[] = [];
  private readonly holders: string[] = [];
  private lastRenew = '';
  private timer?: NodeJS.Timeout;
  private inFlight?: Promise<void>;
  private stopped = false;

  constructor(
    private readonly client: KubeClient,
    private readonly namespace: string,
    private readonly name: string,
    /** The operator's retry period (controller-runtime's 2 s). */
    private readonly periodMs = 2000,
  ) {}

  /** Starts polling at a quarter of the renew period, so no renewal goes unseen. */
  start(): this {
    const tick = (): void => {
      this.inFlight = this.poll().finally(() => {
        if (!this.stopped) this.timer = setTimeout(tick, this.periodMs / 4);
      });
    };
    tick();
    return this;
  }

  /** Stops polling and reports. */
  async stop(): Promise<LeaseReport> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.inFlight;
    return summarizeRenewals(this.times, this.holders, this.periodMs);
  }

  private async poll(): Promise<void> {
    try {
      const lease = await this.client.get<Lease>(Leases, this.namespace, this.name);
      const renew = lease.spec?.renewTime ?? '';
      if (!renew || renew === this.lastRenew) return;
      this.lastRenew = renew;
      this.times.push(Date.parse(renew));
      this.holders.push(lease.spec?.holderIdentity ?? '');
    } catch {
      // Not created yet, or the API server was busy: the next poll sees the same renewTime or a newer one.
    }
  }
}
