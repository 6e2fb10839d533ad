/**
 * Renders an API definition from operator/api into a CustomResourceDefinition body. Kept as a
 * pure function so tests can inspect the CRD without synthesizing an App.
 */
import type { ApiDefinition, ApiVersionDefinition } from '../operator/api/v1';
import { toStructuralSchema } from './structural-schema';

/** A CRD as a plain object, ready for a cdk8s ApiObject. */
export interface CrdManifest {
  apiVersion: 'apiextensions.k8s.io/v1';
  kind: 'CustomResourceDefinition';
  metadata: { name: string; labels: Record<string, string> };
  spec: Record<string, unknown>;
}

/**
 * Renders the CRD for `def`, labelled with `labels`. Refuses more than one version: their
 * schemas differ, and without a conversion webhook (`spec.conversion`, not rendered yet) the
 * API server would convert by rewriting `apiVersion` alone and lose fields.
 */
export function renderCrd(def: ApiDefinition, labels: Record<string, string> = {}): CrdManifest {
  if (def.versions.length !== 1) {
    throw new Error(
      `renderCrd: ${def.kind} has ${def.versions.length} versions; serving several needs the conversion webhook, which is not rendered yet`,
    );
  }
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${def.plural}.${def.group}`, labels },
    spec: {
      group: def.group,
      names: {
        kind: def.kind,
        listKind: def.listKind,
        plural: def.plural,
        singular: def.singular,
        shortNames: [...def.shortNames],
        categories: [...def.categories],
      },
      scope: def.scope,
      versions: def.versions.map((v) => renderCrdVersion(def, v)),
    },
  };
}

/** Renders one entry of a CRD's `spec.versions`: version `v` of the kind `def`. */
export function renderCrdVersion(def: ApiDefinition, v: ApiVersionDefinition): Record<string, unknown> {
  return {
    name: v.name,
    served: v.served,
    storage: v.storage,
    subresources: { status: {} },
    additionalPrinterColumns: v.printerColumns.map((c) => ({ ...c })),
    ...(v.selectableFields?.length ? { selectableFields: v.selectableFields.map((f) => ({ ...f })) } : {}),
    schema: {
      openAPIV3Schema: {
        type: 'object',
        description: def.description,
        ...(def.validations?.length ? { 'x-kubernetes-validations': def.validations.map((v) => ({ ...v })) } : {}),
        required: ['spec'],
        properties: {
          apiVersion: {
            type: 'string',
            description: 'Versioned schema of this representation of an object.',
          },
          kind: { type: 'string', description: 'REST resource this object represents.' },
          metadata: { type: 'object' },
          spec: toStructuralSchema(v.spec, `#/${def.kind}/${v.name}/spec`),
          status: toStructuralSchema(v.status, `#/${def.kind}/${v.name}/status`),
        },
      },
    },
  };
}
