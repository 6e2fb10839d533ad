/**
 * Kubernetes Events (events.k8s.io/v1) about reconciled objects, after client-go's
 * tools/events recorder: a repeat of the same event within a window bumps `series.count`
 * on the existing Event instead of creating another; each object has a token bucket so a
 * hot loop cannot flood etcd; and recording never fails the caller, because Events are
 * best-effort by design. A write the API server refuses goes to a `WriteFailureReporter`:
 * counted, and a warning once per kind, since a missing RBAC verb would otherwise lose
 * every Event without a trace.
 */
import type { Logger } from 'pino';
import { isNotFound } from './api-errors';
import type { KubeClient } from './client';
import { realClock, type Clock } from './clock';
import { EVENT_KIND, type EventObject, type EventType } from './event-object';
import type { KubeObject } from './types';
import { WriteFailureReporter, resourceLabel } from './write-failures';

export { EVENT_KIND, type EventObject, type EventType } from './event-object';

/** The API server rejects longer notes. */
export const MAX_NOTE_BYTES = 1024;

/** The client capabilities the recorder needs. */
export type EventWriter = Pick<KubeClient, 'create' | 'patch'>;

/** Options of an `EventRecorder`. */
export interface EventRecorderOptions {
  readonly client: EventWriter;
  /** Name of the controller, e.g. `example.com/bucket-operator`. */
  readonly reportingController: string;
  /** Identity of this replica (pod name or host_pid). */
  readonly reportingInstance: string;
  readonly logger: Logger;
  /** A repeat later than this after the previous one starts a new Event. @default 360000 */
  readonly aggregationWindowMs?: number;
  /** Events an object may emit in a burst. @default 25 */
  readonly burst?: number;
  /** One more event per object is allowed every this many ms. @default 300000 */
  readonly refillIntervalMs?: number;
  /** Bound on remembered series and per-object buckets (least recently used go first). @default 4096 */
  readonly maxTracked?: number;
  /** Monotonic time for windows and rate limits. @default realClock */
  readonly clock?: Clock;
  /** Wall time written into the Event. @default () => new Date() */
  readonly now?: () => Date;
  /**
   * Where refused Event writes are reported; share the manager's so failures are counted
   * on /metrics. @default a reporter on `logger`, without metrics
   */
  readonly failures?: Pick<WriteFailureReporter, 'report'>;
}

/**
 * Identity of "the same event": same object (by uid, so a recreated object starts fresh),
 * type, reason, action and note. Pure, for tests.
 */
export function eventKey(regarding: KubeObject, type: EventType, reason: string, action: string, note: string): string {
  const id = regarding.metadata?.uid ?? `${regarding.metadata?.namespace ?? ''}/${regarding.metadata?.name ?? ''}`;
  return JSON.stringify([id, type, reason, action, note]);
}

/** Cuts `note` to at most `MAX_NOTE_BYTES` of UTF-8 without splitting a character. */
export function truncateNote(note: string): string {
  if (Buffer.byteLength(note) <= MAX_NOTE_BYTES) return note;
  const suffix = '...';
  let out = '';
  let bytes = 0;
  for (const ch of note) {
    const n = Buffer.byteLength(ch);
    if (bytes + n > MAX_NOTE_BYTES - suffix.length) break;
    out += ch;
    bytes += n;
  }
  return out + suffix;
}

