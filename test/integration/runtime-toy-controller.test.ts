import { CoreV1Api, type V1ConfigMap, type V1Secret } from '@kubernetes/client-node';
import { expect } from 'chai';
import { Registry } from 'prom-client';
import { newControllerManagedBy } from '../../operator/runtime/builder';
import { KubeClient } from '../../operator/runtime/client';
import { InformerFactory } from '../../operator/runtime/informer-factory';
import { createLogger } from '../../operator/runtime/logging';
import { Manager } from '../../operator/runtime/manager';
import { done, type Reconciler } from '../../operator/runtime/reconcile';
import type { Informer, ResourceKind } from '../../operator/runtime/types';
import { type ControlPlane } from '../support/control-plane';
import { freshNamespace, sharedControlPlane } from './setup';
import { eventually } from '../support/eventually';

const ConfigMaps: ResourceKind = { group: '', version: 'v1', kind: 'ConfigMap', plural: 'configmaps', namespaced: true };
const Secrets: ResourceKind = { group: '', version: 'v1', kind: 'Secret', plural: 'secrets', namespaced: true };

/** Copies each ConfigMap's data into an owned Secret of the same name, by server-side apply. */
function copyReconciler(client: KubeClient, configMaps: Informer<V1ConfigMap>): Reconciler {
  return {
    async reconcile(req, ctx) {
      const cm = configMaps.cache.get(req);
      if (!cm?.metadata?.uid) return done(); // deleted: garbage collection removes the Secret
      const data = Object.fromEntries(Object.entries(cm.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'utf8').toString('base64')]));
      const secret: V1Secret = {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: {
          name: req.name,
          namespace: req.namespace,
          ownerReferences: [
            { apiVersion: 'v1', kind: 'ConfigMap', name: req.name, uid: cm.metadata.uid, controller: true, blockOwnerDeletion: true },
          ],
        },
        type: 'Opaque',
        data,
      };
      await client.apply(Secrets, secret, { fieldManager: 'toy-copy', force: true, signal: ctx.signal });
      return done();
    },
  };
}

describe('runtime: toy controller converges through the runtime alone (real control plane)', function () {
  this.timeout(180_000);
  let cp: ControlPlane;
  let ns: string;
  let abort: AbortController;
  let result: Promise<unknown>;
  let client: KubeClient;
  let mgr: Manager;

  before(async () => {
    cp = await sharedControlPlane();
    ns = await freshNamespace(cp, 'rt-toy');
    const logger = createLogger({ level: process.env.TOY_LOG === '1' ? 'debug' : 'silent' });
    const registry = new Registry();
    client = new KubeClient({ restConfig: cp.restConfig(), registry });
    const informers = new InformerFactory({ lw: client, logger });
    mgr = new Manager({
      client,
      logger,
      informers,
      namespace: ns,
      metricsBindAddress: '0',
      healthProbeBindAddress: '127.0.0.1:0',
      registry,
    });
    const configMaps = informers.informerFor<V1ConfigMap>(ConfigMaps, { namespace: ns });
    newControllerManagedBy(mgr, 'toy-copy')
      .for(ConfigMaps)
      .owns(Secrets)
      .withOptions({ maxConcurrentReconciles: 2, reconcileTimeoutMs: 30_000 })
      .complete(copyReconciler(client, configMaps));
    abort = new AbortController();
    result = mgr.start(abort.signal).then(
      () => undefined,
      (err: unknown) => err,
    );
    await mgr.elected();
  });

  after(async () => {
    abort?.abort();
    expect(await result).to.equal(undefined);
    client?.close();
  });

  const core = (): CoreV1Api => cp.kubeConfig().makeApiClient(CoreV1Api);

  async function secretData(name: string): Promise<Record<string, string> | undefined> {
    const s = await core().readNamespacedSecret({ name, namespace: ns });
    return Object.fromEntries(Object.entries(s.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]));
  }

  async function converged(name: string, expected: Record<string, string>, timeoutMs = 30_000): Promise<void> {
    await eventually(
      async () => {
        const data = await secretData(name);
        return JSON.stringify(data) === JSON.stringify(expected) ? true : undefined;
      },
      { description: `Secret ${name} to hold ${JSON.stringify(expected)}`, timeoutMs },
    );
  }

  async function ready(): Promise<void> {
    const port = (await mgr.listening()).health?.port;
    await eventually(
      async () => {
        const res = await fetch(`http://127.0.0.1:${port}/readyz?verbose`);
        if (res.status === 200) return true;
        throw new Error(await res.text());
      },
      { description: '/readyz to pass', timeoutMs: 60_000 },
    );
  }

  /** Creates ConfigMap `name` with `data` and waits until its Secret holds the same: each test makes its own. */
  async function source(name: string, data: Record<string, string>): Promise<void> {
    await core().createNamespacedConfigMap({ namespace: ns, body: { metadata: { name }, data } });
    await converged(name, data);
  }

  it('creates the owned Secret from the ConfigMap', async () => {
    await core().createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: 'src' }, data: { a: '1' } } });
    await converged('src', { a: '1' });
    const s = await core().readNamespacedSecret({ name: 'src', namespace: ns });
    expect(s.metadata?.ownerReferences?.[0]).to.include({ kind: 'ConfigMap', name: 'src', controller: true });
    expect(s.metadata?.managedFields?.some((f) => f.manager === 'toy-copy' && f.operation === 'Apply')).to.equal(true);
  });

  it('follows edits of the ConfigMap, removing keys it no longer has', async () => {
    await source('edited', { a: '1' });
    await core().replaceNamespacedConfigMap({
      name: 'edited',
      namespace: ns,
      body: { metadata: { name: 'edited' }, data: { b: '2' } },
    });
    await converged('edited', { b: '2' });
  });

  it('re-creates a Secret deleted by hand', async () => {
    await source('deleted', { b: '2' });
    await core().deleteNamespacedSecret({ name: 'deleted', namespace: ns });
    await converged('deleted', { b: '2' });
  });

  it('survives an API server restart and keeps converging', async () => {
    await source('restarted', { a: '1' });
    await cp.restartApiServer();
    await ready();
    await core().replaceNamespacedConfigMap({
      name: 'restarted',
      namespace: ns,
      body: { metadata: { name: 'restarted' }, data: { c: '3' } },
    });
    await converged('restarted', { c: '3' }, 60_000);
    await core().createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: 'late' }, data: { d: '4' } } });
    await converged('late', { d: '4' }, 60_000);
    await core().deleteNamespacedSecret({ name: 'late', namespace: ns });
    await converged('late', { d: '4' }, 60_000);
  });
});
