import { expect } from 'chai';
import * as v1 from '../../../operator/api/v1';
import * as v2 from '../../../operator/api/v2';
import type { ApiDefinition } from '../../../operator/api/v1';
import { combineVersions } from '../../../operator/api/versions';
import { renderCrd, renderCrdVersion } from '../../../infra/crd';

type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- rendered schemas are untyped JSON; tests index into them freely

/** Visits every node of a schema with its dotted path. */
function walkSchema(node: Obj, path: string, visit: (node: Obj, path: string) => void): void {
  visit(node, path);
  for (const [k, child] of Object.entries<Obj>(node['properties'] ?? {})) walkSchema(child, `${path}.${k}`, visit);
  if (node['items']) walkSchema(node['items'], `${path}[]`, visit);
}

describe('the v2 CRD version entries (rendered, not yet served)', () => {
  const bucket = renderCrdVersion(v2.StorageBucketDefinition, v2.StorageBucketDefinition.versions[0]!) as Obj;
  const schema = bucket['schema']['openAPIV3Schema'];
  const spec = schema['properties']['spec'];

  it('is served beside v1, which stays the storage version', () => {
    expect(bucket).to.include({ name: 'v2', served: true, storage: false });
    expect(bucket['subresources']).to.deep.equal({ status: {} });
  });

  it('renders the size as a string with its pattern, length and CEL rules, and nothing TypeBox-only', () => {
    expect(spec['properties']['forProvider']['properties']['size']).to.deep.equal({
      type: 'string',
      description: v2.StorageBucketSpec.properties.forProvider.properties.size.description,
      pattern: v2.SIZE_PATTERN,
      maxLength: v2.SIZE_MAX_LENGTH,
      'x-kubernetes-validations': v2.StorageBucketSpec.properties.forProvider.properties.size['x-kubernetes-validations'],
    });
    expect(spec['required']).to.deep.equal(['forProvider', 'providerConfigRef']);
    expect(schema['properties']['status']['properties']['atProvider']['minProperties']).to.equal(1);
  });

  it("keeps v1's rule on metadata.name", () => {
    expect(schema['x-kubernetes-validations']).to.deep.equal(v1.StorageBucketDefinition.validations);
  });

  it('selects and shows the v2 field paths', () => {
    expect(bucket['selectableFields']).to.deep.equal([{ jsonPath: '.spec.providerConfigRef.name' }]);
    const columns = Object.fromEntries((bucket['additionalPrinterColumns'] as Obj[]).map((c) => [c['name'], c['jsonPath']]));
    expect(columns).to.deep.equal({
      Ready: '.status.conditions[?(@.type=="Ready")].status',
      Phase: '.status.phase',
      ID: '.status.atProvider.id',
      Region: '.spec.forProvider.region',
      Policy: '.spec.managementPolicy',
      Size: '.spec.forProvider.size',
      Age: '.metadata.creationTimestamp',
    });
  });

  it('describes every field of spec and status of both kinds, and types every node', () => {
    const missing: string[] = [];
    for (const def of v2.ALL_DEFINITIONS) {
      const s = (renderCrdVersion(def, def.versions[0]!) as Obj)['schema']['openAPIV3Schema'];
      for (const part of ['spec', 'status']) {
        walkSchema(s['properties'][part], `${def.kind}.${part}`, (node, path) => {
          if (!node['description']) missing.push(`${path} (description)`);
          if (!node['type']) missing.push(`${path} (type)`);
        });
      }
    }
    expect(missing).to.deep.equal([]);
  });
});

describe('combineVersions', () => {
  it('puts v1 first and keeps it the only storage version', () => {
    const both = combineVersions([v1.StorageBucketDefinition, v2.StorageBucketDefinition]);
    expect(both.versions.map((v) => [v.name, v.served, v.storage])).to.deep.equal([
      ['v1', true, true],
      ['v2', true, false],
    ]);
    expect(both.kind).to.equal('StorageBucket');
  });

  const refused: Record<string, { args: { defs: ApiDefinition[] }; want: { message: RegExp } }> = {
    'no definitions': { args: { defs: [] }, want: { message: /no definitions/ } },
    'two kinds': { args: { defs: [v1.StorageBucketDefinition, v2.BucketProviderConfigDefinition] }, want: { message: /cannot join/ } },
    'a version twice': { args: { defs: [v1.StorageBucketDefinition, v1.StorageBucketDefinition] }, want: { message: /version v1 twice/ } },
    'two storage versions': {
      args: {
        defs: [
          v1.StorageBucketDefinition,
          { ...v2.StorageBucketDefinition, versions: v2.StorageBucketDefinition.versions.map((v) => ({ ...v, storage: true })) },
        ],
      },
      want: { message: /exactly one storage version, has v1, v2/ },
    },
    'no storage version': { args: { defs: [v2.StorageBucketDefinition] }, want: { message: /has none/ } },
  };
  for (const [name, { args, want }] of Object.entries(refused)) {
    it(`refuses ${name}`, () => {
      expect(() => combineVersions(args.defs)).to.throw(want.message);
    });
  }

  it('is refused by renderCrd without a conversion webhook', () => {
    const both = combineVersions([v1.StorageBucketDefinition, v2.StorageBucketDefinition]);
    expect(() => renderCrd(both)).to.throw(/StorageBucket has 2 versions; serving several needs the conversion webhook/);
  });

  describe('rendered with a conversion webhook', () => {
    const both = combineVersions([v1.StorageBucketDefinition, v2.StorageBucketDefinition]);
    const cases: Record<string, { args: Parameters<typeof renderCrd>[2]; want: Obj }> = {
      'called through the operator Service, /convert by default': {
        args: { conversionWebhook: { service: { namespace: 'ops', name: 'bucketoperator-webhook', port: 9443 } } },
        want: { service: { namespace: 'ops', name: 'bucketoperator-webhook', path: '/convert', port: 9443 } },
      },
      'called by URL': { args: { conversionWebhook: { url: 'https://127.0.0.1:9443/convert' } }, want: { url: 'https://127.0.0.1:9443/convert' } },
    };
    for (const [name, { args, want }] of Object.entries(cases)) {
      it(name, () => {
        const crd = renderCrd(both, {}, args) as Obj;
        expect(crd['spec']['versions'].map((v: Obj) => [v['name'], v['served'], v['storage']])).to.deep.equal([
          ['v1', true, true],
          ['v2', true, false],
        ]);
        // No caBundle: the operator injects it, and a rendered one would fight it on every apply.
        expect(crd['spec']['conversion']).to.deep.equal({ strategy: 'Webhook', webhook: { conversionReviewVersions: ['v1'], clientConfig: want } });
      });
    }

    it('a single version without the option renders no conversion (what dist/ ships)', () => {
      expect((renderCrd(v1.StorageBucketDefinition) as Obj)['spec']['conversion']).to.equal(undefined);
    });
  });
});
