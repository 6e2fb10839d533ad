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
    // Azure: the WireServer is a public address every VM reaches; IMDS is 169.254.169.254 above.
    "Azure's WireServer": { args: { endpoint: 'http://168.63.129.16/machine' }, want: { denied: true } },
    "Azure's WireServer as a decimal number": { args: { endpoint: 'http://2822734096/' }, want: { denied: true } },
    // NAT64 (RFC 6052, RFC 8215): a translator reaches the embedded IPv4 address from its own network.
    'NAT64 form of the metadata address': { args: { endpoint: 'http://[64:ff9b::169.254.169.254]/' }, want: { denied: true } },
    'NAT64 form of link-local, in hex': { args: { endpoint: 'http://[64:ff9b::a9fe:0a14]/' }, want: { denied: true } },
    'NAT64 form of loopback': { args: { endpoint: 'http://[64:ff9b::127.0.0.1]:8090/' }, want: { denied: true } },
    'NAT64 form of a private address': { args: { endpoint: 'http://[64:ff9b::10.0.0.5]/' }, want: { denied: true } },
    'NAT64 form of 192.168/16': { args: { endpoint: 'http://[64:ff9b::192.168.1.1]/' }, want: { denied: true } },
    "NAT64 form of Azure's WireServer": { args: { endpoint: 'http://[64:ff9b::168.63.129.16]/' }, want: { denied: true } },
    'NAT64 form of a public address': { args: { endpoint: 'https://[64:ff9b::203.0.113.7]/' }, want: { denied: false } },
    'local-use NAT64 (/96) form of the metadata address': { args: { endpoint: 'http://[64:ff9b:1::169.254.169.254]/' }, want: { denied: true } },
    'local-use NAT64 (/48 layout) form of the metadata address': { args: { endpoint: 'http://[64:ff9b:1:a9fe:a9:fe00::]/' }, want: { denied: true } },
    'local-use NAT64 (/64 layout) form of loopback': { args: { endpoint: 'http://[64:ff9b:1:0:7f:0:100::]/' }, want: { denied: true } },
    'local-use NAT64 (/96) form of a public address': { args: { endpoint: 'https://[64:ff9b:1::203.0.113.7]/' }, want: { denied: false } },
    // 6to4 (RFC 3056): 2002:VVVV:VVVV::/48 carries the relay's IPv4 address.
    '6to4 form of the metadata address': { args: { endpoint: 'http://[2002:a9fe:a9fe::1]/' }, want: { denied: true } },
    '6to4 form of loopback': { args: { endpoint: 'http://[2002:7f00:1::]/' }, want: { denied: true } },
    '6to4 form of a private address': { args: { endpoint: 'http://[2002:c0a8:101::1]/' }, want: { denied: true } },
    '6to4 form of a public address': { args: { endpoint: 'https://[2002:cb00:7107::1]/' }, want: { denied: false } },
    // The IPv4-in-IPv6 forms: mapped is the address itself on this host, so loopback stays allowed.
    'IPv4-mapped metadata address in hex': { args: { endpoint: 'http://[::ffff:a9fe:a9fe]/' }, want: { denied: true } },
    "IPv4-mapped Azure's WireServer": { args: { endpoint: 'http://[::ffff:168.63.129.16]/' }, want: { denied: true } },
    'IPv4-mapped loopback (the same as 127.0.0.1)': { args: { endpoint: 'http://[::ffff:127.0.0.1]:8090/' }, want: { denied: false } },
    'IPv4-compatible (deprecated) metadata address': { args: { endpoint: 'http://[::169.254.169.254]/' }, want: { denied: true } },
    'IPv4-compatible (deprecated) loopback': { args: { endpoint: 'http://[::127.0.0.1]/' }, want: { denied: true } },
    'IPv4-translated metadata address': { args: { endpoint: 'http://[::ffff:0:169.254.169.254]/' }, want: { denied: true } },
    'IPv6 loopback': { args: { endpoint: 'http://[::1]:8090/' }, want: { denied: false } },
    'an IPv6 unique-local address': { args: { endpoint: 'https://[fd12:3456::5]/' }, want: { denied: false } },
    'a public IPv6 address': { args: { endpoint: 'https://[2001:db8::5]/' }, want: { denied: false } },
  };
  for (const [name, tc] of Object.entries(hosts)) {
    it(`${tc.want.denied ? 'denies' : 'allows'} ${name}`, () => {
      expect(deniedEndpointHost(tc.args.endpoint) !== undefined).to.equal(tc.want.denied);
    });
  }

  const reasons: Record<string, { args: { address: string }; want: { why: string | undefined } }> = {
    metadata: { args: { address: '169.254.169.254' }, want: { why: 'a cloud metadata address' } },
    'link-local': { args: { address: '169.254.1.1' }, want: { why: 'a link-local address' } },
    'not an IP': { args: { address: 'not-an-ip' }, want: { why: undefined } },
    "Azure's WireServer": { args: { address: '168.63.129.16' }, want: { why: 'a cloud metadata address' } },
    'IPv6 link-local with a zone (as getaddrinfo may answer)': { args: { address: 'fe80::1%eth0' }, want: { why: 'a link-local address' } },
    'AWS IPv6 metadata': { args: { address: 'fd00:ec2::254' }, want: { why: 'a cloud metadata address' } },
    'IPv4-mapped, as the URL parser writes it': {
      args: { address: '::ffff:a9fe:a9fe' },
      want: { why: 'an IPv4-mapped address of 169.254.169.254, a cloud metadata address' },
    },
    'NAT64, as a DNS64 resolver synthesises it': {
      args: { address: '64:ff9b::a9fe:a9fe' },
      want: { why: 'a NAT64 address (64:ff9b::/96) embedding 169.254.169.254, a cloud metadata address' },
    },
    'NAT64 of loopback': {
      args: { address: '64:ff9b::7f00:1' },
      want: { why: 'a NAT64 address (64:ff9b::/96) embedding 127.0.0.1, a loopback address' },
    },
    'NAT64 of carrier-grade NAT space': {
      args: { address: '64:ff9b::100.64.0.1' },
      want: { why: 'a NAT64 address (64:ff9b::/96) embedding 100.64.0.1, a shared (carrier-grade NAT) address' },
    },
    '6to4 of a private address': {
      args: { address: '2002:0a00:0001::' },
      want: { why: 'a 6to4 address (2002::/16) embedding 10.0.0.1, a private address' },
    },
    'NAT64 of a public address': { args: { address: '64:ff9b::8.8.8.8' }, want: { why: undefined } },
    // Outside 64:ff9b::/96 the /32 is not NAT64: nothing is embedded there.
    'an address in 64:ff9b::/32 outside the /96': { args: { address: '64:ff9b:0:1::7f00:1' }, want: { why: undefined } },
  };
  for (const [name, tc] of Object.entries(reasons)) {
    it(`says why it refuses an address: ${name}`, () => {
      expect(deniedAddress(tc.args.address)).to.equal(tc.want.why);
    });
  }
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
    // A DNS64 resolver answers a name with only an A record by synthesising a NAT64 address.
    'a name resolving to the NAT64 form of the metadata address is refused': {
      args: { table: { 'provider.test': [{ address: '64:ff9b::a9fe:a9fe', family: 6 }] } },
      want: { denied: true },
    },
    "a name resolving to Azure's WireServer is refused": {
      args: { table: { 'provider.test': [{ address: '168.63.129.16', family: 4 }] } },
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
