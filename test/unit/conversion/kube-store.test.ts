import { expect } from 'chai';
import { ApiError } from '../../../operator/runtime/api-errors';
import { kubeCertStore, type StoreClient } from '../../../operator/conversion/kube-store';
import type { KubeObject, ResourceKind } from '../../../operator/runtime/types';

const b64 = (s: string) => Buffer.from(s).toString('base64');
const notFound = () => new ApiError(404, 'NotFound', 'not found');

interface Call {
  readonly verb: string;
  readonly kind: string;
  readonly name?: string;
  readonly body?: unknown;
  readonly type?: string;
}

/** A client over fixed objects by `<plural>/<name>`, recording writes. */
function fakeClient(objects: Record<string, KubeObject>) {
  const calls: Call[] = [];
  const client: StoreClient = {
    get: async <T extends KubeObject>(kind: ResourceKind, _ns: string, name: string) => {
      const obj = objects[`${kind.plural}/${name}`];
      if (!obj) throw notFound();
      return obj as T;
    },
    create: async <T extends KubeObject>(kind: ResourceKind, obj: T) => {
      calls.push({ verb: 'create', kind: kind.kind, body: obj });
      return obj;
    },
    update: async <T extends KubeObject>(kind: ResourceKind, obj: T) => {
      calls.push({ verb: 'update', kind: kind.kind, body: obj });
      return obj;
    },
    patch: async <T extends KubeObject>(kind: ResourceKind, _ns: string, name: string, body: unknown, type: string) => {
      calls.push({ verb: 'patch', kind: kind.kind, name, body, type });
      return {} as T;
    },
  };
  return { client, calls };
}

const opts = { namespace: 'ops', secretName: 'cert', crdNames: ['a.g', 'b.g', 'gone.g'], labels: { managed: 'yes' }, fieldManager: 'op' };

describe('webhook certificate store on the API server', () => {
  it('reads an absent Secret as undefined, and a present one decoded with its resourceVersion, labels and annotations', async () => {
    expect(await kubeCertStore({ ...opts, client: fakeClient({}).client }).read()).to.equal(undefined);
    const { client } = fakeClient({ 'secrets/cert': { metadata: { resourceVersion: '7' }, data: { 'ca.crt': b64('PEM') } } as KubeObject });
    expect(await kubeCertStore({ ...opts, client }).read()).to.deep.equal({ data: { 'ca.crt': 'PEM' }, resourceVersion: '7' });
    const labelled = fakeClient({
      'secrets/cert': { metadata: { resourceVersion: '8', labels: { team: 'a' }, annotations: { note: 'x' } }, data: {} } as KubeObject,
    });
    expect(await kubeCertStore({ ...opts, client: labelled.client }).read()).to.deep.equal({
      data: {},
      resourceVersion: '8',
      labels: { team: 'a' },
      annotations: { note: 'x' },
    });
  });

  it('creates the Secret, and answers false when another replica made it first', async () => {
    const { client, calls } = fakeClient({});
    const store = kubeCertStore({ ...opts, client });
    expect(await store.create({ 'tls.crt': 'C' })).to.equal(true);
    expect(calls).to.deep.equal([
      {
        verb: 'create',
        kind: 'Secret',
        body: { metadata: { name: 'cert', namespace: 'ops', labels: { managed: 'yes' } }, type: 'kubernetes.io/tls', data: { 'tls.crt': b64('C') } },
      },
    ]);
    const exists = kubeCertStore({
      ...opts,
      client: {
        ...client,
        create: () => Promise.reject(new ApiError(409, 'AlreadyExists', 'secrets "cert" already exists')),
      },
    });
    expect(await exists.create({ 'tls.crt': 'C' })).to.equal(false);
    const refused = kubeCertStore({ ...opts, client: { ...client, create: () => Promise.reject(new ApiError(403, 'Forbidden', 'no')) } });
    expect(await refused.create({ 'tls.crt': 'C' }).catch((e: unknown) => e)).to.be.instanceOf(ApiError);
  });

  it("replaces the Secret conditionally, keeping others' labels, annotations and data keys", async () => {
    const { client, calls } = fakeClient({});
    const store = kubeCertStore({ ...opts, client });
    await store.replace(
      { 'tls.crt': 'D' },
      {
        resourceVersion: '9',
        data: { 'tls.crt': 'C', 'backup.example/checksum': 'sum' },
        labels: { 'velero.io/backup': 'nightly', managed: 'old' },
        annotations: { 'reflector.example/reflect': 'true' },
      },
    );
    expect(calls).to.deep.equal([
      {
        verb: 'update',
        kind: 'Secret',
        body: {
          metadata: {
            name: 'cert',
            namespace: 'ops',
            labels: { 'velero.io/backup': 'nightly', managed: 'yes' },
            annotations: { 'reflector.example/reflect': 'true' },
            resourceVersion: '9',
          },
          type: 'kubernetes.io/tls',
          data: { 'tls.crt': b64('D'), 'backup.example/checksum': b64('sum') },
        },
      },
    ]);
  });

  it('reports which CRDs convert by webhook and their caBundle, skipping a CRD that does not exist', async () => {
    const { client } = fakeClient({
      'customresourcedefinitions/a.g': {
        metadata: { resourceVersion: '41' },
        spec: {
          conversion: {
            strategy: 'Webhook',
            webhook: { clientConfig: { caBundle: b64('CA'), service: { namespace: 'ops', name: 'webhook', path: '/convert', port: 443 } } },
          },
        },
      } as KubeObject,
      'customresourcedefinitions/b.g': { spec: { conversion: { strategy: 'None' } } } as KubeObject,
      'customresourcedefinitions/c.g': {
        spec: { conversion: { strategy: 'Webhook', webhook: { clientConfig: { url: 'https://127.0.0.1:9443/convert' } } } },
      } as KubeObject,
    });
    expect(await kubeCertStore({ ...opts, client, crdNames: ['a.g', 'b.g', 'c.g', 'missing.g'] }).crds()).to.deep.equal([
      { name: 'a.g', resourceVersion: '41', webhook: true, caBundle: 'CA', target: { service: { namespace: 'ops', name: 'webhook' } } },
      { name: 'b.g', webhook: false, caBundle: undefined, target: {} },
      { name: 'c.g', webhook: true, caBundle: undefined, target: { url: 'https://127.0.0.1:9443/convert' } },
    ]);
  });

  it('sets a caBundle with a merge patch of that one field, conditional on the resourceVersion read', async () => {
    const { client, calls } = fakeClient({});
    await kubeCertStore({ ...opts, client }).setCaBundle('a.g', 'NEW');
    await kubeCertStore({ ...opts, client }).setCaBundle('a.g', 'NEWER', '41');
    expect(calls).to.deep.equal([
      {
        verb: 'patch',
        kind: 'CustomResourceDefinition',
        name: 'a.g',
        type: 'merge',
        body: { spec: { conversion: { webhook: { clientConfig: { caBundle: b64('NEW') } } } } },
      },
      {
        verb: 'patch',
        kind: 'CustomResourceDefinition',
        name: 'a.g',
        type: 'merge',
        body: { metadata: { resourceVersion: '41' }, spec: { conversion: { webhook: { clientConfig: { caBundle: b64('NEWER') } } } } },
      },
    ]);
  });
});
