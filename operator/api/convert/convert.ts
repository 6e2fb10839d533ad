/**
 * Conversion of whole objects between the API versions, for the conversion webhook.
 *
 * Design:
 * - Hub and spoke (controller-runtime's `conversion.Hub`): each version converts to and from
 *   one internal form (hub.ts), never to another version directly. Adding v3 adds two
 *   functions, and v1 <-> v3 comes free.
 * - v1 stays the storage version, so every v2 object must become a v1 object that v1's schema
 *   accepts, and come back unchanged. Only the size needs care: v1's `sizeGB: n` is v2's
 *   `size: nG` (G being the 10^9 bytes v1 calls GB). Other spellings (`1500Mi`, `0.5T`,
 *   `10000M`) are served rounded up to whole GB, the provider's unit, and the spelling rides in
 *   the `storage.avalonhosting.example/v2-size` annotation of the v1 object; reading it as v2
 *   gives the spelling back and the annotation disappears. size-annotation.ts makes that
 *   lossless for every annotation value, a hand-written one included.
 * - Status carries no annotations: a status write ignores metadata, so status fields v1 cannot
 *   hold would be lost on the way to storage. v2's status is therefore exactly as expressive as
 *   v1's: reported sizes are whole `<n>G`, and an empty `atProvider` is refused by the schema.
 * - The API server prunes unknown fields (structural schemas) before an object reaches the
 *   webhook, so the converters copy the fields they know and nothing else. Absent stays
 *   absent: defaults are applied by the API server in each version, not here.
 * - Metadata (finalizers, ownerReferences, deletionTimestamp, managedFields, labels, other
 *   annotations) passes through untouched; `apiVersion` is set to the version asked for.
 * - Total on accepted data: for every object its version's schema accepts, conversion
 *   succeeds and round trips are the identity (property-tested in
 *   test/unit/api/convert-properties.test.ts). {@link convert} reports a failure only for an
 *   object of another kind or version, or one its own schema would refuse.
 * - Pure: no I/O, the input is never changed; results may share nested values with it.
 *
 * Known limits: integers beyond 2^53 cannot reach these functions exactly (JSON numbers in
 * JavaScript); v2's reported sizes are kept below that. An edit of `sizeGB` through v1 leaves a
 * size annotation that no longer rounds up to it: v2 then shows `<sizeGB>G` and the stale value
 * as an ordinary annotation, which is what a round trip back to v1 needs.
 */
import * as v1 from '../v1';
import * as v2 from '../v2';
import { configToHub, hubToConfigV1, hubToConfigV2 } from './provider-config';
import { hubToV1, v1ToHub } from './storagebucket-v1';
import { hubToV2, v2ToHub } from './storagebucket-v2';

/** Any object of a kind and version this module converts. */
export type ConvertibleObject = v1.StorageBucket | v2.StorageBucket | v1.BucketProviderConfig | v2.BucketProviderConfig;

/** The outcome of {@link convert}: the converted object, or why there is none. */
export type ConversionResult = { readonly ok: true; readonly object: ConvertibleObject } | { readonly ok: false; readonly message: string };

/** The `apiVersion`s this module converts between. */
export const CONVERTIBLE_API_VERSIONS: readonly string[] = [v1.API_VERSION, v2.API_VERSION];

/** A StorageBucket v1 as v2. */
export function bucketV1ToV2(bucket: v1.StorageBucket): v2.StorageBucket {
  return hubToV2(v1ToHub(bucket));
}

/** A StorageBucket v2 as v1. */
export function bucketV2ToV1(bucket: v2.StorageBucket): v1.StorageBucket {
  return hubToV1(v2ToHub(bucket));
}

/**
 * `object` (a StorageBucket or BucketProviderConfig of any served version) in
 * `desiredApiVersion`. An object already in that version is returned as it is.
 */
export function convert(object: unknown, desiredApiVersion: string): ConversionResult {
  if (!isRecord(object) || typeof object['apiVersion'] !== 'string' || typeof object['kind'] !== 'string') {
    return { ok: false, message: 'cannot convert: not an object with apiVersion and kind' };
  }
  const { apiVersion, kind } = object;
  const what = `${kind} ${apiVersion} to ${desiredApiVersion}`;
  if (!CONVERTIBLE_API_VERSIONS.includes(apiVersion) || !CONVERTIBLE_API_VERSIONS.includes(desiredApiVersion)) {
    return { ok: false, message: `cannot convert ${what}: unknown version` };
  }
  if (kind !== 'StorageBucket' && kind !== 'BucketProviderConfig') return { ok: false, message: `cannot convert ${what}: unknown kind` };
  if (!isRecord(object['metadata']) || !isRecord(object['spec'])) return { ok: false, message: `cannot convert ${what}: no metadata or spec` };
  if (apiVersion === desiredApiVersion) return { ok: true, object: object as unknown as ConvertibleObject };
  try {
    return { ok: true, object: convertKnown(object as unknown as ConvertibleObject, desiredApiVersion) };
  } catch (err) {
    // Reached only by an object its own schema would refuse (the converters are total on
    // accepted data): answer with a failure rather than take the webhook down.
    return { ok: false, message: `cannot convert ${what}: ${err instanceof Error ? err.message : String(err)}` };
  }
}

function convertKnown(object: ConvertibleObject, desiredApiVersion: string): ConvertibleObject {
  if (object.kind === 'BucketProviderConfig') {
    const hub = configToHub(object);
    return desiredApiVersion === v2.API_VERSION ? hubToConfigV2(hub) : hubToConfigV1(hub);
  }
  const hub = object.apiVersion === v2.API_VERSION ? v2ToHub(object as v2.StorageBucket) : v1ToHub(object as v1.StorageBucket);
  return desiredApiVersion === v2.API_VERSION ? hubToV2(hub) : hubToV1(hub);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
