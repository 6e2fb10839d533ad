import { expect } from 'chai';
import { diffRelist, IndexedCache } from '../../../operator/runtime/cache';
import type { KubeObject } from '../../../operator/runtime/types';

interface Obj extends KubeObject {
  spec?: { owner?: string; tags?: string[] };
}

function obj(ns: string, name: string, rv = '1', extra: Partial<Obj> = {}, uid = `uid-${ns}-${name}`): Obj {
  return { metadata: { namespace: ns, name, resourceVersion: rv, uid }, ...extra };
}

const names = (objs: KubeObject[]): string[] => objs.map((o) => `${o.metadata?.namespace}/${o.metadata?.name}`).sort();

describe('IndexedCache', () => {
  it('gets, lists all and lists by namespace', () => {
    const c = new IndexedCache<Obj>();
    c.upsert(obj('a', 'x'));
    c.upsert(obj('a', 'y'));
    c.upsert(obj('b', 'x'));
    expect(c.get({ namespace: 'a', name: 'x' })?.metadata?.name).to.equal('x');
    expect(c.get({ namespace: 'c', name: 'x' })).to.equal(undefined);
    expect(names(c.list())).to.deep.equal(['a/x', 'a/y', 'b/x']);
    expect(names(c.list('a'))).to.deep.equal(['a/x', 'a/y']);
    expect(c.list('nope')).to.deep.equal([]);
  });

  it('keeps cluster-scoped objects under the empty namespace', () => {
    const c = new IndexedCache<Obj>();
    c.upsert({ metadata: { name: 'node1' } });
    expect(c.get({ namespace: '', name: 'node1' })?.metadata?.name).to.equal('node1');
    expect(c.getByKey('node1')?.metadata?.name).to.equal('node1');
  });

  it('maintains an index across add, update and remove', () => {
    const c = new IndexedCache<Obj>();
    c.addIndex('owner', (o) => (o.spec?.owner ? [o.spec.owner] : []));
    c.upsert(obj('a', 'x', '1', { spec: { owner: 'o1' } }));
    c.upsert(obj('a', 'y', '1', { spec: { owner: 'o1' } }));
    expect(names(c.byIndex('owner', 'o1'))).to.deep.equal(['a/x', 'a/y']);

    c.upsert(obj('a', 'x', '2', { spec: { owner: 'o2' } }));
    expect(names(c.byIndex('owner', 'o1'))).to.deep.equal(['a/y']);
    expect(names(c.byIndex('owner', 'o2'))).to.deep.equal(['a/x']);

    c.remove({ namespace: 'a', name: 'y' });
    expect(c.byIndex('owner', 'o1')).to.deep.equal([]);
    expect(c.size).to.equal(1);
  });

  it('files existing objects under an index added later, with multiple values', () => {
    const c = new IndexedCache<Obj>();
    c.upsert(obj('a', 'x', '1', { spec: { tags: ['t1', 't2', 't1'] } }));
    c.addIndex('tag', (o) => o.spec?.tags ?? []);
    expect(names(c.byIndex('tag', 't1'))).to.deep.equal(['a/x']);
    expect(names(c.byIndex('tag', 't2'))).to.deep.equal(['a/x']);
  });

  it('accepts the same index function twice and rejects a different one under the same name', () => {
    const c = new IndexedCache<Obj>();
    const fn = (o: Obj): string[] => [o.metadata?.name ?? ''];
    c.addIndex('n', fn);
    c.addIndex('n', fn);
    expect(() => c.addIndex('n', () => [])).to.throw(/already registered/);
  });

  it('throws for an unknown index', () => {
    expect(() => new IndexedCache<Obj>().byIndex('nope', 'v')).to.throw(/no index named nope/);
  });

  it('files an object under nothing when its index function throws, and reports it', () => {
    const errors: string[] = [];
    const c = new IndexedCache<Obj>({ onIndexError: (index, key) => errors.push(`${index}:${key}`) });
    c.addIndex('bad', () => {
      throw new Error('boom');
    });
    c.upsert(obj('a', 'x'));
    expect(c.get({ namespace: 'a', name: 'x' })).to.not.equal(undefined);
    expect(errors).to.deep.equal(['bad:a/x']);
  });
});

describe('diffRelist', () => {
  const cases: Record<string, { stored: Obj[]; listed: Obj[]; added: string[]; updated: string[]; unchanged: string[]; deleted: string[] }> = {
    'empty store: everything is added': {
      stored: [],
      listed: [obj('a', 'x'), obj('a', 'y')],
      added: ['a/x', 'a/y'],
      updated: [],
      unchanged: [],
      deleted: [],
    },
    'objects missing from the list are deleted': {
      stored: [obj('a', 'x'), obj('a', 'gone')],
      listed: [obj('a', 'x')],
      added: [],
      updated: [],
      unchanged: ['a/x'],
      deleted: ['a/gone'],
    },
    'a changed resourceVersion is an update': {
      stored: [obj('a', 'x', '1')],
      listed: [obj('a', 'x', '5')],
      added: [],
      updated: ['a/x'],
      unchanged: [],
      deleted: [],
    },
    'a recreated object (new uid) is a delete plus an add': {
      stored: [obj('a', 'x', '1', {}, 'old')],
      listed: [obj('a', 'x', '9', {}, 'new')],
      added: ['a/x'],
      updated: [],
      unchanged: [],
      deleted: ['a/x'],
    },
    'an empty list deletes everything': {
      stored: [obj('a', 'x'), obj('b', 'y')],
      listed: [],
      added: [],
      updated: [],
      unchanged: [],
      deleted: ['a/x', 'b/y'],
    },
    'same name in different namespaces are different objects': {
      stored: [obj('a', 'x')],
      listed: [obj('b', 'x')],
      added: ['b/x'],
      updated: [],
      unchanged: [],
      deleted: ['a/x'],
    },
  };
  for (const [name, tc] of Object.entries(cases)) {
    it(name, () => {
      const d = diffRelist(tc.stored, tc.listed);
      expect(names(d.added)).to.deep.equal(tc.added);
      expect(names(d.updated.map((u) => u.newObj))).to.deep.equal(tc.updated);
      expect(names(d.unchanged)).to.deep.equal(tc.unchanged);
      expect(names(d.deleted)).to.deep.equal(tc.deleted);
    });
  }

  it('pairs an update with the stored copy', () => {
    const old = obj('a', 'x', '1');
    const d = diffRelist([old], [obj('a', 'x', '2')]);
    expect(d.updated[0]?.oldObj).to.equal(old);
  });
});
