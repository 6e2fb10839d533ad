import { expect } from 'chai';
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { inClusterConfig } from '../../../operator/runtime/in-cluster';
import { loadRestConfig } from '../../../operator/runtime/load-config';
import { CA_CERT } from './tls-fixtures';
import { scratch, type Scratch } from './rest-config-fixtures';

describe('loadRestConfig (controller-runtime order)', () => {
  let s: Scratch;
  let sa: string;
  let home: string;
  const inCluster = { KUBERNETES_SERVICE_HOST: '10.0.0.1', KUBERNETES_SERVICE_PORT: '443' };

  /** Writes a kubeconfig at `file` whose server host `label` says which one was loaded. */
  function kubeconfig(file: string, label = file): string {
    return s.file(
      file,
      JSON.stringify({
        clusters: [{ name: 'c', cluster: { server: `https://${label}:6443` } }],
        contexts: [{ name: 'x', context: { cluster: 'c' } }],
        'current-context': 'x',
      }),
    );
  }

  beforeEach(() => {
    s = scratch();
    sa = join(s.dir, 'serviceaccount');
    mkdirSync(sa);
    s.file('serviceaccount/token', 'pod-token\n');
    s.file('serviceaccount/ca.crt', CA_CERT);
    s.file('serviceaccount/namespace', 'bucketoperator-system');
    home = join(s.dir, 'home');
    mkdirSync(join(home, '.kube'), { recursive: true });
  });
  afterEach(() => s.cleanup());

  const load = (opts: { flag?: string; env?: NodeJS.ProcessEnv; noHome?: boolean; sa?: string }) =>
    loadRestConfig({ kubeconfig: opts.flag, env: opts.env ?? {}, homeDir: opts.noHome ? '' : home, serviceAccountDir: opts.sa ?? sa });

  it('the --kubeconfig flag comes first', () => {
    const flag = kubeconfig('flag');
    expect(load({ flag, env: { KUBECONFIG: kubeconfig('env'), ...inCluster } }).server).to.equal('https://flag:6443');
  });

  it('then the first path of $KUBECONFIG, even in a cluster', () => {
    const env = { KUBECONFIG: `${kubeconfig('env')}:${kubeconfig('second')}`, ...inCluster };
    expect(load({ env }).server).to.equal('https://env:6443');
  });

  it('takes HTTPS_PROXY/NO_PROXY from the environment it is given', () => {
    const env = { KUBECONFIG: kubeconfig('env'), HTTPS_PROXY: 'http://u:p@proxy.example:3128', NO_PROXY: '.svc' };
    const cfg = load({ env });
    expect([cfg.proxy?.httpsProxy?.display, cfg.proxy?.noProxy]).to.deep.equal(['http://proxy.example:3128', '.svc']);
  });

  it('then the in-cluster ServiceAccount, with the token re-read as it rotates', async () => {
    kubeconfig('home/.kube/config', 'home');
    const cfg = load({ env: inCluster });
    expect([cfg.server, cfg.source, cfg.namespace, cfg.tls.ca?.toString()]).to.deep.equal([
      'https://10.0.0.1:443',
      'in-cluster',
      'bucketoperator-system',
      CA_CERT,
    ]);
    expect(await cfg.credentials?.get()).to.deep.equal({ token: 'pod-token' });
    s.file('serviceaccount/token', 'rotated-token');
    // The file is looked at once a second at most; a 401 makes the next request look at once.
    cfg.credentials?.invalidate?.();
    expect(await cfg.credentials?.get()).to.deep.equal({ token: 'rotated-token' });
  });

  it('then ~/.kube/config', () => {
    kubeconfig('home/.kube/config', 'home');
    expect(load({ env: {} }).server).to.equal('https://home:6443');
  });

  it('falls through to ~/.kube/config when the in-cluster mount is missing, as controller-runtime does', () => {
    kubeconfig('home/.kube/config', 'home');
    expect(load({ env: inCluster, sa: join(s.dir, 'no-mount') }).source).to.equal(join(home, '.kube', 'config'));
  });

  it('says what it tried when nothing is found', () => {
    expect(() => load({ env: {} })).to.throw(
      /^no kubeconfig found: pass --kubeconfig, set KUBECONFIG, run in a cluster, or create .*\/home\/.kube\/config$/,
    );
    expect(() => load({ env: inCluster, sa: join(s.dir, 'no-mount'), noHome: true })).to.throw(
      /^no kubeconfig found and in-cluster config: cannot read .*\/no-mount\/token: ENOENT$/,
    );
  });

  it('a context (kubectl --context) picks another context of the file found, and skips the in-cluster account', () => {
    const two = s.file(
      'two',
      JSON.stringify({
        clusters: [
          { name: 'a', cluster: { server: 'https://a:6443' } },
          { name: 'b', cluster: { server: 'https://b:6443' } },
        ],
        contexts: [
          { name: 'x', context: { cluster: 'a' } },
          { name: 'y', context: { cluster: 'b', namespace: 'team-b' } },
        ],
        'current-context': 'x',
      }),
    );
    const withContext = (o: { flag?: string; env: NodeJS.ProcessEnv }) =>
      loadRestConfig({ kubeconfig: o.flag, context: 'y', env: o.env, homeDir: home, serviceAccountDir: sa });
    expect([withContext({ flag: two, env: {} }).server, withContext({ flag: two, env: {} }).namespace]).to.deep.equal(['https://b:6443', 'team-b']);
    expect(withContext({ env: { KUBECONFIG: two } }).server).to.equal('https://b:6443');
    kubeconfig('home/.kube/config', 'home');
    expect(() => withContext({ env: inCluster })).to.throw(/no context named "y"/);
  });

  it('a $KUBECONFIG that does not exist is an error, not a fall-through', () => {
    expect(() => load({ env: { KUBECONFIG: join(s.dir, 'gone') } })).to.throw(/^cannot read kubeconfig .*\/gone: ENOENT$/);
  });
});

