/**
 * The package as a user gets it: `npm pack`, a fresh cdk8s app outside the repository that
 * installs the tarball and its peers, a consumer written in TypeScript and compiled by plain
 * `tsc` against the shipped .d.ts (strict, skipLibCheck off, no @types/node), then run by
 * `cdk8s synth` as plain JavaScript (no tsx), and its output applied to the real control plane.
 */
import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { parseAllDocuments } from 'yaml';
import { CHART_IDS } from '../../infra/app';
import { REPO_ROOT } from '../../infra/generate';
import { VERSION } from '../../infra/version';
import type { ControlPlane } from '../support/control-plane';
import { kubectlOk } from '../support/kube';
import { LAZY_BUNDLES, PLUGIN_BIN, PLUGIN_BUNDLE } from '../../scripts/bundle-plugin';
import { lockedVersion, npmInstall, packedTarball, sh } from '../support/packed';
import { freshNamespace, sharedControlPlane } from './setup';

const run = promisify(execFile);
type Obj = { kind: string; metadata: { name: string; namespace?: string } } & Record<string, unknown>;

const CLUSTER_SCOPED = new Set(['CustomResourceDefinition', 'Namespace', 'ClusterRole', 'ClusterRoleBinding']);
const BIN = join(REPO_ROOT, 'node_modules', '.bin');

function readYaml(file: string): Obj[] {
  return parseAllDocuments(readFileSync(file, 'utf8')).map((d) => d.toJS() as Obj);
}

/** The consumer's cdk8s app; `namespace` is the team namespace its charts render into. */
function consumerMain(namespace: string): string {
  return `import { App, Chart } from 'cdk8s';
import { k8s } from 'cdk8s-plus-28';
import { BucketOperator, BucketProviderConfig, StorageBucket, connectionSecretName, serviceName } from 'bucketoperator';

const app = new App();
// A chart with a namespace: the operator's cluster-scoped objects must still come out without one.
new BucketOperator(new Chart(app, 'operator', { namespace: '${namespace}' }), 'operator');

const team = new Chart(app, 'buckets', { namespace: '${namespace}' });
new k8s.KubeSecret(team, 'key', { metadata: { name: 'provider-key' }, stringData: { apiKey: 'k' } });
const config = new BucketProviderConfig(team, 'provider', {
  metadata: { name: 'default' },
  spec: { endpoint: 'https://storage.example.com', secretRef: { name: 'provider-key', key: 'apiKey' } },
});
const names: { [key: string]: string } = {};
for (const [name, sizeGb] of [['logs', 50], ['backups', 200]] as const) {
  const bucket = new StorageBucket(team, name, { metadata: { name }, spec: { region: 'eu-west-1', sizeGb, providerRef: { name: config.name } } });
  names[name + '.secret'] = connectionSecretName(bucket);
  names[name + '.service'] = serviceName(bucket);
}
new k8s.KubeConfigMap(team, 'names', { metadata: { name: 'bucket-names' }, data: names });

// Valid for the generated types, refused by the CRD's rule: the name is no DNS-1035 label.
new StorageBucket(new Chart(app, 'invalid', { namespace: '${namespace}' }), 'invalid', {
  metadata: { name: '9lives' },
  spec: { region: 'eu-west-1', sizeGb: 1, providerRef: { name: config.name } },
});
app.synth();
`;
}

