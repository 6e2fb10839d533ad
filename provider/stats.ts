/** Request counters, so tests can assert how often a client called (e.g. no busy loop). */
import type { ProviderStats } from './types';

/** Counts requests by method, route template and status. */
export class RequestStats {
  private total = 0;
  private readonly counts = new Map<string, number>();

  /**
   * @param method HTTP method.
   * @param route route template such as `/buckets/{id}`, or `*` for an unknown path.
   * @param status status answered, or `dropped` when the socket was destroyed.
   */
  record(method: string, route: string, status: number | 'dropped'): void {
    const key = `${method} ${route} ${status}`;
    this.total += 1;
    this.counts.set(key, (this.counts.get(key) ?? 0) + 1);
  }

  /** A copy of the counters with keys in sorted order. */
  snapshot(): ProviderStats {
    const requests: Record<string, number> = {};
    for (const key of [...this.counts.keys()].sort()) requests[key] = this.counts.get(key) ?? 0;
    return { total: this.total, requests };
  }

  /** Zeroes every counter. */
  reset(): void {
    this.total = 0;
    this.counts.clear();
  }
}