describe('inClusterConfig', () => {
  let s: Scratch;
  beforeEach(() => {
    s = scratch();
    s.file('token', 't');
    s.file('ca.crt', CA_CERT);
  });
  afterEach(() => s.cleanup());

  it('brackets an IPv6 service host', () => {
    const cfg = inClusterConfig({ env: { KUBERNETES_SERVICE_HOST: 'fd00::1', KUBERNETES_SERVICE_PORT: '443' }, serviceAccountDir: s.dir });
    expect(cfg.server).to.equal('https://[fd00::1]:443');
    expect(cfg.namespace).to.equal(undefined);
  });

  it('refuses outside a cluster', () => {
    expect(() => inClusterConfig({ env: {}, serviceAccountDir: s.dir })).to.throw(/^not running in a cluster/);
  });

  it('refuses a mounted ca.crt that is not a PEM certificate, naming the file', () => {
    s.file('ca.crt', 'not a certificate');
    const env = { KUBERNETES_SERVICE_HOST: 'h', KUBERNETES_SERVICE_PORT: '1' };
    expect(() => inClusterConfig({ env, serviceAccountDir: s.dir })).to.throw(/^in-cluster config: .*\/ca\.crt is not a PEM certificate/);
  });

  it('needs the mounted token and CA', () => {
    const env = { KUBERNETES_SERVICE_HOST: 'h', KUBERNETES_SERVICE_PORT: '1' };
    expect(() => inClusterConfig({ env, serviceAccountDir: join(s.dir, 'x') })).to.throw(/^in-cluster config: cannot read .*\/x\/token: ENOENT$/);
    rmSync(join(s.dir, 'ca.crt'));
    expect(() => inClusterConfig({ env, serviceAccountDir: s.dir })).to.throw(/^in-cluster config: cannot read .*\/ca\.crt: ENOENT$/);
  });
});