describe('the packed construct library in a fresh cdk8s app', function () {
  // npm pack (with the lib build), an install from the warm cache, tsc and cdk8s synth: about a
  // minute on 2 shared cores; the limit leaves room for a slow machine, not for a hang.
  this.timeout(300_000);
  let tmp: string;
  let appDir: string;
  let tarball: string;
  let cp: ControlPlane;
  let ns: string;
  let out: string;

  before(async () => {
    const started = Date.now();
    // The control plane starts while the package is packed and installed.
    const ready = sharedControlPlane().then(async (c) => ({ c, namespace: await freshNamespace(c, 'pack') }));
    ready.catch(() => undefined); // awaited below; this only keeps an early failure from going unhandled
    tmp = mkdtempSync(join(tmpdir(), 'bucketoperator-pack-'));
    appDir = join(tmp, 'app');
    mkdirSync(appDir);

    // prepack builds lib/; one tarball serves every test below.
    tarball = await packedTarball();

    const peers = ['cdk8s', 'cdk8s-plus-28', 'constructs'];
    writeFileSync(
      join(appDir, 'package.json'),
      JSON.stringify(
        {
          name: 'consumer',
          private: true,
          dependencies: { bucketoperator: `file:${tarball}`, ...Object.fromEntries(peers.map((p) => [p, lockedVersion(p)])) },
        },
        null,
        2,
      ),
    );
    writeFileSync(
      join(appDir, 'tsconfig.json'),
      JSON.stringify(
        {
          compilerOptions: {
            target: 'ES2022',
            module: 'node16',
            moduleResolution: 'node16',
            lib: ['ES2022'],
            strict: true,
            skipLibCheck: false,
            types: [],
          },
          files: ['main.ts'],
        },
        null,
        2,
      ),
    );
    writeFileSync(join(appDir, 'cdk8s.yaml'), 'language: typescript\napp: node main.js\noutput: dist\n');
    await npmInstall(appDir);

    ({ c: cp, namespace: ns } = await ready);
    writeFileSync(join(appDir, 'main.ts'), consumerMain(ns));
    // The repository's tsc and cdk8s CLI, run in the consumer's directory, resolve only the
    // consumer's node_modules: the app sees the package exactly as installed.
    await sh(join(BIN, 'tsc'), ['-p', '.'], appDir);
    await sh(join(BIN, 'cdk8s'), ['synth', '--no-check-upgrade'], appDir);
    out = join(appDir, 'dist');
    console.log(`      (pack, install, tsc and synth took ${((Date.now() - started) / 1000).toFixed(1)} s)`);
  });
  after(() => {
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  it('packs compiled JS, declarations and the YAML, and no TypeScript sources', async () => {
    const listing = await sh('tar', ['-tzf', tarball], tmp);
    const files = listing
      .split('\n')
      .filter(Boolean)
      .map((f) => f.replace(/^package\//, ''));
    expect(files).to.include.members(['package.json', 'lib/infra/index.js', 'lib/infra/index.d.ts', 'dist/Kustomization', 'dist/00-crds.yaml']);
    // The plugin is its executable and bundles (scripts/bundle-plugin.ts), not a tree of modules.
    expect(files.filter((f) => f.startsWith('lib/cli/')).sort()).to.deep.equal(
      [PLUGIN_BIN, PLUGIN_BUNDLE, ...LAZY_BUNDLES.map((l) => join('cli', l.file))].map((f) => `lib/${f}`).sort(),
    );
    expect(files.filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts'))).to.deep.equal([]);
    expect(files.filter((f) => !/^(lib|dist)\//.test(f) && !/^(package\.json|README\.md|LICENSE)$/.test(f))).to.deep.equal([]);
  });

  it('renders, through the installed package, exactly what dist/ holds', () => {
    const operator = readYaml(join(out, 'operator.k8s.yaml'));
    const dist = CHART_IDS.flatMap((id) => readYaml(join(REPO_ROOT, 'dist', `${id}.yaml`)));
    expect(operator).to.deep.equal(dist);
    for (const o of operator.filter((x) => CLUSTER_SCOPED.has(x.kind))) {
      expect(o.metadata, `${o.kind}/${o.metadata.name}`).to.not.have.property('namespace');
    }
  });

  it('names the owned objects as the operator does', () => {
    const names = readYaml(join(out, 'buckets.k8s.yaml')).find((o) => o.kind === 'ConfigMap');
    expect(names?.['data']).to.deep.equal({
      'logs.secret': 'logs-access',
      'logs.service': 'logs',
      'backups.secret': 'backups-access',
      'backups.service': 'backups',
    });
  });

  /**
   * Applies the package's operator chart and waits for its CRDs, once; every test that needs
   * them calls it, so each passes alone as in the whole file.
   */
  let installed: Promise<void> | undefined;
  const operatorInstalled = (): Promise<void> =>
    (installed ??= (async () => {
      await kubectlOk(cp, ['apply', '-f', join(out, 'operator.k8s.yaml')]);
      await kubectlOk(cp, [
        'wait',
        '--for=condition=Established',
        '--timeout=60s',
        'crd/storagebuckets.storage.avalonhosting.example',
        'crd/bucketproviderconfigs.storage.avalonhosting.example',
      ]);
    })());

  it('is accepted by the API server: the operator, then the config and both buckets', async () => {
    await operatorInstalled();
    await kubectlOk(cp, ['apply', '-f', join(out, 'buckets.k8s.yaml')]);
    const buckets = await kubectlOk(cp, ['get', 'sbucket', '-n', ns, '-o', 'jsonpath={.items[*].metadata.name}']);
    expect(buckets.split(' ').sort()).to.deep.equal(['backups', 'logs']);
    const config = await kubectlOk(cp, ['get', 'bucketproviderconfig', 'default', '-n', ns, '-o', 'jsonpath={.spec.endpoint}']);
    expect(config).to.equal('https://storage.example.com');
    const deployment = await kubectlOk(cp, ['get', 'deployment', 'bucketoperator-controller-manager', '-n', 'bucketoperator-system', '-o', 'name']);
    expect(deployment.trim()).to.equal('deployment.apps/bucketoperator-controller-manager');
  });

  it("has the API server refuse the invalid bucket with the CRD's message", async () => {
    await operatorInstalled();
    const res = await cp.kubectl(['apply', '-f', join(out, 'invalid.k8s.yaml')]);
    expect(res.code).to.not.equal(0);
    expect(res.stderr).to.include('metadata.name must be a DNS-1035 label');
  });

  it('installs the kubectl plugin as node_modules/.bin/kubectl-bucket, which runs on production dependencies alone', async () => {
    const pkg = JSON.parse(readFileSync(join(appDir, 'node_modules', 'bucketoperator', 'package.json'), 'utf8')) as { bin?: Record<string, string> };
    expect(pkg.bin).to.deep.equal({ 'kubectl-bucket': 'lib/cli/main.js' });
    // The consumer installed only the package's dependencies and peers: a plugin module that
    // needed a dev dependency (client-node, tsx) would fail to load here. (The bundles need
    // none at all: test/unit/cli/bundle.test.ts runs them with no node_modules.)
    const bin = join(appDir, 'node_modules', '.bin', 'kubectl-bucket');
    expect(await sh(bin, ['version'], appDir)).to.equal(`kubectl-bucket ${VERSION}\n`);
    expect(await sh(bin, ['help'], appDir)).to.include('trace NAME');
    expect(await sh('npx', ['--no-install', 'kubectl-bucket', 'version'], appDir)).to.equal(`kubectl-bucket ${VERSION}\n`);
    const res = await run(bin, ['trace', 'x', '--kubeconfig', join(appDir, 'absent')], { cwd: appDir }).then(
      () => ({ code: 0, stderr: '' }),
      (err: { code: number; stderr: string }) => err,
    );
    expect([res.code, res.stderr.trim()]).to.deep.equal([1, `error: cannot read kubeconfig ${join(appDir, 'absent')}: ENOENT`]);
  });

  it('the installed plugin asks the real API server: discovery, then a bucket that is not there (exit 3)', async () => {
    await operatorInstalled();
    const bin = join(appDir, 'node_modules', '.bin', 'kubectl-bucket');
    const res = await run(bin, ['why', 'absent', '-n', ns, '--kubeconfig', cp.kubeconfigPath], { cwd: appDir }).then(
      () => ({ code: 0, stderr: '' }),
      (err: { code: number; stderr: string }) => err,
    );
    expect([res.code, res.stderr.trim()]).to.deep.equal([
      3,
      `error: Error from server (NotFound): storagebucket "absent" not found in namespace "${ns}"`,
    ]);
  });

  it('ships dist/ for kubectl apply -k from node_modules', async () => {
    // A server-side dry run creates nothing, so the namespace and CRDs must already be there.
    await operatorInstalled();
    const res = await cp.kubectl(['apply', '--dry-run=server', '-k', join(appDir, 'node_modules', 'bucketoperator', 'dist')]);
    expect(res.code, res.stderr).to.equal(0);
  });
});
