/**
 * The version of its own kinds the operator reads and writes on the wire. Inside, every
 * controller works on v1 objects (the hub of its logic since v1); when the CRDs store v2, the
 * operator reads and writes v2 and converts in process with the same functions the conversion
 * webhook uses, so its own work never goes through its own webhook: a webhook that is down, or
 * a certificate being rotated, cannot stop reconciling. The wire version is meant to be the
 * CRDs' storage version, which also saves the API server a conversion per read and write.
 */
import * as v1 from '../api/v1';
import * as v2 from '../api/v2';
import { convert } from '../api/convert';
import type { ApiVersionName } from '../api/version-names';
import type { KubeObject, ResourceKind, Transform } from '../runtime';
import { PROVIDER_CONFIG, STORAGE_BUCKET } from './kinds';

/** How the operator's own kinds are read and written on the wire. */
export interface OwnVersion {
  /** The wire version. */
  readonly version: ApiVersionName;
  /** StorageBucket at the wire version. */
  readonly storageBucket: ResourceKind;
  /** BucketProviderConfig at the wire version. */
  readonly providerConfig: ResourceKind;
  /** The selectable field naming a bucket's config, in the wire version. */
  readonly providerRefField: string;
  /** The wire kind for an internal (v1) kind; other kinds are returned as they are. */
  wireKind(kind: ResourceKind): ResourceKind;
  /**
   * Reads of `kind` (an internal or wire kind) as v1: the informers' transform and every read.
   * Identity for v1.
   */
  decoder(kind: ResourceKind): Transform;
  /** `obj`, a v1 object of `kind` (an internal kind), in the wire version. Identity for v1. */
  encode(kind: ResourceKind, obj: KubeObject): KubeObject;
}

const atVersion = (kind: ResourceKind, version: string): ResourceKind => ({ ...kind, version });

/** Whether `kind` is one of the operator's own (converted) kinds, at any version. */
function isOwn(kind: ResourceKind): boolean {
  return kind.group === v1.GROUP && (kind.plural === STORAGE_BUCKET.plural || kind.plural === PROVIDER_CONFIG.plural);
}

/**
 * `obj`, read as `kind`, converted to `apiVersion`. List items and watch objects of custom
 * resources carry apiVersion and kind; they are set from `kind` when missing, so conversion
 * never guesses.
 */
function converted(kind: ResourceKind, obj: KubeObject, apiVersion: string): KubeObject {
  const typed = { ...obj, apiVersion: obj.apiVersion ?? apiVersionOf(kind), kind: obj.kind ?? kind.kind };
  if (typed.apiVersion === apiVersion) return typed;
  const result = convert(typed, apiVersion);
  // Unreachable for anything the API server accepted (the converters are total on valid data,
  // property-tested); failing loudly beats handing a controller an object of the wrong shape.
  if (!result.ok) throw new Error(result.message);
  return result.object as unknown as KubeObject;
}

const apiVersionOf = (kind: ResourceKind) => `${kind.group}/${kind.version}`;

/** How to read and write the operator's kinds at `version`. */
export function ownVersion(version: ApiVersionName = 'v1'): OwnVersion {
  const storageBucket = atVersion(STORAGE_BUCKET, version);
  const providerConfig = atVersion(PROVIDER_CONFIG, version);
  const wireApiVersion = version === 'v2' ? v2.API_VERSION : v1.API_VERSION;
  const identity: Transform = (obj) => obj;
  return {
    version,
    storageBucket,
    providerConfig,
    providerRefField: version === 'v2' ? v2.PROVIDER_CONFIG_REF_FIELD : v1.PROVIDER_REF_FIELD,
    wireKind: (kind) => (isOwn(kind) ? atVersion(kind, version) : kind),
    decoder: (kind) => (version === 'v1' || !isOwn(kind) ? identity : (obj) => converted(atVersion(kind, version), obj, v1.API_VERSION)),
    encode: (kind, obj) => (version === 'v1' || !isOwn(kind) ? obj : converted(atVersion(kind, 'v1'), obj, wireApiVersion)),
  };
}
