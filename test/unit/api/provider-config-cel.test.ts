import { expect } from 'chai';
import { BucketProviderConfigDefinition, BucketProviderConfigSpec, HTTPS_RULE } from '../../../operator/api/v1';
import { evaluateRules } from '../../support/cel-rules';

/** The https rule of BucketProviderConfig's spec, evaluated by cel-go as the API server does. */
describe('BucketProviderConfig spec CEL: https unless insecure', () => {
  const rules = (BucketProviderConfigSpec as unknown as Record<string, unknown>)['x-kubernetes-validations'] as Array<{
    rule: string;
    message: string;
  }>;

  it('is on the spec and names both fields in its message', () => {
    expect(rules).to.deep.equal([HTTPS_RULE]);
    expect(HTTPS_RULE.message).to.include('spec.endpoint').and.include('spec.insecure');
  });

  const secretRef = { name: 's' };
  const cases: Record<string, { args: { self: Record<string, unknown> }; want: { valid: boolean } }> = {
    'https endpoint': { args: { self: { endpoint: 'https://storage.example.com', secretRef } }, want: { valid: true } },
    'https endpoint with insecure true': {
      args: { self: { endpoint: 'https://storage.example.com', secretRef, insecure: true } },
      want: { valid: true },
    },
    'http endpoint with the default insecure false': {
      args: { self: { endpoint: 'http://127.0.0.1:8090', secretRef, insecure: false } },
      want: { valid: false },
    },
    'http endpoint stored before the field (no insecure)': {
      args: { self: { endpoint: 'http://127.0.0.1:8090', secretRef } },
      want: { valid: false },
    },
    'http endpoint with insecure true': { args: { self: { endpoint: 'http://127.0.0.1:8090', secretRef, insecure: true } }, want: { valid: true } },
    'https only as a later substring': { args: { self: { endpoint: 'http://evil.example/https://', secretRef } }, want: { valid: false } },
    'upper-case HTTPS (the endpoint pattern refuses it anyway)': {
      args: { self: { endpoint: 'HTTPS://storage.example.com', secretRef } },
      want: { valid: false },
    },
  };
  const names = Object.keys(cases);
  let results: boolean[] = [];
  before(function () {
    this.timeout(30_000);
    results = evaluateRules(names.flatMap((n) => rules.map((r) => ({ rule: r.rule, self: cases[n]!.args.self }))));
  });
  names.forEach((name, i) => {
    it(name, () => {
      expect(results[i], name).to.equal(cases[name]!.want.valid);
    });
  });

  it('shows insecure in kubectl get', () => {
    const columns = BucketProviderConfigDefinition.versions[0]!.printerColumns;
    expect(columns.find((c) => c.jsonPath === '.spec.insecure')).to.include({ name: 'Insecure', type: 'boolean' });
  });
});
