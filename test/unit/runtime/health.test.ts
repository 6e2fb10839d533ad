import { expect } from 'chai';
import { Registry } from 'prom-client';
import { newControllerManagedBy } from '../../../operator/runtime/builder';
import { CheckSet, parseBindAddress, ProbeServers, renderChecks } from '../../../operator/runtime/health';
import { Manager } from '../../../operator/runtime/manager';
import { done } from '../../../operator/runtime/reconcile';
import { captureLogger, FakeInformerSource, testKind } from './fakes';

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

describe('readiness: the Pod apart from the controller', () => {
  const Widget = testKind('Widget');

  /**
   * A manager over one informer that never syncs (an API server away, a missing permission),
   * with a check of its own beside the controller's, as the operator adds the webhook's;
   * served on a loopback port.
   */
  async function stuckManager(readyzIncludesController?: boolean) {
    const source = new FakeInformerSource();
    const informer = source.informer(Widget);
    informer.hasSynced = () => false;
    informer.waitForSync = (signal?: AbortSignal) =>
      new Promise((_resolve, reject) => signal?.addEventListener('abort', () => reject(new Error('stopped')), { once: true }));
    const mgr = new Manager({
      logger: captureLogger().logger,
      informers: source,
      metricsBindAddress: '0',
      healthProbeBindAddress: '127.0.0.1:0',
      ...(readyzIncludesController === undefined ? {} : { readyzIncludesController }),
    });
    mgr.addReadyzCheck('webhook', () => undefined);
    newControllerManagedBy(mgr, 'widgets')
      .for(Widget)
      .complete({ reconcile: async () => done() });
    const abort = new AbortController();
    const running = mgr.start(abort.signal);
    const port = (await mgr.listening()).health?.port;
    const get = async (path: string) => {
      const res = await fetch(`http://127.0.0.1:${port}${path}`);
      return { status: res.status, body: await res.text() };
    };
    return {
      mgr,
      get,
      async stop() {
        abort.abort();
        await running;
      },
    };
  }

  it("with the controller left out, /readyz is the Pod's own checks while the controller's fail at /readyz/controller", async () => {
    const m = await stuckManager(false);
    try {
      expect(await m.get('/readyz')).to.deep.equal({ status: 200, body: 'ok' });
      expect((await m.get('/readyz?verbose')).body).to.equal('[+]webhook ok\nreadyz check passed\n');
      const controller = await m.get('/readyz/controller?verbose');
      expect(controller.status).to.equal(500);
      expect(controller.body).to.include('[-]informers failed: informers not ready: Widget (not synced)');
      expect((await m.get('/readyz/controller/informers')).status).to.equal(500);
      expect((await m.get('/readyz/controller/nope')).status).to.equal(404);
      expect((await m.get('/readyz/webhook')).status).to.equal(200);
      // Liveness is the process, not the controller.
      expect((await m.get('/healthz')).status).to.equal(200);
    } finally {
      await m.stop();
    }
  });

  it('by default /readyz includes the controller, as before, and /readyz/controller says the same alone', async () => {
    const m = await stuckManager();
    try {
      const readyz = await m.get('/readyz?verbose');
      expect(readyz.status).to.equal(500);
      expect(readyz.body).to.include('[+]webhook ok').and.include('[-]informers failed');
      expect((await m.get('/readyz/informers')).status).to.equal(500);
      expect((await m.get('/readyz/controller')).status).to.equal(500);
      expect(() => m.mgr.addReadyzCheck('controller', () => undefined)).to.throw(/taken/);
    } finally {
      await m.stop();
    }
  });

  it('routes a longer endpoint before a check of the same name, and 404s what names nothing', async () => {
    const healthz = new CheckSet('healthz');
    const readyz = new CheckSet('readyz');
    const controller = new CheckSet('readyz/controller');
    readyz.add('controller', () => {
      throw new Error('shadowed');
    });
    controller.add('informers', () => undefined);
    const servers = new ProbeServers({
      healthProbeBindAddress: '127.0.0.1:0',
      metricsBindAddress: '0',
      registry: new Registry(),
      healthz,
      readyz,
      more: [controller],
      logger: captureLogger().logger,
    });
    const { health } = await servers.start();
    try {
      const status = async (path: string) => (await fetch(`http://127.0.0.1:${health?.port}${path}`)).status;
      expect(await status('/readyz/controller')).to.equal(200);
      expect(await status('/readyz/controller/')).to.equal(200);
      expect(await status('/readyz/controller/informers')).to.equal(200);
      expect(await status('/readyz/controller/informers/x')).to.equal(404);
      expect(await status('/healthz/controller')).to.equal(404);
      expect(await status('/')).to.equal(404);
    } finally {
      await servers.stop();
    }
    expect(() => new CheckSet('Readyz')).to.throw(/lowercase path/);
  });
});
