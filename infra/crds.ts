/** The CustomResourceDefinitions of every kind in operator/api. */
import { ApiObject } from 'cdk8s';
import { Construct } from 'constructs';
import { ALL_DEFINITIONS, type ApiDefinition } from '../operator/api/v1';
import { renderCrd } from './crd';
import { COMMON_LABELS } from './labels';

/** Properties of {@link OperatorCrds}. */
export interface OperatorCrdsProps {
  /**
   * Kinds to render.
   * @default every kind of the API
   */
  readonly definitions?: readonly ApiDefinition[];
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
    this.crds = defs.map((def) => {
      const crd = renderCrd(def, { ...COMMON_LABELS });
      return new ApiObject(this, def.plural, crd);
    });
  }
}
