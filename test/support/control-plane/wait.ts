import { setTimeout as sleep } from 'node:timers/promises';

/** Options of {@link waitFor}. */
export interface WaitForOptions {
  /** Names what is awaited, for the timeout error. */
  description: string;
  /** @default 30000 */
  timeoutMs?: number;
  /** @default 100 */
  intervalMs?: number;
  /** Checked before each attempt; a returned string aborts the wait with that reason. */
  abortIf?: () => string | undefined;
}

/**
 * Calls `attempt` until it returns a value other than `undefined`, and returns that value.
 * A thrown error counts as "not yet" (an object not created yet, a server still starting);
 * the last one becomes the cause of the timeout error, which is what explains a failed wait.
 */
export async function waitFor<T>(attempt: () => Promise<T | undefined>, opts: WaitForOptions): Promise<T> {
  const deadline = Date.now() + (opts.timeoutMs ?? 30_000);
  let lastError: unknown;
  for (;;) {
    const aborted = opts.abortIf?.();
    if (aborted !== undefined) throw new Error(`gave up waiting for ${opts.description}: ${aborted}`);
    try {
      const value = await attempt();
      if (value !== undefined) return value;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() >= deadline) {
      const reason = lastError instanceof Error ? `: ${lastError.message}` : '';
      throw new Error(`timed out waiting for ${opts.description}${reason}`, { cause: lastError });
    }
    await sleep(opts.intervalMs ?? 100);
  }
}
