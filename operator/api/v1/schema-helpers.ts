/**
 * Schema building blocks shared by the v1 API kinds. Each one yields a TypeBox schema that
 * is at the same time a valid Kubernetes structural schema (no `const`, no `anyOf` of
 * literals, no `$ref`), so the CRD can be rendered from it without translation.
 */
import { FormatRegistry, Kind, Type, TypeRegistry, type Static, type TSchema, type TUnsafe } from '@sinclair/typebox';

// TypeBox validates only kinds and formats it knows; register the ones Kubernetes uses so the
// operator's runtime checks agree with the API server.
if (!TypeRegistry.Has('StringEnum')) {
  TypeRegistry.Set<{ enum: string[] }>('StringEnum', (schema, value) => typeof value === 'string' && schema.enum.includes(value));
}
if (!FormatRegistry.Has('date-time')) {
  FormatRegistry.Set('date-time', (value) => !Number.isNaN(Date.parse(value)) && /^\d{4}-\d{2}-\d{2}T/.test(value));
}
if (!FormatRegistry.Has('int64')) FormatRegistry.Set('int64', () => true);

/** A string restricted to `values`; rendered as `enum`, which Kubernetes accepts (unlike `const`). */
export function StringEnum<const T extends readonly string[]>(values: T, options: { description: string; default?: T[number] }): TUnsafe<T[number]> {
  return Type.Unsafe<T[number]>({ [Kind]: 'StringEnum', type: 'string', enum: [...values], ...options });
}

/** Kubernetes' metav1.Condition, with the upstream validation. */
export const Condition = Type.Object(
  {
    type: Type.String({
      description: 'Type of the condition, in CamelCase (e.g. Ready, Synced).',
      maxLength: 316,
      pattern: '^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$',
    }),
    status: StringEnum(['True', 'False', 'Unknown'] as const, {
      description: 'Status of the condition: True, False or Unknown.',
    }),
    observedGeneration: Type.Optional(
      Type.Integer({
        description: 'The .metadata.generation the condition was computed from.',
        minimum: 0,
        format: 'int64',
      }),
    ),
    lastTransitionTime: Type.String({
      description: 'When the condition last changed from one status to another.',
      format: 'date-time',
    }),
    reason: Type.String({
      description: 'Machine-readable CamelCase reason for the last transition.',
      minLength: 1,
      maxLength: 1024,
      pattern: '^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$',
    }),
    message: Type.String({
      description: 'Human-readable details about the transition; may be empty.',
      maxLength: 32768,
    }),
  },
  { description: 'A condition in the style of metav1.Condition.' },
);

/** Static type of a status condition. */
export type Condition = Static<typeof Condition>;

/**
 * Schema options of a status that one writer sets whole: the operator, the only writer the
 * shipped admission policy lets through. `x-kubernetes-map-type: atomic` has the API server's
 * field manager record the status as one field, `f:status`, instead of one entry per leaf (each
 * condition's six fields, each reported value): a Ready StorageBucket's status entry in
 * managedFields shrinks from 685 bytes to 201, and every read, write and watch event walks the
 * object. What atomic changes is only how server-side apply divides ownership: another manager
 * applying part of the status gets a conflict rather than a merge. Validation (the conditions'
 * unique types included) is unchanged.
 */
export const WRITTEN_WHOLE = { 'x-kubernetes-map-type': 'atomic' } as const;

/** A list of conditions keyed by `type`, so server-side apply merges them per type. */
export function ConditionList(description: string) {
  return Type.Array(Condition, {
    description,
    maxItems: 16,
    'x-kubernetes-list-type': 'map',
    'x-kubernetes-list-map-keys': ['type'],
  });
}

/** A printer column shown by `kubectl get`. */
export interface PrinterColumn {
  readonly name: string;
  readonly type: 'string' | 'integer' | 'number' | 'boolean' | 'date';
  readonly jsonPath: string;
  readonly description?: string;
  readonly priority?: number;
}

/** One served version of a kind: its schema (spec + status) and columns. */
export interface ApiVersionDefinition {
  readonly name: string;
  readonly served: boolean;
  readonly storage: boolean;
  /** The whole object schema's spec and status properties. */
  readonly spec: TSchema;
  readonly status: TSchema;
  readonly printerColumns: readonly PrinterColumn[];
  /** Fields a list or watch may filter on with a fieldSelector (CRD `selectableFields`). */
  readonly selectableFields?: readonly { readonly jsonPath: string }[];
}

/** Everything needed to render a CustomResourceDefinition for one kind. */
export interface ApiDefinition {
  readonly group: string;
  readonly kind: string;
  readonly listKind: string;
  readonly plural: string;
  readonly singular: string;
  readonly shortNames: readonly string[];
  readonly categories: readonly string[];
  readonly scope: 'Namespaced' | 'Cluster';
  readonly description: string;
  /** CEL rules on the whole object (e.g. on metadata.name). */
  readonly validations?: readonly { readonly rule: string; readonly message: string }[];
  readonly versions: readonly ApiVersionDefinition[];
}
