/**
 * The conversion webhook's ValidatingAdmissionPolicy and RBAC, as rendered when the webhook is
 * on: cel-go (test/support/celeval) evaluates the policy against the writes the certificate
 * keeper makes (a caBundle patch, its Secret created and replaced) and the ones it must never
 * make; the RBAC grants exactly the Secret by name and get/patch on exactly the two CRDs.
 * test/integration/conversion-webhook.test.ts runs the operator as its ServiceAccount under both.
 */
import { expect } from 'chai';
import { Testing } from 'cdk8s';
import { OperatorAdmissionPolicy } from '../../../infra/admission-policy';
import { renderCrd } from '../../../infra/crd';
import { OperatorRbac } from '../../../infra/rbac';
import * as v1 from '../../../operator/api/v1';
import * as v2 from '../../../operator/api/v2';
import { combineVersions } from '../../../operator/api/versions';
import { CONVERTED_CRD_NAMES } from '../../../operator/conversion/rbac';
import { policyTable, type PolicyRules } from '../../support/policy-eval';
import { testChart } from '../../support/test-app';

type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- rendered manifests are untyped; tests index into them freely

const OPS = 'ops';
const SECRET = 'webhook-cert';
const USER = `system:serviceaccount:${OPS}:op`;

function render(on: boolean): Obj[] {
  const chart = testChart();
  const webhook = on ? { conversionWebhook: { secretName: SECRET } } : {};
  new OperatorRbac(chart, 'rbac', { operatorNamespace: OPS, serviceAccountName: 'op', readsClusterIdentity: false, userRoles: false, ...webhook });
  new OperatorAdmissionPolicy(chart, 'policy', { operatorNamespace: OPS, serviceAccountName: 'op', ...webhook });
  return Testing.synth(chart) as Obj[];
}

const clone = <T>(x: T): T => JSON.parse(JSON.stringify(x)) as T;
const b64 = (s: string) => Buffer.from(s, 'utf8').toString('base64');

/** The StorageBucket CRD as the API server holds it once the keeper injected `caBundle`. */
function crd(caBundle?: string): Obj {
  const out = clone(
    renderCrd(
      combineVersions([v1.StorageBucketDefinition, v2.StorageBucketDefinition]),
      { app: 'x' },
      { conversionWebhook: { url: 'https://127.0.0.1:9443/convert' } },
    ),
  ) as Obj;
  if (caBundle !== undefined) out['spec'].conversion.webhook.clientConfig.caBundle = b64(caBundle);
  return out;
}
const changed = (o: Obj, f: (o: Obj) => void): Obj => {
  const out = clone(o);
  f(out);
  return out;
};

const secret = (over: (s: Obj) => void = () => undefined): Obj =>
  changed(
    {
      apiVersion: 'v1',
      kind: 'Secret',
      type: 'kubernetes.io/tls',
      metadata: { name: SECRET, namespace: OPS, labels: { [v1.MANAGED_BY_LABEL]: v1.MANAGED_BY_VALUE } },
      data: { 'ca.crt': b64('ca'), 'ca.key': b64('k'), 'tls.crt': b64('c'), 'tls.key': b64('k') },
    },
    over,
  );

interface Case {
  readonly operation: 'CREATE' | 'UPDATE' | 'DELETE';
  readonly object: Obj | null;
  readonly oldObject?: Obj | null;
  readonly want: 'allowed' | RegExp;
}
const CA_ONLY = /only spec\.conversion\.webhook\.clientConfig\.caBundle may change/;

/** `crd(caBundle)` converted by the webhook Service `name` in `namespace` instead of the URL. */
const viaService = (namespace: string, caBundle?: string): Obj =>
  changed(crd(caBundle), (o) => {
    o['spec'].conversion.webhook.clientConfig = {
      service: { namespace, name: 'bucketoperator-webhook', path: '/convert', port: 443 },
      ...(caBundle === undefined ? {} : { caBundle: b64(caBundle) }),
    };
  });

