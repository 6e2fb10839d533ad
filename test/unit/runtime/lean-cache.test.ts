import { expect } from 'chai';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import type { ListerWatcher, ListOptions, ListResult, WatchOptions } from '../../../operator/runtime/client';
import type { WatchEvent } from '../../../operator/runtime/watch-events';
import { SharedInformer } from '../../../operator/runtime/informer';
import { CACHED_OBJECTS_METRIC, InformerFactory } from '../../../operator/runtime/informer-factory';
import { NamedInformers } from '../../../operator/runtime/named-informers';
import { LAST_APPLIED_ANNOTATION, stripManagedFields } from '../../../operator/runtime/transforms';
import type { KubeObject, ObjectKey, ResourceKind } from '../../../operator/runtime/types';
import { FakeWatch } from './fake-lister-watcher';
import { FakeInformer, FakeInformerSource } from './fakes';
import { eventually, IN_PROCESS } from '../../support/eventually';

const secrets: ResourceKind = { group: '', version: 'v1', kind: 'Secret', plural: 'secrets', namespaced: true };
const configs: ResourceKind = { group: 'x.example', version: 'v1', kind: 'Config', plural: 'configs', namespaced: true };
const silent = pino({ level: 'silent' });
const fastBackoff = { initialMs: 2, maxMs: 10 };

/** A fake API that honours namespace and `metadata.name=` field selectors, as the server does. */
class SelectingLister implements ListerWatcher {
  readonly objects: KubeObject[] = [];
  readonly lists: ListOptions[] = [];
  readonly watches: FakeWatch[] = [];
  private rv = 1;

  add(namespace: string, name: string, extra: Record<string, unknown> = {}): KubeObject {
    const obj = { metadata: { namespace, name, uid: `uid-${name}`, resourceVersion: String(++this.rv) }, ...extra } as KubeObject;
    this.objects.push(obj);
    return obj;
  }

  /** Sends `obj` on every open watch whose selectors match it. */
  send(type: 'ADDED' | 'MODIFIED' | 'DELETED', obj: KubeObject): void {
    for (const w of this.watches) if (!w.closed && matches(obj, w.opts)) w.send(type, structuredClone(obj));
  }

  openWatches(): FakeWatch[] {
    return this.watches.filter((w) => !w.closed);
  }

  async list<T extends KubeObject>(_kind: ResourceKind, opts: ListOptions = {}): Promise<ListResult<T>> {
    this.lists.push(opts);
    // Copies, as a real list decodes fresh objects each time.
    return { items: structuredClone(this.objects.filter((o) => matches(o, opts))) as T[], resourceVersion: String(this.rv) };
  }

  watch<T extends KubeObject>(_kind: ResourceKind, opts: WatchOptions = {}): AsyncIterable<WatchEvent<T>> {
    const w = new FakeWatch(opts);
    this.watches.push(w);
    return w.stream() as AsyncIterable<WatchEvent<T>>;
  }
}

