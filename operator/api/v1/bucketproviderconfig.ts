/**
 * BucketProviderConfig: where a storage provider lives and which Secret holds its API key.
 * Many StorageBuckets reference one config. Single source of truth for the kind.
 */
import { Type, type Static } from '@sinclair/typebox';
import type { V1ObjectMeta } from '@kubernetes/client-node';
import { API_VERSION, CATEGORY, GROUP, VERSION } from './group';
import { DEFAULT_SECRET_KEY, PROVIDER_CONFIG_NAMES } from './names';
import { ConditionList, type ApiDefinition } from './schema-helpers';

export { DEFAULT_SECRET_KEY } from './names';

/**
 * The CEL rule on the spec: the API key travels in every request's Authorization header, so
 * a plain-http endpoint needs an explicit `insecure: true`. Plain CEL (no Kubernetes library
 * functions), so the unit tests evaluate the same text with cel-go. `has()` keeps objects
 * stored before the field existed (no default applied yet) judged the same way.
 */
export const HTTPS_RULE = {
  rule: "self.endpoint.startsWith('https://') || (has(self.insecure) && self.insecure)",
  message: 'spec.endpoint must start with https:// unless spec.insecure is true: over http the API key is sent in clear',
} as const;

/**
 * The CEL rule on the endpoint: no `user:pass@` before the host. The endpoint is copied into
 * every bucket's status, its access Secret, condition messages and logs, so a password in it
 * would be published to everyone who may read those; the API key belongs in the Secret. The
 * pattern refuses an `@` there too (so generated samples never carry one); this rule is what
 * gives the refusal a message that says why. Plain CEL, like {@link HTTPS_RULE}.
 */
export const ENDPOINT_USERINFO_RULE = {
  rule: "!self.matches('^[A-Za-z][A-Za-z0-9+.-]*://[^/?#]*@')",
  message:
    'spec.endpoint must not carry a user name or password (user:pass@host): it is copied into bucket status and Secrets; put the API key in the Secret spec.secretRef names',
} as const;

/** Desired state of a BucketProviderConfig. */
export const BucketProviderConfigSpec = Type.Object(
  {
    endpoint: Type.String({
      description: 'Base URL of the provider API, e.g. https://storage.example.com. No user name or password (user:pass@) before the host.',
      minLength: 1,
      maxLength: 2048,
      pattern: '^https?://[^\\s/?#@]+(/[^\\s?#]*)?$',
      'x-kubernetes-validations': [{ ...ENDPOINT_USERINFO_RULE }],
    }),
    secretRef: Type.Object(
      {
        name: Type.String({ description: 'Name of the Secret, in the same namespace.', minLength: 1, maxLength: 253 }),
        key: Type.Optional(
          Type.String({
            description: 'Key within the Secret whose value is the API key.',
            default: DEFAULT_SECRET_KEY,
            minLength: 1,
            maxLength: 253,
          }),
        ),
      },
      { description: 'Secret holding the provider API key.' },
    ),
    insecure: Type.Optional(
      Type.Boolean({
        description:
          'Allow an http:// endpoint. The API key is then sent unencrypted, so only set this for a provider on a trusted network (e.g. a local test provider). Without it an http:// endpoint is refused.',
        default: false,
      }),
    ),
  },
  {
    description: 'Where the provider is and how to authenticate to it.',
    'x-kubernetes-validations': [{ ...HTTPS_RULE }],
  },
);

/** Desired state of a BucketProviderConfig. */
export type BucketProviderConfigSpec = Static<typeof BucketProviderConfigSpec>;

/** Observed state of a BucketProviderConfig. */
export const BucketProviderConfigStatus = Type.Object(
  {
    observedGeneration: Type.Optional(
      Type.Integer({ description: 'The .metadata.generation the status was computed from.', minimum: 0, format: 'int64' }),
    ),
    bucketCount: Type.Optional(Type.Integer({ description: 'Number of StorageBuckets that reference this config.', minimum: 0 })),
    conditions: Type.Optional(ConditionList('Ready condition, keyed by type.')),
  },
  { description: 'Observed state of the provider config.' },
);

/** Observed state of a BucketProviderConfig. */
export type BucketProviderConfigStatus = Static<typeof BucketProviderConfigStatus>;

/** A BucketProviderConfig object as stored in Kubernetes. */
export interface BucketProviderConfig {
  apiVersion?: typeof API_VERSION;
  kind?: 'BucketProviderConfig';
  metadata: V1ObjectMeta;
  spec: BucketProviderConfigSpec;
  status?: BucketProviderConfigStatus;
}

/** The CRD definition of BucketProviderConfig. */
export const BucketProviderConfigDefinition: ApiDefinition = {
  group: GROUP,
  ...PROVIDER_CONFIG_NAMES,
  categories: [CATEGORY],
  scope: 'Namespaced',
  description: 'BucketProviderConfig says where a storage provider is and which Secret holds its API key.',
  versions: [
    {
      name: VERSION,
      served: true,
      storage: true,
      spec: BucketProviderConfigSpec,
      status: BucketProviderConfigStatus,
      printerColumns: [
        { name: 'Endpoint', type: 'string', jsonPath: '.spec.endpoint', description: 'Provider API base URL.' },
        {
          name: 'Insecure',
          type: 'boolean',
          jsonPath: '.spec.insecure',
          description: 'Whether a plain-http endpoint (API key in clear) is allowed.',
        },
        {
          name: 'Ready',
          type: 'string',
          jsonPath: '.status.conditions[?(@.type=="Ready")].status',
          description: 'Whether the provider accepts the credentials.',
        },
        { name: 'Buckets', type: 'integer', jsonPath: '.status.bucketCount', description: 'StorageBuckets using this config.' },
        { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
      ],
    },
  ],
};
