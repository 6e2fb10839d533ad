import { expect } from 'chai';
import type { V1ObjectMeta } from '@kubernetes/client-node';
import * as v1 from '../../../operator/api/v1';
import * as v2 from '../../../operator/api/v2';
import { bucketV1ToV2, bucketV2ToV1, convert } from '../../../operator/api/convert';
import { deepFreeze } from '../../support/deep-freeze';

const SIZE = v1.V2_SIZE_ANNOTATION;
const meta: V1ObjectMeta = { name: 'logs', namespace: 'team-a', uid: 'u-1', generation: 3, resourceVersion: '42' };

function bucketV1(spec: Partial<v1.StorageBucketSpec> = {}, rest: Partial<v1.StorageBucket> = {}): v1.StorageBucket {
  return {
    apiVersion: v1.API_VERSION,
    kind: 'StorageBucket',
    metadata: meta,
    spec: { region: 'eu-west-1', sizeGB: 10, providerRef: { name: 'default' }, ...spec },
    ...rest,
  };
}

function bucketV2(forProvider: Partial<v2.StorageBucketForProvider> = {}, rest: Partial<v2.StorageBucket> = {}): v2.StorageBucket {
  return {
    apiVersion: v2.API_VERSION,
    kind: 'StorageBucket',
    metadata: meta,
    spec: { forProvider: { region: 'eu-west-1', size: '10G', ...forProvider }, providerConfigRef: { name: 'default' } },
    ...rest,
  };
}

/** A pair of the same object in both versions: each converts to the other. */
interface Pair {
  readonly v1: v1.StorageBucket;
  readonly v2: v2.StorageBucket;
}

const condition = {
  type: 'Ready',
  status: 'True' as const,
  reason: 'Available',
  message: '',
  lastTransitionTime: '2026-01-01T00:00:00Z',
  observedGeneration: 3,
};

