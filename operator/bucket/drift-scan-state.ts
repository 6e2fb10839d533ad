/**
 * Each BucketProviderConfig's latest drift-scan outcome, kept in memory between the scanner,
 * which writes it, and the config controller, which reports it in the config's status. The
 * scanner never writes the config itself: one status patch per config, by one controller.
 */
import type { ConditionInput } from '../runtime';

/** Why an account's scan failed. */
export type ScanFailureReason = 'DeadlineExceeded' | 'UnusableAnswer' | 'CredentialsRejected' | 'Unreachable' | 'ProviderError';

/** The outcome of the latest scan of a config's provider account. */
export type ScanState = { readonly ok: true } | { readonly ok: false; readonly reason: ScanFailureReason; readonly message: string };

/** Condition type on BucketProviderConfig: whether the last drift scan of its account worked. */
export const DRIFT_SCAN_CONDITION = 'DriftScanned';
/** Reason of a DriftScanned=True condition. */
export const SCAN_SUCCEEDED_REASON = 'ScanSucceeded';
/** Reason of a DriftScanned=False condition; the message says what went wrong. */
export const SCAN_FAILED_REASON = 'DriftScanFailed';

/** Scan outcomes by config `namespace/name`. */
export class ScanStates {
  private readonly byConfig = new Map<string, ScanState>();

  /** The latest outcome, or undefined before the first scan of the config's account. */
  get(configKey: string): ScanState | undefined {
    return this.byConfig.get(configKey);
  }

  /** Records `state`; true when it differs from what was recorded. */
  set(configKey: string, state: ScanState): boolean {
    const before = this.byConfig.get(configKey);
    this.byConfig.set(configKey, state);
    return !before || before.ok !== state.ok || (!before.ok && !state.ok && (before.reason !== state.reason || before.message !== state.message));
  }

  /** Forgets configs no scanned bucket uses any more. */
  retain(configKeys: ReadonlySet<string>): void {
    for (const key of [...this.byConfig.keys()]) if (!configKeys.has(key)) this.byConfig.delete(key);
  }
}

/** The DriftScanned condition for `state`; setCondition adds the transition time. */
export function scanCondition(state: ScanState, observedGeneration: number | undefined): ConditionInput {
  const base = { type: DRIFT_SCAN_CONDITION, ...(observedGeneration !== undefined ? { observedGeneration } : {}) };
  return state.ok
    ? { ...base, status: 'True', reason: SCAN_SUCCEEDED_REASON, message: '' }
    : { ...base, status: 'False', reason: SCAN_FAILED_REASON, message: `${state.reason}: ${state.message}` };
}
