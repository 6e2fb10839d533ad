/**
 * The runtime's own kubeconfig and in-cluster loader against a real API server: which
 * identity a request carries is read back with a SelfSubjectReview, so each test proves the
 * credential really reached the server (and that a rotated one replaced it).
 */
import { CoreV1Api } from '@kubernetes/client-node';
import { expect } from 'chai';
import { setMaxListeners } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync, chmodSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Registry } from 'prom-client';
import { stringify } from 'yaml';
import { ApiError } from '../../operator/runtime/api-errors';
import { eventually } from '../support/eventually';
import { KubeClient } from '../../operator/runtime/client';
import { inClusterConfig } from '../../operator/runtime/in-cluster';
import { loadKubeconfig } from '../../operator/runtime/kubeconfig';
import type { RestConfig } from '../../operator/runtime/rest-config';
import type { KubeObject, ResourceKind } from '../../operator/runtime/types';
import type { ControlPlane } from '../support/control-plane';
import { freshNamespace, sharedControlPlane } from './setup';

const SelfSubjectReviews: ResourceKind = {
  group: 'authentication.k8s.io',
  version: 'v1',
  kind: 'SelfSubjectReview',
  plural: 'selfsubjectreviews',
  namespaced: false,
};

const ConfigMaps: ResourceKind = { group: '', version: 'v1', kind: 'ConfigMap', plural: 'configmaps', namespaced: true };
const Namespaces: ResourceKind = { group: '', version: 'v1', kind: 'Namespace', plural: 'namespaces', namespaced: false };

interface SelfSubjectReview extends KubeObject {
  status?: { userInfo?: { username?: string } };
}

async function whoami(client: KubeClient): Promise<string> {
  const review = await client.create<SelfSubjectReview>(SelfSubjectReviews, {});
  return review.status?.userInfo?.username ?? '';
}

