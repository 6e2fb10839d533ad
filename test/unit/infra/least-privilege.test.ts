/**
 * Least privilege, as rendered: the operator's RBAC grants exactly the verbs listed here (so
 * a new verb needs a deliberate change of this file), and the admission policy that confines
 * its writes is wired to the operator's own ServiceAccount in both RBAC modes.
 */
import { expect } from 'chai';
import { Testing } from 'cdk8s';
import { OperatorAdmissionPolicy } from '../../../infra/admission-policy';
import { CHART_IDS } from '../../../infra/app';
import { BucketOperator } from '../../../infra/operator';
import type { RbacMode } from '../../../infra/rbac';
import { CREDENTIALS_SECRET_LABEL, CREDENTIALS_SECRET_TYPE, MANAGED_BY_LABEL, MANAGED_BY_VALUE, OWNED_OBJECT_LABELS } from '../../../operator/api/v1';
import { BUCKET_PERMISSIONS } from '../../../operator/bucket/rbac';
import { SECRET_IN_USE_FINALIZER } from '../../../operator/bucket/secret-protection';
import { RUNTIME_PERMISSIONS } from '../../../operator/runtime/rbac';
import { testChart } from '../../support/test-app';

type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- synthesized YAML is untyped; tests index into it freely

const GROUP = 'storage.avalonhosting.example';

/**
 * Every verb the operator may use, per `<apiGroup>/<resource>` and where it applies. Each
 * entry is a call the code makes (see operator/bucket/rbac.ts and operator/runtime/rbac.ts);
 * `update` on storagebuckets/finalizers is checked by OwnerReferencesPermissionEnforcement
 * for blockOwnerDeletion, not sent.
 */
const ALLOWED: Record<'watched' | 'own', Record<string, readonly string[]>> = {
  watched: {
    [`${GROUP}/storagebuckets`]: ['list', 'patch', 'watch'],
    [`${GROUP}/bucketproviderconfigs`]: ['list', 'patch', 'watch'],
    [`${GROUP}/storagebuckets/status`]: ['patch'],
    [`${GROUP}/bucketproviderconfigs/status`]: ['patch'],
    [`${GROUP}/storagebuckets/finalizers`]: ['update'],
    '/secrets': ['create', 'get', 'list', 'patch', 'watch'],
    '/services': ['create', 'get', 'list', 'patch', 'watch'],
    'events.k8s.io/events': ['create', 'patch'],
    // Named cluster-scoped objects, in either mode: the cluster identity (its uid), and the
    // StorageBucket CRD, whose deletion makes the operator release objects instead of
    // deprovisioning them (list/watch by name: a fieldSelector on metadata.name).
    '/namespaces[kube-system]': ['get'],
    'apiextensions.k8s.io/customresourcedefinitions[storagebuckets.storage.avalonhosting.example]': ['get', 'list', 'watch'],
  },
  own: {
    'coordination.k8s.io/leases': ['create', 'get', 'update'],
  },
};

const OPERATOR_NS = 'bucketoperator-system';
const SA = 'bucketoperator-controller-manager';

function appFor(mode: RbacMode): Obj[] {
  const chart = testChart();
  new BucketOperator(chart, 'operator', mode === 'namespace' ? { mode, namespace: 'ops', watchNamespace: 'team-a' } : { mode });
  return Testing.synth(chart) as Obj[];
}

