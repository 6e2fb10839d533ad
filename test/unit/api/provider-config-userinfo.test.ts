/**
 * The CRD refuses credentials in a BucketProviderConfig's endpoint: the endpoint's CEL rule,
 * evaluated by cel-go as the API server does, and its pattern, as the operator's own validate()
 * reads it. Both versions serve the same schema object.
 */
import { expect } from 'chai';
import * as v1 from '../../../operator/api/v1';
import * as v2 from '../../../operator/api/v2';
import { evaluateRules, rulesOf } from '../../support/cel-rules';

describe('BucketProviderConfig endpoint: no userinfo', () => {
  const endpointSchema = (spec: unknown) => (spec as { properties: { endpoint: Record<string, unknown> } }).properties.endpoint;

  it('carries the rule, with a message that says why, on the endpoint of v1 and v2', () => {
    for (const spec of [v1.BucketProviderConfigSpec, v2.BucketProviderConfigSpec]) {
      expect(endpointSchema(spec)['x-kubernetes-validations']).to.deep.equal([v1.ENDPOINT_USERINFO_RULE]);
    }
    expect(v1.ENDPOINT_USERINFO_RULE.message).to.include('spec.endpoint').and.include('user:pass@');
    expect(v2.ENDPOINT_USERINFO_RULE).to.equal(v1.ENDPOINT_USERINFO_RULE);
  });

  const cases: Record<string, { args: { endpoint: string }; want: { valid: boolean } }> = {
    'user and password': { args: { endpoint: 'https://admin:hunter2@storage.example.com' }, want: { valid: false } },
    'user only': { args: { endpoint: 'https://admin@storage.example.com/api' }, want: { valid: false } },
    'password only': { args: { endpoint: 'http://:hunter2@127.0.0.1:8090' }, want: { valid: false } },
    'an @ in the path': { args: { endpoint: 'https://storage.example.com/team@a' }, want: { valid: true } },
    'a plain endpoint with a port and path': { args: { endpoint: 'https://storage.example.com:8443/api/v1' }, want: { valid: true } },
    'an IPv6 literal': { args: { endpoint: 'http://[fd00::5]:8090' }, want: { valid: true } },
  };
  const names = Object.keys(cases);
  let cel: boolean[] = [];
  before(function () {
    this.timeout(30_000);
    // Every rule of the spec, the https rule included (insecure set so that one holds).
    const per = names.map((n) =>
      rulesOf(v1.BucketProviderConfigSpec, { endpoint: cases[n]!.args.endpoint, secretRef: { name: 's' }, insecure: true }),
    );
    const flat = evaluateRules(per.flat());
    let at = 0;
    cel = per.map((rules) => flat.slice(at, (at += rules.length)).every(Boolean));
  });
  names.forEach((name, i) => {
    const tc = cases[name]!;
    it(`${tc.want.valid ? 'admits' : 'refuses'} ${name} (CEL and pattern)`, () => {
      expect(cel[i], 'CEL').to.equal(tc.want.valid);
      const errors = v1.validate(v1.BucketProviderConfigSpec, { endpoint: tc.args.endpoint, secretRef: { name: 's' }, insecure: true });
      expect(errors.length === 0, JSON.stringify(errors)).to.equal(tc.want.valid);
    });
  });
});
