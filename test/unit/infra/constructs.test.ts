import { expect } from 'chai';
import { Chart, Testing } from 'cdk8s';
import { OperatorCrds } from '../../../infra/crds';
import { OperatorManager } from '../../../infra/manager';
import { OperatorNamespace } from '../../../infra/namespace';
import { OperatorRbac } from '../../../infra/rbac';
import { testChart } from '../../support/test-app';

type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- synthesized YAML is untyped; tests index into it freely

function synth(build: (chart: Chart) => void): Obj[] {
  const chart = testChart();
  build(chart);
  return Testing.synth(chart) as Obj[];
}

function find(objs: Obj[], kind: string, name?: string): Obj {
  const found = objs.find((o) => o['kind'] === kind && (name === undefined || o['metadata']['name'] === name));
  if (!found) throw new Error(`no ${kind} ${name ?? ''} in ${objs.map((o) => `${o['kind']}/${o['metadata']['name']}`).join(', ')}`);
  return found;
}

describe('OperatorCrds', () => {
  const objs = synth((c) => new OperatorCrds(c, 'crds'));
  const bucket = find(objs, 'CustomResourceDefinition', 'storagebuckets.storage.avalonhosting.example');
  const version = bucket['spec']['versions'][0];
  const schema = version['schema']['openAPIV3Schema'];

  it('renders one CRD per kind with names, short name and category', () => {
    expect(objs.map((o) => o['metadata']['name']).sort()).to.deep.equal([
      'bucketproviderconfigs.storage.avalonhosting.example',
      'storagebuckets.storage.avalonhosting.example',
    ]);
    expect(bucket['spec']['scope']).to.equal('Namespaced');
    expect(bucket['spec']['names']['shortNames']).to.deep.equal(['sbucket']);
    expect(bucket['spec']['names']['categories']).to.deep.equal(['bucketoperator']);
  });

  it('has the status subresource and the printer columns', () => {
    expect(version['subresources']).to.deep.equal({ status: {} });
    expect(version['additionalPrinterColumns'].map((c: Obj) => c['name'])).to.deep.equal(['Ready', 'Phase', 'ID', 'Region', 'Policy', 'Size', 'Age']);
  });

  it('keeps the CEL rules that a typed CRD class would drop', () => {
    const spec = schema['properties']['spec']['properties'];
    expect(spec['region']['x-kubernetes-validations'][0]['rule']).to.equal('self == oldSelf');
    expect(spec['sizeGB']['x-kubernetes-validations'][0]['rule']).to.equal('self >= oldSelf');
    expect(spec['encrypted']['x-kubernetes-validations'][0]['rule']).to.equal('self == oldSelf');
  });

  it('describes every field of spec and status so kubectl explain is useful', () => {
    const missing: string[] = [];
    for (const crd of objs) {
      const s = crd['spec']['versions'][0]['schema']['openAPIV3Schema'];
      const kind = crd['spec']['names']['kind'];
      for (const part of ['spec', 'status']) {
        walkSchema(s['properties'][part], `${kind}.${part}`, (node, path) => {
          if (!node['description']) missing.push(path);
        });
      }
    }
    expect(missing).to.deep.equal([]);
  });

  it('is structural: every schema node has a type', () => {
    const untyped: string[] = [];
    walkSchema(schema, 'StorageBucket', (node, path) => {
      if (!node['type']) untyped.push(path);
    });
    expect(untyped).to.deep.equal([]);
  });
});

/** Visits every node of a schema with its dotted path. */
function walkSchema(node: Obj, path: string, visit: (node: Obj, path: string) => void): void {
  visit(node, path);
  for (const [k, v] of Object.entries<Obj>(node['properties'] ?? {})) walkSchema(v, `${path}.${k}`, visit);
  if (node['items']) walkSchema(node['items'], `${path}[]`, visit);
}

