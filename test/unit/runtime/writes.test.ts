import { expect } from 'chai';
import type { V1OwnerReference } from '@kubernetes/client-node';
import { applyConfiguration, applyObject, ownerReference, withOwner } from '../../../operator/runtime/apply';
import type { ApplyOptions, JsonPatchOp, PatchType } from '../../../operator/runtime/client';
import { addFinalizer, finalizerPatch, hasFinalizer, removeFinalizer } from '../../../operator/runtime/finalizers';
import { jsonEqual, mergePatchDiff, patchStatus } from '../../../operator/runtime/status';
import type { KubeObject, ResourceKind } from '../../../operator/runtime/types';

const kind: ResourceKind = { group: 'example.com', version: 'v1', kind: 'Widget', plural: 'widgets', namespaced: true };
const owner: KubeObject = { apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'w', namespace: 'ns', uid: 'u1' } };

describe('ownerReference / withOwner', () => {
  it('builds a controller reference that blocks owner deletion by default', () => {
    expect(ownerReference(owner)).to.deep.equal({
      apiVersion: 'example.com/v1',
      kind: 'Widget',
      name: 'w',
      uid: 'u1',
      controller: true,
      blockOwnerDeletion: true,
    });
    expect(ownerReference(owner, { controller: false, blockOwnerDeletion: false })).to.include({ controller: false, blockOwnerDeletion: false });
  });

  it('refuses an owner that did not come from the API', () => {
    expect(() => ownerReference({ metadata: { name: 'x' } })).to.throw(/uid/);
  });

  it('replaces a reference to the same owner and keeps others', () => {
    const other: V1OwnerReference = { apiVersion: 'v1', kind: 'ConfigMap', name: 'c', uid: 'u2' };
    const stale = { apiVersion: 'example.com/v1', kind: 'Widget', name: 'w', uid: 'u1', controller: false };
    const owned = withOwner({ metadata: { name: 'o', namespace: 'ns', ownerReferences: [other, stale] } }, owner);
    expect(owned.metadata?.ownerReferences?.map((r) => `${r.uid}:${r.controller}`)).to.deep.equal(['u2:undefined', 'u1:true']);
  });

  it('refuses an owner in another namespace', () => {
    expect(() => withOwner({ metadata: { name: 'o', namespace: 'other' } }, owner)).to.throw(/another namespace/);
  });
});

describe('applyObject', () => {
  it('strips server-owned metadata and status, and forces by default', async () => {
    const calls: Array<{ obj: KubeObject; opts: ApplyOptions }> = [];
    const client = {
      apply: async <T extends KubeObject>(_k: ResourceKind, obj: KubeObject, opts: ApplyOptions): Promise<T> => {
        calls.push({ obj, opts });
        return obj as T;
      },
    };
    const fromCache = {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'c', namespace: 'ns', resourceVersion: '9', uid: 'u', managedFields: [{ manager: 'x' }], labels: { a: 'b' } },
      data: { k: 'v' },
      status: { x: 1 },
    };
    await applyObject(client, kind, fromCache, { fieldManager: 'mgr' });
    expect(calls[0]?.obj).to.deep.equal({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'c', namespace: 'ns', labels: { a: 'b' } },
      data: { k: 'v' },
    });
    expect(calls[0]?.opts).to.include({ fieldManager: 'mgr', force: true });
    expect(applyConfiguration(fromCache)).to.not.equal(fromCache);
    expect(fromCache.metadata.resourceVersion).to.equal('9');
  });
});

describe('mergePatchDiff', () => {
  const cases: Record<string, { from: unknown; to: unknown; want: unknown }> = {
    'equal values need no patch': { from: { a: 1, b: { c: [1, 2] } }, to: { b: { c: [1, 2] }, a: 1 }, want: undefined },
    'a changed scalar': { from: { a: 1, b: 2 }, to: { a: 1, b: 3 }, want: { b: 3 } },
    'a removed member becomes null': { from: { a: 1, b: 2 }, to: { a: 1 }, want: { b: null } },
    'nested changes only': { from: { s: { x: 1, y: 2 } }, to: { s: { x: 1, y: 5, z: 0 } }, want: { s: { y: 5, z: 0 } } },
    'arrays are replaced whole': { from: { c: [{ t: 'A', s: 'True' }] }, to: { c: [{ t: 'A', s: 'False' }] }, want: { c: [{ t: 'A', s: 'False' }] } },
    'from nothing': { from: {}, to: { a: { b: 1 } }, want: { a: { b: 1 } } },
    'undefined members are absent': { from: { a: 1 }, to: { a: 1, b: undefined }, want: undefined },
  };
  for (const [name, tc] of Object.entries(cases)) {
    it(name, () => expect(mergePatchDiff(tc.from, tc.to)).to.deep.equal(tc.want));
  }

  it('jsonEqual tells arrays from objects', () => {
    expect(jsonEqual([], {})).to.equal(false);
    expect(jsonEqual({ a: [1] }, { a: [1] })).to.equal(true);
  });
});

