/**
 * The one way tests wait for something: {@link eventually}. Unit tests (fakes, in-memory
 * servers), integration tests (objects, provider buckets, metrics) and the support code that
 * starts processes all poll through it, so every timeout reads the same and says why.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { inspect } from 'node:util';

/** Options of {@link eventually}. */
export interface EventuallyOptions {
  /**
   * What is awaited, phrased to follow "waiting for", e.g. `'StorageBucket a to be Ready'`.
   * @default the source text of the check
   */
  readonly description?: string;
  /** Give up after this long. Pick it below the mocha timeout, so the failure is this one's. */
  readonly timeoutMs: number;
  /** Pause between two attempts. @default 100 */
  readonly intervalMs?: number;
  /** Asked before each attempt: a returned string ends the wait at once, with that reason. */
  readonly abortIf?: () => string | undefined;
}

/** What a check returned once it passed: anything but `undefined` and `false`. */
export type Passed<T> = Exclude<T, undefined | false>;

const MAX_SHOWN = 600;
const NOTHING_RETURNED = ' (every attempt returned undefined: if the check is an assertion, end its block with `return true`)';

function show(value: unknown): string {
  const text = inspect(value, { depth: 3, breakLength: Infinity });
  return text.length > MAX_SHOWN ? `${text.slice(0, MAX_SHOWN)}...` : text;
}

/**
 * Runs `check` until it passes and returns what it returned. A check is any of:
 * - an assertion, which throws (e.g. a chai `expect`) until it holds;
 * - a predicate, which returns `false` until it holds;
 * - a lookup, which returns `undefined` until the thing exists, then the thing.
 *
 * A thrown error is "not yet" for every kind, so a lookup may fail while a server starts.
 * On timeout (or `abortIf`) the error names the description, the time waited and the last
 * failure: the error thrown (also kept as `cause`) or the value returned.
 *
 * A check with a block body that only asserts returns `undefined` and so never passes: end it
 * with `return true` (the timeout message says so when every attempt returned `undefined`).
 *
 * @example await eventually(() => expect(queue.len()).to.equal(0), { description: 'the queue to drain', timeoutMs: 2000, intervalMs: 5 })
 * @example const b = await eventually(async () => { const x = await getJson(...); return x && isReady(x) ? x : undefined }, { description: 'b to be Ready', timeoutMs: 60_000 })
 */
export async function eventually<T>(check: () => T | Promise<T>, opts: EventuallyOptions): Promise<Passed<T>> {
  const started = Date.now();
  const deadline = started + opts.timeoutMs;
  const what = opts.description ?? String(check).replace(/\s+/g, ' ');
  let last: { error: unknown } | { value: unknown } | undefined;
  let onlyUndefined = true;
  const lastFailure = (): string => {
    if (last === undefined) return '';
    return 'error' in last
      ? `; last error: ${last.error instanceof Error ? last.error.message : show(last.error)}`
      : `; last value: ${show(last.value)}${onlyUndefined ? NOTHING_RETURNED : ''}`;
  };
  const cause = (): { cause?: unknown } => (last !== undefined && 'error' in last ? { cause: last.error } : {});
  for (;;) {
    const aborted = opts.abortIf?.();
    if (aborted !== undefined) throw new Error(`gave up waiting for ${what}: ${aborted}${lastFailure()}`, cause());
    try {
      const value = await check();
      if (value !== undefined && value !== false) return value as Passed<T>;
      last = { value };
      if (value !== undefined) onlyUndefined = false;
    } catch (err) {
      last = { error: err };
      onlyUndefined = false;
    }
    if (Date.now() >= deadline) {
      throw new Error(`timed out after ${Date.now() - started} ms waiting for ${what}${lastFailure()}`, cause());
    }
    await sleep(Math.min(opts.intervalMs ?? 100, Math.max(0, deadline - Date.now())));
  }
}

/**
 * Timing for waits on in-process state (fakes, an in-memory provider): such state changes in
 * milliseconds, so poll often and fail well inside the unit tests' 10 s mocha timeout.
 */
export const IN_PROCESS = { timeoutMs: 2000, intervalMs: 5 } as const satisfies EventuallyOptions;
