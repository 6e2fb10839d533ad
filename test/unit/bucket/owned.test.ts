import { expect } from 'chai';
import type { V1Secret } from '@kubernetes/client-node';
import { API_VERSION as V1, MANAGED_BY_LABEL, MANAGED_BY_VALUE } from '../../../operator/api/v1';
import { API_VERSION as V2 } from '../../../operator/api/v2';
import {
  condenseSecretData,
  desiredSecret,
  desiredService,
  endpointHost,
  isControlledBy,
  secretNeedsApply,
  serviceNeedsApply,
  type OwnedSecret,
} from '../../../operator/bucket/owned';
import { bucket } from '../../support/fixtures';

const b = bucket('logs').build();
const access = { id: 'bucket-1', endpoint: 'https://bucket-1.us-east-1.storage.example', region: 'us-east-1', providerEndpoint: 'http://p' };

describe('owned objects', () => {
  it('publish connection details but never anything from the provider Secret', () => {
    const s = desiredSecret(b, access);
    const data = Object.fromEntries(Object.entries(s.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString()]));
    expect(data).to.deep.equal({ bucketId: 'bucket-1', endpoint: access.endpoint, region: 'us-east-1', providerEndpoint: 'http://p' });
    expect(s.metadata?.name).to.equal('logs-access');
    expect(isControlledBy(s, b)).to.equal(true);
  });

  it('point the Service at the endpoint host, as ExternalName requires', () => {
    expect(desiredService(b, access).spec?.externalName).to.equal('bucket-1.us-east-1.storage.example');
    expect(endpointHost('bucket-1.example')).to.equal('bucket-1.example');
  });

  it('are applied only when the live copy lacks something', () => {
    const s = desiredSecret(b, access);
    expect(secretNeedsApply(s, undefined)).to.equal(true);
    expect(secretNeedsApply(s, structuredClone(s))).to.equal(false);
    expect(secretNeedsApply(s, { ...structuredClone(s), data: { ...s.data, extra: 'eA==' } })).to.equal(false);
    expect(secretNeedsApply(s, { ...structuredClone(s), data: { ...s.data, bucketId: 'eA==' } })).to.equal(true);
    const svc = desiredService(b, access);
    expect(serviceNeedsApply(svc, structuredClone(svc))).to.equal(false);
    expect(serviceNeedsApply(svc, { ...structuredClone(svc), spec: { ...svc.spec, externalName: 'evil.example' } })).to.equal(true);
  });

  it('carry the managed-by label the owned-object caches select on', () => {
    for (const obj of [desiredSecret(b, access), desiredService(b, access)]) {
      expect(obj.metadata?.labels?.[MANAGED_BY_LABEL]).to.equal(MANAGED_BY_VALUE);
    }
    const s = desiredSecret(b, access);
    const unlabelled = structuredClone(s);
    delete unlabelled.metadata?.labels?.[MANAGED_BY_LABEL];
    expect(secretNeedsApply(s, unlabelled), 'an old unlabelled Secret is migrated').to.equal(true);
  });

  it('are cached without their Secret data, and the comparison still sees every edit', () => {
    const s = desiredSecret(b, access);
    const condense = (live: V1Secret): OwnedSecret => condenseSecretData(structuredClone(live)) as OwnedSecret;
    const cached = condense(s);
    expect(cached).to.not.have.property('data');
    expect(JSON.stringify(cached)).to.not.include(s.data?.['bucketId']);
    const cases = {
      unchanged: { live: s, want: false },
      'a value edited': { live: { ...s, data: { ...s.data, endpoint: Buffer.from('https://evil.example').toString('base64') } }, want: true },
      'a key removed': { live: { ...s, data: { bucketId: s.data?.['bucketId'] ?? '' } }, want: true },
      'a key added next to ours': { live: { ...s, data: { ...s.data, extra: 'eA==' } }, want: false },
      'no data at all': { live: { ...s, data: undefined }, want: true },
    };
    for (const [name, tc] of Object.entries(cases)) {
      expect(secretNeedsApply(s, condense(tc.live)), `${name} (cached)`).to.equal(tc.want);
      expect(secretNeedsApply(s, structuredClone(tc.live)), `${name} (read from the API)`).to.equal(tc.want);
    }
  });

  it('name their owner in the version the operator reads and writes (the storage version), and move an older reference to it', () => {
    const cases = {
      'v1 stored (the default)': { version: undefined as string | undefined, want: V1 },
      'v1 stored': { version: V1, want: V1 },
      'v2 stored': { version: V2, want: V2 },
    };
    for (const [name, tc] of Object.entries(cases)) {
      for (const obj of [desiredSecret(b, access, tc.version), desiredService(b, access, tc.version)]) {
        expect(obj.metadata?.ownerReferences, name).to.deep.equal([
          { apiVersion: tc.want, kind: 'StorageBucket', name: 'logs', uid: b.metadata.uid, controller: true, blockOwnerDeletion: true },
        ]);
      }
    }
    // Written while v1 was stored: applied again once v2 is, so the reference needs no conversion.
    const asV1 = { secret: desiredSecret(b, access, V1), service: desiredService(b, access, V1) };
    expect(secretNeedsApply(desiredSecret(b, access, V2), structuredClone(asV1.secret))).to.equal(true);
    expect(serviceNeedsApply(desiredService(b, access, V2), structuredClone(asV1.service))).to.equal(true);
    expect(secretNeedsApply(desiredSecret(b, access, V2), condenseSecretData(desiredSecret(b, access, V2)) as OwnedSecret)).to.equal(false);
    expect(serviceNeedsApply(desiredService(b, access, V2), structuredClone(desiredService(b, access, V2)))).to.equal(false);
    // Still ours whichever version names us.
    expect(isControlledBy(asV1.secret, b)).to.equal(true);
  });

  it('are not ours when another controller owns them', () => {
    const foreign = { metadata: { ownerReferences: [{ apiVersion: 'apps/v1', kind: 'Deployment', name: 'x', uid: 'other', controller: true }] } };
    expect(isControlledBy(foreign, b)).to.equal(false);
    expect(isControlledBy({ metadata: {} }, b)).to.equal(false);
  });
});
