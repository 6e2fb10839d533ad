import { expect } from 'chai';
import type { LookupAddress } from 'node:dns';
import { ENDPOINT_DENIED, ProviderClients, ProviderError, deniedAddress, deniedEndpointHost, type Resolver } from '../../../operator/provider-client';
import type { ProviderHandle } from '../../../provider/index';
import { API_KEY, start } from '../provider/helpers';

describe('endpoint policy', () => {
  const hosts: Record<string, { args: { endpoint: string }; want: { denied: boolean } }> = {
    'a public https host': { args: { endpoint: 'https://storage.example.com' }, want: { denied: false } },
    'loopback (the local mock provider)': { args: { endpoint: 'http://127.0.0.1:8090' }, want: { denied: false } },
    'a private address': { args: { endpoint: 'http://10.0.0.5' }, want: { denied: false } },
    'IPv4 link-local': { args: { endpoint: 'http://169.254.10.20' }, want: { denied: true } },
    'the metadata address': { args: { endpoint: 'http://169.254.169.254/latest' }, want: { denied: true } },
    'the metadata address as a decimal number': { args: { endpoint: 'http://2852039166/' }, want: { denied: true } },
    'the metadata address in hex': { args: { endpoint: 'http://0xa9fea9fe/' }, want: { denied: true } },
    'IPv6 link-local': { args: { endpoint: 'http://[fe80::1]:8080' }, want: { denied: true } },
    'IPv4-mapped metadata address': { args: { endpoint: 'http://[::ffff:169.254.169.254]/' }, want: { denied: true } },
    'AWS IPv6 metadata': { args: { endpoint: 'http://[fd00:ec2::254]/' }, want: { denied: true } },
    'Alibaba metadata': { args: { endpoint: 'http://100.100.100.200/' }, want: { denied: true } },
    'GCE metadata name': { args: { endpoint: 'http://metadata.google.internal/computeMetadata' }, want: { denied: true } },
    'GCE metadata name, upper case with a trailing dot': { args: { endpoint: 'http://METADATA.Google.Internal./' }, want: { denied: true } },
    'a name merely containing metadata': { args: { endpoint: 'https://metadata.storage.example.com' }, want: { denied: false } },
    'not a URL (reported elsewhere)': { args: { endpoint: 'http://[bad' }, want: { denied: false } },
  };
  for (const [name, tc] of Object.entries(hosts)) {
    it(`${tc.want.denied ? 'denies' : 'allows'} ${name}`, () => {
      expect(deniedEndpointHost(tc.args.endpoint) !== undefined).to.equal(tc.want.denied);
    });
  }

  it('says which kind of address it refused', () => {
    expect(deniedAddress('169.254.169.254')).to.equal('a cloud metadata address');
    expect(deniedAddress('169.254.1.1')).to.equal('a link-local address');
    expect(deniedAddress('not-an-ip')).to.equal(undefined);
  });
});

describe('ProviderClients: resolved addresses', () => {
  let p: ProviderHandle;
  before(async () => {
    p = await start({ activationDelayMs: 0 });
  });
  after(async () => {
    await p.close();
  });

  /** Resolves every name in `table`, as a DNS server pointing it there would. */
  const resolver =
    (table: Record<string, LookupAddress[]>): Resolver =>
    (hostname, _opts, cb) => {
      const found = table[hostname];
      if (found) cb(null, found);
      else cb(Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' }), []);
    };
  const port = () => new URL(p.url).port;

  const cases: Record<string, { args: { table: Record<string, LookupAddress[]>; allow?: boolean }; want: { denied: boolean } }> = {
    'a name resolving to loopback is served': {
      args: { table: { 'provider.test': [{ address: '127.0.0.1', family: 4 }] } },
      want: { denied: false },
    },
    'a name resolving to the metadata address is refused before connecting': {
      args: { table: { 'provider.test': [{ address: '169.254.169.254', family: 4 }] } },
      want: { denied: true },
    },
    'a name with one link-local answer among others is refused': {
      args: {
        table: {
          'provider.test': [
            { address: '127.0.0.1', family: 4 },
            { address: 'fe80::1', family: 6 },
          ],
        },
      },
      want: { denied: true },
    },
    'the flag turns the check off (the system resolver answers instead)': {
      args: { table: { 'provider.test': [{ address: '127.0.0.1', family: 4 }] }, allow: true },
      want: { denied: false },
    },
  };
  for (const [name, tc] of Object.entries(cases)) {
    it(name, async () => {
      const clients = new ProviderClients({ resolve: resolver(tc.args.table), allowLinkLocalEndpoints: tc.args.allow, timeoutMs: 2000 });
      try {
        const client = clients.client(`http://provider.test:${port()}`, API_KEY);
        const outcome = await client.getBucket('b-1').then(
          () => undefined,
          (err: unknown) => err,
        );
        if (!tc.want.denied && !tc.args.allow) {
          expect(outcome, 'the provider answered 404 for an unknown id').to.equal(undefined);
          return;
        }
        if (!tc.want.denied) {
          // With the flag the guard is off and the system resolver answers: it does not know
          // provider.test, which is a transport error of another kind.
          if (outcome !== undefined) expect((outcome as ProviderError).code).to.not.equal(ENDPOINT_DENIED);
          return;
        }
        expect(outcome).to.be.instanceOf(ProviderError);
        const err = outcome as ProviderError;
        expect(err.code).to.equal(ENDPOINT_DENIED);
        expect(err.retryable, 'DNS may change').to.equal(true);
        expect(err.message).to.include('provider.test').and.include('--allow-link-local-endpoints');
        expect(err.message).to.not.include(API_KEY);
        expect(p.stats().requests, 'nothing reached the provider').to.deep.equal({});
      } finally {
        clients.close();
        p.resetStats();
      }
    });
  }
});
