/**
 * The provenance policy: on a StorageBucket, nobody but the operator adds or changes the
 * annotations that record which provider bucket it created, or writes the status. Rendered
 * by OperatorAdmissionPolicy, its rules evaluated by cel-go against updates a namespace editor
 * could send; test/integration/admission-policy.test.ts sends them to a real API server.
 */
import { expect } from 'chai';
import { Testing } from 'cdk8s';
import { OperatorAdmissionPolicy, PROVENANCE_ANNOTATIONS, provenancePolicyName } from '../../../infra/admission-policy';
import { CREATE_TARGET_ANNOTATION, IDEMPOTENCY_KEY_ANNOTATION, PAUSED_ANNOTATION } from '../../../operator/api/v1';
import { policyTable, type PolicyRules } from '../../support/policy-eval';
import { testChart } from '../../support/test-app';

type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- synthesized YAML is untyped

const OPERATOR = 'system:serviceaccount:ops:op';
const EDITOR = 'system:serviceaccount:team-a:ci';
const NS = 'team-a';

function render(props: { watchNamespace?: string } = {}): Obj[] {
  const chart = testChart();
  new OperatorAdmissionPolicy(chart, 'p', { operatorNamespace: 'ops', serviceAccountName: 'op', ...props });
  return Testing.synth(chart) as Obj[];
}
const objs = render();
const policy = objs.find((o) => o['kind'] === 'ValidatingAdmissionPolicy' && o['metadata']['name'] === provenancePolicyName('ops')) as Obj;

const KEY = IDEMPOTENCY_KEY_ANNOTATION;
const TARGET = CREATE_TARGET_ANNOTATION;

/** A v1 StorageBucket `logs` with `annotations` and a status the operator wrote. */
function bucket(annotations: Record<string, string> = {}, status: Obj = { id: 'b-1', idempotencyKey: 'k-1' }): Obj {
  return {
    apiVersion: 'storage.avalonhosting.example/v1',
    kind: 'StorageBucket',
    metadata: { name: 'logs', namespace: NS, uid: 'uid-logs', ...(Object.keys(annotations).length ? { annotations } : {}) },
    spec: { region: 'us-east-1', sizeGB: 1, providerRef: { name: 'default' } },
    status,
  };
}
const ours = { [KEY]: 'k-1', [TARGET]: 'uid-logs acct https://storage.example' };

interface Case {
  readonly subResource?: 'status';
  readonly oldObject: Obj;
  readonly object: Obj;
  readonly want: 'allowed' | RegExp;
}

const cases: Record<string, Case> = {
  'changing the idempotency key': {
    oldObject: bucket(ours),
    object: bucket({ ...ours, [KEY]: 'k-of-another-object' }),
    want: /^only the bucket operator may add or change storage\.avalonhosting\.example\/idempotency-key on storagebuckets team-a\/logs: the operator records there which provider bucket it created; removing the annotation is allowed$/,
  },
  'adding an idempotency key copied from another object': {
    oldObject: bucket(),
    object: bucket({ [KEY]: 'k-of-another-object' }),
    want: /may add or change storage\.avalonhosting\.example\/idempotency-key on/,
  },
  'adding a create target': {
    oldObject: bucket({ [KEY]: 'k-1' }),
    object: bucket(ours),
    want: /may add or change storage\.avalonhosting\.example\/create-target on/,
  },
  'changing both at once': {
    oldObject: bucket(ours),
    object: bucket({ [KEY]: 'x', [TARGET]: 'y' }),
    want: /may add or change storage\.avalonhosting\.example\/idempotency-key, storage\.avalonhosting\.example\/create-target on/,
  },
  'adding the key while removing the create target': {
    oldObject: bucket({ [TARGET]: 't' }),
    object: bucket({ [KEY]: 'x' }),
    want: /idempotency-key on/,
  },
  'removing the idempotency key (the operator mints a new one)': {
    oldObject: bucket(ours),
    object: bucket({ [TARGET]: ours[TARGET] }),
    want: 'allowed',
  },
  'removing the create target (the documented escape hatch)': { oldObject: bucket(ours), object: bucket({ [KEY]: 'k-1' }), want: 'allowed' },
  'removing both': { oldObject: bucket(ours), object: bucket(), want: 'allowed' },
  'a spec change and another annotation, both provenance annotations kept': {
    oldObject: bucket(ours),
    object: { ...bucket({ ...ours, [PAUSED_ANNOTATION]: 'true' }), spec: { region: 'us-east-1', sizeGB: 5, providerRef: { name: 'default' } } },
    want: 'allowed',
  },
  'an update of a bucket that never had them': { oldObject: bucket(), object: bucket({ [PAUSED_ANNOTATION]: 'true' }), want: 'allowed' },
  'a status write': {
    subResource: 'status',
    oldObject: bucket(ours),
    object: bucket(ours, { id: 'b-of-another-object', idempotencyKey: 'k-1' }),
    want: /^only the bucket operator may write the status of storagebuckets team-a\/logs: status\.id and status\.idempotencyKey are its record of what it created$/,
  },
  'a status write that changes nothing': { subResource: 'status', oldObject: bucket(ours), object: bucket(ours), want: /may write the status of/ },
};

