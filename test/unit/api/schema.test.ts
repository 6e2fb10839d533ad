import { expect } from 'chai';
import { BucketProviderConfigSpec, StorageBucketSpec, StorageBucketStatus, formatFieldErrors, validate } from '../../../operator/api/v1';

const validSpec = { region: 'us-east-1', sizeGB: 10, providerRef: { name: 'default' } };

describe('StorageBucket spec schema', () => {
  const valid: Record<string, unknown> = {
    'minimal spec': validSpec,
    'all fields': { ...validSpec, encrypted: true, deletionPolicy: 'Orphan' },
    'largest size': { ...validSpec, sizeGB: 10000 },
    'smallest size': { ...validSpec, sizeGB: 1 },
  };
  for (const [name, spec] of Object.entries(valid)) {
    it(`accepts ${name}`, () => {
      expect(validate(StorageBucketSpec, spec)).to.deep.equal([]);
    });
  }

  const invalid: Record<string, [unknown, string]> = {
    'missing region': [{ sizeGB: 1, providerRef: { name: 'p' } }, '/region'],
    'empty region': [{ ...validSpec, region: '' }, '/region'],
    'upper-case region': [{ ...validSpec, region: 'US-EAST-1' }, '/region'],
    'sizeGB 0': [{ ...validSpec, sizeGB: 0 }, '/sizeGB'],
    'sizeGB -1': [{ ...validSpec, sizeGB: -1 }, '/sizeGB'],
    'sizeGB 1.5': [{ ...validSpec, sizeGB: 1.5 }, '/sizeGB'],
    'sizeGB as a string': [{ ...validSpec, sizeGB: '10' }, '/sizeGB'],
    'sizeGB above the maximum': [{ ...validSpec, sizeGB: 10001 }, '/sizeGB'],
    'missing providerRef': [{ region: 'us-east-1', sizeGB: 1 }, '/providerRef'],
    'unknown deletionPolicy': [{ ...validSpec, deletionPolicy: 'Retain' }, '/deletionPolicy'],
    'encrypted as a string': [{ ...validSpec, encrypted: 'yes' }, '/encrypted'],
  };
  for (const [name, [spec, path]] of Object.entries(invalid)) {
    it(`rejects ${name} at ${path}`, () => {
      const errors = validate(StorageBucketSpec, spec);
      expect(errors.map((e) => e.path)).to.include(path);
    });
  }

  it('formats errors as one line naming the field', () => {
    const line = formatFieldErrors('spec', validate(StorageBucketSpec, { ...validSpec, sizeGB: 0 }));
    expect(line).to.match(/^spec\/sizeGB: /);
    expect(line).to.not.include('\n');
  });

  const celRules: Record<string, [string, string]> = {
    region: ['self == oldSelf', 'region is immutable'],
    sizeGB: ['self >= oldSelf', 'sizeGB can only grow'],
    encrypted: ['self == oldSelf', 'encrypted is immutable'],
  };
  for (const [field, [rule, message]] of Object.entries(celRules)) {
    it(`guards ${field} with the CEL rule '${rule}'`, () => {
      const prop = (StorageBucketSpec.properties as Record<string, Record<string, unknown>>)[field];
      expect(prop?.['x-kubernetes-validations']).to.deep.equal([{ rule, message }]);
    });
  }

  it('defaults encrypted to false and deletionPolicy to Delete', () => {
    expect(StorageBucketSpec.properties.encrypted.default).to.equal(false);
    expect(StorageBucketSpec.properties.deletionPolicy.default).to.equal('Delete');
  });
});

describe('StorageBucket status schema', () => {
  it('accepts a status with conditions', () => {
    const status = {
      id: 'bucket-1',
      phase: 'Active',
      observedGeneration: 2,
      idempotencyKey: 'k',
      conditions: [{ type: 'Ready', status: 'True', reason: 'Available', message: '', lastTransitionTime: '2026-01-01T00:00:00Z' }],
    };
    expect(validate(StorageBucketStatus, status)).to.deep.equal([]);
  });

  it('rejects a condition with a non-CamelCase reason', () => {
    const status = {
      conditions: [{ type: 'Ready', status: 'True', reason: 'not ok', message: '', lastTransitionTime: '2026-01-01T00:00:00Z' }],
    };
    expect(validate(StorageBucketStatus, status)).to.not.deep.equal([]);
  });

  it('keys the conditions list by type', () => {
    const conditions = StorageBucketStatus.properties.conditions;
    expect(conditions['x-kubernetes-list-type']).to.equal('map');
    expect(conditions['x-kubernetes-list-map-keys']).to.deep.equal(['type']);
  });

  it('is one atomic field to the field manager: its one writer sets it whole', () => {
    expect((StorageBucketStatus as unknown as Record<string, unknown>)['x-kubernetes-map-type']).to.equal('atomic');
  });
});

describe('BucketProviderConfig spec schema', () => {
  const cases: Record<string, [unknown, boolean]> = {
    'http endpoint': [{ endpoint: 'http://127.0.0.1:8090', secretRef: { name: 's' } }, true],
    'https endpoint with path': [{ endpoint: 'https://storage.example.com/v1', secretRef: { name: 's', key: 'k' } }, true],
    'endpoint without scheme': [{ endpoint: 'storage.example.com', secretRef: { name: 's' } }, false],
    'endpoint with spaces': [{ endpoint: 'http://a b', secretRef: { name: 's' } }, false],
    'missing secretRef': [{ endpoint: 'http://x' }, false],
    'empty secret name': [{ endpoint: 'http://x', secretRef: { name: '' } }, false],
    'insecure true': [{ endpoint: 'http://x', secretRef: { name: 's' }, insecure: true }, true],
    'insecure as a string': [{ endpoint: 'http://x', secretRef: { name: 's' }, insecure: 'yes' }, false],
  };
  for (const [name, [spec, ok]] of Object.entries(cases)) {
    it(`${ok ? 'accepts' : 'rejects'} ${name}`, () => {
      expect(validate(BucketProviderConfigSpec, spec).length === 0).to.equal(ok);
    });
  }
});
