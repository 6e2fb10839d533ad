/**
 * fast-check arbitraries of the API's objects, derived from the TypeBox schemas where that is
 * practical, so they generate only objects the API server would accept (the property tests
 * check each against its version's validator). Annotation values of the conversion's key are
 * biased towards the cases that matter: spellings that round up to the object's size, stale
 * ones, canonical ones, JSON that looks like the conversion's own, and anything at all.
 */
import fc from 'fast-check';
import { Kind, type TSchema } from '@sinclair/typebox';
import type { V1ObjectMeta } from '@kubernetes/client-node';
import * as v1 from '../../operator/api/v1';
import * as v2 from '../../operator/api/v2';

/** Arbitraries that replace the derived one for a TypeBox kind (e.g. a custom kind). */
export type KindArbitraries = Readonly<Record<string, fc.Arbitrary<unknown>>>;

type SchemaNode = TSchema & Record<string, unknown>;

/** Longest string generated where the schema allows more: conversion copies strings as they are. */
const MAX_FREE_STRING = 16;

/** An arbitrary of the values `schema` accepts (constraints the schema states; CEL rules are the caller's). */
export function arbitraryOf(schema: TSchema, kinds: KindArbitraries = {}): fc.Arbitrary<unknown> {
  const node = schema as SchemaNode;
  const kind = String(node[Kind]);
  const custom = kinds[kind];
  if (custom) return custom;
  switch (kind) {
    case 'Object': {
      const properties = node['properties'] as Record<string, TSchema>;
      const required = (node['required'] as string[] | undefined) ?? [];
      const model = Object.fromEntries(Object.entries(properties).map(([key, child]) => [key, arbitraryOf(child, kinds)]));
      // fast-check's record leaves an optional key out now and then; sparse objects (each
      // optional key out half the time) are as likely, so "nothing reported yet" turns up too.
      const sparse = fc
        .record(
          Object.fromEntries(Object.entries(model).map(([key, a]) => [key, required.includes(key) ? a : fc.option(a, { nil: undefined, freq: 2 })])),
        )
        .map((o) => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)));
      const record = fc.oneof(fc.record(model, { requiredKeys: required }), sparse);
      const min = node['minProperties'];
      return typeof min === 'number' ? record.filter((o) => Object.keys(o).length >= min) : record;
    }
    case 'Array': {
      const items = arbitraryOf(node['items'] as TSchema, kinds);
      const maxLength = Math.min((node['maxItems'] as number | undefined) ?? 3, 3);
      const keys = node['x-kubernetes-list-map-keys'] as string[] | undefined;
      if (node['x-kubernetes-list-type'] === 'map' && keys) {
        // The API server refuses two entries with the same key.
        return fc.uniqueArray(items, { maxLength, selector: (item) => JSON.stringify(keys.map((k) => (item as Record<string, unknown>)[k])) });
      }
      return fc.array(items, { maxLength });
    }
    case 'String':
      return stringOf(node);
    case 'Integer': {
      const min = (node['minimum'] as number | undefined) ?? Number.MIN_SAFE_INTEGER;
      const max = (node['maximum'] as number | undefined) ?? Number.MAX_SAFE_INTEGER;
      return fc.oneof(fc.integer({ min, max: Math.min(max, Math.max(min, 0) + 100) }), fc.integer({ min, max }));
    }
    case 'Boolean':
      return fc.boolean();
    case 'StringEnum':
      return fc.constantFrom(...(node['enum'] as string[]));
    default:
      throw new Error(`arbitraryOf: no arbitrary for TypeBox kind ${kind}; pass one in kinds`);
  }
}

function stringOf(node: SchemaNode): fc.Arbitrary<string> {
  const minLength = (node['minLength'] as number | undefined) ?? 0;
  const maxLength = (node['maxLength'] as number | undefined) ?? Number.MAX_SAFE_INTEGER;
  if (node['format'] === 'date-time') return timestamp();
  const pattern = node['pattern'];
  if (typeof pattern === 'string') return fc.stringMatching(new RegExp(pattern)).filter((s) => s.length >= minLength && s.length <= maxLength);
  return fc.string({ minLength, maxLength: Math.max(minLength, Math.min(maxLength, MAX_FREE_STRING)) });
}

/** An RFC 3339 timestamp as the API server writes one (seconds, UTC). */
export function timestamp(): fc.Arbitrary<string> {
  return fc
    .date({ min: new Date('2000-01-01T00:00:00Z'), max: new Date('2100-01-01T00:00:00Z'), noInvalidDate: true })
    .map((d) => d.toISOString().replace(/\.\d{3}Z$/, 'Z'));
}

const UNITS: ReadonlyArray<readonly [string, bigint]> = [
  ['k', 10n ** 3n],
  ['M', 10n ** 6n],
  ['G', 10n ** 9n],
  ['T', 10n ** 12n],
  ['P', 10n ** 15n],
  ['Ki', 2n ** 10n],
  ['Mi', 2n ** 20n],
  ['Gi', 2n ** 30n],
  ['Ti', 2n ** 40n],
  ['Pi', 2n ** 50n],
];
const GB = 10n ** 9n;

