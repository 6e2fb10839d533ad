/** The operator's Namespace, enforcing the Pod Security `restricted` profile. */
import { Construct } from 'constructs';
import { k8s } from 'cdk8s-plus-28';
import { COMMON_LABELS } from './labels';

/** Properties of {@link OperatorNamespace}. */
export interface OperatorNamespaceProps {
  /**
   * Namespace name.
   * @default 'bucketoperator-system'
   */
  readonly name?: string;
}

/** Default namespace of the operator. */
export const DEFAULT_OPERATOR_NAMESPACE = 'bucketoperator-system';

/**
 * A Namespace labelled so admission refuses any Pod that does not meet `restricted`; this is
 * what proves the manager's own security context is tight.
 */
export class OperatorNamespace extends Construct {
  /** The namespace name. */
  public readonly name: string;

  constructor(scope: Construct, id: string, props: OperatorNamespaceProps = {}) {
    super(scope, id);
    this.name = props.name ?? DEFAULT_OPERATOR_NAMESPACE;
    if (!/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(this.name) || this.name.length > 63) {
      throw new Error(`OperatorNamespace: props.name must be a DNS label, got '${this.name}'`);
    }
    new k8s.KubeNamespace(this, 'namespace', {
      metadata: {
        name: this.name,
        labels: {
          ...COMMON_LABELS,
          'pod-security.kubernetes.io/enforce': 'restricted',
          'pod-security.kubernetes.io/enforce-version': 'latest',
          'pod-security.kubernetes.io/warn': 'restricted',
          'pod-security.kubernetes.io/audit': 'restricted',
        },
      },
    });
  }
}
