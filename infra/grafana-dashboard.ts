/**
 * The operator's Grafana dashboard, as a ConfigMap labelled for the Grafana sidecar
 * (`grafana_dashboard: "1"`, the kube-prometheus-stack convention) and as plain JSON for a
 * manual import. Queries are built from operator/api/metric-names.ts.
 */
import { Construct } from 'constructs';
import { k8s } from 'cdk8s-plus-28';
import { BucketMetric, RuntimeMetric } from '../operator/api/metric-names';
import { COMMON_LABELS } from './labels';

/** Props of {@link OperatorDashboard}. */
export interface OperatorDashboardProps {
  /** Where the ConfigMap goes; the sidecar must watch it. @default 'bucketoperator-system' */
  readonly namespace?: string;
  /** Label matcher selecting the operator's series. @default 'job="bucketoperator-controller-manager-metrics"' */
  readonly selector?: string;
}

/** A panel target: one PromQL query and its legend. */
interface Target {
  readonly expr: string;
  readonly legendFormat: string;
}

/** File name of the dashboard inside the ConfigMap (the sidecar writes it under that name). */
export const DASHBOARD_FILE = 'bucketoperator.json';

/** The Grafana dashboard model. */
export function operatorDashboard(props: OperatorDashboardProps = {}): Record<string, unknown> {
  const sel = props.selector ?? 'job="bucketoperator-controller-manager-metrics"';
  const datasource = { type: 'prometheus', uid: '${datasource}' };
  let id = 0;
  const panel = (title: string, unit: string, x: number, y: number, targets: Target[], description: string) => ({
    id: ++id,
    type: 'timeseries',
    title,
    description,
    datasource,
    gridPos: { x, y, w: 12, h: 8 },
    fieldConfig: { defaults: { unit }, overrides: [] },
    options: { legend: { displayMode: 'list', placement: 'bottom' }, tooltip: { mode: 'multi' } },
    targets: targets.map((t, i) => ({ refId: String.fromCharCode(65 + i), datasource, ...t })),
  });
  const q = (quantile: number, metric: string, by: string) =>
    `histogram_quantile(${quantile}, sum by (le${by ? `, ${by}` : ''}) (rate(${metric}_bucket{${sel}}[5m])))`;
  return {
    uid: 'bucketoperator',
    title: 'BucketOperator',
    tags: ['bucketoperator', 'kubernetes-operator'],
    timezone: 'browser',
    schemaVersion: 39,
    version: 1,
    refresh: '30s',
    time: { from: 'now-6h', to: 'now' },
    templating: {
      list: [{ name: 'datasource', type: 'datasource', query: 'prometheus', label: 'Data source', current: {}, hide: 0 }],
    },
    panels: [
      panel(
        'StorageBuckets by state',
        'short',
        0,
        0,
        [
          { expr: `sum(${BucketMetric.bucketsExist}{${sel}})`, legendFormat: 'exist' },
          { expr: `sum(${BucketMetric.bucketsReady}{${sel}})`, legendFormat: 'ready' },
          { expr: `sum(${BucketMetric.bucketsSynced}{${sel}})`, legendFormat: 'synced' },
        ],
        "Counted from the leader's cache at scrape time.",
      ),
      panel(
        'Not Ready, by namespace',
        'short',
        12,
        0,
        [
          {
            expr: `sum by (namespace) (${BucketMetric.bucketsExist}{${sel}}) - sum by (namespace) (${BucketMetric.bucketsReady}{${sel}})`,
            legendFormat: '{{namespace}}',
          },
        ],
        'Namespaces past the label cap are summed as _other.',
      ),
      panel(
        'Reconciles per second',
        'ops',
        0,
        8,
        [
          { expr: `sum by (controller, result) (rate(${RuntimeMetric.reconcileTotal}{${sel}}[5m]))`, legendFormat: '{{controller}} {{result}}' },
          { expr: `sum by (controller) (rate(${RuntimeMetric.reconcileErrors}{${sel}}[5m]))`, legendFormat: '{{controller}} errors' },
        ],
        "controller-runtime's reconcile counters.",
      ),
      panel(
        'Reconcile duration p99',
        's',
        12,
        8,
        [{ expr: q(0.99, RuntimeMetric.reconcileTime, 'controller'), legendFormat: '{{controller}}' }],
        'Time per reconcile, provider calls included.',
      ),
      panel(
        'Provider call latency p99',
        's',
        0,
        16,
        [{ expr: q(0.99, BucketMetric.providerCallDuration, 'operation'), legendFormat: '{{operation}}' }],
        'Storage provider API calls, rate-limit waits excluded.',
      ),
      panel(
        'Provider calls per second, by code',
        'ops',
        12,
        16,
        [{ expr: `sum by (code) (rate(${BucketMetric.providerCallDuration}_count{${sel}}[5m]))`, legendFormat: '{{code}}' }],
        'HTTP status of provider answers; 0 means no answer.',
      ),
      panel(
        'Time to first Ready',
        's',
        0,
        24,
        [
          { expr: q(0.5, BucketMetric.firstTimeToReady, ''), legendFormat: 'p50' },
          { expr: q(0.9, BucketMetric.firstTimeToReady, ''), legendFormat: 'p90' },
        ],
        'From creationTimestamp to the first Ready=True, once per bucket.',
      ),
      panel(
        'Deletion duration',
        's',
        12,
        24,
        [
          { expr: q(0.5, BucketMetric.deletion, ''), legendFormat: 'p50' },
          { expr: q(0.9, BucketMetric.deletion, ''), legendFormat: 'p90' },
        ],
        'From deletionTimestamp until the object is gone (deprovisioning included).',
      ),
      panel(
        'Workqueue depth',
        'short',
        0,
        32,
        [{ expr: `sum by (name) (${RuntimeMetric.workqueueDepth}{${sel}})`, legendFormat: '{{name}}' }],
        'Keys waiting for a worker.',
      ),
      panel(
        'Drift corrected per hour',
        'short',
        12,
        32,
        [{ expr: `sum by (field) (increase(${BucketMetric.driftCorrected}{${sel}}[1h]))`, legendFormat: '{{field}}' }],
        'Provider-side changes the operator put back, by spec field.',
      ),
      panel(
        'Leader',
        'short',
        0,
        40,
        [{ expr: `max by (pod) (${RuntimeMetric.leaderStatus}{${sel}})`, legendFormat: '{{pod}}' }],
        '1 on the replica holding the lease.',
      ),
      panel(
        'Operator CPU and memory',
        'short',
        12,
        40,
        [
          { expr: `sum by (pod) (rate(${RuntimeMetric.processCpu}{${sel}}[5m]))`, legendFormat: '{{pod}} cores' },
          { expr: `sum by (pod) (${RuntimeMetric.processResidentMemory}{${sel}}) / 2^20`, legendFormat: '{{pod}} MiB' },
        ],
        'Node.js process metrics.',
      ),
    ],
  };
}

/** The dashboard as a sidecar-discoverable ConfigMap. */
export class OperatorDashboard extends Construct {
  /** The dashboard JSON, exactly as stored in the ConfigMap. */
  readonly json: string;

  constructor(scope: Construct, id: string, props: OperatorDashboardProps = {}) {
    super(scope, id);
    this.json = `${JSON.stringify(operatorDashboard(props), null, 2)}\n`;
    new k8s.KubeConfigMap(this, 'dashboard', {
      metadata: {
        name: 'bucketoperator-dashboard',
        namespace: props.namespace ?? 'bucketoperator-system',
        labels: { ...COMMON_LABELS, grafana_dashboard: '1' },
      },
      data: { [DASHBOARD_FILE]: this.json },
    });
  }
}
