/**
 * A conditional delete (`If-Tags`) through the real client against the in-process provider:
 * the provider deletes only a bucket that carries every named tag at that moment, so a delete
 * decided from a recorded id alone cannot remove a bucket whose tags name someone else.
 */
import { expect } from 'chai';
import { Registry } from 'prom-client';
import { ProviderClients } from '../../../operator/provider-client/client';
import { ProviderError } from '../../../operator/provider-client/errors';
import type { ProviderHandle } from '../../../provider/index';
import { API_KEY, start } from '../provider/helpers';

const OWNER = { 'kubernetes-namespace': 'own', 'kubernetes-name': 'owner', 'kubernetes-uid': 'uid-owner' };

describe('ProviderClient.deleteBucket with ifTags (against an in-process provider)', () => {
  let p: ProviderHandle;
  const clients = new ProviderClients({ qps: 1000, burst: 1000, registry: new Registry(), timeoutMs: 2000 });
  beforeEach(async () => {
    p = await start();
  });
  afterEach(async () => {
    await p.close();
  });
  after(() => clients.close());

  it('deletes a bucket that carries every tag named', async () => {
    const client = clients.client(p.url, API_KEY);
    const b = await client.createBucket({ region: 'us-east-1', sizeGB: 1, encrypted: false, tags: { ...OWNER, team: 'x' } }, 'uid-owner.k1');
    expect(await client.deleteBucket(b.id, undefined, { ifTags: OWNER })).to.equal(true);
    expect(await client.getBucket(b.id)).to.equal(undefined);
  });

  it("found in review (issue 31): refuses with 412 and keeps a bucket whose tags name another object; tags with '&' and '=' are sent intact", async () => {
    const client = clients.client(p.url, API_KEY);
    const b = await client.createBucket({ region: 'us-east-1', sizeGB: 1, encrypted: false, tags: { ...OWNER, note: 'a&b=c' } }, 'uid-owner.k1');
    const err = await client
      .deleteBucket(b.id, undefined, { ifTags: { ...OWNER, 'kubernetes-namespace': 'obs', 'kubernetes-uid': 'uid-copy' } })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(err).to.be.instanceOf(ProviderError);
    expect({ status: (err as ProviderError).status, code: (err as ProviderError).code }).to.deep.equal({ status: 412, code: 'PreconditionFailed' });
    expect((await client.getBucket(b.id))?.id).to.equal(b.id);
    expect(await client.deleteBucket(b.id, undefined, { ifTags: { ...OWNER, note: 'a&b=c' } })).to.equal(true);
  });

  it('a bucket already gone is false, with or without the condition', async () => {
    const client = clients.client(p.url, API_KEY);
    expect(await client.deleteBucket('bucket-000000000042', undefined, { ifTags: OWNER })).to.equal(false);
  });
});