const pairs: Record<string, Pair> = {
  'the minimal spec (absent optional fields stay absent)': { v1: bucketV1(), v2: bucketV2() },
  'every spec field: region, size and encrypted move into forProvider, providerRef is renamed providerConfigRef': {
    v1: bucketV1({ sizeGB: 50, encrypted: true, deletionPolicy: 'Orphan', managementPolicy: 'Observe' }),
    v2: {
      ...bucketV2(),
      spec: {
        forProvider: { region: 'eu-west-1', size: '50G', encrypted: true },
        providerConfigRef: { name: 'default' },
        deletionPolicy: 'Orphan',
        managementPolicy: 'Observe',
      },
    },
  },
  'encrypted false is kept, not dropped as a default': { v1: bucketV1({ encrypted: false }), v2: bucketV2({ encrypted: false }) },
  'the largest size': { v1: bucketV1({ sizeGB: 10000 }), v2: bucketV2({ size: '10000G' }) },
  'the smallest size': { v1: bucketV1({ sizeGB: 1 }), v2: bucketV2({ size: '1G' }) },
  'a binary size, rounded up with its spelling in the annotation': {
    v1: bucketV1({ sizeGB: 2 }, { metadata: { ...meta, annotations: { [SIZE]: '1500Mi' } } }),
    v2: bucketV2({ size: '1500Mi' }),
  },
  'one GiB is 2 GB': { v1: bucketV1({ sizeGB: 2 }, { metadata: { ...meta, annotations: { [SIZE]: '1Gi' } } }), v2: bucketV2({ size: '1Gi' }) },
  'the largest GiB': {
    v1: bucketV1({ sizeGB: 10000 }, { metadata: { ...meta, annotations: { [SIZE]: '9313Gi' } } }),
    v2: bucketV2({ size: '9313Gi' }),
  },
  'a whole GB in another unit keeps its spelling': {
    v1: bucketV1({ sizeGB: 10 }, { metadata: { ...meta, annotations: { [SIZE]: '10000M' } } }),
    v2: bucketV2({ size: '10000M' }),
  },
  'a whole GB with a fraction keeps its spelling': {
    v1: bucketV1({ sizeGB: 10 }, { metadata: { ...meta, annotations: { [SIZE]: '10.0G' } } }),
    v2: bucketV2({ size: '10.0G' }),
  },
  'a fraction of a byte is 1 GB': {
    v1: bucketV1({ sizeGB: 1 }, { metadata: { ...meta, annotations: { [SIZE]: '0.5k' } } }),
    v2: bucketV2({ size: '0.5k' }),
  },
  "other annotations are kept beside the size's": {
    v1: bucketV1({ sizeGB: 2 }, { metadata: { ...meta, annotations: { a: '1', [SIZE]: '1500Mi' } } }),
    v2: bucketV2({ size: '1500Mi' }, { metadata: { ...meta, annotations: { a: '1' } } }),
  },
  'an annotation left by an edit of sizeGB through v1 shows in v2 as it is': {
    v1: bucketV1({ sizeGB: 3 }, { metadata: { ...meta, annotations: { [SIZE]: '1500Mi' } } }),
    v2: bucketV2({ size: '3G' }, { metadata: { ...meta, annotations: { [SIZE]: '1500Mi' } } }),
  },
  "a v2 object's own value of the key survives v1, wrapped when it would be misread": {
    v1: bucketV1({ sizeGB: 2 }, { metadata: { ...meta, annotations: { [SIZE]: '{"size":"1500Mi","annotation":"1500Mi"}' } } }),
    v2: bucketV2({ size: '1500Mi' }, { metadata: { ...meta, annotations: { [SIZE]: '1500Mi' } } }),
  },
  'metadata passes through: finalizers, ownerReferences, deletion, labels, managedFields': {
    v1: bucketV1(
      {},
      {
        metadata: {
          ...meta,
          labels: { team: 'a' },
          annotations: { [v1.ADOPT_ANNOTATION]: 'b-7', [v1.PAUSED_ANNOTATION]: 'true' },
          finalizers: [v1.BUCKET_FINALIZER],
          ownerReferences: [{ apiVersion: 'apps/v1', kind: 'Deployment', name: 'web', uid: 'u-9', controller: true }],
          deletionTimestamp: '2026-02-01T00:00:00Z' as unknown as Date,
          deletionGracePeriodSeconds: 0,
          managedFields: [{ manager: 'kubectl', operation: 'Apply', apiVersion: v1.API_VERSION, fieldsType: 'FieldsV1', fieldsV1: { 'f:spec': {} } }],
        },
      },
    ),
    v2: bucketV2(
      {},
      {
        metadata: {
          ...meta,
          labels: { team: 'a' },
          annotations: { [v1.ADOPT_ANNOTATION]: 'b-7', [v1.PAUSED_ANNOTATION]: 'true' },
          finalizers: [v1.BUCKET_FINALIZER],
          ownerReferences: [{ apiVersion: 'apps/v1', kind: 'Deployment', name: 'web', uid: 'u-9', controller: true }],
          deletionTimestamp: '2026-02-01T00:00:00Z' as unknown as Date,
          deletionGracePeriodSeconds: 0,
          managedFields: [{ manager: 'kubectl', operation: 'Apply', apiVersion: v1.API_VERSION, fieldsType: 'FieldsV1', fieldsV1: { 'f:spec': {} } }],
        },
      },
    ),
  },
  'a full status: provider facts move into atProvider, the operator bookkeeping stays': {
    v1: bucketV1(
      {},
      {
        status: {
          id: 'b-1',
          phase: 'Active',
          observedGeneration: 3,
          idempotencyKey: 'k-1',
          endpoint: 'https://b-1.storage.example.com',
          providerEndpoint: 'https://storage.example.com',
          account: 'acme',
          sizeGB: 10,
          encrypted: false,
          region: 'eu-west-1',
          lastHandledReconcileAt: '1767225600',
          conditions: [condition],
        },
      },
    ),
    v2: bucketV2(
      {},
      {
        status: {
          observedGeneration: 3,
          conditions: [condition],
          phase: 'Active',
          lastHandledReconcileAt: '1767225600',
          idempotencyKey: 'k-1',
          providerEndpoint: 'https://storage.example.com',
          atProvider: { id: 'b-1', account: 'acme', endpoint: 'https://b-1.storage.example.com', region: 'eu-west-1', size: '10G', encrypted: false },
        },
      },
    ),
  },
  'a status before the provider reported anything has no atProvider': {
    v1: bucketV1({}, { status: { phase: 'Pending', observedGeneration: 1, conditions: [] } }),
    v2: bucketV2({}, { status: { phase: 'Pending', observedGeneration: 1, conditions: [] } }),
  },
  'an empty status': { v1: bucketV1({}, { status: {} }), v2: bucketV2({}, { status: {} }) },
  'an empty annotation map is left as it is': {
    v1: bucketV1({}, { metadata: { ...meta, annotations: {} } }),
    v2: bucketV2({}, { metadata: { ...meta, annotations: {} } }),
  },
  'a reported size of 0 and empty strings are kept': {
    v1: bucketV1({}, { status: { sizeGB: 0, id: '', account: '' } }),
    v2: bucketV2({}, { status: { atProvider: { size: '0G', id: '', account: '' } } }),
  },
};

