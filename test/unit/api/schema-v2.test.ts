import { expect } from 'chai';
import * as v1 from '../../../operator/api/v1';
import {
  BucketProviderConfigDefinition,
  BucketProviderConfigSpec,
  StorageBucketAtProvider,
  StorageBucketSpec,
  StorageBucketStatus,
  canonicalSize,
  isSizeWithin,
  sizeToGB,
  validate,
} from '../../../operator/api/v2';

const spec = (size: unknown) => ({ forProvider: { region: 'us-east-1', size }, providerConfigRef: { name: 'default' } });

describe('StorageBucket v2 spec schema', () => {
  const accepted: Record<string, { args: { size: string }; want: { gb: number } }> = {
    'canonical whole GB': { args: { size: '10G' }, want: { gb: 10 } },
    'the largest size': { args: { size: '10000G' }, want: { gb: 10000 } },
    'binary units, rounded up': { args: { size: '1500Mi' }, want: { gb: 2 } },
    'one GiB is just over one GB': { args: { size: '1Gi' }, want: { gb: 2 } },
    'the largest whole GiB': { args: { size: '9313Gi' }, want: { gb: 10000 } },
    'a fraction of a T': { args: { size: '1.5T' }, want: { gb: 1500 } },
    'a spelling other than G of a whole GB': { args: { size: '10000M' }, want: { gb: 10 } },
    'a trailing zero in the fraction': { args: { size: '10.0G' }, want: { gb: 10 } },
    'one byte more than a GB': { args: { size: '1.000000001G' }, want: { gb: 2 } },
    'a fraction of a byte': { args: { size: '0.5k' }, want: { gb: 1 } },
    'the smallest step above zero': { args: { size: '0.000000000000000000000000001k' }, want: { gb: 1 } },
    'the largest size in P': { args: { size: '0.01P' }, want: { gb: 10000 } },
  };
  for (const [name, { args, want }] of Object.entries(accepted)) {
    it(`accepts ${name} (${args.size} is ${want.gb} GB)`, () => {
      expect(validate(StorageBucketSpec, spec(args.size))).to.deep.equal([]);
      expect(sizeToGB(args.size)).to.equal(want.gb);
    });
  }

  const refused: Record<string, { args: { size: unknown } }> = {
    zero: { args: { size: '0G' } },
    'one byte more than the largest size': { args: { size: '10000000000.001k' } },
    'just over the largest size': { args: { size: '10000.000000000000000000001G' } },
    'the first whole GiB over the largest size': { args: { size: '9314Gi' } },
    'no unit (would be bytes)': { args: { size: '10' } },
    'GB as a unit': { args: { size: '10GB' } },
    'a sign': { args: { size: '+10G' } },
    negative: { args: { size: '-10G' } },
    'an exponent': { args: { size: '1e10' } },
    'a leading zero': { args: { size: '010G' } },
    'no digit before the point': { args: { size: '.5G' } },
    'no digit after the point': { args: { size: '1.G' } },
    'the milli unit': { args: { size: '1000m' } },
    'an exa unit': { args: { size: '1E' } },
    'upper-case K': { args: { size: '1K' } },
    'longer than 32 characters': { args: { size: `0.${'0'.repeat(29)}1k` } },
    'a number': { args: { size: 10 } },
  };
  for (const [name, { args }] of Object.entries(refused)) {
    it(`refuses ${name} (${JSON.stringify(args.size)})`, () => {
      expect(validate(StorageBucketSpec, spec(args.size)).map((e) => e.path)).to.include('/forProvider/size');
    });
  }

  it('refuses v1 field names in place of the v2 ones', () => {
    const paths = validate(StorageBucketSpec, { region: 'us-east-1', sizeGB: 10, providerRef: { name: 'p' } }).map((e) => e.path);
    expect(paths).to.include.members(['/forProvider', '/providerConfigRef']);
  });

  it('spells v1 sizes as <n>G, which parse back to n', () => {
    for (const gb of [1, 2, 999, 10000]) expect(sizeToGB(canonicalSize(gb))).to.equal(gb);
  });

  it('bounds sizes exactly at 0 and the largest v1 size', () => {
    expect(isSizeWithin('10000G', v1.MAX_SIZE_GB)).to.equal(true);
    expect(isSizeWithin('10000000000.001k', v1.MAX_SIZE_GB)).to.equal(false);
    expect(isSizeWithin('0.0k', v1.MAX_SIZE_GB)).to.equal(false);
  });

  const rules: Record<string, { args: { field: Record<string, unknown> }; want: { rules: Array<{ rule: string; message: string }> } }> = {
    'forProvider.region': {
      args: { field: StorageBucketSpec.properties.forProvider.properties.region },
      want: { rules: [{ rule: 'self == oldSelf', message: 'forProvider.region is immutable' }] },
    },
    'forProvider.encrypted': {
      args: { field: StorageBucketSpec.properties.forProvider.properties.encrypted },
      want: { rules: [{ rule: 'self == oldSelf', message: 'forProvider.encrypted is immutable' }] },
    },
    'forProvider.size': {
      args: { field: StorageBucketSpec.properties.forProvider.properties.size },
      want: {
        rules: [
          {
            rule: "isQuantity(self) && quantity(self).isGreaterThan(quantity('0')) && !quantity(self).isGreaterThan(quantity('10000G'))",
            message: 'forProvider.size must be more than 0 and at most 10000G',
          },
          { rule: '!quantity(self).isLessThan(quantity(oldSelf))', message: 'forProvider.size can only grow' },
        ],
      },
    },
    providerConfigRef: {
      args: { field: StorageBucketSpec.properties.providerConfigRef },
      want: { rules: [{ rule: 'self == oldSelf', message: 'providerConfigRef is immutable' }] },
    },
  };
  for (const [name, { args, want }] of Object.entries(rules)) {
    it(`guards ${name} with v1's rule at its v2 path`, () => {
      expect(args.field['x-kubernetes-validations']).to.deep.equal(want.rules);
    });
  }

  it('has the defaults of v1', () => {
    expect(StorageBucketSpec.properties.forProvider.properties.encrypted.default).to.equal(v1.StorageBucketSpec.properties.encrypted.default);
    expect(StorageBucketSpec.properties.deletionPolicy.default).to.equal(v1.StorageBucketSpec.properties.deletionPolicy.default);
    expect(StorageBucketSpec.properties.managementPolicy.default).to.equal(v1.StorageBucketSpec.properties.managementPolicy.default);
  });
});