describe('patchStatus', () => {
  type Patched = { ns: string; name: string; patch: unknown; type: PatchType };
  function fake(): {
    calls: Patched[];
    client: { patchStatus: <T extends KubeObject>(k: ResourceKind, ns: string, name: string, patch: unknown, type: PatchType) => Promise<T> };
  } {
    const calls: Patched[] = [];
    return {
      calls,
      client: {
        patchStatus: async <T extends KubeObject>(_k: ResourceKind, ns: string, name: string, patch: unknown, type: PatchType): Promise<T> => {
          calls.push({ ns, name, patch, type });
          return { metadata: { name, namespace: ns, resourceVersion: '2' } } as T;
        },
      },
    };
  }
  const obj = { metadata: { name: 'w', namespace: 'ns', resourceVersion: '1' }, status: { phase: 'A', gone: true } };

  it('writes nothing and returns the same object when the status is unchanged', async () => {
    const f = fake();
    const out = await patchStatus(f.client, kind, obj, { gone: true, phase: 'A' });
    expect(out).to.equal(obj);
    expect(f.calls).to.have.length(0);
  });

  it('sends only the difference as a merge patch', async () => {
    const f = fake();
    await patchStatus(f.client, kind, obj, { phase: 'B' });
    expect(f.calls).to.deep.equal([{ ns: 'ns', name: 'w', type: 'merge', patch: { status: { phase: 'B', gone: null } } }]);
  });

  it('carries the resourceVersion when asked to be optimistic', async () => {
    const f = fake();
    await patchStatus(f.client, kind, obj, { phase: 'B', gone: true }, { optimistic: true });
    expect(f.calls[0]?.patch).to.deep.equal({ status: { phase: 'B' }, metadata: { resourceVersion: '1' } });
  });
});

describe('finalizers', () => {
  const F = 'example.com/cleanup';
  const cases: Record<string, { finalizers?: string[]; change: 'add' | 'remove'; want: JsonPatchOp[] | undefined }> = {
    'add to an object without finalizers': {
      change: 'add',
      want: [
        { op: 'replace', path: '/metadata/resourceVersion', value: '7' },
        { op: 'add', path: '/metadata/finalizers', value: [F] },
      ],
    },
    'add keeps other finalizers': {
      finalizers: ['other'],
      change: 'add',
      want: [
        { op: 'replace', path: '/metadata/resourceVersion', value: '7' },
        { op: 'add', path: '/metadata/finalizers', value: ['other', F] },
      ],
    },
    'add when present is a no-op': { finalizers: [F], change: 'add', want: undefined },
    'remove keeps other finalizers': {
      finalizers: ['a', F, 'b'],
      change: 'remove',
      want: [
        { op: 'replace', path: '/metadata/resourceVersion', value: '7' },
        { op: 'add', path: '/metadata/finalizers', value: ['a', 'b'] },
      ],
    },
    'remove when absent is a no-op': { finalizers: ['a'], change: 'remove', want: undefined },
  };
  for (const [name, tc] of Object.entries(cases)) {
    it(name, () => {
      const obj: KubeObject = { metadata: { name: 'w', namespace: 'ns', resourceVersion: '7', finalizers: tc.finalizers } };
      expect(finalizerPatch(obj, F, tc.change)).to.deep.equal(tc.want);
    });
  }

  it('refuses to write without a resourceVersion (it would not be guarded)', () => {
    expect(() => finalizerPatch({ metadata: { name: 'w' } }, F, 'add')).to.throw(/resourceVersion/);
  });

  it('sends no request for a no-op and returns the object as given', async () => {
    let calls = 0;
    const client = {
      patch: async <T extends KubeObject>(): Promise<T> => {
        calls++;
        return {} as T;
      },
    };
    const obj: KubeObject = { metadata: { name: 'w', namespace: 'ns', resourceVersion: '7', finalizers: [F] } };
    expect(await addFinalizer(client, kind, obj, F)).to.equal(obj);
    expect(await removeFinalizer(client, kind, { metadata: { name: 'w', resourceVersion: '1' } }, F)).to.deep.equal({
      metadata: { name: 'w', resourceVersion: '1' },
    });
    expect(calls).to.equal(0);
    expect(hasFinalizer(obj, F)).to.equal(true);
  });
});
