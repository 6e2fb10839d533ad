/**
 * Credentials written into a BucketProviderConfig's endpoint (`https://user:pass@host`) are
 * refused before the endpoint is used or copied anywhere, whatever the operator's flags: for a
 * config stored before the CRD refused them (test/unit/api/provider-config-userinfo.test.ts).
 */
import { expect } from 'chai';
import { connect, ConnectError, endpointProblem } from '../../../operator/bucket/connect';
import { Reason } from '../../../operator/bucket/reasons';
import { endpointUserinfoProblem, ProviderClients } from '../../../operator/provider-client';
import { IndexedCache } from '../../../operator/runtime/cache';
import type { BucketProviderConfig } from '../../../operator/api/v1';
import { bucket, credentialSecrets, credentialsSecret, providerConfig } from '../../support/fixtures';

const PASSWORD = 'hunter2-s3cr3t';

describe('endpoint userinfo', () => {
  const cases: Record<string, { args: { endpoint: string }; want: { refused: boolean } }> = {
    'user and password': { args: { endpoint: `https://admin:${PASSWORD}@storage.example.com` }, want: { refused: true } },
    'user only': { args: { endpoint: 'https://admin@storage.example.com' }, want: { refused: true } },
    'empty user, password': { args: { endpoint: `https://:${PASSWORD}@storage.example.com` }, want: { refused: true } },
    'percent-encoded password': { args: { endpoint: 'https://admin:p%40ss@storage.example.com/api' }, want: { refused: true } },
    'userinfo before an IP literal': { args: { endpoint: `http://u:${PASSWORD}@127.0.0.1:8090` }, want: { refused: true } },
    'an @ in the path only': { args: { endpoint: 'https://storage.example.com/team@a' }, want: { refused: false } },
    'a plain endpoint': { args: { endpoint: 'https://storage.example.com' }, want: { refused: false } },
    'not a URL (reported elsewhere)': { args: { endpoint: 'https://[bad' }, want: { refused: false } },
  };
  for (const [name, tc] of Object.entries(cases)) {
    it(`${tc.want.refused ? 'refuses' : 'allows'} ${name}, never repeating the endpoint`, () => {
      const why = endpointUserinfoProblem(tc.args.endpoint);
      expect(why !== undefined).to.equal(tc.want.refused);
      // The reason reaches conditions, events and logs: it must not carry the secret along.
      for (const got of [why, endpointProblem({ endpoint: tc.args.endpoint, insecure: true }, { allowLinkLocal: false })]) {
        if (got !== undefined) expect(got).to.not.include(PASSWORD).and.not.include('admin');
      }
    });
  }

  it('is refused by endpointProblem even with --allow-link-local-endpoints, which is about addresses', () => {
    const got = endpointProblem({ endpoint: `https://admin:${PASSWORD}@storage.example.com` }, { allowLinkLocal: true });
    expect(got).to.match(/^spec\.endpoint carries a user name or password \(user:pass@host\): refused/);
  });

  it('stops connect() before a connection (and so status, the access Secret or a log line) ever holds the endpoint', async () => {
    const configs = new IndexedCache<BucketProviderConfig>();
    const endpoint = `https://admin:${PASSWORD}@storage.example.com`;
    configs.upsert(providerConfig().withSpec({ endpoint }).inUse().build());
    const clients = new ProviderClients({});
    try {
      const outcome = await connect({ configs, secrets: credentialSecrets([credentialsSecret({ apiKey: 'k' })]), clients }, bucket().build()).then(
        (c) => c,
        (err: unknown) => err,
      );
      expect(outcome).to.be.instanceOf(ConnectError);
      const err = outcome as ConnectError;
      expect(err.reason).to.equal(Reason.InvalidProviderConfig);
      expect(err.message).to.include('user name or password').and.not.include(PASSWORD);
    } finally {
      clients.close();
    }
  });
});