const cases: Record<string, Case> = {
  'the first caBundle on a CRD': { operation: 'UPDATE', oldObject: crd(), object: crd('A'), want: 'allowed' },
  'a caBundle on a CRD whose webhook is a Service in its namespace': {
    operation: 'UPDATE',
    oldObject: viaService(OPS),
    object: viaService(OPS, 'A'),
    want: 'allowed',
  },
  "a caBundle on a CRD whose webhook is another install's Service": {
    operation: 'UPDATE',
    oldObject: viaService('team-b-operator', 'B'),
    object: viaService('team-b-operator', 'A'),
    want: /its conversion webhook is not a Service in ops/,
  },
  'a new caBundle (a rotation)': { operation: 'UPDATE', oldObject: crd('A'), object: crd('A+B'), want: 'allowed' },
  'a label on a CRD': {
    operation: 'UPDATE',
    oldObject: crd('A'),
    object: changed(crd('A'), (o) => (o['metadata'].labels.extra = 'x')),
    want: CA_ONLY,
  },
  'an annotation on a CRD': {
    operation: 'UPDATE',
    oldObject: crd('A'),
    object: changed(crd('A'), (o) => (o['metadata'].annotations = { a: 'b' })),
    want: CA_ONLY,
  },
  'another webhook URL': {
    operation: 'UPDATE',
    oldObject: crd('A'),
    object: changed(crd('A'), (o) => (o['spec'].conversion.webhook.clientConfig.url = 'https://elsewhere.example/convert')),
    want: CA_ONLY,
  },
  'a webhook Service instead of the URL': {
    operation: 'UPDATE',
    oldObject: crd('A'),
    object: changed(crd('A'), (o) => (o['spec'].conversion.webhook.clientConfig = { service: { namespace: 'x', name: 'y' }, caBundle: b64('A') })),
    want: CA_ONLY,
  },
  'conversion turned off': {
    operation: 'UPDATE',
    oldObject: crd('A'),
    object: changed(crd('A'), (o) => (o['spec'].conversion = { strategy: 'None' })),
    want: CA_ONLY,
  },
  'a schema change': {
    operation: 'UPDATE',
    oldObject: crd('A'),
    object: changed(crd('A'), (o) => (o['spec'].versions[0].schema.openAPIV3Schema.description = 'changed')),
    want: CA_ONLY,
  },
  'a served version withdrawn': {
    operation: 'UPDATE',
    oldObject: crd('A'),
    object: changed(crd('A'), (o) => (o['spec'].versions[1].served = false)),
    want: CA_ONLY,
  },
  'a CRD of another name': {
    operation: 'UPDATE',
    oldObject: changed(crd('A'), (o) => (o['metadata'].name = 'widgets.example.com')),
    object: changed(crd('B'), (o) => (o['metadata'].name = 'widgets.example.com')),
    want: /may not create or change customresourcedefinitions widgets\.example\.com: it changes only storagebuckets/,
  },
  'a CRD created': {
    operation: 'CREATE',
    object: changed(crd(), (o) => (o['metadata'].name = 'widgets.example.com')),
    want: /may not create or change customresourcedefinitions widgets\.example\.com: it changes only storagebuckets/,
  },
  'a CRD deleted': {
    operation: 'DELETE',
    object: null,
    oldObject: crd('A'),
    want: /may not delete customresourcedefinitions storagebuckets\.storage\.avalonhosting\.example: it deletes neither/,
  },
  'its Secret created': { operation: 'CREATE', object: secret(), want: 'allowed' },
  'its Secret replaced with new certificates': {
    operation: 'UPDATE',
    oldObject: secret(),
    object: secret((s) => (s['data']['tls.crt'] = b64('c2'))),
    want: 'allowed',
  },
  'its Secret as Opaque': { operation: 'CREATE', object: secret((s) => (s['type'] = 'Opaque')), want: /only kubernetes\.io\/tls is allowed/ },
  'its Secret with an ownerReference': {
    operation: 'CREATE',
    object: secret((s) => (s['metadata'].ownerReferences = [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'x', uid: 'u' }])),
    want: /no ownerReferences and no finalizers/,
  },
  'its Secret with a finalizer': {
    operation: 'UPDATE',
    oldObject: secret(),
    object: secret((s) => (s['metadata'].finalizers = ['x/y'])),
    want: /no ownerReferences and no finalizers/,
  },
  'its Secret with another label': { operation: 'CREATE', object: secret((s) => (s['metadata'].labels.team = 'a')), want: /carries only the label/ },
  'its Secret with an annotation': {
    operation: 'UPDATE',
    oldObject: secret(),
    object: secret((s) => (s['metadata'].annotations = { a: 'b' })),
    want: /carries only the label/,
  },
  'its Secret replaced, keeping the labels and annotations others put there': {
    operation: 'UPDATE',
    oldObject: secret((s) => ((s['metadata'].labels.team = 'a'), (s['metadata'].annotations = { 'backup.example/at': 'noon' }))),
    object: secret(
      (s) => ((s['metadata'].labels.team = 'a'), (s['metadata'].annotations = { 'backup.example/at': 'noon' }), (s['data']['tls.crt'] = b64('c2'))),
    ),
    want: 'allowed',
  },
  'its own label put back on a Secret others labelled': {
    operation: 'UPDATE',
    oldObject: secret((s) => (s['metadata'].labels = { team: 'a' })),
    object: secret((s) => (s['metadata'].labels.team = 'a')),
    want: 'allowed',
  },
  "another's label changed on its Secret": {
    operation: 'UPDATE',
    oldObject: secret((s) => (s['metadata'].labels.team = 'a')),
    object: secret((s) => (s['metadata'].labels.team = 'b')),
    want: /carries only the label/,
  },
  "another's label dropped from its Secret": {
    operation: 'UPDATE',
    oldObject: secret((s) => (s['metadata'].labels.team = 'a')),
    object: secret(),
    want: /carries only the label/,
  },
  "another's annotation dropped from its Secret": {
    operation: 'UPDATE',
    oldObject: secret((s) => (s['metadata'].annotations = { a: 'b' })),
    object: secret(),
    want: /carries only the label/,
  },
  'its Secret deleted': { operation: 'DELETE', object: null, oldObject: secret(), want: /may not delete/ },
};

