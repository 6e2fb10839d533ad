/** The controller-runtime metric names existing dashboards query; every manager must serve them. */
export const CONTROLLER_RUNTIME_METRIC_NAMES: readonly string[] = [
  'controller_runtime_reconcile_total',
  'controller_runtime_reconcile_errors_total',
  'controller_runtime_terminal_reconcile_errors_total',
  'controller_runtime_reconcile_time_seconds',
  'controller_runtime_active_workers',
  'controller_runtime_max_concurrent_reconciles',
  'workqueue_depth',
  'workqueue_adds_total',
  'workqueue_retries_total',
  'workqueue_queue_duration_seconds',
  'workqueue_work_duration_seconds',
  'workqueue_unfinished_work_seconds',
  'workqueue_longest_running_processor_seconds',
  'leader_election_master_status',
  'process_cpu_user_seconds_total',
];
