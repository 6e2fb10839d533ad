/** The CustomResourceDefinitions of every kind in operator/api. */
import { ApiObject } from 'cdk8s';
import { Construct } from 'constructs';
import { ALL_DEFINITIONS, type ApiDefinition } from '../operator/api/v1';
import * as v2 from '../operator/api/v2';
import { combineVersions, withStorageVersion } from '../operator/api/versions';
import { apiVersionProblem, type ApiVersionName } from '../operator/api/version-names';
import { renderCrd, type ConversionClientConfig } from './crd';
import { COMMON_LABELS } from './labels';

/** Properties of {@link OperatorCrds}. */
export interface OperatorCrdsProps {
  /**
   * Kinds to render.
   * @default every kind of the API
   */
  readonly definitions?: readonly ApiDefinition[];
  /**
   * Serve v2 beside v1 (v1 stays the storage version), converted by the operator's webhook
   * here. The caBundle is not rendered: the operator injects it.
   * @default v1 only
   */
  readonly conversionWebhook?: ConversionClientConfig;
  /**
   * The version the API server stores (needs `conversionWebhook` for v2). Changing it
   * changes only what is written from then on; a StorageVersionMigration rewrites the rest
   * (see {@link OperatorStorageMigration}).
   * @default 'v1'
   */
  readonly storageVersion?: ApiVersionName;
  /**
   * `<namespace>/<Certificate>` whose CA cert-manager's cainjector puts into the caBundle
   * (annotation `cert-manager.io/inject-ca-from`), when cert-manager keeps the certificates.
   * @default none: the operator injects it
   */
  readonly injectCaFrom?: string;
}

/**
 * Renders CRDs as raw ApiObjects: the typed KubeCustomResourceDefinition wants camelCase keys
 * and silently drops `x-kubernetes-*` ones, which would lose the CEL rules and list-map keys.
 */
export class OperatorCrds extends Construct {
  /** One ApiObject per kind. */
  public readonly crds: readonly ApiObject[];

  constructor(scope: Construct, id: string, props: OperatorCrdsProps = {}) {
    super(scope, id);
    const defs = props.definitions ?? ALL_DEFINITIONS;
    if (defs.length === 0) throw new Error('OperatorCrds: props.definitions must name at least one kind');
    const webhook = props.conversionWebhook;
    const storage = props.storageVersion ?? 'v1';
    const badStorage = apiVersionProblem('props.storageVersion', storage);
    if (badStorage) throw new Error(`OperatorCrds: ${badStorage}`);
    if (storage === 'v2' && !webhook) throw new Error("OperatorCrds: props.storageVersion 'v2' needs props.conversionWebhook (v1 is served too)");
    this.crds = defs.map((def) => {
      const crd = webhook
        ? renderCrd(withStorageVersion(combineVersions([def, v2For(def)]), storage), { ...COMMON_LABELS }, { conversionWebhook: webhook })
        : renderCrd(def, { ...COMMON_LABELS });
      const obj = new ApiObject(this, def.plural, crd);
      if (props.injectCaFrom) obj.metadata.addAnnotation('cert-manager.io/inject-ca-from', props.injectCaFrom);
      return obj;
    });
  }
}

/** The v2 definition of `def`'s kind. */
function v2For(def: ApiDefinition): ApiDefinition {
  const next = v2.ALL_DEFINITIONS.find((d) => d.kind === def.kind && d.group === def.group);
  if (!next) throw new Error(`OperatorCrds: ${def.kind} has no v2 to serve beside v1`);
  return next;
}