/** Verbs granted to ServiceAccount `ns/sa`, per `<apiGroup>/<resource>`, split by scope. */
function grantedTo(objs: Obj[], ns: string, sa: string): Record<'watched' | 'own', Record<string, string[]>> {
  const out: Record<'watched' | 'own', Record<string, Set<string>>> = { watched: {}, own: {} };
  const bindings = objs.filter(
    (o) =>
      (o['kind'] === 'RoleBinding' || o['kind'] === 'ClusterRoleBinding') &&
      (o['subjects'] as Obj[]).some((s) => s['kind'] === 'ServiceAccount' && s['name'] === sa && s['namespace'] === ns),
  );
  expect(bindings.length, 'bindings of the operator ServiceAccount').to.be.greaterThan(0);
  for (const b of bindings) {
    const roleKind = b['roleRef']['kind'];
    const role = objs.find(
      (o) =>
        o['kind'] === roleKind &&
        o['metadata']['name'] === b['roleRef']['name'] &&
        (roleKind === 'ClusterRole' || o['metadata']['namespace'] === b['metadata']['namespace']),
    );
    if (!role) throw new Error(`binding ${b['metadata']['name']} refers to a missing ${roleKind}`);
    // Rules in the operator's own namespace only (its Lease) versus where it manages buckets.
    const scope = role['kind'] === 'Role' && role['metadata']['namespace'] === ns ? 'own' : 'watched';
    for (const rule of role['rules'] as Obj[]) {
      for (const group of rule['apiGroups'] as string[]) {
        for (const resource of rule['resources'] as string[]) {
          const names = rule['resourceNames'] as string[] | undefined;
          const key = `${group}/${resource}${names ? `[${names.join(',')}]` : ''}`;
          out[scope][key] ??= new Set();
          for (const verb of rule['verbs'] as string[]) out[scope][key].add(verb);
        }
      }
    }
  }
  const sorted = (m: Record<string, Set<string>>) => Object.fromEntries(Object.entries(m).map(([k, v]) => [k, [...v].sort()]));
  return { watched: sorted(out.watched), own: sorted(out.own) };
}