describe('OperatorAdmissionPolicy: provenance, evaluated by cel-go', () => {
  policyTable(
    () => policy['spec'] as PolicyRules,
    Object.entries(cases).map(([name, c]) => {
      const request = {
        operation: 'UPDATE',
        resource: { group: 'storage.avalonhosting.example', version: 'v1', resource: 'storagebuckets' },
        // As the API server sends it: no subResource at all for the object itself.
        ...(c.subResource ? { subResource: c.subResource } : {}),
        namespace: NS,
        name: 'logs',
        userInfo: { username: EDITOR },
      };
      return [`${name} by a namespace editor`, { request, object: c.object, oldObject: c.oldObject, want: c.want }] as const;
    }),
  );
});

describe('OperatorAdmissionPolicy: provenance, as rendered', () => {
  it('guards exactly the idempotency key and the create target', () => {
    expect([...PROVENANCE_ANNOTATIONS].sort()).to.deep.equal([CREATE_TARGET_ANNOTATION, IDEMPOTENCY_KEY_ANNOTATION].sort());
  });

  it('applies to every user but the operator, on updates of StorageBuckets of any version and their status', () => {
    expect(policy['spec']['matchConditions']).to.deep.equal([
      { name: 'not-bucket-operator', expression: `request.userInfo.username != "${OPERATOR}"` },
    ]);
    expect(policy['spec']['matchConstraints']).to.deep.equal({
      resourceRules: [
        {
          apiGroups: ['storage.avalonhosting.example'],
          apiVersions: ['*'],
          resources: ['storagebuckets', 'storagebuckets/status'],
          // Creates are free: a copied manifest is made inert by the uid the operator checks.
          operations: ['UPDATE'],
          scope: 'Namespaced',
        },
      ],
    });
    expect(policy['spec']['failurePolicy']).to.equal('Fail');
  });

  it('is bound with Deny', () => {
    const binding = objs.find((o) => o['kind'] === 'ValidatingAdmissionPolicyBinding' && o['metadata']['name'] === provenancePolicyName('ops'));
    expect(binding?.['spec']).to.deep.equal({ policyName: provenancePolicyName('ops'), validationActions: ['Deny'] });
  });

  it('covers only the watched namespace when one is given', () => {
    const scoped = render({ watchNamespace: 'team-b' }).find(
      (o) => o['metadata']['name'] === provenancePolicyName('ops') && o['kind'] === 'ValidatingAdmissionPolicy',
    );
    expect(scoped?.['spec']['matchConstraints']['namespaceSelector']).to.deep.equal({
      matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'In', values: ['team-b'] }],
    });
    expect(() => render({ watchNamespace: 'Team B' })).to.throw(/props\.watchNamespace must be a DNS label/);
  });
});
