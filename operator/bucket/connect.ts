/**
 * Resolves a bucket's provider connection from its BucketProviderConfig and that config's
 * Secret, both read from informer caches (the Secret from the informer watching it by name).
 * Failures name the missing object, never the key.
 */
import { createHash } from 'node:crypto';
import type { V1Secret } from '@kubernetes/client-node';
import type { BucketProviderConfig, BucketProviderConfigSpec, StorageBucket } from '../api/v1';
import { CONFIG_IN_USE_FINALIZER, DEFAULT_SECRET_KEY } from '../api/v1';
import { ALLOW_LINK_LOCAL_FLAG, deniedEndpointHost, type ProviderClient, type ProviderClients } from '../provider-client';
import type { Cache, NamedCache } from '../runtime';
import { Reason } from './reasons';

/** A connection to the provider that holds a bucket. */
export interface Connection {
  readonly client: ProviderClient;
  readonly endpoint: string;
  readonly config: BucketProviderConfig;
  /**
   * Names the provider account (endpoint and API key) without revealing the key: buckets
   * with the same account are listed together by the drift scan, whatever config names them.
   */
  readonly account: string;
}

/** The config or its credentials are missing: nothing to retry until they appear. */
export class ConnectError extends Error {
  override readonly name = 'ConnectError';
  constructor(
    readonly reason:
      | typeof Reason.ProviderConfigNotFound
      | typeof Reason.ProviderConfigNotReady
      | typeof Reason.SecretNotFound
      | typeof Reason.InvalidProviderConfig,
    message: string,
  ) {
    super(message);
  }
}

/** Caches and client factory that `connect` reads. */
export interface ConnectDeps {
  readonly configs: Cache<BucketProviderConfig>;
  /** Credential Secrets, watched by name while a config refers to them. */
  readonly secrets: NamedCache<V1Secret>;
  readonly clients: ProviderClients;
}

/** What {@link endpointProblem} needs to know about the operator's settings. */
export interface EndpointPolicy {
  /** `--allow-link-local-endpoints`. */
  readonly allowLinkLocal: boolean;
}

/**
 * Why the operator will not send an API key to the endpoint of `spec`, in one line naming
 * the field, or undefined when it may. Shared by connect() and the config's own Ready
 * condition, so a bucket and its config always give the same reason. The CEL rule refuses
 * http without `insecure` on write; this catches objects stored before the rule existed.
 */
export function endpointProblem(spec: Pick<BucketProviderConfigSpec, 'endpoint' | 'insecure'>, policy: EndpointPolicy): string | undefined {
  if (!URL.canParse(spec.endpoint)) return 'endpoint is not a valid URL';
  if (new URL(spec.endpoint).protocol !== 'https:' && spec.insecure !== true) {
    return 'spec.endpoint is not https:// and spec.insecure is not true: the API key would be sent in clear';
  }
  if (!policy.allowLinkLocal) {
    const why = deniedEndpointHost(spec.endpoint);
    if (why) return `spec.endpoint ${why}: refused (${ALLOW_LINK_LOCAL_FLAG} allows it)`;
  }
  return undefined;
}

/**
 * Resolves the connection for `bucket`, or throws a {@link ConnectError}. Waits (up to
 * `signal`) for the Secret's informer to fill, so a config that has just appeared is never
 * reported as lacking a Secret that exists.
 */
export async function connect(deps: ConnectDeps, bucket: StorageBucket, signal?: AbortSignal): Promise<Connection> {
  const namespace = bucket.metadata.namespace ?? '';
  const configName = bucket.spec.providerRef.name;
  const config = deps.configs.get({ namespace, name: configName });
  if (!config) {
    throw new ConnectError(Reason.ProviderConfigNotFound, `BucketProviderConfig ${namespace}/${configName} not found`);
  }
  // The config's in-use finalizer is what keeps it (and so the way to deprovision) alive while
  // buckets exist; until its controller has added it, nothing is created through it. A config
  // being deleted connects: what may still be done through it is plan.ts's to decide.
  const inUse = (config.metadata.finalizers ?? []).includes(CONFIG_IN_USE_FINALIZER);
  if (!bucket.metadata.deletionTimestamp && !config.metadata.deletionTimestamp && !inUse) {
    throw new ConnectError(Reason.ProviderConfigNotReady, `BucketProviderConfig ${namespace}/${configName} is not yet marked in use`);
  }
  // Checked for deletions too: the API key is never sent in clear or to a metadata service.
  const problem = endpointProblem(config.spec, { allowLinkLocal: deps.clients.allowLinkLocalEndpoints });
  if (problem) throw new ConnectError(Reason.InvalidProviderConfig, `BucketProviderConfig ${namespace}/${configName}: ${problem}`);
  const secretName = config.spec.secretRef.name;
  const key = config.spec.secretRef.key ?? DEFAULT_SECRET_KEY;
  await deps.secrets.waitForKey({ namespace, name: secretName }, signal);
  const secret = deps.secrets.get({ namespace, name: secretName });
  const encoded = secret?.data?.[key];
  if (!secret || !encoded) {
    const what = secret ? `key ${key} missing in Secret ${namespace}/${secretName}` : `Secret ${namespace}/${secretName} not found`;
    throw new ConnectError(Reason.SecretNotFound, what);
  }
  const apiKey = Buffer.from(encoded, 'base64').toString('utf8').trim();
  if (!apiKey) throw new ConnectError(Reason.SecretNotFound, `key ${key} in Secret ${namespace}/${secretName} is empty`);
  const account = createHash('sha256').update(config.spec.endpoint).update('\0').update(apiKey).digest('hex').slice(0, 32);
  return { client: deps.clients.client(config.spec.endpoint, apiKey), endpoint: config.spec.endpoint, config, account };
}