describe('runtime: REST config loader (real control plane)', function () {
  this.timeout(60_000);
  let cp: ControlPlane;
  let ns: string;
  let tmp: string;
  let caFile: string;
  const tokens: Record<'alpha' | 'beta', string> = { alpha: '', beta: '' };
  const clients: KubeClient[] = [];

  const client = (restConfig: RestConfig): KubeClient => {
    const c = new KubeClient({ restConfig });
    clients.push(c);
    return c;
  };
  const file = (name: string, content: string, mode?: number): string => {
    const path = join(tmp, name);
    writeFileSync(path, content);
    if (mode !== undefined) chmodSync(path, mode);
    return path;
  };
  const kubeconfig = (name: string, cluster: Record<string, unknown>, user: Record<string, unknown>): string =>
    file(
      name,
      stringify({
        clusters: [{ name: 'c', cluster }],
        users: [{ name: 'u', user }],
        contexts: [{ name: 'x', context: { cluster: 'c', user: 'u' } }],
        'current-context': 'x',
      }),
    );

  before(async () => {
    cp = await sharedControlPlane();
    ns = await freshNamespace(cp, 'rt-restcfg');
    tmp = mkdtempSync(join(tmpdir(), 'bucketoperator-restcfg-'));
    const ca = cp.restConfig().tls.ca;
    if (!ca) throw new Error('admin kubeconfig has no CA');
    caFile = file('ca.crt', ca.toString('utf8'));
    const core = cp.kubeConfig().makeApiClient(CoreV1Api);
    for (const name of ['alpha', 'beta'] as const) {
      await core.createNamespacedServiceAccount({ namespace: ns, body: { metadata: { name } } });
      const req = await core.createNamespacedServiceAccountToken({
        namespace: ns,
        name,
        body: { spec: { audiences: [], expirationSeconds: 3600 } },
      });
      tokens[name] = req.status?.token ?? '';
    }
  });
  after(() => {
    for (const c of clients.splice(0)) c.close();
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  const sa = (name: string): string => `system:serviceaccount:${ns}:${name}`;

  it('speaks HTTP/2 to kube-apiserver: 150 watches on their own sessions, and a GET still answers', async () => {
    const registry = new Registry();
    const c = new KubeClient({ restConfig: cp.restConfig(), registry });
    clients.push(c);
    const stop = new AbortController();
    setMaxListeners(0, stop.signal);
    const opened: Array<Promise<void>> = [];
    const running: Array<Promise<void>> = [];
    for (let i = 0; i < 150; i++) {
      opened.push(
        new Promise<void>((resolve, reject) => {
          const watch = c.watch(ConfigMaps, { namespace: ns, signal: stop.signal, onOpen: resolve });
          running.push((async () => void (await watch[Symbol.asyncIterator]().next().catch(reject)))());
        }),
      );
    }
    try {
      await Promise.all(opened);
      expect((await c.get<KubeObject>(Namespaces, '', ns)).metadata?.name).to.equal(ns);
      const conns = ((await registry.getSingleMetric('rest_client_connections_total')?.get())?.values ?? []).map((v) => [
        v.labels.protocol,
        v.labels.lane,
        v.value,
      ]);
      expect(conns).to.deep.equal([
        ['h2', 'watch', 2],
        ['h2', 'request', 1],
      ]);
    } finally {
      stop.abort();
      await Promise.all(running);
    }
  });

  it('authenticates with the admin client certificate of a kubeconfig', async () => {
    expect(await whoami(client(cp.restConfig()))).to.equal('admin');
  });

  it('a tokenFile that is rewritten is used by the same client within a second', async () => {
    const tokenFile = file('token', tokens.alpha);
    const c = client(loadKubeconfig(kubeconfig('tokenfile.kubeconfig', { server: cp.server, 'certificate-authority': caFile }, { tokenFile })));
    expect(await whoami(c)).to.equal(sa('alpha'));
    file('token', tokens.beta);
    // The file is looked at once a second at most (token-file.ts), not on every request.
    await eventually(async () => (await whoami(c)) === sa('beta'), { description: 'requests as beta', timeoutMs: 5000, intervalMs: 100 });
  });

  it('an exec plugin token; a 401 makes the next request run the plugin again', async () => {
    const tokenFile = file('exec-token', 'not-a-valid-token');
    const plugin = file(
      'plugin.js',
      `#!${process.execPath}
const token = require('node:fs').readFileSync(process.env.TOKEN_FILE, 'utf8').trim();
process.stdout.write(JSON.stringify({ apiVersion: 'client.authentication.k8s.io/v1', kind: 'ExecCredential', status: { token } }));
`,
      0o755,
    );
    const exec = {
      apiVersion: 'client.authentication.k8s.io/v1',
      command: plugin,
      env: [{ name: 'TOKEN_FILE', value: tokenFile }],
      interactiveMode: 'Never',
    };
    const c = client(loadKubeconfig(kubeconfig('exec.kubeconfig', { server: cp.server, 'certificate-authority': caFile }, { exec })));
    const err = await whoami(c).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).to.be.instanceOf(ApiError);
    expect((err as ApiError).status).to.equal(401);
    file('exec-token', tokens.alpha);
    expect(await whoami(c)).to.equal(sa('alpha'));
  });

  it('the in-cluster ServiceAccount mount', async () => {
    const dir = mkdtempSync(join(tmp, 'sa-'));
    writeFileSync(join(dir, 'token'), tokens.beta);
    writeFileSync(join(dir, 'ca.crt'), cp.restConfig().tls.ca ?? '');
    writeFileSync(join(dir, 'namespace'), ns);
    const port = new URL(cp.server).port;
    const cfg = inClusterConfig({ env: { KUBERNETES_SERVICE_HOST: '127.0.0.1', KUBERNETES_SERVICE_PORT: port }, serviceAccountDir: dir });
    expect(cfg.namespace).to.equal(ns);
    expect(await whoami(client(cfg))).to.equal(sa('beta'));
  });

  it('tls-server-name is the name the server certificate is checked against', async () => {
    const good = loadKubeconfig(
      kubeconfig(
        'sni-good.kubeconfig',
        { server: cp.server, 'certificate-authority': caFile, 'tls-server-name': 'kubernetes.default.svc' },
        { token: tokens.alpha },
      ),
    );
    expect(await whoami(client(good))).to.equal(sa('alpha'));
    const bad = loadKubeconfig(
      kubeconfig(
        'sni-bad.kubeconfig',
        { server: cp.server, 'certificate-authority': caFile, 'tls-server-name': 'wrong.example' },
        { token: tokens.alpha },
      ),
    );
    const err = await whoami(client(bad)).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).to.be.instanceOf(Error);
    expect((err as Error).message).to.match(/ERR_TLS_CERT_ALTNAME_INVALID/);
    expect((err as Error).message).to.not.include(tokens.alpha);
  });

  it('insecure-skip-tls-verify accepts a certificate no configured CA signed', async () => {
    const cfg = loadKubeconfig(kubeconfig('insecure.kubeconfig', { server: cp.server, 'insecure-skip-tls-verify': true }, { token: tokens.beta }));
    expect(await whoami(client(cfg))).to.equal(sa('beta'));
  });
});