function matches(obj: KubeObject, opts: { namespace?: string; fieldSelector?: string }): boolean {
  if (opts.namespace && obj.metadata?.namespace !== opts.namespace) return false;
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

describe('NamedInformers', () => {
  type Cfg = KubeObject & { ref?: string };
  const cfg = (name: string, ref?: string): Cfg => ({ metadata: { namespace: 'ns', name }, ...(ref ? { ref } : {}) });
  const refsOf = (c: Cfg): ObjectKey[] => (c.ref ? [{ namespace: 'ns', name: c.ref }] : []);

  function setup() {
    const lw = new SelectingLister();
    const factory = new InformerFactory({ lw, logger: silent, reflector: { backoff: fastBackoff } });
    const driver = new FakeInformer<Cfg>(configs);
    const named = new NamedInformers<KubeObject>({ source: factory, kind: secrets, logger: silent }).trackReferences(driver, refsOf);
    return { lw, factory, driver, named };
  }

  it('caches only the objects referred to, each through its own name-selected informer', async () => {
    const { lw, factory, driver, named } = setup();
    lw.add('ns', 'creds-a');
    lw.add('ns', 'creds-b');
    lw.add('ns', 'unrelated');
    try {
      driver.upsert(cfg('one', 'creds-a'));
      driver.upsert(cfg('two', 'creds-a'));
      driver.upsert(cfg('three', 'creds-b'));
      named.start();
      await named.waitForSync();
      expect(
        named.cache
          .list()
          .map((o) => o.metadata?.name)
          .sort(),
      ).to.deep.equal(['creds-a', 'creds-b']);
      expect(named.cache.get({ namespace: 'ns', name: 'unrelated' })).to.equal(undefined);
      // One informer per referenced name, however many referrers share it; none lists everything.
      expect(factory.informers()).to.have.length(2);
      expect(lw.lists.every((l) => l.fieldSelector?.startsWith('metadata.name='))).to.equal(true);
    } finally {
      await named.stop();
    }
  });

  it('stops watching a name once nothing refers to it, and starts again when something does', async () => {
    const { lw, factory, driver, named } = setup();
    lw.add('ns', 'creds-a');
    lw.add('ns', 'creds-b');
    try {
      driver.upsert(cfg('one', 'creds-a'));
      driver.upsert(cfg('two', 'creds-a'));
      named.start();
      await named.waitForSync();
      await eventually(() => expect(lw.openWatches()).to.have.length(1), IN_PROCESS);

      driver.remove(cfg('one', 'creds-a'));
      expect(named.isTracked({ namespace: 'ns', name: 'creds-a' })).to.equal(true);
      driver.upsert(cfg('two', 'creds-b'));
      expect(named.isTracked({ namespace: 'ns', name: 'creds-a' })).to.equal(false);
      expect(named.cache.get({ namespace: 'ns', name: 'creds-a' })).to.equal(undefined);
      await named.waitForSync();
      expect(named.cache.list().map((o) => o.metadata?.name)).to.deep.equal(['creds-b']);
      await eventually(() => expect(lw.openWatches().map((w) => w.opts.fieldSelector)).to.deep.equal(['metadata.name=creds-b']), IN_PROCESS);
      expect(factory.informers()).to.have.length(1);

      driver.remove(cfg('two', 'creds-b'));
      await eventually(() => expect(lw.openWatches()).to.have.length(0), IN_PROCESS);
      expect(named.cache.list()).to.deep.equal([]);
    } finally {
      await named.stop();
    }
  });

  it('tells its handlers about changes to the objects it watches, and lets a read wait for one name', async () => {
    const { lw, driver, named } = setup();
    const creds = lw.add('ns', 'creds-a', { data: { apiKey: 'b2xk' } });
    const seen: string[] = [];
    named.addEventHandler({ onAdd: (o) => seen.push(`add ${o.metadata?.name}`), onUpdate: (_a, b) => seen.push(`update ${b.metadata?.name}`) });
    try {
      named.start();
      await named.waitForSync();
      driver.upsert(cfg('late', 'creds-a'));
      // Read right after the reference appeared: waiting makes "absent" mean absent.
      await named.cache.waitForKey({ namespace: 'ns', name: 'creds-a' });
      expect(named.cache.get({ namespace: 'ns', name: 'creds-a' })).to.not.equal(undefined);
      await eventually(() => expect(lw.openWatches()).to.have.length(1), IN_PROCESS);
      lw.send('MODIFIED', { ...creds, metadata: { ...creds.metadata, resourceVersion: '99' }, data: { apiKey: 'bmV3' } } as KubeObject);
      await eventually(() => expect(seen).to.deep.equal(['add creds-a', 'update creds-a']), IN_PROCESS);
      // Nothing refers to this one, so there is nothing to wait for.
      await named.cache.waitForKey({ namespace: 'ns', name: 'nobody' });
    } finally {
      await named.stop();
    }
  });

  it('needs a source that can remove informers', () => {
    const source = new FakeInformerSource();
    expect(() => new NamedInformers({ source, kind: secrets, logger: silent })).to.throw(/remove informers/);
  });
});