describe('least privilege', () => {
  describe('RBAC of the operator ServiceAccount', () => {
    const modes: Record<RbacMode, { ns: string }> = { cluster: { ns: OPERATOR_NS }, namespace: { ns: 'ops' } };
    for (const [mode, { ns }] of Object.entries(modes) as Array<[RbacMode, { ns: string }]>) {
      it(`grants exactly the allow-listed verbs in ${mode} mode`, () => {
        expect(grantedTo(appFor(mode), ns, SA)).to.deep.equal(ALLOWED);
      });
    }

    it('keeps the StorageBucket CRD readable with a cluster id, which drops only the cluster identity', () => {
      const chart = testChart();
      new BucketOperator(chart, 'operator', { clusterId: 'prod-eu-1' });
      const { watched } = grantedTo(Testing.synth(chart) as Obj[], OPERATOR_NS, SA);
      expect(watched).to.not.have.property('/namespaces[kube-system]');
      expect(watched['apiextensions.k8s.io/customresourcedefinitions[storagebuckets.storage.avalonhosting.example]']).to.deep.equal([
        'get',
        'list',
        'watch',
      ]);
    });

    it('never grants delete, escalation verbs or wildcards', () => {
      const forbidden = ['delete', 'deletecollection', 'escalate', 'bind', 'impersonate', '*'];
      for (const p of [...BUCKET_PERMISSIONS, ...RUNTIME_PERMISSIONS]) {
        expect(
          p.verbs.filter((v) => forbidden.includes(v)),
          p.resources.join(),
        ).to.deep.equal([]);
        expect(p.resources, p.reason).to.not.include('*');
      }
    });

    it('gives every rule its reason', () => {
      for (const p of [...BUCKET_PERMISSIONS, ...RUNTIME_PERMISSIONS]) {
        expect(p.reason.trim(), p.resources.join()).to.not.equal('');
      }
    });
  });

  describe('OperatorAdmissionPolicy', () => {
    const objs = (() => {
      const chart = testChart();
      new OperatorAdmissionPolicy(chart, 'p', { operatorNamespace: 'ops', serviceAccountName: 'op' });
      return Testing.synth(chart) as Obj[];
    })();
    const policy = objs.find((o) => o['kind'] === 'ValidatingAdmissionPolicy') as Obj;
    const binding = objs.find((o) => o['kind'] === 'ValidatingAdmissionPolicyBinding') as Obj;
    const expressions = (): string => JSON.stringify([policy['spec']['validations'], policy['spec']['variables']]);

    it('renders a GA (v1) policy and a Deny binding to it, refusing when it cannot evaluate', () => {
      expect(policy['apiVersion']).to.equal('admissionregistration.k8s.io/v1');
      expect(binding['apiVersion']).to.equal('admissionregistration.k8s.io/v1');
      expect(policy['metadata']['name']).to.equal('bucketoperator-least-privilege.ops');
      expect(binding['spec']).to.deep.equal({ policyName: policy['metadata']['name'], validationActions: ['Deny'] });
      expect(policy['spec']['failurePolicy']).to.equal('Fail');
      expect(policy['metadata']).to.not.have.property('namespace');
    });

    it('matches writes and deletes of core Secrets and Services, only for the operator user', () => {
      expect(policy['spec']['matchConstraints']['resourceRules']).to.deep.equal([
        { apiGroups: [''], apiVersions: ['v1'], resources: ['secrets', 'services'], operations: ['CREATE', 'UPDATE', 'DELETE'], scope: 'Namespaced' },
      ]);
      expect(policy['spec']['matchConditions']).to.deep.equal([
        { name: 'is-bucket-operator', expression: 'request.userInfo.username == "system:serviceaccount:ops:op"' },
      ]);
    });

    it('is built from the shared label and finalizer names', () => {
      expect(expressions()).to.include(MANAGED_BY_LABEL).and.to.include(MANAGED_BY_VALUE);
      // The finalizer the operator's secret protection writes, not a copy of its string.
      expect(expressions()).to.include(SECRET_IN_USE_FINALIZER);
      expect(expressions()).to.include(CREDENTIALS_SECRET_LABEL).and.to.include(CREDENTIALS_SECRET_TYPE);
      // What the rules mean is tested by evaluating them: test/unit/infra/admission-policy.test.ts.
      for (const key of OWNED_OBJECT_LABELS) expect(expressions()).to.include(JSON.stringify(`"${key}"`).slice(1, -1));
    });

    it('explains every refusal', () => {
      for (const v of policy['spec']['validations'] as Obj[]) {
        expect(v['message'], v['expression']).to.match(/^the bucket operator may/);
        expect(v['messageExpression'], v['expression']).to.match(/^"the bucket operator may not \w+/);
        expect(v['reason']).to.equal('Forbidden');
      }
    });

    it('refuses props that are not Kubernetes names, quoting the field', () => {
      const build = (props: { operatorNamespace: string; serviceAccountName: string; name?: string }) => () =>
        new OperatorAdmissionPolicy(testChart(), 'p', props);
      expect(build({ operatorNamespace: 'a"b', serviceAccountName: 'op' })).to.throw(/props\.operatorNamespace/);
      expect(build({ operatorNamespace: 'ops', serviceAccountName: 'Op' })).to.throw(/props\.serviceAccountName/);
      expect(build({ operatorNamespace: 'ops', serviceAccountName: 'op', name: 'x y' })).to.throw(/props\.name/);
    });
  });

  describe('in dist/', () => {
    it('applies the policy after RBAC and before the manager starts', () => {
      const ids: readonly string[] = CHART_IDS;
      const policyAt = ids.indexOf('03-admission-policy');
      expect(policyAt).to.be.greaterThan(ids.indexOf('02-rbac'));
      expect(policyAt).to.be.lessThan(ids.findIndex((id) => id.endsWith('-manager')));
    });

    for (const mode of ['cluster', 'namespace'] as const) {
      it(`confines the ServiceAccount the manager runs as (${mode} mode)`, () => {
        const objs = appFor(mode);
        const sa = objs.find((o) => o['kind'] === 'ServiceAccount') as Obj;
        const username = `system:serviceaccount:${sa['metadata']['namespace']}:${sa['metadata']['name']}`;
        const policies = objs.filter((o) => o['kind'] === 'ValidatingAdmissionPolicy');
        // One confines the operator, the other keeps everyone else off its provenance records.
        expect(policies.map((p) => p['spec']['matchConditions'][0]['expression'])).to.deep.equal([
          `request.userInfo.username == "${username}"`,
          `request.userInfo.username != "${username}"`,
        ]);
        const provenance = policies[1] as Obj;
        // In namespace mode another install's operator may write buckets in other namespaces.
        expect(provenance['spec']['matchConstraints']['namespaceSelector']).to.deep.equal(
          mode === 'namespace' ? { matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'In', values: ['team-a'] }] } : undefined,
        );
        const deployment = objs.find((o) => o['kind'] === 'Deployment') as Obj;
        expect(deployment['spec']['template']['spec']['serviceAccountName']).to.equal(sa['metadata']['name']);
      });
    }
  });
});
