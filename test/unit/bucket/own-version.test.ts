import { expect } from 'chai';
import * as v1 from '../../../operator/api/v1';
import * as v2 from '../../../operator/api/v2';
import { bucketV1ToV2 } from '../../../operator/api/convert';
import { kubeWriter } from '../../../operator/bucket/kube-writer';
import { PROVIDER_CONFIG, SECRET, STORAGE_BUCKET } from '../../../operator/bucket/kinds';
import { ownVersion } from '../../../operator/bucket/own-version';
import type { KubeClient } from '../../../operator/runtime/client';
import type { KubeObject, ResourceKind } from '../../../operator/runtime/types';
import { bucket } from '../../support/fixtures';

const ready = bucket('b1', 'ns1').withStatus({ observedGeneration: 1, phase: 'Active', id: 'bkt-1', sizeGB: 10, region: 'us-east-1' }).build();

describe('ownVersion: the version of its own kinds the operator reads and writes', () => {
  it('v1 reads and writes every kind as it is', () => {
    const own = ownVersion('v1');
    expect(own.storageBucket).to.deep.equal(STORAGE_BUCKET);
    expect(own.wireKind(STORAGE_BUCKET)).to.deep.equal(STORAGE_BUCKET);
    expect(own.decoder(STORAGE_BUCKET)(ready as unknown as KubeObject)).to.equal(ready);
    expect(own.encode(STORAGE_BUCKET, ready as unknown as KubeObject)).to.equal(ready);
    expect(own.providerRefField).to.equal(v1.PROVIDER_REF_FIELD);
  });

  it('v2 maps its own kinds to v2 and leaves Secrets alone', () => {
    const own = ownVersion('v2');
    expect(own.wireKind(STORAGE_BUCKET)).to.deep.equal({ ...STORAGE_BUCKET, version: 'v2' });
    expect(own.wireKind(PROVIDER_CONFIG)).to.deep.equal({ ...PROVIDER_CONFIG, version: 'v2' });
    expect(own.wireKind(SECRET)).to.equal(SECRET);
    expect(own.providerRefField).to.equal(v2.PROVIDER_CONFIG_REF_FIELD);
  });

  it('v2 decodes what it reads into the v1 the controllers work on, and encodes it back unchanged', () => {
    const own = ownVersion('v2');
    const wire = bucketV1ToV2(ready);
    expect(wire.apiVersion).to.equal(v2.API_VERSION);
    const decoded = own.decoder(own.storageBucket)(wire as unknown as KubeObject);
    expect(decoded).to.deep.equal(ready);
    expect(own.encode(STORAGE_BUCKET, decoded)).to.deep.equal(wire);
  });

  it('v2 decodes list items that carry no apiVersion or kind as the kind read', () => {
    const own = ownVersion('v2');
    const { apiVersion: _a, kind: _k, ...bare } = bucketV1ToV2(ready);
    const decoded = own.decoder(own.storageBucket)(bare as unknown as KubeObject) as unknown as v1.StorageBucket;
    expect(decoded.apiVersion).to.equal(v1.API_VERSION);
    expect(decoded.spec.sizeGB).to.equal(10);
    expect(decoded.status?.id).to.equal('bkt-1');
  });
});

describe('kubeWriter with v2 on the wire', () => {
  /** A client that keeps one StorageBucket in v2, as an API server storing v2 would. */
  function v2Server(stored: v2.StorageBucket) {
    const requests: Array<{ verb: string; version: string; body?: unknown }> = [];
    let current: v2.StorageBucket = stored;
    const merge = (a: Record<string, unknown>, b: Record<string, unknown>): Record<string, unknown> => {
      const out: Record<string, unknown> = { ...a };
      for (const [k, v] of Object.entries(b)) {
        if (v === null) delete out[k];
        else if (typeof v === 'object' && !Array.isArray(v) && typeof a[k] === 'object' && a[k] !== null) {
          out[k] = merge(a[k] as Record<string, unknown>, v as Record<string, unknown>);
        } else out[k] = v;
      }
      return out;
    };
    const client = {
      get: async (kind: ResourceKind) => {
        requests.push({ verb: 'get', version: kind.version });
        return current;
      },
      patchStatus: async (kind: ResourceKind, _ns: string, _name: string, patch: Record<string, unknown>) => {
        requests.push({ verb: 'patchStatus', version: kind.version, body: patch });
        const { metadata: _m, ...rest } = patch;
        current = merge(current as unknown as Record<string, unknown>, rest) as unknown as v2.StorageBucket;
        return current;
      },
      patch: async (kind: ResourceKind, _ns: string, _name: string, patch: Record<string, unknown>) => {
        requests.push({ verb: 'patch', version: kind.version, body: patch });
        current = merge(current as unknown as Record<string, unknown>, patch) as unknown as v2.StorageBucket;
        return current;
      },
    };
    return { client: client as unknown as KubeClient, requests, stored: () => current };
  }

  it('writes a v1 status change as the same change of the v2 object, and returns v1', async () => {
    const server = v2Server(bucketV1ToV2(ready));
    const writer = kubeWriter(server.client, 'test', ownVersion('v2'));
    const written = await writer.patchStatus(STORAGE_BUCKET, ready, { ...ready.status, sizeGB: 20, phase: 'Resizing' });
    expect(server.requests.map((r) => `${r.verb} ${r.version}`)).to.deep.equal(['patchStatus v2']);
    expect(server.stored().status?.atProvider?.size).to.equal('20G');
    expect(server.stored().status?.phase).to.equal('Resizing');
    expect((written as v1.StorageBucket).apiVersion).to.equal(v1.API_VERSION);
    expect((written as v1.StorageBucket).status?.sizeGB).to.equal(20);
  });

  it('sends nothing when the status is unchanged', async () => {
    const server = v2Server(bucketV1ToV2(ready));
    const writer = kubeWriter(server.client, 'test', ownVersion('v2'));
    const written = await writer.patchStatus(STORAGE_BUCKET, ready, { ...ready.status });
    expect(server.requests).to.deep.equal([]);
    expect(written).to.equal(ready);
  });

  it('reads and patches metadata at v2 and hands back v1', async () => {
    const server = v2Server(bucketV1ToV2(ready));
    const writer = kubeWriter(server.client, 'test', ownVersion('v2'));
    const got = await writer.get<v1.StorageBucket>(STORAGE_BUCKET, { namespace: 'ns1', name: 'b1' });
    expect(got?.spec.sizeGB).to.equal(10);
    const patched = await writer.patchMetadata(STORAGE_BUCKET, ready, { annotations: { a: 'b' } });
    expect(server.requests.map((r) => `${r.verb} ${r.version}`)).to.deep.equal(['get v2', 'patch v2']);
    expect(patched.metadata?.annotations?.['a']).to.equal('b');
    expect((patched as v1.StorageBucket).spec.sizeGB).to.equal(10);
  });
});
