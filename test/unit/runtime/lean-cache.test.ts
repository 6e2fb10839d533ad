import { expect } from 'chai';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import type { ListerWatcher, ListOptions, ListResult, WatchOptions } from '../../../operator/runtime/client';
import type { WatchEvent } from '../../../operator/runtime/watch-events';
import { SharedInformer } from '../../../operator/runtime/informer';
import { CACHED_OBJECTS_METRIC, InformerFactory } from '../../../operator/runtime/informer-factory';
import { Manager } from '../../../operator/runtime/manager';
import { setupBucketControllers } from '../../../operator/bucket/setup';
import { ProviderClients } from '../../../operator/provider-client';
import { LAST_APPLIED_ANNOTATION, stripManagedFields } from '../../../operator/runtime/transforms';
import type { KubeObject, ResourceKind } from '../../../operator/runtime/types';
import { FakeWatch } from './fake-lister-watcher';
import { eventually, IN_PROCESS } from '../../support/eventually';

const secrets: ResourceKind = { group: '', version: 'v1', kind: 'Secret', plural: 'secrets', namespaced: true };
const silent = pino({ level: 'silent' });
const fastBackoff = { initialMs: 2, maxMs: 10 };

/**
 * A fake API that honours kind, namespace, `metadata.name=` field selectors and `k=v` label
 * selectors, as the server does. Objects added without a kind are Secrets.
 */
class SelectingLister implements ListerWatcher {
  readonly objects: KubeObject[] = [];
  readonly lists: (ListOptions & { plural: string })[] = [];
  readonly watches: (FakeWatch & { plural?: string })[] = [];
  private readonly plurals = new Map<KubeObject, string>();
  private rv = 1;

  /** Stores `obj` as an object of the resource `plural`. */
  put(plural: string, obj: KubeObject): void {
    this.objects.push(obj);
    this.plurals.set(obj, plural);
  }

  private ofKind(kind: ResourceKind): KubeObject[] {
    return this.objects.filter((o) => (this.plurals.get(o) ?? 'secrets') === kind.plural);
  }

  add(namespace: string, name: string, extra: Record<string, unknown> = {}): KubeObject {
    const obj = { metadata: { namespace, name, uid: `uid-${name}`, resourceVersion: String(++this.rv) }, ...extra } as KubeObject;
    this.objects.push(obj);
    return obj;
  }

  /** Sends `obj` on every open watch whose selectors match it. */
  send(type: 'ADDED' | 'MODIFIED' | 'DELETED', obj: KubeObject): void {
    for (const w of this.watches) if (!w.closed && matches(obj, w.opts)) w.send(type, structuredClone(obj));
  }

  openWatches(): (FakeWatch & { plural?: string })[] {
    return this.watches.filter((w) => !w.closed);
  }

  async list<T extends KubeObject>(kind: ResourceKind, opts: ListOptions = {}): Promise<ListResult<T>> {
    this.lists.push({ ...opts, plural: kind.plural });
    // Copies, as a real list decodes fresh objects each time.
    return { items: structuredClone(this.ofKind(kind).filter((o) => matches(o, opts))) as T[], resourceVersion: String(this.rv) };
  }

  watch<T extends KubeObject>(kind: ResourceKind, opts: WatchOptions = {}): AsyncIterable<WatchEvent<T>> {
    const w = Object.assign(new FakeWatch(opts), { plural: kind.plural });
    this.watches.push(w);
    return w.stream() as AsyncIterable<WatchEvent<T>>;
  }
}

function matches(obj: KubeObject, opts: { namespace?: string; fieldSelector?: string; labelSelector?: string }): boolean {
  if (opts.namespace && obj.metadata?.namespace !== opts.namespace) return false;
  const labels = obj.metadata?.labels ?? {};
  for (const term of (opts.labelSelector ?? '').split(',').filter(Boolean)) {
    const [k = '', v] = term.split('=');
    if (labels[k] !== v) return false;
  }
  const name = /^metadata\.name=(.+)$/.exec(opts.fieldSelector ?? '')?.[1];
  return name === undefined || obj.metadata?.name === name;
}

const noisy = (name: string): KubeObject => ({
  metadata: {
    namespace: 'ns',
    name,
    uid: `u-${name}`,
    resourceVersion: '1',
    managedFields: [{ manager: 'kubectl', operation: 'Update' }],
    annotations: { [LAST_APPLIED_ANNOTATION]: '{"a big":"copy"}', keep: 'me' },
  },
});

