/**
 * List-then-watch loop feeding an informer's store, after client-go's Reflector: a
 * paginated list, then a watch from the list's resourceVersion with bookmarks, tracking the
 * newest version seen. A 410 (compacted version) triggers a relist; any other failure,
 * including a watch that goes silent, reconnects from the last version with capped,
 * jittered exponential backoff. The loop only ends when stopped.
 */
import type { Logger } from 'pino';
import { isGone } from './api-errors';
import type { ListerWatcher } from './client';
import { realClock, sleep, type Clock } from './clock';
import type { KubeObject, ResourceKind } from './types';

/** Receives what the reflector learns; the informer implements it. */
export interface ReflectorSink<T extends KubeObject> {
  /** A complete, fresh list: the store must end up holding exactly these objects. */
  replace(items: T[], resourceVersion: string): void;
  /** One change seen on the watch. */
  apply(type: 'ADDED' | 'MODIFIED' | 'DELETED', obj: T): void;
}

/** Shape of the reconnect backoff. */
export interface BackoffOptions {
  /** First delay. @default 800 */
  readonly initialMs?: number;
  /** Ceiling of any delay. @default 30000 */
  readonly maxMs?: number;
  /** @default 2 */
  readonly factor?: number;
  /** A failure this long after the previous one starts again from `initialMs`. @default 120000 */
  readonly resetAfterMs?: number;
}

/**
 * Delay before retry number `attempt` (0-based): exponential, capped, with "equal jitter"
 * (half fixed, half random) so reconnecting replicas spread out yet never exceed the cap.
 * `random` is in [0, 1).
 */
export function backoffDelay(attempt: number, opts: BackoffOptions, random: number): number {
  const initial = opts.initialMs ?? 800;
  const max = opts.maxMs ?? 30_000;
  const factor = opts.factor ?? 2;
  const base = Math.min(max, initial * factor ** Math.max(0, attempt));
  return base / 2 + (base / 2) * random;
}

/** Stateful backoff: grows per failure, forgets after a quiet `resetAfterMs`. */
export class Backoff {
  private attempt = 0;
  private lastFailureAt: number | undefined;

  constructor(
    private readonly opts: BackoffOptions = {},
    private readonly clock: Clock = realClock,
    private readonly random: () => number = Math.random,
  ) {}

  /** Records a failure and returns how long to wait before the next try. */
  next(): number {
    const now = this.clock.now();
    if (this.lastFailureAt !== undefined && now - this.lastFailureAt >= (this.opts.resetAfterMs ?? 120_000)) {
      this.attempt = 0;
    }
    this.lastFailureAt = now;
    return backoffDelay(this.attempt++, this.opts, this.random());
  }
}

/**
 * Server-side watch timeout, randomised in [min, 2*min) seconds like client-go, so that
 * many watches opened together do not all expire and reconnect together.
 */
export function watchTimeoutSeconds(minSeconds: number, random: number): number {
  return Math.floor(minSeconds * (1 + random));
}

/** Tuning of a reflector; the defaults suit production. */
export interface ReflectorTuning {
  /** Items per list page. @default 500 */
  readonly pageSize?: number;
  /** Lower bound of the randomised server watch timeout. @default 300 */
  readonly minWatchTimeoutSeconds?: number;
  /** Reconnect when the watch delivers nothing (not even a bookmark) this long. @default 300000 */
  readonly idleTimeoutMs?: number;
  readonly backoff?: BackoffOptions;
  /** Source of randomness (jitter, watch timeouts). @default Math.random */
  readonly random?: () => number;
  /** @default realClock */
  readonly clock?: Clock;
}

/** What a reflector watches and where it reports. */
export interface ReflectorOptions<T extends KubeObject> extends ReflectorTuning {
  readonly lw: ListerWatcher;
  readonly kind: ResourceKind;
  readonly namespace?: string;
  readonly labelSelector?: string;
  readonly fieldSelector?: string;
  readonly sink: ReflectorSink<T>;
  readonly logger: Logger;
}

/** Consecutive failures before the outage is logged at warn. */
const WARN_AFTER_FAILURES = 5;

/** A watch that ends this fast without delivering anything counts as a failure. */
const SHORT_WATCH_MS = 1000;

class IdleWatch extends Error {
  constructor(ms: number) {
    super(`watch delivered nothing for ${ms}ms`);
  }
}

/** Keeps a sink in step with the API server until stopped. */
export class Reflector<T extends KubeObject> {
  private readonly opts: ReflectorOptions<T>;
  private readonly clock: Clock;
  private readonly random: () => number;
  private readonly backoff: Backoff;
  private readonly log: Logger;
  private stopper: AbortController | undefined;
  private loop: Promise<void> | undefined;
  private watching = false;
  private resourceVersion = '';
  /** 410s since the last watch that delivered anything. */
  private goneStreak = 0;
  /** Failures since the last established watch; drives the one warning per outage. */
  private failures = 0;

