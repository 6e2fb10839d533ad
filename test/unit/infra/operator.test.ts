import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Chart, Duration, Testing } from 'cdk8s';
import { parseAllDocuments } from 'yaml';
import { BucketOperator, connectionSecretName, serviceName, StorageBucket, StorageBucketV2, type BucketOperatorProps } from 'bucketoperator';
import { CHART_IDS } from '../../../infra/app';
import { REPO_ROOT } from '../../../infra/generate';
import { accessSecretName, serviceName as ownedServiceName } from '../../../operator/bucket/names';
import { testApp } from '../../support/test-app';

type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- synthesized YAML is untyped; tests index into it freely

const CLUSTER_SCOPED = [
  'CustomResourceDefinition',
  'Namespace',
  'ClusterRole',
  'ClusterRoleBinding',
  'ValidatingAdmissionPolicy',
  'ValidatingAdmissionPolicyBinding',
];

/** `Kind name` of the RBAC objects that let the operator read the cluster identity. */
function identityRbac(objs: Obj[]): string[] {
  return objs
    .filter((o) => String(o['metadata']['name']).startsWith('bucketoperator-cluster-identity'))
    .map((o) => `${String(o['kind'])} ${String(o['metadata']['name'])}`);
}

function synth(props?: BucketOperatorProps, chartNamespace?: string): Obj[] {
  const chart = new Chart(testApp(), 'test', { namespace: chartNamespace });
  new BucketOperator(chart, 'operator', props);
  return Testing.synth(chart) as Obj[];
}

function deployment(objs: Obj[]): Obj {
  const found = objs.find((o) => o['kind'] === 'Deployment');
  if (!found) throw new Error('no Deployment');
  return found;
}

function args(objs: Obj[]): string[] {
  return deployment(objs)['spec']['template']['spec']['containers'][0]['args'] as string[];
}

const ref = (o: Obj) => `${o['kind']}/${o['metadata']['name']}`;

