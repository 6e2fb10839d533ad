/**
 * StorageVersionMigrations (`storagemigration.k8s.io/v1`, in-tree since Kubernetes 1.37): one
 * per CRD, asking kube-controller-manager to rewrite every stored object in the CRDs' current
 * storage version and then to trim `status.storedVersions` to it. Rendered as objects, so
 * GitOps and `kubectl apply` users run the same migration without the operator holding any
 * permission on migrations or on CRD status. Older minors have no such API on by default: the
 * construct refuses them, and docs/v2.md gives the `kubectl` procedure that does the same.
 */
import { ApiObject } from 'cdk8s';
import { Construct } from 'constructs';
import { ALL_DEFINITIONS } from '../operator/api/v1';
import type { ApiDefinition } from '../operator/api/v1/schema-helpers';
import { apiVersionProblem, type ApiVersionName } from '../operator/api/version-names';
import {
  DEFAULT_KUBERNETES_VERSION,
  kubernetesVersionProblem,
  parseKubernetesVersion,
  STORAGE_MIGRATION_API_VERSION,
  storageMigrationPlan,
} from './kubernetes-versions';
import { COMMON_LABELS } from './labels';

/** Properties of {@link OperatorStorageMigration}. */
export interface OperatorStorageMigrationProps {
  /** The storage version the CRDs now name; part of each migration's name. */
  readonly version: ApiVersionName;
  /**
   * Kinds to migrate.
   * @default every kind of the API
   */
  readonly definitions?: readonly ApiDefinition[];
  /**
   * The Kubernetes minor (`1.37`, or a release such as `v1.37.2`) of the cluster the migrations
   * are applied to; one that does not serve them in-tree is refused.
   * @default '1.37' (DEFAULT_KUBERNETES_VERSION)
   */
  readonly kubernetesVersion?: string;
}

/**
 * The name of the migration of `def`'s objects to `version`. A migration runs once: flipping
 * to another version gets another name, and flipping back to a version migrated to before
 * needs the old migration deleted first (a finished one is never rerun).
 */
export function storageMigrationName(def: ApiDefinition, version: ApiVersionName): string {
  return `${def.plural}.${def.group}-to-${version}`;
}

/** One StorageVersionMigration per CRD of the API. */
export class OperatorStorageMigration extends Construct {
  /** One ApiObject per kind. */
  public readonly migrations: readonly ApiObject[];

  constructor(scope: Construct, id: string, props: OperatorStorageMigrationProps) {
    super(scope, id);
    const badVersion = apiVersionProblem('props.version', props.version);
    if (badVersion) throw new Error(`OperatorStorageMigration: ${badVersion}`);
    const badKubernetes =
      props.kubernetesVersion === undefined ? undefined : kubernetesVersionProblem('props.kubernetesVersion', props.kubernetesVersion);
    if (badKubernetes) throw new Error(`OperatorStorageMigration: ${badKubernetes}`);
    const kubernetesVersion = props.kubernetesVersion ?? DEFAULT_KUBERNETES_VERSION;
    const kubernetes = parseKubernetesVersion(kubernetesVersion);
    const plan = kubernetes ? storageMigrationPlan({ kubernetes, storageVersion: props.version, migrateStorage: true }) : undefined;
    if (plan?.kind !== 'storage-version-migration') {
      throw new Error(
        `OperatorStorageMigration: Kubernetes ${kubernetesVersion} does not serve ${STORAGE_MIGRATION_API_VERSION} (in-tree from 1.37); rewrite the stored objects as docs/v2.md, 'Storage migration before Kubernetes 1.37', describes`,
      );
    }
    const defs = props.definitions ?? ALL_DEFINITIONS;
    this.migrations = defs.map(
      (def) =>
        new ApiObject(this, def.plural, {
          apiVersion: plan.apiVersion,
          kind: 'StorageVersionMigration',
          metadata: {
            name: storageMigrationName(def, props.version),
            labels: { ...COMMON_LABELS },
            // After the CRDs and the Deployment (wave 0) are healthy: the operator that reads
            // and writes the new version runs, and the API server stores that version, before
            // anything is rewritten.
            annotations: { 'argocd.argoproj.io/sync-wave': '1' },
          },
          spec: { resource: { group: def.group, resource: def.plural } },
        }),
    );
  }
}