  constructor(opts: ReflectorOptions<T>) {
    this.opts = opts;
    this.clock = opts.clock ?? realClock;
    this.random = opts.random ?? Math.random;
    this.backoff = new Backoff(opts.backoff, this.clock, this.random);
    this.log = opts.logger.child({ reflector: opts.kind.plural, namespace: opts.namespace ?? '' });
  }

  /** Starts the loop in the background; idempotent. */
  start(): void {
    if (this.loop) return;
    const stopper = new AbortController();
    this.stopper = stopper;
    this.loop = this.run(stopper.signal).catch((err: unknown) => {
      // run() handles its own errors; reaching here is a bug worth a loud line, not a crash.
      this.log.error({ err }, 'reflector loop ended unexpectedly');
    });
  }

  /** Stops the loop and waits for it to finish. */
  async stop(): Promise<void> {
    this.stopper?.abort(new Error('reflector stopped'));
    await this.loop;
  }

  /** True while a watch stream is open. */
  isWatching(): boolean {
    return this.watching;
  }

  /** The newest resourceVersion seen (from the list, events or bookmarks). */
  lastResourceVersion(): string {
    return this.resourceVersion;
  }

  private async run(stop: AbortSignal): Promise<void> {
    let needList = true;
    while (!stop.aborted) {
      try {
        if (needList) {
          await this.list(stop);
          needList = false;
        }
        await this.watch(stop);
      } catch (err) {
        if (stop.aborted) break;
        if (isGone(err)) {
          // The version we hold was compacted away: only a fresh list can tell what changed.
          needList = true;
          this.log.debug({ err }, 'resourceVersion expired; relisting');
          // Relist at once the first time; a repeat means something is off, so slow down.
          if (this.goneStreak++ === 0) continue;
        } else {
          // A failed list is retried as a list; a failed watch resumes from the last version.
          needList ||= this.resourceVersion === '';
          this.log.debug({ err, resourceVersion: this.resourceVersion }, 'list/watch failed; retrying');
          // Single failures are routine (restarts, timeouts); a run of them is an outage
          // worth one warning, not one line per retry.
          if (++this.failures === WARN_AFTER_FAILURES) {
            this.log.warn({ err }, 'list/watch keeps failing; still retrying');
          }
        }
        await sleep(this.clock, this.backoff.next(), stop).catch(() => undefined);
      }
    }
  }

  private async list(stop: AbortSignal): Promise<void> {
    const { items, resourceVersion } = await this.opts.lw.list<T>(this.opts.kind, {
      namespace: this.opts.namespace,
      labelSelector: this.opts.labelSelector,
      fieldSelector: this.opts.fieldSelector,
      limit: this.opts.pageSize ?? 500,
      signal: stop,
    });
    this.opts.sink.replace(items, resourceVersion);
    this.resourceVersion = resourceVersion;
    this.log.debug({ count: items.length, resourceVersion }, 'listed');
  }

  /**
   * One watch from the current version until the server closes it. Throws on errors, on an
   * idle stream and on a stream the server closed at once (which would otherwise turn into
   * a tight reconnect loop).
   */
  private async watch(stop: AbortSignal): Promise<void> {
    const idleMs = this.opts.idleTimeoutMs ?? 300_000;
    const conn = new AbortController();
    const onStop = (): void => conn.abort(stop.reason);
    stop.addEventListener('abort', onStop, { once: true });
    // Stopped while the list was in flight: an already-aborted signal fires no listener, and
    // the watch would otherwise stay open (and stop() wait) until the server times it out.
    if (stop.aborted) onStop();
    let idleTimer = this.clock.setTimeout(() => conn.abort(new IdleWatch(idleMs)), idleMs);
    const startedAt = this.clock.now();
    let delivered = false;
    try {
      const events = this.opts.lw.watch<T>(this.opts.kind, {
        namespace: this.opts.namespace,
        labelSelector: this.opts.labelSelector,
        fieldSelector: this.opts.fieldSelector,
        resourceVersion: this.resourceVersion,
        allowWatchBookmarks: true,
        timeoutSeconds: watchTimeoutSeconds(this.opts.minWatchTimeoutSeconds ?? 300, this.random()),
        signal: conn.signal,
        onOpen: () => {
          this.watching = true;
          if (this.failures >= WARN_AFTER_FAILURES) this.log.info('watch re-established');
          this.failures = 0;
        },
      });
      for await (const ev of events) {
        this.clock.clearTimeout(idleTimer);
        idleTimer = this.clock.setTimeout(() => conn.abort(new IdleWatch(idleMs)), idleMs);
        delivered = true;
        this.goneStreak = 0;
        const rv = ev.object.metadata?.resourceVersion;
        if (ev.type !== 'BOOKMARK') this.opts.sink.apply(ev.type, ev.object);
        if (rv) this.resourceVersion = rv;
      }
      if (conn.signal.aborted && !stop.aborted) throw conn.signal.reason;
      if (!delivered && this.clock.now() - startedAt < SHORT_WATCH_MS && !stop.aborted) {
        throw new Error('watch closed immediately');
      }
    } finally {
      this.watching = false;
      this.clock.clearTimeout(idleTimer);
      stop.removeEventListener('abort', onStop);
    }
  }
}
