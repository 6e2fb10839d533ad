/**
 * A Prometheus Operator `ServiceMonitor` for the manager's metrics Service. `honorLabels`
 * keeps the `namespace` label of the bucket gauges (the StorageBuckets' namespace) instead
 * of renaming it `exported_namespace` beside the Pod's own.
 */
import { ApiObject } from 'cdk8s';
import { Construct } from 'constructs';
import { COMMON_LABELS, MANAGER_SELECTOR } from './labels';

/** Props of {@link OperatorServiceMonitor}. */
export interface OperatorServiceMonitorProps {
  /** Namespace of the operator and its metrics Service. @default 'bucketoperator-system' */
  readonly namespace?: string;
  /** Scrape interval. @default '30s' */
  readonly interval?: string;
}

/** Scrapes the `metrics` port of the Service OperatorManager renders. */
export class OperatorServiceMonitor extends Construct {
  constructor(scope: Construct, id: string, props: OperatorServiceMonitorProps = {}) {
    super(scope, id);
    const namespace = props.namespace ?? 'bucketoperator-system';
    new ApiObject(this, 'service-monitor', {
      apiVersion: 'monitoring.coreos.com/v1',
      kind: 'ServiceMonitor',
      metadata: { name: 'bucketoperator', namespace, labels: { ...COMMON_LABELS } },
      spec: {
        selector: { matchLabels: { ...MANAGER_SELECTOR } },
        namespaceSelector: { matchNames: [namespace] },
        endpoints: [{ port: 'metrics', path: '/metrics', interval: props.interval ?? '30s', honorLabels: true }],
      },
    });
  }
}