/**
 * Spellings of sizes that round up to exactly `gb` GB, built by construction (a mantissa with
 * 0 to 4 decimals, chosen so the bytes fall in ((gb-1) GB, gb GB]), independently of the code
 * under test. Includes the canonical `<gb>G`.
 */
export function spellingOf(gb: number): fc.Arbitrary<string> {
  const canonical = fc.constant(`${gb}G`);
  const other = fc.tuple(fc.constantFrom(...UNITS), fc.integer({ min: 0, max: 4 })).chain(([[unit, multiplier], decimals]) => {
    const scale = 10n ** BigInt(decimals);
    const lo = (BigInt(gb - 1) * GB * scale) / multiplier + 1n;
    const hi = (BigInt(gb) * GB * scale) / multiplier;
    if (lo > hi) return canonical;
    return fc.bigInt(lo, hi).map((mantissa) => `${decimal(mantissa, decimals)}${unit}`);
  });
  return fc.oneof({ arbitrary: canonical, weight: 1 }, { arbitrary: other, weight: 3 }).filter((s) => s.length <= v2.SIZE_MAX_LENGTH);
}

function decimal(mantissa: bigint, decimals: number): string {
  if (decimals === 0) return mantissa.toString();
  const digits = mantissa.toString().padStart(decimals + 1, '0');
  return `${digits.slice(0, -decimals)}.${digits.slice(-decimals)}`;
}

/** Any size v2 accepts, with a bias to the bounds. */
export function size(): fc.Arbitrary<string> {
  return fc.oneof(fc.constantFrom(1, 2, 9999, v1.MAX_SIZE_GB), fc.integer({ min: 1, max: v1.MAX_SIZE_GB })).chain(spellingOf);
}

/** Values of the conversion's annotation worth trying on an object of `gb` GB. */
export function sizeAnnotationValue(gb: number): fc.Arbitrary<string> {
  const spelling = fc.oneof(spellingOf(gb), size());
  const wrapped = fc
    .record({ size: spelling, annotation: fc.oneof(fc.string(), spelling) }, { requiredKeys: [] })
    .chain((fields) => fc.boolean().map((reversed) => JSON.stringify(reversed ? Object.fromEntries(Object.entries(fields).reverse()) : fields)));
  const nested = wrapped.map((inner) => JSON.stringify({ annotation: inner }));
  return fc.oneof({ arbitrary: spellingOf(gb), weight: 4 }, size(), fc.string(), { arbitrary: wrapped, weight: 2 }, nested);
}

/** A DNS-1035 label, as StorageBucket names must be. */
export function dns1035(): fc.Arbitrary<string> {
  return fc.stringMatching(/^[a-z]([-a-z0-9]*[a-z0-9])?$/).filter((s) => s.length <= 63);
}

const ownerReference = fc.record(
  {
    apiVersion: fc.constantFrom('apps/v1', v1.API_VERSION),
    kind: fc.constantFrom('Deployment', 'StorageBucket'),
    name: dns1035(),
    uid: fc.uuid(),
    controller: fc.boolean(),
    blockOwnerDeletion: fc.boolean(),
  },
  { requiredKeys: ['apiVersion', 'kind', 'name', 'uid'] },
);

const managedField = fc.record({
  manager: fc.constantFrom('kubectl', 'bucketoperator'),
  operation: fc.constantFrom('Apply', 'Update'),
  apiVersion: fc.constantFrom(v1.API_VERSION, v2.API_VERSION),
  time: timestamp(),
  fieldsType: fc.constant('FieldsV1'),
  fieldsV1: fc.constant({ 'f:metadata': { 'f:labels': {} } }),
  subresource: fc.constantFrom('status', ''),
});

const labelKey = fc.stringMatching(/^([a-z0-9.]{1,20}\/)?[a-z0-9]([-a-z0-9_.]{0,20}[a-z0-9])?$/);

/** Annotations other than the conversion's, as users and the operator write them. */
const otherAnnotations = fc.dictionary(
  fc.oneof(
    fc.constantFrom(v1.ADOPT_ANNOTATION, v1.PAUSED_ANNOTATION, v1.IDEMPOTENCY_KEY_ANNOTATION, 'kubectl.kubernetes.io/last-applied-configuration'),
    labelKey,
  ),
  fc.string(),
  { maxKeys: 3 },
);

/**
 * Object metadata as the API server returns it: names, uid, generation, timestamps, labels,
 * finalizers, owner references, managed fields and deletion, each present or not. Maps are
 * never empty (the API server drops empty ones). Annotations are added by {@link annotated}.
 */