/** RFC 3339 with exactly six fractional digits, the MicroTime wire form the API parses. */
export function microTime(d: Date): string {
  return d.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

interface Series {
  readonly namespace: string;
  readonly name: string;
  count: number;
  lastObservedAt: number;
}

interface Bucket {
  tokens: number;
  at: number;
}

/** A create or patch of an Event that failed, tagged with its verb for the reporter. */
class EventWriteFailed extends Error {
  constructor(
    readonly verb: 'create' | 'patch',
    cause: unknown,
  ) {
    super(`cannot ${verb} event`, { cause });
  }
}

const EVENTS_RESOURCE = resourceLabel(EVENT_KIND);

/** Records Events; `event()` never throws and never blocks the caller. */
export class EventRecorder {
  private readonly client: EventWriter;
  private readonly log: Logger;
  private readonly failures: Pick<WriteFailureReporter, 'report'>;
  private readonly clock: Clock;
  private readonly now: () => Date;
  private readonly windowMs: number;
  private readonly burst: number;
  private readonly refillMs: number;
  private readonly maxTracked: number;
  private readonly series = new Map<string, Series>();
  private readonly buckets = new Map<string, Bucket>();
  /** Per-key tail of pending writes: repeats must see the Event the first one created. */
  private readonly chains = new Map<string, Promise<void>>();
  private seq = 0;

  constructor(private readonly opts: EventRecorderOptions) {
    this.client = opts.client;
    this.log = opts.logger;
    this.failures = opts.failures ?? new WriteFailureReporter({ logger: opts.logger });
    this.clock = opts.clock ?? realClock;
    this.now = opts.now ?? (() => new Date());
    this.windowMs = opts.aggregationWindowMs ?? 360_000;
    this.burst = opts.burst ?? 25;
    this.refillMs = opts.refillIntervalMs ?? 300_000;
    this.maxTracked = opts.maxTracked ?? 4096;
  }

  /** Records an event about `regarding` (asynchronously; refused writes go to the failure reporter). */
  event(regarding: KubeObject, type: EventType, reason: string, action: string, note: string, related?: KubeObject): void {
    try {
      const objectId = regarding.metadata?.uid ?? `${regarding.metadata?.namespace ?? ''}/${regarding.metadata?.name ?? ''}`;
      if (!this.take(objectId)) {
        this.log.debug({ reason, name: regarding.metadata?.name, namespace: regarding.metadata?.namespace }, 'event dropped by rate limit');
        return;
      }
      const key = eventKey(regarding, type, reason, action, note);
      const prev = this.chains.get(key) ?? Promise.resolve();
      const next = prev
        .then(() => this.write(key, regarding, type, reason, action, truncateNote(note), related))
        .catch((err: unknown) => this.failed(err, reason))
        .finally(() => {
          if (this.chains.get(key) === next) this.chains.delete(key);
        });
      this.chains.set(key, next);
    } catch (err) {
      this.log.debug({ err, reason }, 'cannot record event');
    }
  }

  /** Refused writes are reported; anything else is a bug here, logged at debug as before. */
  private failed(err: unknown, reason: string): void {
    if (err instanceof EventWriteFailed) this.failures.report({ resource: EVENTS_RESOURCE, verb: err.verb }, err.cause);
    else this.log.debug({ err, reason }, 'cannot record event');
  }

  /** Resolves once every event recorded so far has been written (or given up on). */
  async flush(): Promise<void> {
    while (this.chains.size > 0) await Promise.all([...this.chains.values()]);
  }

  private async write(
    key: string,
    regarding: KubeObject,
    type: EventType,
    reason: string,
    action: string,
    note: string,
    related?: KubeObject,
  ): Promise<void> {
    const at = this.clock.now();
    const existing = this.series.get(key);
    if (existing && at - existing.lastObservedAt <= this.windowMs) {
      existing.count += 1;
      existing.lastObservedAt = at;
      this.touch(this.series, key, existing);
      const patch = { series: { count: existing.count, lastObservedTime: microTime(this.now()) } };
      try {
        await this.client.patch(EVENT_KIND, existing.namespace, existing.name, patch, 'merge');
        return;
      } catch (err) {
        // The Event expired (TTL) or was deleted: start a new one below.
        if (!isNotFound(err)) throw new EventWriteFailed('patch', err);
      }
    }
    const event = this.build(regarding, type, reason, action, note, related);
    let created: EventObject;
    try {
      created = await this.client.create<EventObject>(EVENT_KIND, event);
    } catch (err) {
      throw new EventWriteFailed('create', err);
    }
    this.touch(this.series, key, {
      namespace: created.metadata?.namespace ?? '',
      name: created.metadata?.name ?? '',
      count: 1,
      lastObservedAt: at,
    });
  }

  private build(regarding: KubeObject, type: EventType, reason: string, action: string, note: string, related?: KubeObject): EventObject {
    const name = regarding.metadata?.name ?? 'unknown';
    // Cluster-scoped objects get their Events in `default`, as client-go does.
    const namespace = regarding.metadata?.namespace || 'default';
    const nanos = BigInt(this.now().getTime()) * 1_000_000n + BigInt(this.seq++ % 1_000_000);
    return {
      apiVersion: 'events.k8s.io/v1',
      kind: 'Event',
      metadata: { name: `${name}.${nanos.toString(16)}`, namespace },
      eventTime: microTime(this.now()),
      type,
      reason,
      action,
      note,
      reportingController: this.opts.reportingController,
      reportingInstance: this.opts.reportingInstance,
      regarding: reference(regarding),
      related: related ? reference(related) : undefined,
    };
  }

  /** Token bucket per object: `burst` at once, then one per `refillMs`. */
  private take(objectId: string): boolean {
    const now = this.clock.now();
    const b = this.buckets.get(objectId) ?? { tokens: this.burst, at: now };
    b.tokens = Math.min(this.burst, b.tokens + (now - b.at) / this.refillMs);
    b.at = now;
    const ok = b.tokens >= 1;
    if (ok) b.tokens -= 1;
    this.touch(this.buckets, objectId, b);
    return ok;
  }

  /** Marks `key` most recently used and evicts the least recently used beyond the bound. */
  private touch<V>(map: Map<string, V>, key: string, value: V): void {
    map.delete(key);
    map.set(key, value);
    if (map.size > this.maxTracked) {
      const oldest = map.keys().next();
      if (!oldest.done) map.delete(oldest.value);
    }
  }
}

function reference(obj: KubeObject): Record<string, string | undefined> {
  return {
    apiVersion: obj.apiVersion,
    kind: obj.kind,
    namespace: obj.metadata?.namespace,
    name: obj.metadata?.name,
    uid: obj.metadata?.uid,
    resourceVersion: obj.metadata?.resourceVersion,
  };
}