describe('StorageBucket v2 status schema', () => {
  const cases: Record<string, { args: { status: unknown }; want: { valid: boolean } }> = {
    'no status fields': { args: { status: {} }, want: { valid: true } },
    'a full status': {
      args: {
        status: {
          observedGeneration: 2,
          phase: 'Active',
          idempotencyKey: 'k',
          providerEndpoint: 'https://storage.example.com',
          lastHandledReconcileAt: '1',
          atProvider: { id: 'b-1', account: 'acme', endpoint: 'https://b-1.example.com', region: 'eu-west-1', size: '50G', encrypted: true },
          conditions: [{ type: 'Ready', status: 'True', reason: 'Available', message: '', lastTransitionTime: '2026-01-01T00:00:00Z' }],
        },
      },
      want: { valid: true },
    },
    'a reported size of 0': { args: { status: { atProvider: { size: '0G' } } }, want: { valid: true } },
    'the longest reported size': { args: { status: { atProvider: { size: '999999999999999G' } } }, want: { valid: true } },
    'a reported size in another unit': { args: { status: { atProvider: { size: '1500Mi' } } }, want: { valid: false } },
    'a reported size with a leading zero': { args: { status: { atProvider: { size: '050G' } } }, want: { valid: false } },
    'a reported size beyond exact JavaScript numbers': { args: { status: { atProvider: { size: '1000000000000000G' } } }, want: { valid: false } },
    'an empty atProvider': { args: { status: { atProvider: {} } }, want: { valid: false } },
  };
  for (const [name, { args, want }] of Object.entries(cases)) {
    it(`${want.valid ? 'accepts' : 'refuses'} ${name}`, () => {
      expect(validate(StorageBucketStatus, args.status).length === 0).to.equal(want.valid);
    });
  }

  it('keeps conditions a list map keyed by type', () => {
    expect(StorageBucketStatus.properties.conditions['x-kubernetes-list-map-keys']).to.deep.equal(['type']);
    expect(StorageBucketAtProvider.minProperties).to.equal(1);
  });

  it("is atomic to the field manager, as v1's is", () => {
    const atomic = (schema: object) => (schema as Record<string, unknown>)['x-kubernetes-map-type'];
    expect(atomic(StorageBucketStatus)).to.equal('atomic');
    expect(atomic(StorageBucketStatus)).to.equal(atomic(v1.StorageBucketStatus));
  });
});

describe('BucketProviderConfig v2', () => {
  it("is v1's schema under the name v2", () => {
    expect(BucketProviderConfigSpec).to.equal(v1.BucketProviderConfigSpec);
    const [version] = BucketProviderConfigDefinition.versions;
    expect(version).to.include({ name: 'v2', served: true, storage: false });
    expect(version?.spec).to.equal(v1.BucketProviderConfigSpec);
    expect(version?.printerColumns).to.deep.equal(v1.BucketProviderConfigDefinition.versions[0]?.printerColumns);
  });
});
