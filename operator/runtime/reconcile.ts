/**
 * The reconcile contract: a reconciler gets a key, reads the latest state itself and says
 * what should happen next. Backoff, metrics, error logging and reconcile ids belong to the
 * runner (controller.ts), never to the reconciler.
 */
import type { Logger } from 'pino';
import type { ObjectKey } from './types';

/** What a reconcile is about: namespace/name only, because reconciles are level-based. */
export type Request = ObjectKey;

/** Outcome of a successful reconcile. A union rather than flags, so "requeue and done" is unrepresentable. */
export type Action =
  | { readonly type: 'done' }
  | {
      readonly type: 'requeueAfter';
      readonly afterMs: number;
      /** Queue priority of the re-check (higher first); the runner uses low when unset. */
      readonly priority?: number;
    };

/** Options of `requeueAfter`. */
export interface RequeueOptions {
  /**
   * Queue priority of the re-check. Unset, it is low (the workqueue's `Priority.Low`): a
   * periodic re-check must not hold up new work. Pass `Priority.Normal` for a poll a user is
   * waiting on, such as a create that is still provisioning.
   */
  readonly priority?: number;
}

/** Nothing more to do until something changes. */
export function done(): Action {
  return DONE;
}

/** Reconcile again after `ms`, e.g. to poll an external system; resets the error backoff. */
export function requeueAfter(ms: number, opts: RequeueOptions = {}): Action {
  if (!Number.isFinite(ms) || ms < 0) {
    throw new RangeError(`requeueAfter needs a finite, non-negative delay, got ${ms}`);
  }
  if (opts.priority === undefined) return { type: 'requeueAfter', afterMs: ms };
  if (!Number.isSafeInteger(opts.priority)) {
    throw new RangeError(`requeueAfter needs an integer priority, got ${opts.priority}`);
  }
  return { type: 'requeueAfter', afterMs: ms, priority: opts.priority };
}

const DONE: Action = Object.freeze({ type: 'done' });

/** Constructors of `Action`, for call sites that read better as `Action.requeueAfter(5000)`. */
export const Action = { done, requeueAfter } as const;

/** True when `value` is a well-formed `Action`; the runner rejects anything else as an error. */
export function isAction(value: unknown): value is Action {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as { type?: unknown; afterMs?: unknown; priority?: unknown };
  if (v.type === 'done') return true;
  return (
    v.type === 'requeueAfter' &&
    typeof v.afterMs === 'number' &&
    Number.isFinite(v.afterMs) &&
    v.afterMs >= 0 &&
    (v.priority === undefined || Number.isSafeInteger(v.priority))
  );
}

/**
 * An error retrying cannot fix (invalid spec, missing permission the user must grant).
 * The runner counts and logs it but does not requeue; the next change to the object does.
 */
export class TerminalError extends Error {
  override readonly name = 'TerminalError';
}

/** True when `err` or any error in its `cause` chain is a `TerminalError`. */
export function isTerminalError(err: unknown): boolean {
  const seen = new Set<unknown>();
  let current: unknown = err;
  while (current instanceof Error && !seen.has(current)) {
    if (current instanceof TerminalError) return true;
    seen.add(current);
    current = current.cause;
  }
  return false;
}

/** Per-reconcile context handed to the reconciler by the runner. */
export interface ReconcileContext {
  /** Child logger bound to controller, namespace, name and reconcileID. */
  readonly logger: Logger;
  /** Unique id of this reconcile attempt, also on the runner's log lines. */
  readonly reconcileID: string;
  /** Aborted on the per-reconcile timeout or when the controller must stop at once. */
  readonly signal: AbortSignal;
  /**
   * Queue priority the key was handed out with; pass it to `requeueAfter` for a retry that
   * should keep its place (as the runner does for thrown errors).
   */
  readonly priority: number;
}

/** Drives the world towards the desired state of one object. */
export interface Reconciler {
  /**
   * Resolves with the next `Action`; rejects to retry with backoff, or with a
   * `TerminalError` to stop retrying until the object changes.
   */
  reconcile(req: Request, ctx: ReconcileContext): Promise<Action>;
}
