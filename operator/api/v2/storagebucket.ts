/**
 * StorageBucket v2: the same bucket as v1, arranged the way Crossplane arranges a managed
 * resource. What the provider bucket should be is grouped in `spec.forProvider` (with the size
 * a Kubernetes quantity), what the provider last reported in `status.atProvider`, and the
 * config is named by `spec.providerConfigRef`. How the operator manages the bucket
 * (`deletionPolicy`, `managementPolicy`) and its own bookkeeping stay outside those groups.
 *
 * This file is the single source of truth of the v2 kind: its CRD version, TypeScript types
 * and runtime validation all derive from the schemas below. v1 stays the storage version; the
 * two are converted losslessly by operator/api/convert.
 */
import { Type, type Static } from '@sinclair/typebox';
import type { V1ObjectMeta } from '@kubernetes/client-node';
import { BucketPhases, DeletionPolicies, MAX_SIZE_GB, ManagementPolicies, StorageBucketDefinition as V1Definition } from '../v1/storagebucket';
import { API_VERSION, VERSION } from './group';
import { BucketSize, ConditionList, StringEnum, WRITTEN_WHOLE, type ApiDefinition } from './schema-helpers';
import { REPORTED_SIZE_PATTERN } from './size';

export { BucketPhases, DeletionPolicies, MAX_SIZE_GB, ManagementPolicies, type BucketPhase, type ManagementPolicy } from '../v1/storagebucket';

/** The provider bucket as it should be. */
export const StorageBucketForProvider = Type.Object(
  {
    region: Type.String({
      description: 'Provider region the bucket lives in, e.g. us-east-1. Immutable once set.',
      minLength: 1,
      maxLength: 63,
      pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$',
      'x-kubernetes-validations': [{ rule: 'self == oldSelf', message: 'forProvider.region is immutable' }],
    }),
    size: BucketSize({
      description: `Capacity as a Kubernetes quantity with a unit, e.g. 50G, 500Gi or 1.5T; more than 0 and at most ${MAX_SIZE_GB}G. The provider allocates whole GB (10^9 bytes), so a size between two is served rounded up (1500Mi is a 2 GB bucket); status.atProvider.size shows what it holds. It can grow but never shrink.`,
      field: 'forProvider.size',
    }),
    encrypted: Type.Optional(
      Type.Boolean({
        description: 'Whether the provider encrypts the bucket at rest. Immutable once set.',
        default: false,
        'x-kubernetes-validations': [{ rule: 'self == oldSelf', message: 'forProvider.encrypted is immutable' }],
      }),
    ),
  },
  {
    description:
      'The provider bucket as it should be: the operator creates it so and corrects drift back to it. With managementPolicy Observe none of it is enforced.',
  },
);

/** The provider bucket as it should be. */
export type StorageBucketForProvider = Static<typeof StorageBucketForProvider>;

/** Desired state of a StorageBucket. */
export const StorageBucketSpec = Type.Object(
  {
    forProvider: StorageBucketForProvider,
    providerConfigRef: Type.Object(
      {
        name: Type.String({ description: 'Name of the BucketProviderConfig.', minLength: 1, maxLength: 253 }),
      },
      {
        description: 'The BucketProviderConfig, in the same namespace, whose provider holds the bucket. Immutable.',
        'x-kubernetes-validations': [{ rule: 'self == oldSelf', message: 'providerConfigRef is immutable' }],
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
          'Full (default): the operator creates, resizes, drift-corrects and deletes the provider bucket. Observe: it only reads the existing bucket named by the storage.avalonhosting.example/adopt-id annotation and mirrors it into status.atProvider (spec.forProvider is not enforced, and deleting the StorageBucket leaves the bucket in place). Changing Observe to Full adopts the bucket.',
        default: 'Full',
      }),
    ),
  },
  { description: 'Desired state of the bucket.' },
);

/** Desired state of a StorageBucket. */
export type StorageBucketSpec = Static<typeof StorageBucketSpec>;