describe('StorageBucket conversion v1 <-> v2', () => {
  for (const [name, pair] of Object.entries(pairs)) {
    describe(name, () => {
      it('v1 -> v2', () => {
        expect(bucketV1ToV2(deepFreeze(structuredClone(pair.v1)))).to.deep.equal(pair.v2);
      });
      it('v2 -> v1', () => {
        expect(bucketV2ToV1(deepFreeze(structuredClone(pair.v2)))).to.deep.equal(pair.v1);
      });
      it('both sides are valid in their version', () => {
        expect(v1.validate(v1.StorageBucketSpec, pair.v1.spec)).to.deep.equal([]);
        expect(v2.validate(v2.StorageBucketSpec, pair.v2.spec)).to.deep.equal([]);
        if (pair.v1.status) expect(v1.validate(v1.StorageBucketStatus, pair.v1.status)).to.deep.equal([]);
        if (pair.v2.status) expect(v2.validate(v2.StorageBucketStatus, pair.v2.status)).to.deep.equal([]);
      });
    });
  }

  it('converts a reported size beyond what v2 accepts exactly both ways (v1 sets no upper bound)', () => {
    const huge = bucketV1({}, { status: { sizeGB: Number.MAX_SAFE_INTEGER } });
    const there = bucketV1ToV2(huge);
    expect(there.status?.atProvider?.size).to.equal('9007199254740991G');
    expect(v2.validate(v2.StorageBucketStatus, there.status)).to.not.deep.equal([]);
    expect(bucketV2ToV1(there)).to.deep.equal(huge);
  });

  it('converts a size no schema accepts without throwing, its spelling kept', () => {
    const odd = bucketV2({ size: '10 GB' });
    const there = bucketV2ToV1(odd);
    expect(there.spec.sizeGB).to.equal(0);
    expect(there.metadata.annotations).to.deep.equal({ [SIZE]: '10 GB' });
  });
});

describe('convert', () => {
  const config: v1.BucketProviderConfig = {
    apiVersion: v1.API_VERSION,
    kind: 'BucketProviderConfig',
    metadata: { ...meta, name: 'default', finalizers: [v1.CONFIG_IN_USE_FINALIZER] },
    spec: { endpoint: 'https://storage.example.com', secretRef: { name: 'creds', key: 'apiKey' }, insecure: false },
    status: { observedGeneration: 1, bucketCount: 2, conditions: [condition] },
  };
  const pair = pairs['a binary size, rounded up with its spelling in the annotation']!;

  const cases: Record<string, { args: { object: unknown; to: string }; want: { object: unknown } | { message: RegExp } }> = {
    'a StorageBucket v1 to v2': { args: { object: pair.v1, to: v2.API_VERSION }, want: { object: pair.v2 } },
    'a StorageBucket v2 to v1': { args: { object: pair.v2, to: v1.API_VERSION }, want: { object: pair.v1 } },
    'a StorageBucket already in the version asked for, as it is': { args: { object: pair.v1, to: v1.API_VERSION }, want: { object: pair.v1 } },
    'a BucketProviderConfig v1 to v2: apiVersion alone changes': {
      args: { object: config, to: v2.API_VERSION },
      want: { object: { ...config, apiVersion: v2.API_VERSION } },
    },
    'a BucketProviderConfig v2 to v1': { args: { object: { ...config, apiVersion: v2.API_VERSION }, to: v1.API_VERSION }, want: { object: config } },
    'an unknown kind': {
      args: { object: { ...config, kind: 'Secret' }, to: v2.API_VERSION },
      want: { message: /^cannot convert Secret .*: unknown kind$/ },
    },
    'an unknown source version': {
      args: { object: { ...config, apiVersion: `${v1.GROUP}/v3` }, to: v2.API_VERSION },
      want: { message: /v3 to .*: unknown version$/ },
    },
    'an unknown target version': { args: { object: config, to: 'v2' }, want: { message: /to v2: unknown version$/ } },
    'not an object': { args: { object: 'StorageBucket', to: v2.API_VERSION }, want: { message: /not an object with apiVersion and kind/ } },
    'no spec': { args: { object: { ...pair.v1, spec: undefined }, to: v2.API_VERSION }, want: { message: /no metadata or spec/ } },
    'a spec its schema would refuse: a failure, not a crash': {
      args: { object: { ...pair.v1, spec: { region: 'eu-west-1', sizeGB: 2 } }, to: v2.API_VERSION },
      want: { message: /^cannot convert StorageBucket storage\.avalonhosting\.example\/v1 to storage\.avalonhosting\.example\/v2: / },
    },
  };
  for (const [name, { args, want }] of Object.entries(cases)) {
    it(name, () => {
      const result = convert(deepFreeze(structuredClone(args.object)), args.to);
      if ('object' in want) {
        expect(result).to.deep.equal({ ok: true, object: want.object });
      } else {
        expect(result.ok).to.equal(false);
        if (!result.ok) expect(result.message).to.match(want.message);
      }
    });
  }
});
