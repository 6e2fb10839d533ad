/**
 * Flows: the unit of fairness between tenants. The work queue takes turns between flows, and
 * the retry rate limit is kept per flow, so one namespace's storm of work or failures never
 * spends another namespace's share. The flow of a key is its namespace; keys are
 * `namespace/name`, and a key without a '/' (a cluster-scoped object) is in the flow '' that
 * all such keys share.
 */
import { realClock, type Clock } from './clock';
import type { RateLimiter } from './rate-limiter';

/** The flow of a key: its namespace, or '' for a key without one. */
export function flowOf(key: string): string {
  const slash = key.indexOf('/');
  return slash < 0 ? '' : key.slice(0, slash);
}

interface FlowBucket {
  tokens: number;
  last: number;
}

/**
 * controller-runtime's overall retry bucket (`qps` tokens per second, `burst` saved up,
 * reservations that never drop work), one per flow. With one bucket for everything, 5,000
 * failing objects of one namespace reserve 500 s of tokens at 10 qps, and any other
 * namespace's first retry waits behind them; per flow it waits for its own failures only.
 * The API server stays guarded by the client's own QPS limit and each key's exponential
 * backoff. A flow's bucket is dropped once it has refilled and one of its keys is forgotten,
 * so memory follows the namespaces that are failing, not all namespaces.
 */
export class PerFlowTokenBucketRateLimiter implements RateLimiter {
  private readonly buckets = new Map<string, FlowBucket>();

  /**
   * @param qps tokens added per second, per flow. @default 10
   * @param burst bucket size, per flow. @default 100
   */
  constructor(
    private readonly qps = 10,
    private readonly burst = 100,
    private readonly clock: Clock = realClock,
  ) {
    if (!(qps > 0) || !(burst >= 1)) throw new RangeError(`need qps > 0 and burst >= 1, got ${qps} and ${burst}`);
  }

  when(key: string): number {
    const flow = flowOf(key);
    const b = this.refilled(flow) ?? { tokens: this.burst, last: this.clock.now() };
    this.buckets.set(flow, b);
    b.tokens -= 1;
    return b.tokens >= 0 ? 0 : (-b.tokens * 1000) / this.qps;
  }

  forget(key: string): void {
    // One key's success refunds nothing; it only lets a refilled bucket go.
    const flow = flowOf(key);
    const b = this.refilled(flow);
    if (b && b.tokens >= this.burst) this.buckets.delete(flow);
  }

  numRequeues(_key: string): number {
    return 0;
  }

  /** Flows holding a bucket (tests). */
  flows(): number {
    return this.buckets.size;
  }

  private refilled(flow: string): FlowBucket | undefined {
    const b = this.buckets.get(flow);
    if (!b) return undefined;
    const now = this.clock.now();
    b.tokens = Math.min(this.burst, b.tokens + ((now - b.last) * this.qps) / 1000);
    b.last = now;
    return b;
  }
}
