/**
 * What `kubectl bucket` knows about one StorageBucket and the objects around it, as plain
 * facts gathered once (cli/kube.ts) and then judged by pure functions (cli/trace.ts). Secrets
 * enter only through {@link credentialFacts} and {@link ownedFacts}, which keep presence,
 * labels and key names and drop every value.
 */
import type { V1Secret } from '@kubernetes/client-node';
import type { BucketProviderConfig, StorageBucket } from '../operator/api/v1';
import { DEFAULT_SECRET_KEY } from '../operator/api/v1/names';
import { MANAGED_BY_LABEL, MANAGED_BY_VALUE } from '../operator/api/v1/well-known';
import { isCredentialsSecret, judgeCredentials } from '../operator/bucket/credentials';
import { isControlledBy } from '../operator/bucket/owned-identity';

/** An object that may be missing, or that the user may not read. */
export type Lookup<T> =
  { readonly state: 'found'; readonly object: T } | { readonly state: 'missing' } | { readonly state: 'forbidden'; readonly message: string };

/** What may be said of a config's credential Secret without reading its value. */
export interface CredentialFacts {
  readonly namespace: string;
  readonly name: string;
  /** The key the config names (`secretRef.key`, `apiKey` by default). */
  readonly key: string;
  readonly lookup: 'found' | 'missing' | 'forbidden';
  /** The Secret carries the credentials opt-in label. */
  readonly labelled: boolean;
  readonly createdAt?: string;
  /** How the operator judges it (judgeCredentials), without the key. */
  readonly verdict: { readonly ok: true } | { readonly ok: false; readonly reason: string; readonly message: string };
}

/** An owned Secret or Service: whether it is there and whether the bucket controls it. */
export interface OwnedFacts {
  readonly kind: 'Secret' | 'Service';
  readonly name: string;
  readonly lookup: 'found' | 'missing' | 'forbidden';
  /** A controller ownerReference names the bucket's uid. */
  readonly controlled: boolean;
  /** Carries the operator's managed-by label. */
  readonly managed: boolean;
  readonly createdAt?: string;
}

/** One Event about the bucket or its config, as `kubectl get events` shows it. */
export interface EventFacts {
  readonly type: string;
  readonly reason: string;
  readonly note: string;
  readonly kind: string;
  readonly name: string;
  /** Last time it happened (series, then eventTime, then creation). */
  readonly time: string;
  readonly count: number;
}

/** Everything `trace` and `why` judge. */
export interface Snapshot {
  readonly now: Date;
  readonly bucket: StorageBucket;
  readonly config: Lookup<BucketProviderConfig>;
  /** Undefined while the config is not found. */
  readonly credentials?: CredentialFacts;
  readonly accessSecret: OwnedFacts;
  readonly service: OwnedFacts;
  /** Newest first. */
  readonly events: readonly EventFacts[];
}

/**
 * Facts about `config`'s Secret as found (`undefined`: not found). The operator's own
 * judgeCredentials decides; its API key, when there is one, is dropped here.
 */
export function credentialFacts(config: BucketProviderConfig, secret: V1Secret | undefined | 'forbidden'): CredentialFacts {
  const namespace = config.metadata.namespace ?? '';
  const name = config.spec.secretRef.name;
  const key = config.spec.secretRef.key ?? DEFAULT_SECRET_KEY;
  if (secret === 'forbidden') {
    return {
      namespace,
      name,
      key,
      lookup: 'forbidden',
      labelled: false,
      verdict: { ok: false, reason: 'Forbidden', message: `not allowed to read Secret ${namespace}/${name}` },
    };
  }
  const judged = judgeCredentials({ namespace, name, key }, secret);
  return {
    namespace,
    name,
    key,
    lookup: secret ? 'found' : 'missing',
    labelled: secret ? isCredentialsSecret(secret) : false,
    ...(secret?.metadata?.creationTimestamp ? { createdAt: timeText(secret.metadata.creationTimestamp) } : {}),
    verdict: judged.ok ? { ok: true } : { ok: false, reason: judged.reason, message: judged.message },
  };
}

/** Facts about an owned object `name` of `kind` as found for `bucket`. */
export function ownedFacts(
  kind: 'Secret' | 'Service',
  name: string,
  bucket: StorageBucket,
  found: { metadata?: V1Secret['metadata'] } | undefined | 'forbidden',
): OwnedFacts {
  if (found === 'forbidden') return { kind, name, lookup: 'forbidden', controlled: false, managed: false };
  if (!found) return { kind, name, lookup: 'missing', controlled: false, managed: false };
  return {
    kind,
    name,
    lookup: 'found',
    controlled: isControlledBy(found, bucket),
    managed: found.metadata?.labels?.[MANAGED_BY_LABEL] === MANAGED_BY_VALUE,
    ...(found.metadata?.creationTimestamp ? { createdAt: timeText(found.metadata.creationTimestamp) } : {}),
  };
}

/**
 * A timestamp as RFC 3339 text: objects off the wire carry strings where client-node's types
 * say Date, and fixtures may pass either.
 */
export function timeText(value: unknown): string {
  return value instanceof Date ? value.toISOString() : String(value);
}