describe('cache transforms', () => {
  it('stripManagedFields drops managedFields and the last-applied copy, keeping other annotations', () => {
    const cases = {
      'both present': { input: noisy('a'), want: { annotations: { keep: 'me' }, managedFields: undefined } },
      'only last-applied': {
        input: { metadata: { name: 'b', annotations: { [LAST_APPLIED_ANNOTATION]: '{}' } } },
        want: { annotations: undefined, managedFields: undefined },
      },
      'no metadata': { input: {}, want: undefined },
    };
    for (const [name, tc] of Object.entries(cases)) {
      const out = stripManagedFields(structuredClone(tc.input));
      if (tc.want === undefined) {
        expect(out, name).to.deep.equal({});
        continue;
      }
      expect(out.metadata?.annotations, name).to.deep.equal(tc.want.annotations);
      expect(out.metadata?.managedFields, name).to.equal(undefined);
    }
  });

  it('an informer stores and announces the transformed object, from the list and from the watch', async () => {
    const lw = new SelectingLister();
    lw.add('ns', 'listed', { data: { k: 'c2VjcmV0' } });
    const dropData = (o: KubeObject): KubeObject => {
      const { data: _data, ...rest } = o as KubeObject & { data?: unknown };
      return { ...rest, condensed: true } as KubeObject;
    };
    const inf = new SharedInformer<KubeObject>({ lw, kind: secrets, logger: silent, transform: dropData, reflector: { backoff: fastBackoff } });
    const announced: KubeObject[] = [];
    inf.addEventHandler({ onAdd: (o) => announced.push(o), onUpdate: (_a, b) => announced.push(b), onDelete: (o) => announced.push(o) });
    try {
      inf.start();
      await inf.waitForSync();
      await eventually(() => expect(lw.openWatches()).to.have.length(1), IN_PROCESS);
      lw.send('ADDED', { metadata: { namespace: 'ns', name: 'watched', uid: 'w', resourceVersion: '9' }, data: { k: 'eA==' } } as KubeObject);
      await eventually(() => expect(announced).to.have.length(2), IN_PROCESS);
      for (const o of [...inf.cache.list(), ...announced]) {
        expect(o).to.not.have.property('data');
        expect(o).to.have.property('condensed', true);
      }
    } finally {
      await inf.stop();
    }
  });
});

describe('reflector stop', () => {
  it('stopping while the first list is in flight does not leave a watch open', async () => {
    const lw = new SelectingLister();
    const inf = new SharedInformer<KubeObject>({ lw, kind: secrets, logger: silent, reflector: { backoff: fastBackoff } });
    inf.start();
    await inf.waitForSync();
    // The list has answered but the watch has not opened yet.
    await inf.stop();
    expect(lw.openWatches()).to.deep.equal([]);
  });
});

describe('InformerFactory (lean caches)', () => {
  it('strips managedFields in every informer unless told not to', async () => {
    for (const [name, tc] of Object.entries({
      default: { defaultTransform: undefined, stripped: true },
      disabled: { defaultTransform: null, stripped: false },
    })) {
      const lw = new SelectingLister();
      lw.objects.push(noisy('a'));
      const f = new InformerFactory({ lw, logger: silent, reflector: { backoff: fastBackoff }, defaultTransform: tc.defaultTransform });
      const inf = f.informerFor(secrets, { namespace: 'ns' });
      try {
        f.start();
        await f.waitForSync();
        const cached = inf.cache.list()[0];
        expect(cached?.metadata?.managedFields === undefined, name).to.equal(tc.stripped);
        expect(cached?.metadata?.annotations?.['keep'], name).to.equal('me');
      } finally {
        await f.stop();
      }
    }
  });

  it("runs an informer's own transform after the default, and refuses a second, different one", async () => {
    const lw = new SelectingLister();
    lw.objects.push(noisy('a'));
    const seenByOwn: KubeObject[] = [];
    const own = (o: KubeObject): KubeObject => {
      seenByOwn.push(structuredClone(o));
      return o;
    };
    const f = new InformerFactory({ lw, logger: silent, reflector: { backoff: fastBackoff } });
    try {
      f.informerFor(secrets, { labelSelector: 'a=b', transform: own });
      expect(() => f.informerFor(secrets, { labelSelector: 'a=b', transform: stripManagedFields })).to.throw(/different transform/);
      expect(() => f.informerFor(secrets, { labelSelector: 'a=b', transform: own })).to.not.throw();
      f.start();
      await f.waitForSync();
      expect(seenByOwn[0]?.metadata?.managedFields).to.equal(undefined);
    } finally {
      await f.stop();
    }
  });

  it('keys informers by field selector too, removes them on request and counts cached objects per kind', async () => {
    const lw = new SelectingLister();
    lw.add('ns', 'one');
    lw.add('ns', 'two');
    const registry = new Registry();
    const f = new InformerFactory({ lw, logger: silent, reflector: { backoff: fastBackoff }, registry });
    try {
      const one = f.informerFor(secrets, { namespace: 'ns', fieldSelector: 'metadata.name=one' });
      expect(f.informerFor(secrets, { namespace: 'ns', fieldSelector: 'metadata.name=two' })).to.not.equal(one);
      f.start();
      await f.waitForSync();
      expect(Object.fromEntries(f.cachedObjectCounts())).to.deep.equal({ Secret: 2 });
      expect(await registry.metrics()).to.include(`${CACHED_OBJECTS_METRIC}{kind="Secret"} 2`);

      await f.removeInformer(secrets, { namespace: 'ns', fieldSelector: 'metadata.name=one' });
      expect(f.informers()).to.have.length(1);
      expect(await registry.metrics()).to.include(`${CACHED_OBJECTS_METRIC}{kind="Secret"} 1`);
      // A fresh informer, not the stopped one.
      const again = f.informerFor(secrets, { namespace: 'ns', fieldSelector: 'metadata.name=one' });
      expect(again).to.not.equal(one);
      await again.waitForSync();
      expect(again.cache.list().map((o) => o.metadata?.name)).to.deep.equal(['one']);
    } finally {
      await f.stop();
    }
  });
});

