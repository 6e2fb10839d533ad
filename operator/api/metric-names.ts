/**
 * Names of the metrics the operator serves at /metrics that alerts and dashboards rely on.
 * Kept with the API because users' queries depend on them as much as on the CRDs: the
 * operator's modules register under these names and infra/ renders the PrometheusRule and
 * the Grafana dashboard from them, so a rename breaks a build instead of an alert.
 */

/** Metrics the runtime serves under controller-runtime's names (operator/runtime/metrics.ts). */
export const RuntimeMetric = {
  reconcileTotal: 'controller_runtime_reconcile_total',
  reconcileErrors: 'controller_runtime_reconcile_errors_total',
  terminalReconcileErrors: 'controller_runtime_terminal_reconcile_errors_total',
  reconcileTime: 'controller_runtime_reconcile_time_seconds',
  activeWorkers: 'controller_runtime_active_workers',
  workqueueDepth: 'workqueue_depth',
  workqueueAdds: 'workqueue_adds_total',
  workqueueRetries: 'workqueue_retries_total',
  workqueueQueueDuration: 'workqueue_queue_duration_seconds',
  leaderStatus: 'leader_election_master_status',
  processCpu: 'process_cpu_seconds_total',
  processResidentMemory: 'process_resident_memory_bytes',
} as const;

/** Metrics of BucketOperator's own modules. */
export const BucketMetric = {
  /** Histogram {operation, code} of provider API calls (operator/provider-client). */
  providerCallDuration: 'bucketoperator_provider_call_duration_seconds',
  /** Counter {account, code_class}: provider API calls per account (a digest of endpoint and key). */
  providerCalls: 'bucketoperator_provider_calls_total',
  /** Counter {account}: seconds calls waited for their account's client-side rate limiter. */
  providerRateLimitWait: 'bucketoperator_provider_rate_limit_wait_seconds_total',
  /** Gauge {namespace}: StorageBuckets in the cache (operator/bucket/lifecycle-metrics). */
  bucketsExist: 'bucketoperator_buckets_exist',
  /** Gauge {namespace}: StorageBuckets with Ready=True at their current generation. */
  bucketsReady: 'bucketoperator_buckets_ready',
  /** Gauge {namespace}: StorageBuckets with Synced=True. */
  bucketsSynced: 'bucketoperator_buckets_synced',
  /** Histogram: creationTimestamp to the first Ready=True, once per bucket uid. */
  firstTimeToReady: 'bucketoperator_bucket_first_time_to_ready_seconds',
  /** Histogram: deletionTimestamp to the object's removal. */
  deletion: 'bucketoperator_bucket_deletion_seconds',
  /** Counter {field}: provider drift the operator corrected, by spec field. */
  driftCorrected: 'bucketoperator_drift_corrected_total',
  /** Counter {reason}: provider accounts whose drift scan failed (operator/bucket/drift-scanner); only that account's scan stops. */
  driftScanFailures: 'bucketoperator_drift_scan_failures_total',
  /** Counter {resource, verb, code}: failed writes to the API server (operator/runtime/write-failures). */
  writeFailures: 'bucketoperator_write_failures_total',
  /** Counter {from, to, result}: ConversionReviews answered by the conversion webhook (operator/conversion); result is success, failure (an object could not be converted), invalid (not a ConversionReview, or too large), throttled (429: too many in flight) or error. */
  conversionRequests: 'bucketoperator_conversion_requests_total',
  /** Histogram {from, to}: time to answer a ConversionReview, body read to response written. */
  conversionDuration: 'bucketoperator_conversion_duration_seconds',
} as const;

/** Every metric name above. */
export const OPERATOR_METRIC_NAMES: readonly string[] = [...Object.values(RuntimeMetric), ...Object.values(BucketMetric)];

/** The `namespace` label value that stands for every namespace past the label cap. */
export const OTHER_NAMESPACES = '_other';
