/**
 * Metrics of the conversion webhook, by version pair (`from`, `to` as version names, e.g. v1
 * and v2; see review.ts for how a review's pair is read). Registered on the operator's registry
 * under the names in operator/api/metric-names.ts, which alerts and dashboards read.
 */
import { Counter, Histogram, type Registry } from 'prom-client';
import { BucketMetric } from '../api/metric-names';
import type { VersionPair } from './review';

/**
 * How a request ended: converted, refused by the conversion, not a ConversionReview (or too
 * large), refused for now because too many reviews were in flight (429, retried by the API
 * server), or a server error (the client gone included).
 */
export type ConversionRequestResult = 'success' | 'failure' | 'invalid' | 'throttled' | 'error';

/** What the conversion server reports; a seam so tests can count without a registry. */
export interface ConversionMetricsSink {
  /** One answered request of `pair`, ended with `result`, after `seconds`. */
  observe(pair: VersionPair, result: ConversionRequestResult, seconds: number): void;
}

// Conversions are in-memory and fast; the API server gives a webhook 30s at most.
const DURATION_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/** The conversion webhook's metrics on `registry`. */
export class ConversionMetrics implements ConversionMetricsSink {
  private readonly requests: Counter<'from' | 'to' | 'result'>;
  private readonly duration: Histogram<'from' | 'to'>;

  constructor(opts: { readonly registry: Registry }) {
    const registers = [opts.registry];
    this.requests = new Counter({
      name: BucketMetric.conversionRequests,
      help: 'ConversionReviews answered by the conversion webhook, by version pair and result',
      labelNames: ['from', 'to', 'result'],
      registers,
    });
    this.duration = new Histogram({
      name: BucketMetric.conversionDuration,
      help: 'Time to answer a ConversionReview, by version pair',
      labelNames: ['from', 'to'],
      buckets: DURATION_BUCKETS,
      registers,
    });
  }

  observe(pair: VersionPair, result: ConversionRequestResult, seconds: number): void {
    this.requests.inc({ from: pair.from, to: pair.to, result });
    this.duration.observe({ from: pair.from, to: pair.to }, seconds);
  }
}
