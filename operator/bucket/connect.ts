/**
 * Resolves a bucket's provider connection from its BucketProviderConfig and that config's
 * Secret. Credential Secrets opt in with a label: they are read from the one informer that
 * selects on it, and a Secret without it is never used (its data is never even kept). On a
 * cache miss one GET by name tells "not found" from "not labelled", so the status says what to
 * do. Failures name the missing object, never the key.
 */
import { createHash } from 'node:crypto';
import type { V1Secret } from '@kubernetes/client-node';
import type { BucketProviderConfig, BucketProviderConfigSpec, StorageBucket } from '../api/v1';
import { CONFIG_IN_USE_FINALIZER, DEFAULT_SECRET_KEY } from '../api/v1';
import { ALLOW_LINK_LOCAL_FLAG, deniedEndpointHost, endpointUserinfoProblem, type ProviderClient, type ProviderClients } from '../provider-client';
import type { Cache, ObjectKey } from '../runtime';
import { judgeCredentials, withoutUnlabelledData, type CredentialsVerdict, type SecretRef } from './credentials';
import { Reason } from './reasons';

export {
  CREDENTIALS_SELECTOR,
  isCredentialsSecret,
  judgeCredentials,
  labelCommand,
  withoutUnlabelledData,
  type CredentialsVerdict,
  type SecretRef,
} from './credentials';

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
      | typeof Reason.SecretNotLabeled
      | typeof Reason.InvalidProviderConfig,
    message: string,
  ) {
    super(message);
  }
}

/** Where credential Secrets are read from. */
export interface CredentialSecrets {
  /** The label-selected informer's cache: labelled Secrets only, managedFields stripped. */
  readonly cache: Cache<V1Secret>;
  /** Resolves once the cache holds its initial list, so a miss is worth asking the API about. */
  waitForSync(signal?: AbortSignal): Promise<void>;
  /**
   * One GET by name, asked only on a cache miss. A Secret without the label comes back as
   * metadata only: its data is dropped before anyone can log, store or send it.
   */
  lookup(key: ObjectKey): Promise<V1Secret | undefined>;
}

/**
 * Reads `config`'s Secret (cache first, once from the API on a miss) and judges it. Waits (up
 * to `signal`) for the cache to fill, so a config that has just appeared is never reported as
 * lacking a Secret that exists.
 */
export async function resolveCredentials(
  secrets: CredentialSecrets,
  config: BucketProviderConfig,
  signal?: AbortSignal,
): Promise<CredentialsVerdict> {
  const ref: SecretRef = {
    namespace: config.metadata.namespace ?? '',
    name: config.spec.secretRef.name,
    key: config.spec.secretRef.key ?? DEFAULT_SECRET_KEY,
  };
  await secrets.waitForSync(signal);
  // A miss is an absent or unlabelled Secret, or (rarely) one the watch has not delivered yet:
  // the API server's answer settles which, and its add event re-reconciles either way.
  const secret = secrets.cache.get(ref) ?? withoutUnlabelledData(await secrets.lookup(ref));
  return judgeCredentials(ref, secret);
}

/** Caches and client factory that `connect` reads. */
export interface ConnectDeps {
  readonly configs: Cache<BucketProviderConfig>;
  /** Credential Secrets: the label-selected cache, and one GET on a miss. */
  readonly secrets: CredentialSecrets;
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
  // Before anything else reads it: a refused endpoint is never copied into status or a Secret.
  const userinfo = endpointUserinfoProblem(spec.endpoint);
  if (userinfo) return userinfo;
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
 * Resolves the connection for `bucket`, or throws a {@link ConnectError}. The API key comes
 * only from a Secret labelled as credentials ({@link resolveCredentials}).
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
  // The same config and Secret objects (a watch event replaces them, never edits them) give
  // the same connection: every reconcile connects, and the checks below, the key's decoding
  // and the account hash were a visible share of a reconcile's CPU.
  const secretRef = { namespace, name: config.spec.secretRef.name };
  const known = connections.get(config);
  if (known && known.secret !== undefined && known.secret === deps.secrets.cache.get(secretRef) && known.clients === deps.clients)
    return known.connection;
  // Checked for deletions too: the API key is never sent in clear or to a metadata service.
  const problem = endpointProblem(config.spec, { allowLinkLocal: deps.clients.allowLinkLocalEndpoints });
  if (problem) throw new ConnectError(Reason.InvalidProviderConfig, `BucketProviderConfig ${namespace}/${configName}: ${problem}`);
  const secret = deps.secrets.cache.get(secretRef);
  const credentials = await resolveCredentials(deps.secrets, config, signal);
  if (!credentials.ok) throw new ConnectError(credentials.reason, credentials.message);
  const { apiKey } = credentials;
  const account = createHash('sha256').update(config.spec.endpoint).update('\0').update(apiKey).digest('hex').slice(0, 32);
  const connection: Connection = { client: deps.clients.client(config.spec.endpoint, apiKey), endpoint: config.spec.endpoint, config, account };
  // Only a connection made from a cached Secret is kept: one found by a GET has no object to compare.
  if (secret !== undefined) connections.set(config, { secret, clients: deps.clients, connection });
  return connection;
}

/** Connections by the config object they were made from (see connect()). */
const connections = new WeakMap<
  BucketProviderConfig,
  { readonly secret: V1Secret | undefined; readonly clients: ProviderClients; readonly connection: Connection }
>();
