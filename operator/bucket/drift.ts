/**
 * The bulk drift check, pure part: which of the buckets that trust their status (see
 * {@link statusTrusted}) the provider's list contradicts, and the latest findings, kept for
 * the reconciler, which observes a bucket at the provider only when the scan named it.
 */
import type { StorageBucket } from '../api/v1';
import type { ProviderBucket } from '../provider-client';
import { keyOf, keyString, type ObjectKey } from '../runtime';
import { diff, statusTrusted } from './plan';

/** Why a bucket needs a reconcile with a provider observation. */
export type DriftReason =
  /** Not in the list: deleted at the provider, or it lost the managed-by tag. */
  | 'missing'
  /** Provisioning or Resizing although the status says Ready. */
  | 'notActive'
  /** Size, encryption or the operator's tags differ from the spec. */
  | 'drifted'
  /** The provider reports another size, endpoint or account than the status shows. */
  | 'statusStale';

/** One bucket the scan wants reconciled. */
export interface DriftFinding {
  readonly key: ObjectKey;
  readonly id: string;
  readonly reason: DriftReason;
}

/**
 * Compares `cached` buckets (those whose BucketProviderConfig points at `endpoint`) with
 * `listed`, the provider's list of the buckets it holds there. Buckets that do not trust
 * their status are skipped: they are mid-transition, failing or waiting, and their own
 * requeues already ask the provider.
 */
export function compare(cached: readonly StorageBucket[], listed: readonly ProviderBucket[], endpoint: string, clusterId: string): DriftFinding[] {
  const byId = new Map(listed.map((b) => [b.id, b]));
  const findings: DriftFinding[] = [];
  for (const bucket of cached) {
    if (bucket.metadata.deletionTimestamp || !statusTrusted(bucket, { endpoint })) continue;
    const status = bucket.status ?? {};
    const id = status.id ?? '';
    const external = byId.get(id);
    const reason = verdict(bucket, external, clusterId);
    if (reason) findings.push({ key: keyOf(bucket), id, reason });
  }
  return findings;
}

function verdict(bucket: StorageBucket, external: ProviderBucket | undefined, clusterId: string): DriftReason | undefined {
  if (!external) return 'missing';
  if (external.phase !== 'Active') return 'notActive';
  if (diff(bucket, external, clusterId)) return 'drifted';
  const status = bucket.status;
  // A status without the account (written before it was recorded) is filled in once, so a
  // later change of account is told from a vanished bucket.
  const accountStale = external.account !== undefined && external.account !== status?.account;
  if (external.sizeGB !== status?.sizeGB || external.endpoint !== status.endpoint || accountStale) return 'statusStale';
  return undefined;
}

/**
 * The latest scan's findings, per provider account. Only the scanner writes; a reconcile
 * reads. An entry stays until the next scan of its account, so a bucket named by the scan is
 * observed (not trusted) by every reconcile until a later list shows it fine again; that costs
 * at most a few GETs for a drifted bucket, and no finding is lost to a race with a reconcile.
 */
export class DriftReports {
  private readonly byAccount = new Map<string, ReadonlySet<string>>();

  /** Replaces the findings of `account` with `findings`. */
  record(account: string, findings: readonly DriftFinding[]): void {
    if (findings.length === 0) this.byAccount.delete(account);
    else this.byAccount.set(account, new Set(findings.map((f) => keyString(f.key))));
  }

  /** Drops the findings of accounts no bucket uses any more. */
  retain(accounts: ReadonlySet<string>): void {
    for (const account of [...this.byAccount.keys()]) if (!accounts.has(account)) this.byAccount.delete(account);
  }

  /** True when the latest scan named `key`. */
  reported(key: ObjectKey): boolean {
    const k = keyString(key);
    for (const keys of this.byAccount.values()) if (keys.has(k)) return true;
    return false;
  }
}
