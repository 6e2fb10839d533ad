/**
 * `BucketOperator({ conversionWebhook })`, as rendered: both kinds serve v1 (stored) and v2
 * through the webhook Service, the Deployment serves the webhook on every one of its two
 * replicas with a PodDisruptionBudget, and the flags it passes are ones the operator knows.
 * Without the prop nothing of it is rendered (dist/ is checked by the staleness test).
 */
import { expect } from 'chai';
import { OPERATOR_FLAGS } from '../../../operator/flags';
import { ofKind as find, synthOperator as synth, type Manifest as Obj } from '../../support/synth-operator';

describe('BucketOperator with the conversion webhook', () => {
  const objs = synth({ conversionWebhook: {} });
  const deployment = find(objs, 'Deployment')[0];
  const container = deployment?.['spec'].template.spec.containers[0] as Obj;

  it('serves v2 beside v1 in both CRDs, v1 stored, converted through the webhook Service', () => {
    const crds = find(objs, 'CustomResourceDefinition');
    expect(crds.map((c) => c['metadata'].name).sort()).to.deep.equal([
      'bucketproviderconfigs.storage.avalonhosting.example',
      'storagebuckets.storage.avalonhosting.example',
    ]);
    for (const crd of crds) {
      expect((crd['spec'].versions as Obj[]).map((v) => [v['name'], v['served'], v['storage']])).to.deep.equal([
        ['v1', true, true],
        ['v2', true, false],
      ]);
      expect(crd['spec'].conversion).to.deep.equal({
        strategy: 'Webhook',
        webhook: {
          conversionReviewVersions: ['v1'],
          // No caBundle: the operator injects it, and a rendered one would undo that on every apply.
          clientConfig: { service: { namespace: 'bucketoperator-system', name: 'bucketoperator-webhook', path: '/convert', port: 443 } },
        },
      });
    }
  });

  it('puts a Service on port 443 in front of the container port every replica serves, two replicas and a budget of one', () => {
    const svc = find(objs, 'Service', 'bucketoperator-webhook')[0];
    expect(svc?.['metadata'].namespace).to.equal('bucketoperator-system');
    expect(svc?.['spec'].ports).to.deep.equal([{ name: 'webhook', port: 443, targetPort: 'webhook', protocol: 'TCP' }]);
    const podLabels = deployment?.['spec'].template.metadata.labels as Record<string, string>;
    for (const [k, v] of Object.entries(svc?.['spec'].selector as Record<string, string>)) expect(podLabels[k], k).to.equal(v);
    expect(container['ports']).to.deep.include({ name: 'webhook', containerPort: 9443, protocol: 'TCP' });
    expect(container['args']).to.include.members([
      '--conversion-webhook-port=9443',
      '--conversion-webhook-service=bucketoperator-webhook',
      '--conversion-webhook-secret=bucketoperator-webhook-cert',
    ]);
    // Ready only with a certificate loaded: the readiness probe is /readyz, which with the webhook
    // on is the webhook's readiness alone (operator/operator.ts); liveness is the process.
    expect(container['readinessProbe'].httpGet.path).to.equal('/readyz');
    expect(container['livenessProbe'].httpGet.path).to.equal('/healthz');
    expect(deployment?.['spec'].replicas).to.equal(2);
    // Two replicas on two nodes (and zones) where there are: one node's loss leaves the webhook served.
    const spread = (deployment?.['spec'].template.spec.topologySpreadConstraints ?? []) as Obj[];
    expect(spread.map((c) => [c['topologyKey'], c['whenUnsatisfiable']])).to.deep.equal([
      ['kubernetes.io/hostname', 'ScheduleAnyway'],
      ['topology.kubernetes.io/zone', 'ScheduleAnyway'],
    ]);
    const pdb = find(objs, 'PodDisruptionBudget')[0];
    expect(pdb?.['spec']).to.deep.equal({ minAvailable: 1, selector: { matchLabels: deployment?.['spec'].selector.matchLabels } });
  });

  it('passes only flags the operator knows', () => {
    const known = OPERATOR_FLAGS.map((f) => f.name);
    for (const arg of container['args'] as string[]) expect(known, arg).to.include(arg.slice(2).split('=')[0] ?? '');
  });

  it('renders RBAC and the admission policy for the webhook Secret it names', () => {
    const named = synth({ conversionWebhook: { secretName: 'conv-cert', serviceName: 'conv', port: 10443 } });
    const role = find(named, 'Role', 'bucketoperator-conversion-webhook')[0];
    expect((role?.['rules'] as Obj[])[0]?.['resourceNames']).to.deep.equal(['conv-cert']);
    expect(JSON.stringify(find(named, 'ValidatingAdmissionPolicy'))).to.include('request.name == \\"conv-cert\\"');
    const c = find(named, 'Deployment')[0]?.['spec'].template.spec.containers[0] as Obj;
    expect(c['args']).to.include.members([
      '--conversion-webhook-port=10443',
      '--conversion-webhook-service=conv',
      '--conversion-webhook-secret=conv-cert',
    ]);
    expect(find(named, 'CustomResourceDefinition')[0]?.['spec'].conversion.webhook.clientConfig.service.name).to.equal('conv');
  });

  it('renders no budget for a single replica, which would block every node drain', () => {
    const one = synth({ conversionWebhook: {}, replicas: 1 });
    expect(find(one, 'Deployment')[0]?.['spec'].replicas).to.equal(1);
    expect(find(one, 'PodDisruptionBudget')).to.deep.equal([]);
  });

  it('refuses a port or name the operator or the API server would not take, naming the prop', () => {
    expect(() => synth({ conversionWebhook: { port: 8080 } })).to.throw(/props\.conversionWebhook\.port/);
    expect(() => synth({ conversionWebhook: { port: 80 } })).to.throw(/props\.conversionWebhook\.port/);
    expect(() => synth({ conversionWebhook: { serviceName: 'Web_Hook' } })).to.throw(/props\.conversionWebhook\.serviceName must be a DNS label/);
    expect(() => synth({ conversionWebhook: { secretName: 'a.b' } })).to.throw(/props\.conversionWebhook\.secretName must be a DNS label/);
  });

  it('renders nothing of it without the prop: v1 only, no webhook Service, port, flag, role or budget', () => {
    const plain = synth({});
    for (const crd of find(plain, 'CustomResourceDefinition')) {
      expect((crd['spec'].versions as Obj[]).map((v) => v['name'])).to.deep.equal(['v1']);
      expect(crd['spec'].conversion).to.equal(undefined);
    }
    expect(JSON.stringify(plain)).to.not.match(/conversion-webhook|bucketoperator-webhook|"webhook"/);
    expect(find(plain, 'PodDisruptionBudget')).to.deep.equal([]);
    expect(find(plain, 'Deployment')[0]?.['spec'].replicas).to.equal(1);
  });
});
