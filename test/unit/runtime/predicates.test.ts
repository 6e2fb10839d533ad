import { expect } from 'chai';
import {
  allowCreate,
  allowDelete,
  allowUpdate,
  and,
  annotationsChanged,
  generationChanged,
  generationChangedOrAnnotations,
  labelsChanged,
  not,
  or,
  resourceVersionChanged,
  type Predicate,
} from '../../../operator/runtime/predicates';
import type { KubeObject } from '../../../operator/runtime/types';

type Meta = NonNullable<KubeObject['metadata']>;
const base: Meta = {
  name: 'a',
  namespace: 'ns',
  generation: 1,
  resourceVersion: '10',
  labels: { app: 'x' },
  annotations: { note: 'one', 'example.com/pause': 'false' },
  finalizers: ['example.com/cleanup'],
};
const obj = (m: Partial<Meta> = {}): KubeObject => ({ metadata: { ...base, ...m } });

const updateCases: Record<string, { p: Predicate; old: KubeObject; new: KubeObject; pass: boolean }> = {
  'generationChanged: status-only write (new resourceVersion) is dropped': {
    p: generationChanged,
    old: obj(),
    new: obj({ resourceVersion: '11' }),
    pass: false,
  },
  'generationChanged: spec change passes': { p: generationChanged, old: obj(), new: obj({ generation: 2 }), pass: true },
  'generationChanged: deletion passes': {
    p: generationChanged,
    old: obj(),
    new: obj({ deletionTimestamp: new Date(0) }),
    pass: true,
  },
  'generationChanged: a status-only write while deleting is dropped': {
    p: generationChanged,
    old: obj({ deletionTimestamp: new Date(0) }),
    new: obj({ deletionTimestamp: new Date(0), resourceVersion: '12' }),
    pass: false,
  },
  'generationChanged: finalizer removed passes': { p: generationChanged, old: obj(), new: obj({ finalizers: [] }), pass: true },
  'generationChanged: annotation changed passes': {
    p: generationChanged,
    old: obj(),
    new: obj({ annotations: { ...base.annotations, note: 'two' } }),
    pass: true,
  },
  'generationChanged: label change is dropped': {
    p: generationChanged,
    old: obj(),
    new: obj({ labels: { app: 'y' } }),
    pass: false,
  },
  'generationChangedOrAnnotations(keys): other annotation is dropped': {
    p: generationChangedOrAnnotations(['example.com/pause']),
    old: obj(),
    new: obj({ annotations: { ...base.annotations, note: 'two' } }),
    pass: false,
  },
  'generationChangedOrAnnotations(keys): watched annotation passes': {
    p: generationChangedOrAnnotations(['example.com/pause']),
    old: obj(),
    new: obj({ annotations: { ...base.annotations, 'example.com/pause': 'true' } }),
    pass: true,
  },
  'generationChangedOrAnnotations(keys): watched annotation removed passes': {
    p: generationChangedOrAnnotations(['example.com/pause']),
    old: obj(),
    new: obj({ annotations: { note: 'one' } }),
    pass: true,
  },
  'annotationsChanged: missing and empty maps are equal': {
    p: annotationsChanged(),
    old: obj({ annotations: undefined }),
    new: obj({ annotations: {} }),
    pass: false,
  },
  'labelsChanged: label change passes': { p: labelsChanged, old: obj(), new: obj({ labels: { app: 'y' } }), pass: true },
  'labelsChanged: same labels are dropped': {
    p: labelsChanged,
    old: obj(),
    new: obj({ labels: { app: 'x' }, generation: 5 }),
    pass: false,
  },
  'resourceVersionChanged: resync (same resourceVersion) is dropped': {
    p: resourceVersionChanged,
    old: obj(),
    new: obj(),
    pass: false,
  },
  'resourceVersionChanged: new resourceVersion passes': {
    p: resourceVersionChanged,
    old: obj(),
    new: obj({ resourceVersion: '11' }),
    pass: true,
  },
  'and: all must pass': {
    p: and(generationChanged, labelsChanged),
    old: obj(),
    new: obj({ generation: 2 }),
    pass: false,
  },
  'and: passes when all pass': {
    p: and(generationChanged, labelsChanged),
    old: obj(),
    new: obj({ generation: 2, labels: {} }),
    pass: true,
  },
  'or: one is enough': { p: or(generationChanged, labelsChanged), old: obj(), new: obj({ labels: {} }), pass: true },
  'or: none passes': { p: or(generationChanged, labelsChanged), old: obj(), new: obj({ resourceVersion: '9' }), pass: false },
  'not: inverts': { p: not(labelsChanged), old: obj(), new: obj({ labels: {} }), pass: false },
};

describe('predicates', () => {
  for (const [name, tc] of Object.entries(updateCases)) {
    it(name, () => {
      expect(allowUpdate(tc.p, tc.old, tc.new)).to.equal(tc.pass);
    });
  }

  it('let creates and deletes through unless a predicate filters them', () => {
    for (const p of [generationChanged, labelsChanged, resourceVersionChanged, annotationsChanged(['k'])]) {
      expect(allowCreate(p, obj())).to.equal(true);
      expect(allowDelete(p, obj())).to.equal(true);
    }
    const onlyNamed: Predicate = { create: (o) => o.metadata?.name === 'b', delete: () => false };
    expect(allowCreate(onlyNamed, obj())).to.equal(false);
    expect(allowDelete(onlyNamed, obj())).to.equal(false);
    expect(allowUpdate(onlyNamed, obj(), obj()), 'unset update passes').to.equal(true);
  });

  it('combinators apply per event kind', () => {
    const noDeletes: Predicate = { delete: () => false };
    expect(allowDelete(and(generationChanged, noDeletes), obj())).to.equal(false);
    expect(allowCreate(and(generationChanged, noDeletes), obj())).to.equal(true);
    expect(allowDelete(or(noDeletes, generationChanged), obj())).to.equal(true);
    expect(allowCreate(not(noDeletes), obj()), 'not() of an unset method drops').to.equal(false);
    expect(allowDelete(not(noDeletes), obj())).to.equal(true);
    expect(allowUpdate(and(), obj(), obj())).to.equal(true);
    expect(allowUpdate(or(), obj(), obj())).to.equal(false);
  });
});