/** The provider bucket as the provider last reported it. */
export const StorageBucketAtProvider = Type.Object(
  {
    id: Type.Optional(Type.String({ description: 'Identifier of the bucket at the provider.', maxLength: 253 })),
    account: Type.Optional(
      Type.String({
        description:
          'Provider account the bucket belongs to, as the provider names it. If the config later holds credentials of another account, the operator reports ProviderChanged rather than create a second bucket.',
        maxLength: 253,
      }),
    ),
    endpoint: Type.Optional(Type.String({ description: 'Address at which the bucket is served.', maxLength: 2048 })),
    region: Type.Optional(Type.String({ description: 'Region the provider reports.', maxLength: 63 })),
    size: Type.Optional(
      Type.String({
        description: 'Capacity the provider reports, in whole GB, e.g. 50G.',
        pattern: REPORTED_SIZE_PATTERN,
        maxLength: 16,
      }),
    ),
    encrypted: Type.Optional(Type.Boolean({ description: 'Whether the provider reports the bucket encrypted at rest.' })),
  },
  // An empty atProvider says nothing that an absent one does not; refusing it keeps every
  // status v2 accepts expressible in v1, which has no group to leave empty.
  { description: 'The provider bucket as the provider last reported it.', minProperties: 1 },
);

/** The provider bucket as the provider last reported it. */
export type StorageBucketAtProvider = Static<typeof StorageBucketAtProvider>;

/** Observed state of a StorageBucket, written only by the operator. */
export const StorageBucketStatus = Type.Object(
  {
    observedGeneration: Type.Optional(
      Type.Integer({ description: 'The .metadata.generation the status was last computed from.', minimum: 0, format: 'int64' }),
    ),
    conditions: Type.Optional(
      ConditionList(
        'Ready and Synced conditions, keyed by type, plus the kstatus conditions Reconciling (True while the operator works towards the spec) and Stalled (True when it cannot make progress until the spec, the config or its Secret changes); both are absent otherwise.',
      ),
    ),
    phase: Type.Optional(StringEnum(BucketPhases, { description: 'Lifecycle phase, for display; use conditions in automation.' })),
    lastHandledReconcileAt: Type.Optional(
      Type.String({
        description:
          'The value of the storage.avalonhosting.example/reconcile-requested-at annotation the operator last handled: set the annotation to any new value (e.g. a timestamp) to ask for a reconcile now, and wait until this field shows it.',
        maxLength: 253,
      }),
    ),
    idempotencyKey: Type.Optional(
      Type.String({
        description:
          'Idempotency key the provider bucket was created with (the operator records the key to use in an annotation before each create).',
        maxLength: 255,
      }),
    ),
    providerEndpoint: Type.Optional(
      Type.String({
        description: 'Provider API the bucket lives at. If the config later points elsewhere, the operator stops rather than create a second bucket.',
        maxLength: 2048,
      }),
    ),
    atProvider: Type.Optional(StorageBucketAtProvider),
  },
  // Written whole by the operator alone: managedFields hold `f:status`, not every leaf.
  { description: 'Observed state of the bucket.', ...WRITTEN_WHOLE },
);

/** Observed state of a StorageBucket. */
export type StorageBucketStatus = Static<typeof StorageBucketStatus>;

/** A v2 StorageBucket object as the API server serves it. */
export interface StorageBucket {
  apiVersion?: typeof API_VERSION;
  kind?: 'StorageBucket';
  metadata: V1ObjectMeta;
  spec: StorageBucketSpec;
  status?: StorageBucketStatus;
}

/** Field selector key of `spec.providerConfigRef.name` (a selectable field of the v2 version). */
export const PROVIDER_CONFIG_REF_FIELD = 'spec.providerConfigRef.name';

/**
 * The CRD definition of StorageBucket with only its v2 version. Names, scope and the rule on
 * metadata.name are v1's: a CRD's versions share them.
 */
export const StorageBucketDefinition: ApiDefinition = {
  ...V1Definition,
  versions: [
    {
      name: VERSION,
      served: true,
      storage: false,
      spec: StorageBucketSpec,
      status: StorageBucketStatus,
      selectableFields: [{ jsonPath: `.${PROVIDER_CONFIG_REF_FIELD}` }],
      printerColumns: [
        {
          name: 'Ready',
          type: 'string',
          jsonPath: '.status.conditions[?(@.type=="Ready")].status',
          description: 'Whether the bucket is ready for use.',
        },
        { name: 'Phase', type: 'string', jsonPath: '.status.phase', description: 'Lifecycle phase.' },
        { name: 'ID', type: 'string', jsonPath: '.status.atProvider.id', description: 'Identifier at the provider.' },
        { name: 'Region', type: 'string', jsonPath: '.spec.forProvider.region', description: 'Provider region.' },
        { name: 'Policy', type: 'string', jsonPath: '.spec.managementPolicy', description: 'Full or Observe.', priority: 1 },
        { name: 'Size', type: 'string', jsonPath: '.spec.forProvider.size', description: 'Requested capacity.' },
        { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
      ],
    },
  ],
};
