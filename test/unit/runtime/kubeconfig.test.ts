import { expect } from 'chai';
import { loadKubeconfig } from '../../../operator/runtime/kubeconfig';
import type { Credentials, RestConfig } from '../../../operator/runtime/rest-config';
import { CA_CERT } from './tls-fixtures';
import { execStanza, scratch, writePlugin, type Scratch } from './rest-config-fixtures';

const V1 = 'client.authentication.k8s.io/v1';
const V1BETA1 = 'client.authentication.k8s.io/v1beta1';
const SERVER = 'https://api.example:6443';
const b64 = (s: string): string => Buffer.from(s).toString('base64');

async function creds(cfg: RestConfig): Promise<Credentials> {
  return (await cfg.credentials?.get()) ?? {};
}

/** Error message of `fn`, failing the test when it does not throw. */
function thrown(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  }
  throw new Error('expected an error');
}

async function rejected(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  }
  throw new Error('expected a rejection');
}

describe('loadKubeconfig', () => {
  let s: Scratch;
  beforeEach(() => {
    s = scratch();
  });
  afterEach(() => s.cleanup());

  describe('auth forms', () => {
    it('client certificate and CA from files, relative to the kubeconfig', async () => {
      s.file('ca.crt', CA_CERT);
      s.file('client.crt', 'CERT-PEM');
      s.file('client.key', 'KEY-PEM');
      const path = s.kubeconfig(
        { server: SERVER, 'certificate-authority': 'ca.crt' },
        { 'client-certificate': 'client.crt', 'client-key': `${s.dir}/client.key` },
      );
      const cfg = loadKubeconfig(path);
      expect(cfg.server).to.equal(SERVER);
      expect(cfg.source).to.equal(path);
      expect(cfg.tls.ca?.toString()).to.equal(CA_CERT);
      expect(cfg.tls.cert?.toString()).to.equal('CERT-PEM');
      expect(cfg.tls.key?.toString()).to.equal('KEY-PEM');
      expect(await creds(cfg)).to.deep.equal({});
    });

    it('inline -data fields, tls-server-name and the context namespace', () => {
      const path = s.kubeconfig(
        { server: SERVER, 'certificate-authority-data': b64(CA_CERT), 'tls-server-name': 'kubernetes.default.svc' },
        { 'client-certificate-data': b64('CERT'), 'client-key-data': b64('KEY') },
      );
      const raw = loadKubeconfig(path);
      expect([raw.tls.ca?.toString(), raw.tls.cert?.toString(), raw.tls.key?.toString()]).to.deep.equal([CA_CERT, 'CERT', 'KEY']);
      expect(raw.tls.serverName).to.equal('kubernetes.default.svc');
      expect(raw.tls.insecureSkipVerify).to.equal(undefined);
    });

    it('insecure-skip-tls-verify without a CA', () => {
      const cfg = loadKubeconfig(s.kubeconfig({ server: SERVER, 'insecure-skip-tls-verify': true }, { token: 't' }));
      expect(cfg.tls).to.deep.equal({ insecureSkipVerify: true });
    });

    it('a static token', async () => {
      const cfg = loadKubeconfig(s.kubeconfig({ server: SERVER }, { token: 'static-token' }));
      expect(await creds(cfg)).to.deep.equal({ token: 'static-token' });
    });

    it('a tokenFile wins over an inline token and follows the file', async () => {
      s.file('token', 'from-file\n');
      const cfg = loadKubeconfig(s.kubeconfig({ server: SERVER }, { token: 'inline', tokenFile: 'token' }));
      expect(await creds(cfg)).to.deep.equal({ token: 'from-file' });
      s.file('token', 'rotated');
      // As after a 401; without one the file is looked at once a second (token-file.test.ts).
      cfg.credentials?.invalidate?.();
      expect(await creds(cfg), 'the next request after a rewrite and a 401').to.deep.equal({ token: 'rotated' });
    });

    it('the context named in options instead of current-context', () => {
      const path = s.kubeconfig({ server: SERVER }, undefined, {
        clusters: [
          { name: 'c', cluster: { server: SERVER } },
          { name: 'other', cluster: { server: 'https://other:443' } },
        ],
        contexts: [
          { name: 'ctx', context: { cluster: 'c' } },
          { name: 'two', context: { cluster: 'other', namespace: 'team-b' } },
        ],
      });
      const cfg = loadKubeconfig(path, { context: 'two' });
      expect([cfg.server, cfg.namespace]).to.deep.equal(['https://other:443', 'team-b']);
    });
  });

  describe('exec plugins', () => {
    for (const apiVersion of [V1, V1BETA1]) {
      it(`${apiVersion}: runs the plugin with KUBERNETES_EXEC_INFO and reuses an unexpired credential`, async () => {
        const plugin = writePlugin(s);
        const future = new Date(Date.now() + 3_600_000).toISOString();
        const cfg = loadKubeconfig(s.kubeconfig({ server: SERVER }, { exec: execStanza(apiVersion, plugin.path, { PLUGIN_EXPIRES: future }) }));
        expect(await creds(cfg)).to.deep.equal({ token: 'tok-1' });
        expect(await creds(cfg), 'cached until expirationTimestamp').to.deep.equal({ token: 'tok-1' });
        expect(plugin.runs()).to.deep.equal([{ apiVersion, kind: 'ExecCredential', spec: { interactive: false } }]);
      });
    }

    it('runs the plugin again once the credential expired', async () => {
      const plugin = writePlugin(s);
      const past = new Date(Date.now() - 1000).toISOString();
      const cfg = loadKubeconfig(s.kubeconfig({ server: SERVER }, { exec: execStanza(V1, plugin.path, { PLUGIN_EXPIRES: past }) }));
      expect(await creds(cfg)).to.deep.equal({ token: 'tok-1' });
      expect(await creds(cfg)).to.deep.equal({ token: 'tok-2' });
    });

    it('a credential without expiry is kept until the server rejects it', async () => {
      const plugin = writePlugin(s);
      const cfg = loadKubeconfig(s.kubeconfig({ server: SERVER }, { exec: execStanza(V1, plugin.path) }));
      expect(await creds(cfg)).to.deep.equal({ token: 'tok-1' });
      expect(await creds(cfg)).to.deep.equal({ token: 'tok-1' });
      cfg.credentials?.invalidate?.();
      expect(await creds(cfg), 'after a 401').to.deep.equal({ token: 'tok-2' });
    });

    it('concurrent requests share one plugin run', async () => {
      const plugin = writePlugin(s);
      const cfg = loadKubeconfig(s.kubeconfig({ server: SERVER }, { exec: execStanza(V1, plugin.path) }));
      const all = await Promise.all(Array.from({ length: 5 }, () => creds(cfg)));
      expect(all.map((c) => c.token)).to.deep.equal(['tok-1', 'tok-1', 'tok-1', 'tok-1', 'tok-1']);
    });

    it('a relative command is resolved against the kubeconfig directory; args and cluster info are passed', async () => {
      const plugin = writePlugin(s, 'bin-plugin.js');
      const stanza = execStanza(V1, './bin-plugin.js', {}, { args: ['--flag'], provideClusterInfo: true });
      const path = s.kubeconfig(
        {
          server: SERVER,
          'certificate-authority-data': b64(CA_CERT),
          extensions: [{ name: 'client.authentication.k8s.io/exec', extension: { audience: 'x' } }],
        },
        { exec: stanza },
      );
      const cfg = loadKubeconfig(path);
      expect(await creds(cfg)).to.deep.equal({ token: 'tok-1' });
      expect(plugin.runs()).to.deep.equal([
        {
          apiVersion: V1,
          kind: 'ExecCredential',
          spec: { interactive: false, cluster: { server: SERVER, 'certificate-authority-data': b64(CA_CERT), config: { audience: 'x' } } },
        },
      ]);
    });

    it('a plugin may return a client certificate', async () => {
      const plugin = writePlugin(s);
      const cfg = loadKubeconfig(s.kubeconfig({ server: SERVER }, { exec: execStanza(V1, plugin.path, { PLUGIN_CERT: '1' }) }));
      expect(await creds(cfg)).to.deep.equal({ token: 'tok-1', cert: 'CERT-1', key: 'KEY-1' });
    });

    const secret = 'sEcReT-t0ken';
    const failures: Record<string, { knobs?: Record<string, string>; command?: string; more?: Record<string, unknown>; want: RegExp }> = {
      'a non-zero exit': { knobs: { PLUGIN_EXIT: '3' }, want: /exec plugin ".*plugin\.js" exited with code 3$/ },
      'output that is not JSON': { knobs: { PLUGIN_STDOUT: `token=${secret}` }, want: /did not print an ExecCredential as JSON$/ },
      'another apiVersion': {
        knobs: { PLUGIN_STDOUT: JSON.stringify({ apiVersion: V1BETA1, kind: 'ExecCredential', status: { token: secret } }) },
        want: /answered with apiVersion "client.authentication.k8s.io\/v1beta1", the kubeconfig asks for "client.authentication.k8s.io\/v1"$/,
      },
      'no credential in status': {
        knobs: { PLUGIN_STDOUT: JSON.stringify({ apiVersion: V1, kind: 'ExecCredential', status: {} }) },
        want: /status has neither a token nor a client certificate$/,
      },
      'a certificate without its key': {
        knobs: { PLUGIN_STDOUT: JSON.stringify({ apiVersion: V1, kind: 'ExecCredential', status: { clientCertificateData: secret } }) },
        want: /clientCertificateData without clientKeyData$/,
      },
      'a bad expirationTimestamp': {
        knobs: { PLUGIN_STDOUT: JSON.stringify({ apiVersion: V1, kind: 'ExecCredential', status: { token: secret, expirationTimestamp: 'soon' } }) },
        want: /expirationTimestamp is not an RFC 3339 time$/,
      },
      'a missing command, with its install hint': {
        command: `${'/nonexistent'}/kubectl-oidc`,
        more: { installHint: 'Install kubelogin:\n  brew install kubelogin' },
        want: /^exec plugin "\/nonexistent\/kubectl-oidc" not found: Install kubelogin: brew install kubelogin$/,
      },
    };
    for (const [name, tc] of Object.entries(failures)) {
      it(`fails clearly, naming the command and no secret, on ${name}`, async () => {
        const plugin = writePlugin(s);
        const cfg = loadKubeconfig(s.kubeconfig({ server: SERVER }, { exec: execStanza(V1, tc.command ?? plugin.path, tc.knobs, tc.more) }));
        const message = await rejected(creds(cfg));
        expect(message).to.match(tc.want);
        expect(message).to.not.include(secret);
        expect(message).to.not.include('\n');
      });
    }
  });

  describe('errors', () => {
    const token = 'sEcReT-t0ken';
    const cases: Record<string, { write(s: Scratch): string; want: RegExp }> = {
      'a missing file': { write: (x) => `${x.dir}/nope`, want: /^cannot read kubeconfig .*\/nope: ENOENT$/ },
      'malformed YAML (the message quotes no line of it)': {
        write: (x) => x.file('config', `users:\n- name: u\n  user:\n    token: ${token}\n   bad: [\n`),
        want: /^kubeconfig .*config is not valid YAML \([A-Z_]+ at line \d+\)$/,
      },
      'a document that is not a mapping': { write: (x) => x.file('config', '- a\n- b\n'), want: /is not a kubeconfig/ },
      'no current-context': {
        write: (x) => x.kubeconfig({ server: SERVER }, undefined, { 'current-context': '' }),
        want: /current-context is not set$/,
      },
      'a context naming a missing cluster': {
        write: (x) => x.kubeconfig({ server: SERVER }, undefined, { contexts: [{ name: 'ctx', context: { cluster: 'gone' } }] }),
        want: /: no cluster named "gone"$/,
      },
      'a cluster without server': { write: (x) => x.kubeconfig({}), want: /cluster "c": server is not set$/ },
      'a server that is not https': { write: (x) => x.kubeconfig({ server: 'ftp://x' }), want: /server must be an https:\/\/ URL/ },
      'an unreadable certificate-authority': {
        write: (x) => x.kubeconfig({ server: SERVER, 'certificate-authority': 'missing-ca.crt' }),
        want: /cluster "c": cannot read certificate-authority .*\/missing-ca\.crt: ENOENT$/,
      },
      'certificate-authority-data that is not base64': {
        write: (x) => x.kubeconfig({ server: SERVER, 'certificate-authority-data': `${token}!!` }),
        want: /^kubeconfig .*config: cluster "c": certificate-authority-data is not valid base64$/,
      },
      'certificate-authority-data that is base64 but no PEM certificate': {
        write: (x) => x.kubeconfig({ server: SERVER, 'certificate-authority-data': b64(token) }),
        want: /^kubeconfig .*config: cluster "c": certificate-authority-data is not a PEM certificate \(no BEGIN CERTIFICATE block\)$/,
      },
      'certificate-authority-data with a PEM block that does not parse': {
        write: (x) =>
          x.kubeconfig({
            server: SERVER,
            'certificate-authority-data': b64(`-----BEGIN CERTIFICATE-----\n${b64(token)}\n-----END CERTIFICATE-----\n`),
          }),
        want: /cluster "c": certificate-authority-data: certificate 1 does not parse as X\.509$/,
      },
      'a certificate-authority file that is no PEM certificate': {
        write: (x) => (x.file('bad-ca.crt', token), x.kubeconfig({ server: SERVER, 'certificate-authority': 'bad-ca.crt' })),
        want: /cluster "c": certificate-authority .*\/bad-ca\.crt is not a PEM certificate/,
      },
      'client-certificate-data that is not base64': {
        write: (x) => x.kubeconfig({ server: SERVER }, { 'client-certificate-data': `${token}%`, 'client-key-data': b64('k') }),
        want: /user "u": client-certificate-data is not valid base64$/,
      },
      'insecure-skip-tls-verify together with a CA': {
        write: (x) => x.kubeconfig({ server: SERVER, 'insecure-skip-tls-verify': true, 'certificate-authority-data': b64(CA_CERT) }),
        want: /insecure-skip-tls-verify cannot be combined with a certificate authority$/,
      },
      'proxy-url': { write: (x) => x.kubeconfig({ server: SERVER, 'proxy-url': 'http://proxy:3128' }), want: /proxy-url is not supported$/ },
      'an auth-provider': {
        write: (x) => x.kubeconfig({ server: SERVER }, { 'auth-provider': { name: 'oidc', config: { 'id-token': token } } }),
        want: /user "u": auth-provider "oidc" is not supported; use an exec credential plugin/,
      },
      'basic auth': { write: (x) => x.kubeconfig({ server: SERVER }, { username: 'admin', password: token }), want: /basic auth\) is not supported/ },
      impersonation: { write: (x) => x.kubeconfig({ server: SERVER }, { token, as: 'root' }), want: /impersonation .* is not supported$/ },
      'a client certificate without key': {
        write: (x) => x.kubeconfig({ server: SERVER }, { 'client-certificate-data': b64('CERT') }),
        want: /user "u": client-certificate has no client-key$/,
      },
      'a missing tokenFile': {
        write: (x) => x.kubeconfig({ server: SERVER }, { tokenFile: 'no-token' }),
        want: /cannot read tokenFile .*\/no-token: ENOENT$/,
      },
      'exec together with a token': {
        write: (x) => x.kubeconfig({ server: SERVER }, { token, exec: execStanza(V1, 'x') }),
        want: /sets both exec and token\/tokenFile; keep one$/,
      },
      'an exec apiVersion that is gone': {
        write: (x) => x.kubeconfig({ server: SERVER }, { exec: execStanza('client.authentication.k8s.io/v1alpha1', 'x') }),
        want: /exec: apiVersion "client.authentication.k8s.io\/v1alpha1" is not supported \(use client.authentication.k8s.io\/v1 or/,
      },
      'an interactive-only exec plugin': {
        write: (x) => x.kubeconfig({ server: SERVER }, { exec: { ...execStanza(V1, 'x'), interactiveMode: 'Always' } }),
        want: /interactiveMode Always needs a terminal/,
      },
      'a wrongly typed field': { write: (x) => x.kubeconfig({ server: SERVER }, { token: 42 }), want: /user "u": token must be a string$/ },
    };
    for (const [name, tc] of Object.entries(cases)) {
      it(name, () => {
        const message = thrown(() => loadKubeconfig(tc.write(s)));
        expect(message).to.match(tc.want);
        expect(message).to.not.include(token);
        expect(message).to.not.include('\n');
      });
    }
  });
});
