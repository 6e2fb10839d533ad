import { expect } from 'chai';
import { bypassProxy, parseProxyUrl, proxyFor, proxyFromEnv } from '../../../operator/runtime/proxy';

describe('NO_PROXY matching (Go httpproxy rules)', () => {
  const cases: Record<string, { args: { noProxy: string; host: string; port?: number }; want: boolean }> = {
    'no list: proxied': { args: { noProxy: '', host: 'kube.example' }, want: false },
    'localhost is never proxied': { args: { noProxy: '', host: 'localhost' }, want: true },
    'loopback IPv4 is never proxied': { args: { noProxy: '', host: '127.0.0.5' }, want: true },
    'loopback IPv6 is never proxied': { args: { noProxy: '', host: '[::1]' }, want: true },
    '* matches all': { args: { noProxy: '*', host: 'kube.example' }, want: true },
    'a domain matches itself': { args: { noProxy: 'example.com', host: 'example.com' }, want: true },
    'a domain matches subdomains': { args: { noProxy: 'example.com', host: 'api.example.com' }, want: true },
    'a domain does not match a suffix that is not a label': { args: { noProxy: 'example.com', host: 'badexample.com' }, want: false },
    '.domain matches subdomains only': { args: { noProxy: '.example.com', host: 'example.com' }, want: false },
    '.domain matches a subdomain': { args: { noProxy: '.example.com', host: 'a.example.com' }, want: true },
    '*.domain is .domain': { args: { noProxy: '*.example.com', host: 'a.example.com' }, want: true },
    'entries are trimmed and case-insensitive': { args: { noProxy: ' foo.org , Example.COM ', host: 'API.example.com' }, want: true },
    'a port restricts the match': { args: { noProxy: 'example.com:8443', host: 'example.com', port: 443 }, want: false },
    'the same port matches': { args: { noProxy: 'example.com:443', host: 'example.com', port: 443 }, want: true },
    'an IPv4 CIDR': { args: { noProxy: '10.0.0.0/8', host: '10.96.0.1' }, want: true },
    'outside the CIDR': { args: { noProxy: '10.0.0.0/8', host: '192.168.1.1' }, want: false },
    'an IPv6 CIDR': { args: { noProxy: 'fd00::/8', host: '[fd00::1]' }, want: true },
    'an IP': { args: { noProxy: '192.168.1.1', host: '192.168.1.1' }, want: true },
    'an IP with a port': { args: { noProxy: '192.168.1.1:6443', host: '192.168.1.1', port: 443 }, want: false },
    'a CIDR does not match a name': { args: { noProxy: '10.0.0.0/8', host: 'kube.example' }, want: false },
  };
  for (const [name, { args, want }] of Object.entries(cases)) {
    it(name, () => expect(bypassProxy(args.noProxy, args.host, args.port ?? 443)).to.equal(want));
  }
});

describe('proxyFromEnv', () => {
  it('prefers upper case, uses HTTPS_PROXY for https and HTTP_PROXY for http', () => {
    const cfg = proxyFromEnv({ HTTPS_PROXY: 'proxy.example:3128', https_proxy: 'other:1', http_proxy: 'http://plain:8080', no_proxy: '.svc' });
    expect(proxyFor(cfg, new URL('https://kube.example:6443'))?.display).to.equal('http://proxy.example:3128');
    expect(proxyFor(cfg, new URL('http://kube.example:8080'))?.display).to.equal('http://plain:8080');
    expect(proxyFor(cfg, new URL('https://kubernetes.default.svc'))).to.equal(undefined);
  });

  it('is undefined without proxy variables', () => {
    expect(proxyFromEnv({ NO_PROXY: '*' })).to.equal(undefined);
  });

  it('keeps credentials out of JSON and messages, but sends them as Proxy-Authorization', () => {
    const p = parseProxyUrl('http://user:s3cret@proxy.example:3128', 'HTTPS_PROXY');
    expect(JSON.stringify(p)).not.to.contain('s3cret');
    expect(p.display).to.equal('http://proxy.example:3128');
    expect(p.authorization()).to.equal(`Basic ${Buffer.from('user:s3cret').toString('base64')}`);
  });

  it('refuses a scheme it cannot speak, without echoing the URL', () => {
    expect(() => parseProxyUrl('socks5://user:s3cret@p:1080', 'HTTPS_PROXY')).to.throw(/^HTTPS_PROXY: proxy scheme socks5: is not supported/);
    try {
      parseProxyUrl('socks5://user:s3cret@p:1080', 'HTTPS_PROXY');
    } catch (err) {
      expect((err as Error).message).not.to.contain('s3cret');
    }
  });
});
