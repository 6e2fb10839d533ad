/**
 * The operator's alerts as a Prometheus Operator `PrometheusRule`. Expressions are built
 * from the metric names in operator/api/metric-names.ts, so they query only what the
 * operator serves (a unit test checks), and promtool tests each alert.
 */
import { ApiObject } from 'cdk8s';
import { Construct } from 'constructs';
import { BucketMetric, RuntimeMetric } from '../operator/api/metric-names';
import { COMMON_LABELS } from './labels';

/** One alerting rule, as in a Prometheus rules file. */
export interface AlertRule {
  readonly alert: string;
  readonly expr: string;
  readonly for: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly annotations: Readonly<Record<string, string>>;
}

/** A rule group, as in a Prometheus rules file. */
export interface RuleGroup {
  readonly name: string;
  readonly rules: readonly AlertRule[];
}

/** Props of {@link OperatorAlerts}. */
export interface OperatorAlertsProps {
  /** @default 'bucketoperator-system' */
  readonly namespace?: string;
  /**
   * Label matcher selecting the operator's series; the Prometheus Operator names the job
   * after the scraped Service.
   * @default 'job="bucketoperator-controller-manager-metrics"'
   */
  readonly selector?: string;
  /** Reconcile error ratio above which errors are "sustained". @default 0.1 */
  readonly errorRatio?: number;
  /** Provider call p99 latency, in seconds, that counts as slow. @default 2 */
  readonly providerLatencyP99Seconds?: number;
  /** Workqueue depth below which growth is not worth a page. @default 50 */
  readonly workqueueDepth?: number;
}

/** The alert groups, also written as a plain rules file for Prometheus without the operator. */
export function operatorRuleGroups(props: OperatorAlertsProps = {}): RuleGroup[] {
  const sel = props.selector ?? 'job="bucketoperator-controller-manager-metrics"';
  const ratio = props.errorRatio ?? 0.1;
  const p99 = props.providerLatencyP99Seconds ?? 2;
  const depth = props.workqueueDepth ?? 50;
  if (!(ratio > 0 && ratio <= 1)) throw new Error(`OperatorAlerts: props.errorRatio must be in (0, 1], got ${ratio}`);
  if (!(p99 > 0)) throw new Error(`OperatorAlerts: props.providerLatencyP99Seconds must be positive, got ${p99}`);
  if (!(depth >= 0)) throw new Error(`OperatorAlerts: props.workqueueDepth must not be negative, got ${depth}`);
  const rule = (alert: string, expr: string, forDuration: string, severity: string, summary: string, description: string): AlertRule => ({
    alert,
    expr,
    for: forDuration,
    labels: { severity },
    annotations: { summary, description },
  });
  return [
    {
      name: 'bucketoperator',
      rules: [
        rule(
          'BucketOperatorReconcileErrors',
          `sum by (controller) (rate(${RuntimeMetric.reconcileErrors}{${sel}}[5m]))\n/ sum by (controller) (rate(${RuntimeMetric.reconcileTotal}{${sel}}[5m])) > ${ratio}`,
          '15m',
          'warning',
          'BucketOperator reconciles keep failing',
          `More than ${ratio * 100}% of {{ $labels.controller }} reconciles failed for 15 minutes; see the operator's logs and the Synced condition of its objects.`,
        ),
        rule(
          'BucketOperatorBucketsNotReady',
          `sum by (namespace) (${BucketMetric.bucketsExist}{${sel}})\n- sum by (namespace) (${BucketMetric.bucketsReady}{${sel}}) > 0`,
          '15m',
          'warning',
          'StorageBuckets are not Ready',
          'Some StorageBuckets in namespace {{ $labels.namespace }} have not been Ready for 15 minutes: kubectl get sbucket -n {{ $labels.namespace }}.',
        ),
        rule(
          'BucketOperatorProviderSlow',
          `histogram_quantile(0.99, sum by (le, operation) (rate(${BucketMetric.providerCallDuration}_bucket{${sel}}[5m]))) > ${p99}`,
          '15m',
          'warning',
          'The storage provider answers slowly',
          `The p99 latency of provider {{ $labels.operation }} calls has been above ${p99}s for 15 minutes.`,
        ),
        rule(
          'BucketOperatorWorkqueueGrowing',
          `deriv(${RuntimeMetric.workqueueDepth}{${sel}}[15m]) > 0 and ${RuntimeMetric.workqueueDepth}{${sel}} > ${depth}`,
          '15m',
          'warning',
          'BucketOperator falls behind',
          `Workqueue {{ $labels.name }} has held more than ${depth} items and kept growing for 15 minutes: the operator cannot keep up (provider rate limit, API server, CPU).`,
        ),
        rule(
          'BucketOperatorNoLeader',
          `max by (name) (${RuntimeMetric.leaderStatus}{${sel}}) < 1\nor absent(${RuntimeMetric.leaderStatus}{${sel}})`,
          '5m',
          'critical',
          'No BucketOperator replica leads',
          'No replica has held the leader lease for 5 minutes (or none reports at all), so no StorageBucket is being reconciled.',
        ),
      ],
    },
  ];
}

/** A `monitoring.coreos.com/v1` PrometheusRule holding {@link operatorRuleGroups}. */
export class OperatorAlerts extends Construct {
  /** The rule groups, as rendered. */
  readonly groups: RuleGroup[];

  constructor(scope: Construct, id: string, props: OperatorAlertsProps = {}) {
    super(scope, id);
    this.groups = operatorRuleGroups(props);
    new ApiObject(this, 'rule', {
      apiVersion: 'monitoring.coreos.com/v1',
      kind: 'PrometheusRule',
      metadata: { name: 'bucketoperator', namespace: props.namespace ?? 'bucketoperator-system', labels: { ...COMMON_LABELS } },
      spec: { groups: this.groups },
    });
  }
}
