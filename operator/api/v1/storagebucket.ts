/**
 * StorageBucket: a bucket at a storage provider, declared in Kubernetes. This file is the
 * single source of truth for the kind: the CRD schema, the TypeScript types the operator
 * uses and the runtime validation all derive from the schemas below.
 */
import { Type, type Static } from '@sinclair/typebox';
import type { V1ObjectMeta } from '@kubernetes/client-node';
import { API_VERSION, CATEGORY, GROUP, VERSION } from './group';
import { STORAGE_BUCKET_NAMES } from './names';
import { ConditionList, StringEnum, WRITTEN_WHOLE, type ApiDefinition } from './schema-helpers';

/** What happens to the provider bucket when the StorageBucket is deleted. */
export const DeletionPolicies = ['Delete', 'Orphan'] as const;

/**
 * How far the operator manages the provider bucket. Full: create, resize, correct drift and
 * delete. Observe: import an existing bucket read-only (named by the adopt-id annotation):
 * status mirrors it and it is Ready when it exists, but it is never created, changed or
 * deleted. Switching Observe to Full is an explicit edit, and the bucket is then adopted.
 */
export const ManagementPolicies = ['Full', 'Observe'] as const;

/** Management policy of a StorageBucket. */
export type ManagementPolicy = (typeof ManagementPolicies)[number];

/** Display phases; conditions are the contract, phase is for humans. */
export const BucketPhases = ['Pending', 'Provisioning', 'Active', 'Resizing', 'Failed'] as const;

/** Display phase of a StorageBucket. */
export type BucketPhase = (typeof BucketPhases)[number];

/** Largest bucket the API accepts, in GB. */
export const MAX_SIZE_GB = 10000;

/** Desired state of a StorageBucket. */
export const StorageBucketSpec = Type.Object(
  {
    region: Type.String({
      description: 'Provider region the bucket lives in, e.g. us-east-1. Immutable once set.',
      minLength: 1,
      maxLength: 63,
      pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$',
      'x-kubernetes-validations': [{ rule: 'self == oldSelf', message: 'region is immutable' }],
    }),
    sizeGB: Type.Integer({
      description: `Capacity in GB, from 1 to ${MAX_SIZE_GB}. It can grow but never shrink.`,
      minimum: 1,
      maximum: MAX_SIZE_GB,
      'x-kubernetes-validations': [{ rule: 'self >= oldSelf', message: 'sizeGB can only grow' }],
    }),
    encrypted: Type.Optional(
      Type.Boolean({
        description: 'Whether the provider encrypts the bucket at rest. Immutable once set.',
        default: false,
        'x-kubernetes-validations': [{ rule: 'self == oldSelf', message: 'encrypted is immutable' }],
      }),
    ),
    providerRef: Type.Object(
      {
        name: Type.String({
          description: 'Name of the BucketProviderConfig.',
          minLength: 1,
          maxLength: 253,
        }),
      },
      {
        description: 'The BucketProviderConfig, in the same namespace, whose provider holds the bucket. Immutable.',
        'x-kubernetes-validations': [{ rule: 'self == oldSelf', message: 'providerRef is immutable' }],
      },
    ),
    deletionPolicy: Type.Optional(
      StringEnum(DeletionPolicies, {
        description: 'Delete removes the provider bucket when the StorageBucket is deleted; Orphan leaves it in place.',
        default: 'Delete',
      }),
    ),
    managementPolicy: Type.Optional(
      StringEnum(ManagementPolicies, {
        description:
          'Full (default): the operator creates, resizes, drift-corrects and deletes the provider bucket. Observe: it only reads the existing bucket named by the storage.avalonhosting.example/adopt-id annotation and mirrors it into status (region, sizeGB and encrypted in the spec are not enforced, and deleting the StorageBucket leaves the bucket in place). Changing Observe to Full adopts the bucket.',
        default: 'Full',
      }),
    ),
  },
  { description: 'Desired state of the bucket.' },
);

/** Desired state of a StorageBucket. */
export type StorageBucketSpec = Static<typeof StorageBucketSpec>;

