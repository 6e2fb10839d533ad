/**
 * The NetworkPolicy rendered with the conversion webhook: it selects the manager's Pods, admits
 * the webhook port only from the API server's sources and the metrics port only from the
 * scrapers', names no other port (the kubelet's probes are the CNI's business), and exists
 * exactly when the webhook does, in dist/v2 and the folders after it.
 */
import { expect } from 'chai';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { DIST_VARIANTS, REPO_ROOT } from '../../../infra/generate';
import type { BucketOperatorProps } from '../../../infra/operator';
import { ofKind, synthOperator as synth, type Manifest } from '../../support/synth-operator';

interface Rule {
  from: Manifest[];
  ports: Array<{ port: string | number; protocol: string }>;
}

function policyOf(objs: Manifest[]): { spec: { podSelector: unknown; policyTypes: string[]; ingress: Rule[] }; metadata: Manifest } {
  const policies = ofKind(objs, 'NetworkPolicy');
  expect(policies, 'one NetworkPolicy').to.have.length(1);
  return policies[0] as never;
}

/** The sources each named port admits. */
function admitted(objs: Manifest[]): Record<string, Manifest[]> {
  return Object.fromEntries(policyOf(objs).spec.ingress.flatMap((rule) => rule.ports.map((p) => [String(p.port), rule.from])));
}

describe('NetworkPolicy of the conversion webhook', () => {
  const objs = synth({ conversionWebhook: {} });
  const deployment = ofKind(objs, 'Deployment')[0]!;
  const containerPorts = (deployment['spec'].template.spec.containers[0].ports as Array<{ name: string }>).map((p) => p.name);

  it("selects the manager's Pods in the operator namespace and governs their ingress only", () => {
    const policy = policyOf(objs);
    expect(policy.metadata['namespace']).to.equal('bucketoperator-system');
    expect(policy.spec.podSelector).to.deep.equal(deployment['spec'].selector);
    expect(policy.spec.policyTypes).to.deep.equal(['Ingress']);
  });

  it('by default admits the webhook port from every address and the metrics port from every Pod; nothing else', () => {
    expect(admitted(objs)).to.deep.equal({
      webhook: [{ ipBlock: { cidr: '0.0.0.0/0' } }, { ipBlock: { cidr: '::/0' } }],
      metrics: [{ namespaceSelector: { matchLabels: {} } }],
    });
    for (const rule of policyOf(objs).spec.ingress) {
      expect(rule.from, 'an empty from would admit every source').to.have.length.greaterThan(0);
      for (const port of rule.ports) expect(port.protocol).to.equal('TCP');
    }
  });

  it("names ports the manager's container has, and leaves the health port (the kubelet's probes) to the CNI", () => {
    const named = Object.keys(admitted(objs));
    for (const port of named) expect(containerPorts, port).to.include(port);
    expect(containerPorts).to.include('health');
    expect(named).to.not.include('health');
  });

  it('admits the webhook only from the sources given, address ranges and selected Pods alike', () => {
    const narrowed = synth({
      conversionWebhook: {
        networkPolicy: {
          apiServerSources: [
            { cidr: '10.0.0.0/24', except: ['10.0.0.128/25'] },
            { namespaceSelector: { 'kubernetes.io/metadata.name': 'kube-system' }, podSelector: { app: 'konnectivity-agent' } },
          ],
          metricsSources: [{ namespaceSelector: { 'kubernetes.io/metadata.name': 'monitoring' } }, { cidr: 'fd00::/8' }],
        },
      },
    });
    expect(admitted(narrowed)).to.deep.equal({
      webhook: [
        { ipBlock: { cidr: '10.0.0.0/24', except: ['10.0.0.128/25'] } },
        {
          namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'kube-system' } },
          podSelector: { matchLabels: { app: 'konnectivity-agent' } },
        },
      ],
      metrics: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } } }, { ipBlock: { cidr: 'fd00::/8' } }],
    });
  });

  const none: Record<string, BucketOperatorProps> = {
    'without the webhook (v1 only)': {},
    'with networkPolicy: false': { conversionWebhook: { networkPolicy: false } },
  };
  for (const [name, props] of Object.entries(none)) {
    it(`renders none ${name}`, () => expect(ofKind(synth(props), 'NetworkPolicy')).to.deep.equal([]));
  }

  it('follows the operator namespace and its extra labels', () => {
    const policy = policyOf(synth({ namespace: 'ops', labels: { team: 'storage' }, conversionWebhook: {} }));
    expect(policy.metadata['namespace']).to.equal('ops');
    expect(policy.metadata['labels']).to.include({ team: 'storage' });
  });

  const refused: Record<string, { props: BucketOperatorProps; want: RegExp }> = {
    'an empty list, which NetworkPolicy reads as every source': {
      props: { conversionWebhook: { networkPolicy: { apiServerSources: [] } } },
      want: /props\.conversionWebhook\.networkPolicy\.apiServerSources must name at least one source/,
    },
    'a prefix too long': {
      props: { conversionWebhook: { networkPolicy: { apiServerSources: [{ cidr: '10.0.0.0/33' }] } } },
      want: /props\.conversionWebhook\.networkPolicy\.apiServerSources\[0\] has an invalid CIDR '10\.0\.0\.0\/33'/,
    },
    'an address without a prefix': {
      props: { conversionWebhook: { networkPolicy: { metricsSources: [{ cidr: '10.0.0.1' }] } } },
      want: /networkPolicy\.metricsSources\[0\] has an invalid CIDR '10\.0\.0\.1'/,
    },
    'a bad range cut out': {
      props: { conversionWebhook: { networkPolicy: { apiServerSources: [{ cidr: '10.0.0.0/8', except: ['ten/16'] }] } } },
      want: /apiServerSources\[0\] has an invalid CIDR 'ten\/16'/,
    },
    'a selector that is not a label': {
      props: { conversionWebhook: { networkPolicy: { apiServerSources: [{ namespaceSelector: { 'bad key!': 'x' } }] } } },
      want: /apiServerSources\[0\] has an invalid label selector entry 'bad key!: x'/,
    },
  };
  for (const [name, { props, want }] of Object.entries(refused)) {
    it(`refuses ${name}, naming the prop`, () => expect(() => synth(props)).to.throw(want));
  }
});

describe('NetworkPolicy in dist/', () => {
  const kindsIn = (dir: string) =>
    readdirSync(dir)
      .filter((f) => f.endsWith('.yaml'))
      .flatMap((f) => parseAllDocuments(readFileSync(join(dir, f), 'utf8')).map((d) => (d.toJS() as { kind: string }).kind));

  it('dist/ (no webhook) has none', () => expect(kindsIn(join(REPO_ROOT, 'dist'))).to.not.include('NetworkPolicy'));
  for (const v of DIST_VARIANTS) {
    it(`dist/${v.dir}/ (webhook on) has it`, () =>
      expect(kindsIn(join(REPO_ROOT, 'dist', v.dir)).filter((k) => k === 'NetworkPolicy')).to.have.length(1));
  }
});
