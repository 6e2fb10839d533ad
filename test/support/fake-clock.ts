/** The runtime's {@link Clock} under a test's control. */
import type { Clock, TimerHandle } from '../../operator/runtime/clock';

/**
 * A manually advanced clock for tests: timers fire only from `advance`, in due order, so a
 * test controls exactly which backoff or timeout has elapsed.
 */
export class FakeClock implements Clock {
  private current: number;
  private seq = 0;
  private readonly timers = new Map<number, { at: number; fn: () => void }>();

  constructor(start = 0) {
    this.current = start;
  }

  now(): number {
    return this.current;
  }

  setTimeout(fn: () => void, ms: number): TimerHandle {
    const id = ++this.seq;
    this.timers.set(id, { at: this.current + Math.max(0, ms), fn });
    return id;
  }

  clearTimeout(handle: TimerHandle): void {
    this.timers.delete(handle as number);
  }

  /** Number of timers not yet fired. */
  pending(): number {
    return this.timers.size;
  }

  /** Moves time forward by `ms`, firing due timers in order (including ones they schedule). */
  advance(ms: number): void {
    const target = this.current + ms;
    for (;;) {
      let nextId: number | undefined;
      let nextAt = Infinity;
      for (const [id, t] of this.timers) {
        if (t.at <= target && t.at < nextAt) {
          nextAt = t.at;
          nextId = id;
        }
      }
      if (nextId === undefined) break;
      const timer = this.timers.get(nextId);
      this.timers.delete(nextId);
      this.current = nextAt;
      timer?.fn();
    }
    this.current = target;
  }
}
