/**
 * Least-privilege RBAC for the operator, rendered from the permissions each part of the
 * operator declares next to its code (operator/bucket/rbac.ts, operator/runtime/rbac.ts).
 */
import { Construct } from 'constructs';
import { k8s } from 'cdk8s-plus-28';
import type { PermissionRule } from '../operator/api/policy';
import { BUCKET_PERMISSIONS, CLUSTER_IDENTITY_PERMISSION } from '../operator/bucket/rbac';
import { RUNTIME_PERMISSIONS } from '../operator/runtime/rbac';
import { conversionPermissions, type CertificateKeeperKind } from '../operator/conversion/rbac';
import { GROUP } from '../operator/api/v1';
import { COMMON_LABELS } from './labels';

/** Where the operator's permissions apply. */
export type RbacMode = 'cluster' | 'namespace';

/** Properties of {@link OperatorRbac}. */
export interface OperatorRbacProps {
  /** Namespace the operator runs in (its Lease lives there). */
  readonly operatorNamespace: string;
  /** ServiceAccount the operator runs as. */
  readonly serviceAccountName: string;
  /**
   * `cluster`: a ClusterRole for all namespaces; `namespace`: a Role in `watchNamespace` only.
   * @default 'cluster'
   */
  readonly mode?: RbacMode;
  /** Namespace to manage in `namespace` mode; required there, refused in `cluster` mode. */
  readonly watchNamespace?: string;
  /**
   * Rules to grant.
   * @default the bucket controllers' and the runtime's declared permissions
   */
  readonly permissions?: readonly PermissionRule[];
  /**
   * Grant reading the kube-system namespace's uid (the cluster identity); false when the
   * identity is given with `--cluster-id`. Other named cluster-scoped objects (the
   * StorageBucket CRD, read by the uninstall guard) are granted either way.
   * @default true
   */
  readonly readsClusterIdentity?: boolean;
  /**
   * Also render aggregated editor/viewer ClusterRoles so namespace admins, editors and viewers
   * can use the custom resources.
   * @default true
   */
  readonly userRoles?: boolean;
  /**
   * The operator serves the CRDs' conversion webhook: also grant its Secret (by name) in the
   * operator namespace and get/patch on exactly the two CRDs, in a Role and a ClusterRole of
   * their own (see operator/conversion/rbac.ts).
   * @default off
   */
  readonly conversionWebhook?: { readonly secretName?: string; readonly certificates?: CertificateKeeperKind };
}

/** The operator's Roles/ClusterRoles and bindings. */
export class OperatorRbac extends Construct {
  /** Name of the role holding the watched-namespace rules. */
  public readonly managerRoleName = 'bucketoperator-manager';
  /** Name of the role holding the operator-namespace rules. */
  public readonly leaderElectionRoleName = 'bucketoperator-leader-election';
  /** Name of the Role (and, with the operator namespace appended, the ClusterRole) of the conversion webhook. */
  public readonly conversionWebhookRoleName = 'bucketoperator-conversion-webhook';
  /**
   * Name of the ClusterRole (and binding) that lets the operator read the cluster identity.
   * It carries the operator namespace, as the admission policy's name does: installs in two
   * namespaces (namespace mode) each keep their own instead of rebinding one another's.
   */
  public readonly clusterRoleName: string;
  /** Name of the ClusterRole (and binding) on the other named cluster-scoped objects: the StorageBucket CRD. */
  public readonly crdReaderRoleName: string;

