import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { parseArgs } from '../../../cli/args';
import { report } from '../../../cli/commands/report';
import { ExitCode } from '../../../cli/exit-codes';
import { COMMON_LABELS, MANAGER_SELECTOR } from '../../../infra/labels';
import type { KubeObject } from '../../../operator/runtime/types';
import { API_KEY, NOW } from './fixtures';
import { fakeKube, outcome, recorder, storedObjects } from './fake-kube';

const OPS = 'bucketoperator-system';
const OTHER_SECRET = 'other-apps-database-password';
const PROXY = 'http://proxy-user:proxy-pass@proxy.corp:3128';
const LABELS = { ...COMMON_LABELS, ...MANAGER_SELECTOR };

function podSpec(container: string, env: Record<string, string>) {
  return {
    containers: [{ name: container, image: 'x', args: [`--proxy=${PROXY}`], env: Object.entries(env).map(([name, value]) => ({ name, value })) }],
  };
}

/** The operator's objects (labelled as its manifests label them) beside another app's in the same namespace. */
function operatorNamespace(): KubeObject[] {
  const at = (kind: string, name: string, labels: Record<string, string>, rest: object) =>
    ({ apiVersion: kind === 'Deployment' ? 'apps/v1' : 'v1', kind, metadata: { name, namespace: OPS, labels }, ...rest }) as KubeObject;
  return [
    at('Deployment', 'bucketoperator-controller-manager', LABELS, { spec: { template: { spec: podSpec('manager', { HTTPS_PROXY: PROXY }) } } }),
    at('Pod', 'manager-0', LABELS, { spec: podSpec('manager', { HTTPS_PROXY: PROXY }) }),
    at('Service', 'bucketoperator-controller-manager-metrics', LABELS, { spec: { ports: [{ name: 'metrics', port: 8080 }] } }),
    at('Service', 'bucketoperator-webhook', LABELS, { spec: { ports: [{ name: 'webhook', port: 443 }] } }),
    at('Deployment', 'other-app', { app: 'other' }, { spec: { template: { spec: podSpec('app', { DB_PASSWORD: OTHER_SECRET }) } } }),
    at('Pod', 'other-app-0', { app: 'other' }, { spec: podSpec('app', { DB_PASSWORD: OTHER_SECRET }) }),
    at('Service', 'other-app-metrics', { app: 'other' }, { spec: { ports: [{ name: 'metrics', port: 9090 }] } }),
  ];
}

describe('kubectl bucket: report', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'cli-report-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("collects only the operator's objects, selected by its labels, and redacts every kind", async () => {
    const kube = fakeKube({
      versions: ['v1'],
      objects: [...storedObjects(), ...operatorNamespace()],
      logs: { 'manager-0/manager': `starting; proxy ${PROXY}\n`, 'other-app-0/app': `connected with ${OTHER_SECRET}\n` },
      texts: {
        [`/api/v1/namespaces/${OPS}/services/bucketoperator-controller-manager-metrics:metrics/proxy/metrics`]: 'bucketoperator_buckets_exist 1\n',
        [`/api/v1/namespaces/${OPS}/services/other-app-metrics:metrics/proxy/metrics`]: 'other_app_up 1\n',
      },
    });
    const file = join(dir, 'r.tar.gz');
    const got = await outcome(() => report(kube, parseArgs(['report', '-n', 'team-a', '-f', file]), recorder(), () => NOW));
    expect(got).to.deep.equal({ code: ExitCode.OK });
    execFileSync('tar', ['-xzf', file, '-C', dir]);
    const [root] = readdirSync(dir).filter((f) => f.startsWith('bucket-report-'));
    const read = (p: string) => readFileSync(join(dir, root!, p), 'utf8');
    const names = (p: string) => (parse(read(p)) as { items: KubeObject[] }).items.map((o) => o.metadata?.name);

    expect(names('operator/deployments.yaml')).to.deep.equal(['bucketoperator-controller-manager']);
    expect(names('operator/pods.yaml')).to.deep.equal(['manager-0']);
    expect(names('operator/services.yaml')).to.deep.equal(['bucketoperator-controller-manager-metrics', 'bucketoperator-webhook']);
    expect(readdirSync(join(dir, root!, 'operator', 'logs'))).to.deep.equal(['manager-0_manager.log']);
    expect(read('operator/logs/manager-0_manager.log')).to.equal('starting; proxy http://<redacted>@proxy.corp:3128\n');
    expect(read('operator/metrics-bucketoperator-controller-manager-metrics.txt')).to.equal('bucketoperator_buckets_exist 1\n');
    expect(existsSync(join(dir, root!, 'operator', 'metrics-other-app-metrics.txt'))).to.equal(false);

    const pod = (parse(read('operator/pods.yaml')) as { items: { spec: ReturnType<typeof podSpec> }[] }).items[0]!;
    expect(pod.spec.containers[0]).to.deep.include({
      args: ['--proxy=http://<redacted>@proxy.corp:3128'],
      env: [{ name: 'HTTPS_PROXY', value: '<redacted>' }],
    });
    expect(names('namespaces/team-a/storagebuckets.yaml')).to.deep.equal(['logs']);
    const all = execFileSync('sh', ['-c', `cat $(find ${join(dir, root!)} -type f)`], { encoding: 'utf8' });
    for (const secret of [OTHER_SECRET, 'proxy-pass', API_KEY, Buffer.from(API_KEY).toString('base64')]) expect(all).to.not.include(secret);
  });

  it('names the selector in errors.txt when nothing in the namespace carries it', async () => {
    const kube = fakeKube({
      versions: ['v1'],
      objects: [...storedObjects(), ...operatorNamespace().filter((o) => o.metadata?.labels?.['app'] === 'other')],
    });
    const file = join(dir, 'r.tar.gz');
    expect(await outcome(() => report(kube, parseArgs(['report', '-n', 'team-a', '-f', file]), recorder(), () => NOW))).to.deep.equal({
      code: ExitCode.OK,
    });
    const listing = execFileSync('tar', ['-xzOf', file, '--wildcards', '*/errors.txt'], { encoding: 'utf8' });
    const selector = 'app.kubernetes.io/name=bucketoperator,app.kubernetes.io/component=controller-manager';
    expect(listing).to.include(`no Deployment or Pod labelled ${selector} in ${OPS}`);
    expect(listing).to.include(`no Service labelled ${selector} with a metrics port in ${OPS}`);
  });
});
