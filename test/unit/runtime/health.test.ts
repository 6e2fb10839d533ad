import { expect } from 'chai';
import { CheckSet, parseBindAddress, renderChecks } from '../../../operator/runtime/health';

describe('health', () => {
  const addresses: Record<string, { input: string | undefined; expected: ReturnType<typeof parseBindAddress> }> = {
    'port only': { input: ':8080', expected: { port: 8080 } },
    'host and port': { input: '127.0.0.1:0', expected: { host: '127.0.0.1', port: 0 } },
    'bracketed IPv6': { input: '[::1]:9000', expected: { host: '::1', port: 9000 } },
    '"0" disables': { input: '0', expected: undefined },
    'empty disables': { input: '', expected: undefined },
    'unset disables': { input: undefined, expected: undefined },
  };
  for (const [name, tc] of Object.entries(addresses)) {
    it(`parseBindAddress: ${name}`, () => {
      expect(parseBindAddress(tc.input)).to.deep.equal(tc.expected);
    });
  }

  it('parseBindAddress rejects malformed addresses', () => {
    expect(() => parseBindAddress('8080')).to.throw(/host:port/);
    expect(() => parseBindAddress(':99999')).to.throw(/invalid port/);
  });

  it('renders like kube-apiserver: plain ok, verbose lines, reasons only when verbose', () => {
    const ok = [{ name: 'ping', ok: true }];
    const bad = [...ok, { name: 'informers', ok: false, reason: 'not synced' }];
    expect(renderChecks('readyz', ok, false)).to.deep.equal({ status: 200, body: 'ok' });
    expect(renderChecks('readyz', ok, true)).to.deep.equal({ status: 200, body: '[+]ping ok\nreadyz check passed\n' });
    expect(renderChecks('readyz', bad, false)).to.deep.equal({
      status: 500,
      body: '[+]ping ok\n[-]informers failed: reason withheld\nreadyz check failed\n',
    });
    expect(renderChecks('readyz', bad, true).body).to.include('[-]informers failed: not synced');
  });

  it('CheckSet runs every check, turning throws and rejections into failures', async () => {
    const set = new CheckSet('readyz');
    set.add('sync', () => undefined);
    set.add('throws', () => {
      throw new Error('boom');
    });
    set.add('rejects', async () => {
      throw new Error('later');
    });
    expect(await set.run()).to.deep.equal([
      { name: 'sync', ok: true },
      { name: 'throws', ok: false, reason: 'boom' },
      { name: 'rejects', ok: false, reason: 'later' },
    ]);
    expect(await set.run({ exclude: ['throws', 'rejects'] })).to.deep.equal([{ name: 'sync', ok: true }]);
    expect(await set.run({ only: 'throws' })).to.have.length(1);
    expect(await set.run({ only: 'missing' })).to.equal(undefined);
    expect(() => set.add('sync', () => undefined)).to.throw(/already registered/);
    expect(() => set.add('Bad Name', () => undefined)).to.throw(/lowercase/);
  });
});