describe('BucketOperator', () => {
  it('renders CRDs, Namespace, RBAC, admission policy, ServiceAccount, Deployment and metrics Service', () => {
    const kinds = new Set(synth().map((o) => o['kind']));
    expect([...kinds].sort()).to.deep.equal([
      'ClusterRole',
      'ClusterRoleBinding',
      'CustomResourceDefinition',
      'Deployment',
      'Namespace',
      'Role',
      'RoleBinding',
      'Service',
      'ServiceAccount',
      'ValidatingAdmissionPolicy',
      'ValidatingAdmissionPolicyBinding',
    ]);
  });

  it('with a cluster id: passes --cluster-id and reads nothing cluster-scoped for it', () => {
    const objs = synth({ clusterId: 'prod-eu-1' });
    const args = objs.find((o) => o['kind'] === 'Deployment')?.['spec']['template']['spec']['containers'][0]['args'] as string[];
    expect(args).to.include('--cluster-id=prod-eu-1');
    expect(identityRbac(objs)).to.deep.equal([]);
    expect(identityRbac(synth())).to.deep.equal([
      'ClusterRole bucketoperator-cluster-identity.bucketoperator-system',
      'ClusterRoleBinding bucketoperator-cluster-identity.bucketoperator-system',
    ]);
  });

  it('names its cluster-identity ClusterRole and binding after its namespace, so two installs never rebind each other', () => {
    expect(identityRbac(synth({ mode: 'namespace', namespace: 'ops', watchNamespace: 'team-a' }))).to.deep.equal([
      'ClusterRole bucketoperator-cluster-identity.ops',
      'ClusterRoleBinding bucketoperator-cluster-identity.ops',
    ]);
  });

  it('refuses a cluster id that is not a plain tag value', () => {
    expect(() => synth({ clusterId: 'a b' })).to.throw(
      "props.clusterId must be 1-63 characters of A-Za-z0-9._- starting with a letter or digit, got 'a b'",
    );
  });

  it('leaves the admission policy out when asked', () => {
    const kinds = new Set(synth({ admissionPolicy: false }).map((o) => o['kind']));
    expect(kinds.has('ValidatingAdmissionPolicy')).to.equal(false);
    expect(kinds.has('ValidatingAdmissionPolicyBinding')).to.equal(false);
  });

  it('is what dist/ holds, object for object', () => {
    const dist = CHART_IDS.flatMap((id) =>
      parseAllDocuments(readFileSync(join(REPO_ROOT, 'dist', `${id}.yaml`), 'utf8')).map((d) => d.toJS() as Obj),
    );
    expect(synth()).to.deep.equal(dist);
  });

  const chartNamespaces: Record<string, string | undefined> = { 'a chart without a namespace': undefined, 'a chart with a namespace': 'team-a' };
  for (const [name, chartNamespace] of Object.entries(chartNamespaces)) {
    it(`in ${name}, keeps cluster-scoped objects without one and the rest in the operator's`, () => {
      const objs = synth({}, chartNamespace);
      const clusterScoped = objs.filter((o) => CLUSTER_SCOPED.includes(o['kind']));
      expect(clusterScoped.length).to.be.greaterThan(4);
      for (const o of clusterScoped) expect(o['metadata'], ref(o)).to.not.have.property('namespace');
      for (const o of objs.filter((x) => !CLUSTER_SCOPED.includes(x['kind']))) {
        expect(o['metadata']['namespace'], ref(o)).to.equal('bucketoperator-system');
      }
    });
  }

  it('renders every setting as a flag of the manager', () => {
    const objs = synth({
      leaderElection: false,
      logLevel: 'debug',
      providerQps: 5,
      providerBurst: 7,
      pollInterval: Duration.millis(500),
      driftInterval: Duration.minutes(2),
      maxConcurrentReconciles: 3,
    });
    expect(args(objs)).to.include.members([
      '--leader-elect=false',
      '--log-level=debug',
      '--provider-qps=5',
      '--provider-burst=7',
      '--poll-interval=500ms',
      '--drift-interval=2m',
      '--max-concurrent-reconciles=3',
    ]);
  });

  it("defaults to the operator's own defaults", () => {
    expect(args(synth())).to.include.members([
      '--leader-elect=true',
      '--log-level=info',
      '--provider-qps=20',
      '--provider-burst=40',
      '--poll-interval=3s',
      '--drift-interval=1m',
      '--max-concurrent-reconciles=8',
    ]);
  });

  it('runs the requested image and replicas in the requested namespace', () => {
    const objs = synth({ namespace: 'ops', image: 'registry.example.com/bucketoperator:1.2.3', replicas: 3 });
    const d = deployment(objs);
    expect(d['metadata']['namespace']).to.equal('ops');
    expect(d['spec']['replicas']).to.equal(3);
    expect(d['spec']['template']['spec']['containers'][0]['image']).to.equal('registry.example.com/bucketoperator:1.2.3');
    expect(objs.find((o) => o['kind'] === 'Namespace')?.['metadata']['name']).to.equal('ops');
    const binding = objs.find((o) => o['kind'] === 'ClusterRoleBinding' && o['metadata']['name'] === 'bucketoperator-manager');
    expect(binding?.['subjects'][0]).to.include({ namespace: 'ops' });
  });

  it('in namespace mode watches one namespace with a Role there', () => {
    const objs = synth({ mode: 'namespace', watchNamespace: 'team-a' });
    expect(args(objs)).to.include('--watch-namespace=team-a');
    const role = objs.find((o) => o['kind'] === 'Role' && o['metadata']['name'] === 'bucketoperator-manager');
    expect(role?.['metadata']['namespace']).to.equal('team-a');
    expect(objs.some((o) => o['kind'] === 'ClusterRole' && o['metadata']['name'] === 'bucketoperator-manager')).to.equal(false);
  });

  it('merges partial resources over the defaults', () => {
    const container = deployment(synth({ resources: { limits: { memory: '512Mi' } } }))['spec']['template']['spec']['containers'][0];
    expect(container['resources']).to.deep.equal({
      requests: { cpu: '50m', memory: '128Mi' },
      limits: { cpu: '500m', memory: '512Mi' },
    });
  });

  it('puts extra labels on every object and the Pods, keeping the selector', () => {
    const objs = synth({ labels: { team: 'platform', 'app.kubernetes.io/part-of': 'storage' } });
    for (const o of objs) expect(o['metadata']['labels'], ref(o)).to.include({ team: 'platform', 'app.kubernetes.io/part-of': 'storage' });
    const d = deployment(objs);
    expect(d['spec']['template']['metadata']['labels']).to.include({ team: 'platform' });
    expect(d['spec']['template']['metadata']['labels']).to.include(d['spec']['selector']['matchLabels']);
  });

  it('leaves the Namespace out when createNamespace is false', () => {
    const objs = synth({ createNamespace: false, userRoles: false });
    expect(objs.some((o) => o['kind'] === 'Namespace')).to.equal(false);
    expect(objs.some((o) => o['metadata']['name'] === 'bucketoperator-editor')).to.equal(false);
  });

  const invalid: Record<string, { props: BucketOperatorProps; want: RegExp }> = {
    'namespace mode without watchNamespace': {
      props: { mode: 'namespace' },
      want: /^BucketOperator: props\.watchNamespace is required when props\.mode is 'namespace'$/,
    },
    'watchNamespace in cluster mode': { props: { watchNamespace: 'team-a' }, want: /props\.watchNamespace is only valid/ },
    'an unknown mode': { props: { mode: 'everywhere' as 'cluster' }, want: /props\.mode must be 'cluster' or 'namespace'/ },
    'a namespace that is no DNS label': { props: { namespace: 'Ops_NS' }, want: /props\.namespace must be a DNS label/ },
    'replicas > 1 without leader election': {
      props: { replicas: 2, leaderElection: false },
      want: /props\.replicas is 2, which needs props\.leaderElection/,
    },
    'zero replicas': { props: { replicas: 0 }, want: /props\.replicas must be a positive integer, got 0/ },
    'a fractional qps': { props: { providerQps: 2.5 }, want: /props\.providerQps must be a positive integer, got 2\.5/ },
    'a negative burst': { props: { providerBurst: -1 }, want: /props\.providerBurst must be a positive integer/ },
    'zero concurrency': { props: { maxConcurrentReconciles: 0 }, want: /props\.maxConcurrentReconciles/ },
    'an interval given as a string': { props: { pollInterval: '3s' as unknown as Duration }, want: /props\.pollInterval must be a cdk8s Duration/ },
    'a sub-millisecond interval': {
      props: { driftInterval: Duration.millis(0.5) },
      want: /props\.driftInterval must be a whole number of milliseconds/,
    },
    'an unknown log level': { props: { logLevel: 'verbose' as 'info' }, want: /props\.logLevel must be one of debug, info, warn, error/ },
    'a malformed quantity': {
      props: { resources: { requests: { memory: '128 MB' } } },
      want: /props\.resources\.requests\.memory must be a Kubernetes quantity/,
    },
    'a label the selector uses': {
      props: { labels: { 'app.kubernetes.io/component': 'x' } },
      want: /props\.labels must not set 'app\.kubernetes\.io\/component'/,
    },
    'an invalid label value': { props: { labels: { team: 'a b' } }, want: /props\.labels\['team'\] has an invalid value/ },
    'an empty image': { props: { image: ' ' }, want: /props\.image must not be empty/ },
  };
  for (const [name, { props, want }] of Object.entries(invalid)) {
    it(`refuses ${name}`, () => {
      expect(() => synth(props)).to.throw(want);
    });
  }
});

describe('bucket helpers', () => {
  const chart = new Chart(testApp(), 'helpers', { namespace: 'team-a' });
  const bucket = new StorageBucket(chart, 'logs', {
    metadata: { name: 'logs' },
    spec: { region: 'eu-west-1', sizeGb: 1, providerRef: { name: 'default' } },
  });

  const inV2 = new StorageBucketV2(chart, 'media', {
    metadata: { name: 'media' },
    spec: { forProvider: { region: 'eu-west-1', size: '500Gi' }, providerConfigRef: { name: 'default' } },
  });

  it('name the Secret and Service exactly as the operator does', () => {
    expect(connectionSecretName(bucket)).to.equal(accessSecretName('logs'));
    expect(serviceName(bucket)).to.equal(ownedServiceName('logs'));
    expect(connectionSecretName('backups')).to.equal(accessSecretName('backups'));
  });

  it('take a v2 bucket as well', () => {
    expect(connectionSecretName(inV2)).to.equal(accessSecretName('media'));
    expect(serviceName(inV2)).to.equal(ownedServiceName('media'));
  });
});