describe('bucket controllers: credential Secrets (lean cache)', () => {
  const TENANTS = 40;
  const credentialLabels = { 'storage.avalonhosting.example/secret-type': 'provider-credentials' };

  /** Tenants each with a config naming its own Secret; every other Secret carries the label. */
  function world(): SelectingLister {
    const lw = new SelectingLister();
    for (let i = 0; i < TENANTS; i++) {
      const namespace = `team-${i}`;
      lw.put('bucketproviderconfigs', {
        apiVersion: 'storage.avalonhosting.example/v1',
        kind: 'BucketProviderConfig',
        metadata: { namespace, name: 'default', uid: `c-${i}`, resourceVersion: '1', finalizers: ['storage.avalonhosting.example/in-use'] },
        spec: { endpoint: 'https://storage.example.com', secretRef: { name: 'creds', key: 'apiKey' } },
      } as KubeObject);
      lw.put('secrets', {
        metadata: {
          namespace,
          name: 'creds',
          uid: `s-${i}`,
          resourceVersion: '1',
          managedFields: [{ manager: 'kubectl', operation: 'Update' }],
          ...(i % 2 === 0 ? { labels: credentialLabels } : {}),
        },
        data: { apiKey: Buffer.from(`key-of-team-${i}`).toString('base64') },
      } as KubeObject);
    }
    lw.put('secrets', { metadata: { namespace: 'team-0', name: 'unrelated', uid: 'u', resourceVersion: '1' }, data: { x: 'eA==' } } as KubeObject);
    return lw;
  }

  it('hold only labelled Secrets, stripped, through one watch however many configs name Secrets', async () => {
    const lw = world();
    const factory = new InformerFactory({ lw, logger: silent, reflector: { backoff: fastBackoff } });
    const mgr = new Manager({ logger: silent, informers: factory, metricsBindAddress: '0', healthProbeBindAddress: '0' });
    const clients = new ProviderClients();
    const unused = async (): Promise<never> => {
      throw new Error('no writes in this test');
    };
    setupBucketControllers(mgr, {
      clients,
      clusterId: 'cluster-1',
      events: { event: () => undefined },
      writer: {
        addFinalizer: unused,
        removeFinalizer: unused,
        patchStatus: unused,
        patchMetadata: unused,
        apply: unused,
        create: unused,
        get: unused,
        configHasUsers: unused,
      },
    });
    try {
      factory.start();
      await factory.waitForSync();
      // Let the config informer's adds lead wherever they lead (on 606f4bc: a watch per Secret).
      await eventually(() => expect(lw.openWatches().filter((w) => w.plural === 'bucketproviderconfigs')).to.have.length(1), IN_PROCESS);
      await factory.waitForSync();

      const secretInformers = factory.informers().filter((i) => i.kind.plural === 'secrets');
      const cached = secretInformers.flatMap((i) => i.cache.list());
      const names = cached.map((o) => `${o.metadata?.namespace}/${o.metadata?.name}`).sort();
      const labelled = [...Array(TENANTS).keys()]
        .filter((i) => i % 2 === 0)
        .map((i) => `team-${i}/creds`)
        .sort();
      expect(names, 'cached Secrets').to.deep.equal(labelled);
      for (const o of cached) expect(o.metadata?.managedFields, 'managedFields').to.equal(undefined);
      // Owned Secrets and credentials: two label-selected informers, not one per config.
      expect(secretInformers, 'Secret informers').to.have.length(2);
      const secretRequests = [
        ...lw.lists.filter((l) => l.plural === 'secrets'),
        ...lw.watches.filter((w) => w.plural === 'secrets').map((w) => w.opts),
      ];
      for (const opts of secretRequests)
        expect(opts.labelSelector, 'every Secret list and watch selects by label').to.be.a('string').and.not.equal('');
      expect(
        lw.openWatches().filter((w) => w.plural === 'secrets'),
        'open Secret watches',
      ).to.have.length(2);
    } finally {
      await factory.stop();
      clients.close();
    }
  });
});