  constructor(scope: Construct, id: string, props: OperatorRbacProps) {
    super(scope, id);
    const mode = props.mode ?? 'cluster';
    if (mode === 'namespace' && !props.watchNamespace) {
      throw new Error("OperatorRbac: props.watchNamespace is required when props.mode is 'namespace'");
    }
    if (mode === 'cluster' && props.watchNamespace) {
      throw new Error("OperatorRbac: props.watchNamespace is only valid when props.mode is 'namespace'");
    }
    const permissions = props.permissions ?? [...BUCKET_PERMISSIONS, ...RUNTIME_PERMISSIONS];
    const watched = toRules(permissions.filter((p) => p.scope === 'watched'));
    const own = toRules(permissions.filter((p) => p.scope === 'own'));
    this.clusterRoleName = `bucketoperator-cluster-identity.${props.operatorNamespace}`;
    this.crdReaderRoleName = `bucketoperator-crd-reader.${props.operatorNamespace}`;
    const identity = props.readsClusterIdentity === false ? [] : toRules(permissions.filter((p) => p === CLUSTER_IDENTITY_PERMISSION));
    const crdReader = toRules(permissions.filter((p) => p.scope === 'cluster' && p !== CLUSTER_IDENTITY_PERMISSION));
    const subjects = [{ kind: 'ServiceAccount', name: props.serviceAccountName, namespace: props.operatorNamespace }];
    const metadata = (name: string, namespace?: string) => ({ name, namespace, labels: { ...COMMON_LABELS } });

    if (mode === 'cluster') {
      new k8s.KubeClusterRole(this, 'manager-role', { metadata: metadata(this.managerRoleName), rules: watched });
      new k8s.KubeClusterRoleBinding(this, 'manager-binding', {
        metadata: metadata(this.managerRoleName),
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: this.managerRoleName },
        subjects,
      });
    } else {
      const ns = props.watchNamespace;
      new k8s.KubeRole(this, 'manager-role', { metadata: metadata(this.managerRoleName, ns), rules: watched });
      new k8s.KubeRoleBinding(this, 'manager-binding', {
        metadata: metadata(this.managerRoleName, ns),
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: this.managerRoleName },
        subjects,
      });
    }

    if (own.length > 0) {
      new k8s.KubeRole(this, 'leader-election-role', {
        metadata: metadata(this.leaderElectionRoleName, props.operatorNamespace),
        rules: own,
      });
      new k8s.KubeRoleBinding(this, 'leader-election-binding', {
        metadata: metadata(this.leaderElectionRoleName, props.operatorNamespace),
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: this.leaderElectionRoleName },
        subjects,
      });
    }

    // Named cluster-scoped objects (the kube-system namespace, for the cluster identity; the
    // StorageBucket CRD): ClusterRoles in either mode, narrowed by resourceNames.
    if (identity.length > 0) {
      new k8s.KubeClusterRole(this, 'cluster-role', { metadata: metadata(this.clusterRoleName), rules: identity });
      new k8s.KubeClusterRoleBinding(this, 'cluster-binding', {
        metadata: metadata(this.clusterRoleName),
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: this.clusterRoleName },
        subjects,
      });
    }
    if (crdReader.length > 0) {
      new k8s.KubeClusterRole(this, 'crd-reader-role', { metadata: metadata(this.crdReaderRoleName), rules: crdReader });
      new k8s.KubeClusterRoleBinding(this, 'crd-reader-binding', {
        metadata: metadata(this.crdReaderRoleName),
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: this.crdReaderRoleName },
        subjects,
      });
    }

    if (props.conversionWebhook) {
      const rules = conversionPermissions(props.conversionWebhook.secretName, props.conversionWebhook.certificates);
      const name = this.conversionWebhookRoleName;
      new k8s.KubeRole(this, 'conversion-webhook-role', {
        metadata: metadata(name, props.operatorNamespace),
        rules: toRules(rules.filter((p) => p.scope === 'own')),
      });
      new k8s.KubeRoleBinding(this, 'conversion-webhook-binding', {
        metadata: metadata(name, props.operatorNamespace),
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name },
        subjects,
      });
      // Cluster-scoped, so named after the operator namespace like the identity ClusterRole.
      const clusterName = `${name}.${props.operatorNamespace}`;
      new k8s.KubeClusterRole(this, 'conversion-webhook-cluster-role', {
        metadata: metadata(clusterName),
        rules: toRules(rules.filter((p) => p.scope === 'cluster')),
      });
      new k8s.KubeClusterRoleBinding(this, 'conversion-webhook-cluster-binding', {
        metadata: metadata(clusterName),
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: clusterName },
        subjects,
      });
    }

    if (props.userRoles ?? true) this.userRoles();
  }

  /** Aggregated roles, as kubebuilder scaffolds them, so users need no extra bindings. */
  private userRoles(): void {
    const resources = ['storagebuckets', 'bucketproviderconfigs'];
    new k8s.KubeClusterRole(this, 'editor-role', {
      metadata: {
        name: 'bucketoperator-editor',
        labels: {
          ...COMMON_LABELS,
          'rbac.authorization.k8s.io/aggregate-to-admin': 'true',
          'rbac.authorization.k8s.io/aggregate-to-edit': 'true',
        },
      },
      rules: [
        { apiGroups: [GROUP], resources, verbs: ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete', 'deletecollection'] },
        { apiGroups: [GROUP], resources: resources.map((r) => `${r}/status`), verbs: ['get'] },
      ],
    });
    new k8s.KubeClusterRole(this, 'viewer-role', {
      metadata: {
        name: 'bucketoperator-viewer',
        labels: { ...COMMON_LABELS, 'rbac.authorization.k8s.io/aggregate-to-view': 'true' },
      },
      rules: [
        { apiGroups: [GROUP], resources, verbs: ['get', 'list', 'watch'] },
        { apiGroups: [GROUP], resources: resources.map((r) => `${r}/status`), verbs: ['get'] },
      ],
    });
  }
}

function toRules(permissions: readonly PermissionRule[]): k8s.PolicyRule[] {
  return permissions.map((p) => ({
    apiGroups: [...p.apiGroups],
    resources: [...p.resources],
    ...(p.resourceNames ? { resourceNames: [...p.resourceNames] } : {}),
    verbs: [...p.verbs],
  }));
}