export const metadata: fc.Arbitrary<V1ObjectMeta> = fc
  .record(
    {
      name: dns1035(),
      namespace: fc.constantFrom('default', 'team-a'),
      uid: fc.uuid(),
      resourceVersion: fc.nat().map(String),
      generation: fc.integer({ min: 1, max: 1_000_000 }),
      creationTimestamp: timestamp(),
      deletionTimestamp: timestamp(),
      deletionGracePeriodSeconds: fc.nat(60),
      labels: fc.dictionary(labelKey, fc.stringMatching(/^[a-z0-9]{0,10}$/), { minKeys: 1, maxKeys: 3 }),
      finalizers: fc.uniqueArray(fc.constantFrom(v1.BUCKET_FINALIZER, v1.CONFIG_IN_USE_FINALIZER, 'example.com/keep'), { minLength: 1 }),
      ownerReferences: fc.array(ownerReference, { minLength: 1, maxLength: 2 }),
      managedFields: fc.array(managedField, { minLength: 1, maxLength: 2 }),
    },
    { requiredKeys: ['name', 'namespace', 'uid', 'resourceVersion', 'generation', 'creationTimestamp'] },
  )
  .map((meta) => meta as unknown as V1ObjectMeta); // timestamps are strings on the wire; V1ObjectMeta types them as Date

/** `meta` with `annotations`, left out when there are none (as the API server leaves them out). */
function annotated(meta: V1ObjectMeta, annotations: Record<string, string>): V1ObjectMeta {
  return Object.keys(annotations).length > 0 ? { ...meta, annotations } : meta;
}

/** Annotations of an object of `gb` GB: others, plus the conversion's key about half the time. */
function annotationsFor(gb: number): fc.Arbitrary<Record<string, string>> {
  return fc
    .tuple(otherAnnotations, fc.option(sizeAnnotationValue(gb), { nil: undefined, freq: 2 }))
    .map(([others, value]) => (value === undefined ? others : { ...others, [v1.V2_SIZE_ANNOTATION]: value }));
}

/**
 * Status sizes of v1 that v2 can report: v1 sets no upper bound, v2 allows 15 digits (every one
 * an exact JavaScript number). Larger values still convert exactly (convert.test.ts).
 */
const V1_REPORTED_SIZE = fc.oneof(fc.nat(20_000), fc.integer({ min: 0, max: 999_999_999_999_999 }));

const v1Spec = arbitraryOf(v1.StorageBucketSpec) as fc.Arbitrary<v1.StorageBucketSpec>;
const v1Status = (arbitraryOf(v1.StorageBucketStatus) as fc.Arbitrary<v1.StorageBucketStatus>).chain((status) =>
  status.sizeGB === undefined ? fc.constant(status) : V1_REPORTED_SIZE.map((sizeGB) => ({ ...status, sizeGB })),
);
const v2Spec = arbitraryOf(v2.StorageBucketSpec, { BucketSize: size() }) as fc.Arbitrary<v2.StorageBucketSpec>;
const v2Status = arbitraryOf(v2.StorageBucketStatus) as fc.Arbitrary<v2.StorageBucketStatus>;

/** StorageBucket v1 objects the v1 CRD accepts. */
export function bucketV1(): fc.Arbitrary<v1.StorageBucket> {
  return fc.record({ metadata, spec: v1Spec, status: v1Status }, { requiredKeys: ['metadata', 'spec'] }).chain(({ metadata: meta, spec, status }) =>
    annotationsFor(spec.sizeGB).map((annotations) => ({
      apiVersion: v1.API_VERSION,
      kind: 'StorageBucket' as const,
      metadata: annotated(meta, annotations),
      spec,
      ...(status ? { status } : {}),
    })),
  );
}

/** StorageBucket v2 objects the v2 CRD accepts. */
export function bucketV2(): fc.Arbitrary<v2.StorageBucket> {
  return fc.record({ metadata, spec: v2Spec, status: v2Status }, { requiredKeys: ['metadata', 'spec'] }).chain(({ metadata: meta, spec, status }) =>
    annotationsFor(v2.sizeToGB(spec.forProvider.size) ?? 1).map((annotations) => ({
      apiVersion: v2.API_VERSION,
      kind: 'StorageBucket' as const,
      metadata: annotated(meta, annotations),
      spec,
      ...(status ? { status } : {}),
    })),
  );
}

/** The TypeScript reading of {@link v1.HTTPS_RULE}, which cel-go checks on samples. */
function httpsUnlessInsecure(spec: v1.BucketProviderConfigSpec): boolean {
  return spec.endpoint.startsWith('https://') || spec.insecure === true;
}

const configSpec = (arbitraryOf(v1.BucketProviderConfigSpec) as fc.Arbitrary<v1.BucketProviderConfigSpec>).filter(httpsUnlessInsecure);
const configStatus = arbitraryOf(v1.BucketProviderConfigStatus) as fc.Arbitrary<v1.BucketProviderConfigStatus>;

/** BucketProviderConfig objects of `apiVersion` (v1 or v2) the CRD accepts. */
export function providerConfig<A extends string>(apiVersion: A) {
  return fc
    .record(
      { metadata, annotations: otherAnnotations, spec: configSpec, status: configStatus },
      { requiredKeys: ['metadata', 'annotations', 'spec'] },
    )
    .map(({ metadata: meta, annotations, spec, status }) => ({
      apiVersion,
      kind: 'BucketProviderConfig' as const,
      metadata: annotated(meta, annotations),
      spec,
      ...(status ? { status } : {}),
    }));
}