describe('the conversion webhook policy and RBAC', () => {
  const on = render(true);
  const policy = on.find((o) => o['kind'] === 'ValidatingAdmissionPolicy' && o['metadata'].name === `bucketoperator-conversion-webhook.${OPS}`);
  policyTable(
    () => {
      if (!policy) throw new Error('no conversion webhook policy rendered');
      return policy['spec'] as PolicyRules;
    },
    Object.entries(cases).map(([name, c]) => {
      const target = c.object ?? c.oldObject;
      const isSecret = target?.['kind'] === 'Secret';
      const request = {
        operation: c.operation,
        resource: isSecret
          ? { group: '', version: 'v1', resource: 'secrets' }
          : { group: 'apiextensions.k8s.io', version: 'v1', resource: 'customresourcedefinitions' },
        // As the API server sends a cluster-scoped request: no namespace at all.
        namespace: isSecret ? OPS : undefined,
        name: target?.['metadata']?.name,
        userInfo: { username: USER },
      };
      return [name, { request, object: c.object, oldObject: c.oldObject ?? null, want: c.want }] as const;
    }),
  );

  it('matches only the operator, and of Secrets only its webhook Secret, which the main policy leaves to it', () => {
    const conditions = (policy?.['spec'].matchConditions as Array<{ expression: string }>).map((m) => m.expression);
    expect(conditions[0]).to.equal(`request.userInfo.username == "${USER}"`);
    expect(conditions[1]).to.include(`request.namespace == "${OPS}" && request.name == "${SECRET}"`);
    const main = on.find((o) => o['kind'] === 'ValidatingAdmissionPolicy' && o['metadata'].name === `bucketoperator-least-privilege.${OPS}`);
    expect((main?.['spec'].matchConditions as Array<{ expression: string }>).map((m) => m.expression)[1]).to.equal(
      `!${conditions[1]?.split(' || ')[1] ?? ''}`,
    );
    // Bound, or it would be inert.
    expect(on.some((o) => o['kind'] === 'ValidatingAdmissionPolicyBinding' && o['spec'].policyName === policy?.['metadata'].name)).to.equal(true);
  });

  it('grants the Secret by name in the operator namespace and get/patch on exactly the two CRDs; nothing of it when off', () => {
    const rules = (kind: string, name: string) => (on.find((o) => o['kind'] === kind && o['metadata'].name === name)?.['rules'] ?? []) as Obj[];
    const role = on.find((o) => o['kind'] === 'Role' && o['metadata'].name === 'bucketoperator-conversion-webhook');
    expect(role?.['metadata'].namespace).to.equal(OPS);
    expect(rules('Role', 'bucketoperator-conversion-webhook')).to.deep.equal([
      { apiGroups: [''], resources: ['secrets'], resourceNames: [SECRET], verbs: ['get', 'list', 'watch', 'update'] },
      { apiGroups: [''], resources: ['secrets'], verbs: ['create'] },
    ]);
    expect(rules('ClusterRole', `bucketoperator-conversion-webhook.${OPS}`)).to.deep.equal([
      {
        apiGroups: ['apiextensions.k8s.io'],
        resources: ['customresourcedefinitions'],
        resourceNames: [...CONVERTED_CRD_NAMES],
        verbs: ['get', 'patch'],
      },
    ]);
    expect(CONVERTED_CRD_NAMES).to.deep.equal([
      'storagebuckets.storage.avalonhosting.example',
      'bucketproviderconfigs.storage.avalonhosting.example',
    ]);
    for (const kind of ['RoleBinding', 'ClusterRoleBinding']) {
      const b = on.filter((o) => o['kind'] === kind && String(o['metadata'].name).startsWith('bucketoperator-conversion-webhook'));
      expect(b.length, kind).to.equal(1);
      expect(b[0]?.['subjects']).to.deep.equal([{ kind: 'ServiceAccount', name: 'op', namespace: OPS }]);
    }
    const off = render(false);
    expect(off.filter((o) => String(o['metadata'].name).includes('conversion-webhook'))).to.deep.equal([]);
    // Off, only the uninstall guard's read of the StorageBucket CRD is left: no patch, no other CRD.
    const crdRules = off
      .flatMap((o) => (o['rules'] ?? []) as Obj[])
      .filter((r) => (r['resources'] as string[]).includes('customresourcedefinitions'));
    expect(crdRules).to.deep.equal([
      {
        apiGroups: ['apiextensions.k8s.io'],
        resources: ['customresourcedefinitions'],
        resourceNames: ['storagebuckets.storage.avalonhosting.example'],
        verbs: ['get', 'list', 'watch'],
      },
    ]);
  });
});
