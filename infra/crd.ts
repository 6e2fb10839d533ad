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

/** Where the API server calls the conversion webhook (`spec.conversion.webhook.clientConfig`). */
export type ConversionClientConfig =
  | { readonly service: { readonly namespace: string; readonly name: string; readonly port?: number; readonly path?: string } }
  | { readonly url: string };

/** Options of {@link renderCrd}. */
export interface RenderCrdOptions {
  /**
   * Convert between versions through the operator's webhook (`strategy: Webhook`). The
   * caBundle is left out: the operator injects it (a rendered one would be undone by it, and
   * would undo it on every re-apply).
   */
  readonly conversionWebhook?: ConversionClientConfig;
}

/**
 * Renders the CRD for `def`, labelled with `labels`. Refuses more than one version unless a
 * conversion webhook is given: their schemas differ, and without one the API server would
 * convert by rewriting `apiVersion` alone and lose fields.
 */
export function renderCrd(def: ApiDefinition, labels: Record<string, string> = {}, opts: RenderCrdOptions = {}): CrdManifest {
  if (def.versions.length !== 1 && !opts.conversionWebhook) {
    throw new Error(
      `renderCrd: ${def.kind} has ${def.versions.length} versions; serving several needs the conversion webhook (opts.conversionWebhook)`,
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
      ...(opts.conversionWebhook
        ? {
            conversion: {
              strategy: 'Webhook',
              // The webhook speaks ConversionReview v1 only (operator/conversion/review.ts).
              webhook: { conversionReviewVersions: ['v1'], clientConfig: clientConfigOf(opts.conversionWebhook) },
            },
          }
        : {}),
    },
  };
}

function clientConfigOf(config: ConversionClientConfig): Record<string, unknown> {
  if ('url' in config) return { url: config.url };
  const { namespace, name, port, path } = config.service;
  return { service: { namespace, name, path: path ?? '/convert', ...(port !== undefined ? { port } : {}) } };
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
