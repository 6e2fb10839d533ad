/** `KUBECONFIG=a:b:c` merged as kubectl merges the files (clientcmd's loading rules). */
import { expect } from 'chai';
import { mkdirSync } from 'node:fs';
import { delimiter } from 'node:path';
import { stringify } from 'yaml';
import { loadKubeconfigs } from '../../../operator/runtime/kubeconfig';
import { loadRestConfig } from '../../../operator/runtime/load-config';
import { scratch, type Scratch } from './rest-config-fixtures';
import { CA_CERT } from './tls-fixtures';

type Doc = Record<string, unknown>;

const cluster = (name: string, server: string, extra: Doc = {}): Doc => ({ name, cluster: { server, ...extra } });
const context = (name: string, c: string, user?: string, namespace?: string): Doc => ({
  name,
  context: { cluster: c, ...(user ? { user } : {}), ...(namespace ? { namespace } : {}) },
});

describe('loadKubeconfigs (KUBECONFIG merge)', () => {
  let s: Scratch;
  beforeEach(() => {
    s = scratch();
  });
  afterEach(() => s.cleanup());

  const cases: Record<
    string,
    { args: { files: Record<string, Doc>; order: string[] }; want: { server: string; namespace?: string; token?: string } }
  > = {
    'current-context from the first file that sets it': {
      args: {
        files: {
          'a/config': { clusters: [cluster('ca', 'https://a:1')], contexts: [context('x', 'ca')] },
          'b/config': { 'current-context': 'x', clusters: [cluster('cb', 'https://b:1')], contexts: [context('y', 'cb')] },
          'c/config': { 'current-context': 'y' },
        },
        order: ['a/config', 'b/config', 'c/config'],
      },
      want: { server: 'https://a:1' },
    },
    'the first file to define a name wins': {
      args: {
        files: {
          'a/config': { 'current-context': 'x', contexts: [context('x', 'c', undefined, 'from-a')] },
          'b/config': { clusters: [cluster('c', 'https://b:1')], contexts: [context('x', 'other', undefined, 'from-b')] },
          'c/config': { clusters: [cluster('c', 'https://c:1')] },
        },
        order: ['a/config', 'b/config', 'c/config'],
      },
      want: { server: 'https://b:1', namespace: 'from-a' },
    },
    'missing files are skipped': {
      args: {
        files: { 'b/config': { 'current-context': 'x', clusters: [cluster('c', 'https://b:1')], contexts: [context('x', 'c')] } },
        order: ['missing/config', 'b/config', 'also-missing'],
      },
      want: { server: 'https://b:1' },
    },
    'a user from a later file, with its token': {
      args: {
        files: {
          'a/config': { 'current-context': 'x', clusters: [cluster('c', 'https://a:1')], contexts: [context('x', 'c', 'u')] },
          'b/config': { users: [{ name: 'u', user: { token: 'tok-b' } }] },
        },
        order: ['a/config', 'b/config'],
      },
      want: { server: 'https://a:1', token: 'tok-b' },
    },
  };
  for (const [name, { args, want }] of Object.entries(cases)) {
    it(name, async () => {
      for (const [file, doc] of Object.entries(args.files)) s.file(file.replace('/', '-'), stringify(doc));
      const paths = args.order.map((f) => `${s.dir}/${f.replace('/', '-')}`);
      const cfg = loadRestConfig({ env: { KUBECONFIG: paths.join(delimiter) } });
      const creds = await cfg.credentials?.get();
      expect({ server: cfg.server, namespace: cfg.namespace, token: creds?.token }).to.deep.equal({
        server: want.server,
        namespace: want.namespace,
        token: want.token,
      });
    });
  }

  it('resolves relative paths against the file that holds the entry', () => {
    mkdirSync(`${s.dir}/b`);
    s.file('b/ca.crt', CA_CERT);
    s.file('a.yaml', stringify({ 'current-context': 'x', contexts: [context('x', 'c')] }));
    s.file('b/config', stringify({ clusters: [cluster('c', 'https://b:1', { 'certificate-authority': 'ca.crt' })] }));
    const cfg = loadKubeconfigs([`${s.dir}/a.yaml`, `${s.dir}/b/config`]);
    expect(cfg.tls.ca?.toString()).to.equal(CA_CERT);
  });

  it('names every path when none exists', () => {
    expect(() => loadRestConfig({ env: { KUBECONFIG: `${s.dir}/x${delimiter}${s.dir}/y` } })).to.throw(
      /^none of the kubeconfig files exist: .*\/x:.*\/y$/,
    );
  });

  it('names the file of the entry in errors', () => {
    s.file('a.yaml', stringify({ 'current-context': 'x', contexts: [context('x', 'c')] }));
    s.file('b.yaml', stringify({ clusters: [cluster('c', 'https://b:1', { 'certificate-authority-data': 'bm90IGEgY2VydA==' })] }));
    expect(() => loadKubeconfigs([`${s.dir}/a.yaml`, `${s.dir}/b.yaml`])).to.throw(
      /^kubeconfig .*\/b\.yaml: cluster "c": certificate-authority-data is not a PEM certificate/,
    );
  });
});