/** Observed state of a StorageBucket, written only by the operator. */
export const StorageBucketStatus = Type.Object(
  {
    id: Type.Optional(Type.String({ description: 'Identifier of the bucket at the provider.', maxLength: 253 })),
    phase: Type.Optional(StringEnum(BucketPhases, { description: 'Lifecycle phase, for display; use conditions in automation.' })),
    observedGeneration: Type.Optional(
      Type.Integer({
        description: 'The .metadata.generation the status was last computed from.',
        minimum: 0,
        format: 'int64',
      }),
    ),
    idempotencyKey: Type.Optional(
      Type.String({
        description:
          'Idempotency key the provider bucket was created with (the operator records the key to use in an annotation before each create).',
        maxLength: 255,
      }),
    ),
    endpoint: Type.Optional(Type.String({ description: 'Address at which the bucket is served.', maxLength: 2048 })),
    providerEndpoint: Type.Optional(
      Type.String({
        description: 'Provider API the bucket lives at. If the config later points elsewhere, the operator stops rather than create a second bucket.',
        maxLength: 2048,
      }),
    ),
    account: Type.Optional(
      Type.String({
        description:
          'Provider account the bucket belongs to, as the provider names it. If the config later holds credentials of another account, the operator reports ProviderChanged rather than create a second bucket.',
        maxLength: 253,
      }),
    ),
    sizeGB: Type.Optional(Type.Integer({ description: 'Capacity the provider reports, in GB.', minimum: 0 })),
    encrypted: Type.Optional(Type.Boolean({ description: 'Whether the provider reports the bucket encrypted at rest.' })),
    region: Type.Optional(Type.String({ description: 'Region the provider reports.', maxLength: 63 })),
    lastHandledReconcileAt: Type.Optional(
      Type.String({
        description:
          'The value of the storage.avalonhosting.example/reconcile-requested-at annotation the operator last handled: set the annotation to any new value (e.g. a timestamp) to ask for a reconcile now, and wait until this field shows it.',
        maxLength: 253,
      }),
    ),
    conditions: Type.Optional(
      ConditionList(
        'Ready and Synced conditions, keyed by type, plus the kstatus conditions Reconciling (True while the operator works towards the spec) and Stalled (True when it cannot make progress until the spec, the config or its Secret changes); both are absent otherwise.',
      ),
    ),
  },
  // Written whole by the operator alone: managedFields hold `f:status`, not every leaf.
  { description: 'Observed state of the bucket.', ...WRITTEN_WHOLE },
);

/** Observed state of a StorageBucket. */
export type StorageBucketStatus = Static<typeof StorageBucketStatus>;

/** A StorageBucket object as stored in Kubernetes. */
export interface StorageBucket {
  apiVersion?: typeof API_VERSION;
  kind?: 'StorageBucket';
  metadata: V1ObjectMeta;
  spec: StorageBucketSpec;
  status?: StorageBucketStatus;
}

/**
 * Field selector key of `spec.providerRef.name` (a CRD selectable field): the config
 * controller asks the API server, not its cache, whether a config still has users before it
 * lets the config go.
 */
export const PROVIDER_REF_FIELD = 'spec.providerRef.name';

/** The CRD definition of StorageBucket. */
export const StorageBucketDefinition: ApiDefinition = {
  group: GROUP,
  ...STORAGE_BUCKET_NAMES,
  categories: [CATEGORY],
  scope: 'Namespaced',
  description: 'StorageBucket is a bucket at a storage provider, created, resized and deleted by the operator.',
  validations: [
    {
      // The bucket's Service is named after it, and Service names are DNS-1035 labels.
      rule: "self.metadata.name.size() <= 63 && self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",
      message:
        'metadata.name must be a DNS-1035 label (at most 63 characters, a-z, 0-9 and -, starting with a letter): it also names the bucket Service',
    },
  ],
  versions: [
    {
      name: VERSION,
      served: true,
      storage: true,
      spec: StorageBucketSpec,
      status: StorageBucketStatus,
      selectableFields: [{ jsonPath: `.${PROVIDER_REF_FIELD}` }],
      printerColumns: [
        {
          name: 'Ready',
          type: 'string',
          jsonPath: '.status.conditions[?(@.type=="Ready")].status',
          description: 'Whether the bucket is ready for use.',
        },
        { name: 'Phase', type: 'string', jsonPath: '.status.phase', description: 'Lifecycle phase.' },
        { name: 'ID', type: 'string', jsonPath: '.status.id', description: 'Identifier at the provider.' },
        { name: 'Region', type: 'string', jsonPath: '.spec.region', description: 'Provider region.' },
        { name: 'Policy', type: 'string', jsonPath: '.spec.managementPolicy', description: 'Full or Observe.', priority: 1 },
        { name: 'Size', type: 'integer', jsonPath: '.spec.sizeGB', description: 'Requested capacity in GB.' },
        { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
      ],
    },
  ],
};