describe('OperatorManager', () => {
  const objs = synth((c) => new OperatorManager(c, 'm'));
  const deployment = find(objs, 'Deployment');
  const pod = deployment['spec']['template']['spec'];
  const container = pod['containers'][0];

  it('runs as non-root 65532 with seccomp RuntimeDefault', () => {
    expect(pod['securityContext']).to.include({ runAsNonRoot: true, runAsUser: 65532, runAsGroup: 65532 });
    expect(pod['securityContext']['seccompProfile']).to.deep.equal({ type: 'RuntimeDefault' });
  });

  it('drops all capabilities, forbids escalation and mounts root read-only with a writable /tmp', () => {
    expect(container['securityContext']).to.deep.include({
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      capabilities: { drop: ['ALL'] },
    });
    expect(container['volumeMounts']).to.deep.include({ name: 'tmp', mountPath: '/tmp' });
    expect(pod['volumes'][0]['emptyDir']).to.be.an('object');
  });

  it('mounts the ServiceAccount token, probes health and enables leader election', () => {
    expect(pod['automountServiceAccountToken']).to.equal(true);
    expect(pod['serviceAccountName']).to.equal('bucketoperator-controller-manager');
    expect(container['livenessProbe']['httpGet']['path']).to.equal('/healthz');
    expect(container['readinessProbe']['httpGet']['path']).to.equal('/readyz');
    expect(container['args']).to.include('--leader-elect=true');
  });

  it('asks for modest resources, not the cdk8s-plus defaults', () => {
    expect(container['resources']['requests']).to.deep.equal({ cpu: '50m', memory: '128Mi' });
    expect(container['resources']['limits']).to.deep.equal({ cpu: '500m', memory: '256Mi' });
  });

  it('exposes metrics through a Service selecting the manager Pods', () => {
    const svc = find(objs, 'Service');
    expect(svc['spec']['ports'][0]).to.include({ name: 'metrics', port: 8080 });
    expect(svc['spec']['selector']).to.deep.equal(deployment['spec']['selector']['matchLabels']);
  });

  it('spreads more than one replica over nodes and zones, softly and per revision; one replica has nothing to spread', () => {
    const spread = (replicas: number) =>
      find(
        synth((c) => new OperatorManager(c, 'm', { replicas })),
        'Deployment',
      )['spec']['template']['spec']['topologySpreadConstraints'] as Obj[] | undefined;
    const selector = deployment['spec']['selector'];
    expect(spread(2)).to.deep.equal(
      ['kubernetes.io/hostname', 'topology.kubernetes.io/zone'].map((topologyKey) => ({
        topologyKey,
        maxSkew: 1,
        // A one-node cluster (kind) still schedules every replica.
        whenUnsatisfiable: 'ScheduleAnyway',
        labelSelector: selector,
        matchLabelKeys: ['pod-template-hash'],
      })),
    );
    expect(spread(1)).to.equal(undefined);
    // The selector matches the Pods it spreads.
    const labels = find(
      synth((c) => new OperatorManager(c, 'm', { replicas: 2 })),
      'Deployment',
    )['spec']['template']['metadata']['labels'];
    for (const [k, v] of Object.entries(selector['matchLabels'] as Record<string, string>)) expect(labels[k], k).to.equal(v);
  });

  it('refuses invalid props with a message naming the field', () => {
    expect(() => synth((c) => new OperatorManager(c, 'm', { replicas: 0 }))).to.throw(/props\.replicas/);
    expect(() => synth((c) => new OperatorManager(c, 'm', { metricsPort: 9000, healthPort: 9000 }))).to.throw(/props\.metricsPort/);
  });
});

describe('OperatorNamespace', () => {
  it('enforces Pod Security restricted', () => {
    const ns = find(
      synth((c) => new OperatorNamespace(c, 'n')),
      'Namespace',
    );
    expect(ns['metadata']['labels']['pod-security.kubernetes.io/enforce']).to.equal('restricted');
  });
});

describe('OperatorRbac', () => {
  const base = { operatorNamespace: 'bucketoperator-system', serviceAccountName: 'sa' };

  it('grants exact verbs and never a wildcard', () => {
    const objs = synth((c) => new OperatorRbac(c, 'r', base));
    for (const role of objs.filter((o) => o['kind'] === 'ClusterRole' || o['kind'] === 'Role')) {
      for (const rule of role['rules']) {
        expect(rule['verbs'], role['metadata']['name']).to.not.include('*');
        expect(rule['resources'], role['metadata']['name']).to.not.include('*');
        expect(rule['apiGroups'], role['metadata']['name']).to.not.include('*');
      }
    }
  });

  it('in cluster mode binds a ClusterRole with status as its own rule', () => {
    const objs = synth((c) => new OperatorRbac(c, 'r', base));
    const role = find(objs, 'ClusterRole', 'bucketoperator-manager');
    const rules: Obj[] = role['rules'];
    const statusRule = rules.find((r) => r['resources'].includes('storagebuckets/status'));
    expect(statusRule?.['verbs']).to.deep.equal(['patch']);
    const crRule = rules.find((r) => r['resources'].includes('storagebuckets'));
    expect(crRule?.['verbs']).to.deep.equal(['list', 'watch', 'patch']);
    expect(crRule?.['verbs']).to.not.include('delete');
    expect(find(objs, 'ClusterRoleBinding')['subjects']).to.deep.equal([{ kind: 'ServiceAccount', name: 'sa', namespace: 'bucketoperator-system' }]);
  });

  it('keeps Lease access to the operator namespace only', () => {
    const objs = synth((c) => new OperatorRbac(c, 'r', base));
    const clusterRules: Obj[] = find(objs, 'ClusterRole', 'bucketoperator-manager')['rules'];
    expect(clusterRules.some((r) => r['resources'].includes('leases'))).to.equal(false);
    const lease = find(objs, 'Role', 'bucketoperator-leader-election');
    expect(lease['metadata']['namespace']).to.equal('bucketoperator-system');
    expect(lease['rules']).to.deep.equal([{ apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'create', 'update'] }]);
  });

  it('in namespace mode renders a Role in the watched namespace and no manager ClusterRole', () => {
    const objs = synth((c) => new OperatorRbac(c, 'r', { ...base, mode: 'namespace', watchNamespace: 'team-a' }));
    expect(objs.some((o) => o['kind'] === 'ClusterRole' && o['metadata']['name'] === 'bucketoperator-manager')).to.equal(false);
    expect(find(objs, 'Role', 'bucketoperator-manager')['metadata']['namespace']).to.equal('team-a');
    expect(find(objs, 'RoleBinding', 'bucketoperator-manager')['metadata']['namespace']).to.equal('team-a');
  });

  it('refuses namespace mode without a namespace', () => {
    expect(() => synth((c) => new OperatorRbac(c, 'r', { ...base, mode: 'namespace' }))).to.throw(/props\.watchNamespace/);
  });
});
