import { expect } from 'chai';
import {
  desiredSecret, desiredService, endpointHost, isControlledBy, secretNeedsApply, serviceNeedsApply,
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

  it('are not ours when another controller owns them', () => {
    const foreign = { metadata: { ownerReferences: [{ apiVersion: 'apps/v1', kind: 'Deployment', name: 'x', uid: 'other', controller: true }] } };
    expect(isControlledBy(foreign, b)).to.equal(false);
    expect(isControlledBy({ metadata: {} }, b)).to.equal(false);
  });
});
