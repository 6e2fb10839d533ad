/**
 * StorageVersionMigrations (`storagemigration.k8s.io/v1`, in-tree since Kubernetes 1.37): one
 * per CRD, asking kube-controller-manager to rewrite every stored object in the CRDs' current
 * storage version and then to trim `status.storedVersions` to it. Rendered as objects, so
 * GitOps and `kubectl apply` users run the same migration without the operator holding any
 * permission on migrations or on CRD status.
 */
import { ApiObject } from 'cdk8s';
import { Construct } from 'constructs';
import { ALL_DEFINITIONS } from '../operator/api/v1';
import type { ApiDefinition } from '../operator/api/v1/schema-helpers';
import { apiVersionProblem, type ApiVersionName } from '../operator/api/version-names';
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
    const defs = props.definitions ?? ALL_DEFINITIONS;
    this.migrations = defs.map(
      (def) =>
        new ApiObject(this, def.plural, {
          apiVersion: 'storagemigration.k8s.io/v1',
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
