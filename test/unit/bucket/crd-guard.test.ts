/**
 * The uninstall guard's fact: whether the StorageBucket CRD is being deleted, answered fresh
 * enough for an object whose deletion was seen before the question (the CRD's watch event may
 * come after its objects'), with one shared GET at a time.
 */
import { expect } from 'chai';
import { Registry } from 'prom-client';
import { crdGuard, crdMetadataOnly, freshReads, RELEASED_ON_CRD_DELETION_METRIC, STORAGE_BUCKET_CRD_NAME } from '../../../operator/bucket/crd-guard';
import type { KubeObject } from '../../../operator/runtime';

const live: KubeObject = { metadata: { name: STORAGE_BUCKET_CRD_NAME, uid: 'crd-1', resourceVersion: '5' } };
const deleting: KubeObject = { metadata: { ...live.metadata, deletionTimestamp: new Date('2026-01-01T00:00:00Z') } };

/** A promise and the functions that settle it. */
function deferred<T>(): { promise: Promise<T>; resolve: (v: T) => void; reject: (e: unknown) => void } {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

describe('crdGuard', () => {
  const cases: Record<
    string,
    { args: { cached: KubeObject | undefined; read: KubeObject | undefined }; want: { deleting: boolean; reads: number } }
  > = {
    'the informer has seen the deletion: believed, no GET (a deletionTimestamp is never taken back)': {
      args: { cached: deleting, read: live },
      want: { deleting: true, reads: 0 },
    },
    "the informer has not seen it yet, the API server has (the objects' events came first)": {
      args: { cached: live, read: deleting },
      want: { deleting: true, reads: 1 },
    },
    'the CRD is gone': { args: { cached: undefined, read: undefined }, want: { deleting: true, reads: 1 } },
    'the CRD is there and not being deleted: a user deleted the object': {
      args: { cached: live, read: live },
      want: { deleting: false, reads: 1 },
    },
  };
  for (const [name, { args, want }] of Object.entries(cases)) {
    it(name, async () => {
      let reads = 0;
      const guard = crdGuard({
        cache: { get: (key) => (key.name === STORAGE_BUCKET_CRD_NAME && key.namespace === '' ? args.cached : undefined) },
        read: async () => {
          reads++;
          return args.read;
        },
        registry: new Registry(),
      });
      expect(await guard.deleting()).to.equal(want.deleting);
      expect(reads, 'GETs').to.equal(want.reads);
    });
  }

  it('rejects when the CRD cannot be read, so nothing is decided on a guess', async () => {
    const guard = crdGuard({ cache: { get: () => live }, read: () => Promise.reject(new Error('forbidden')), registry: new Registry() });
    const err = await guard.deleting().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).to.be.instanceOf(Error).with.property('message', 'forbidden');
  });

  it('counts released objects', async () => {
    const registry = new Registry();
    const guard = crdGuard({ cache: { get: () => deleting }, read: async () => deleting, registry });
    guard.released();
    guard.released();
    const text = await registry.metrics();
    expect(text).to.match(new RegExp(`^${RELEASED_ON_CRD_DELETION_METRIC} 2$`, 'm'));
  });

  it('caches only the identity and the deletionTimestamp of the CRD', () => {
    const crd = {
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { ...deleting.metadata, labels: { a: 'b' }, annotations: { c: 'd' } },
      spec: { versions: [{ name: 'v1', schema: {} }] },
      status: { conditions: [] },
    } as KubeObject;
    expect(crdMetadataOnly(crd)).to.deep.equal({
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: deleting.metadata,
    });
    expect(crdMetadataOnly({ ...crd, metadata: { ...live.metadata, labels: { a: 'b' } } }).metadata).to.deep.equal(live.metadata);
  });
});

describe('freshReads', () => {
  it('gives each caller a read that began after its call; callers during one read share the next', async () => {
    const reads: Array<ReturnType<typeof deferred<string>>> = [];
    const read = freshReads(() => {
      const d = deferred<string>();
      reads.push(d);
      return d.promise;
    });
    const first = read();
    // Both arrive while the first read is in flight: it may predate what they saw.
    const second = read();
    const third = read();
    expect(reads, 'reads begun').to.have.length(1);
    reads[0]?.resolve('before');
    expect(await first).to.equal('before');
    await new Promise((r) => setImmediate(r));
    expect(reads, 'reads begun').to.have.length(2);
    reads[1]?.resolve('after');
    expect([await second, await third]).to.deep.equal(['after', 'after']);
    // Nothing in flight: a new caller starts its own.
    const fourth = read();
    expect(reads).to.have.length(3);
    reads[2]?.resolve('later');
    expect(await fourth).to.equal('later');
  });

  it('a failed read fails its callers only; the next caller reads again', async () => {
    let n = 0;
    const read = freshReads(async () => {
      n++;
      if (n === 1) throw new Error('boom');
      return n;
    });
    const err = await read().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).to.be.instanceOf(Error);
    expect(await read()).to.equal(2);
  });

  it('a read that fails while others wait still starts theirs', async () => {
    const reads: Array<ReturnType<typeof deferred<number>>> = [];
    const read = freshReads(() => {
      const d = deferred<number>();
      reads.push(d);
      return d.promise;
    });
    const first = read().catch((e: unknown) => e);
    const second = read();
    reads[0]?.reject(new Error('boom'));
    expect(await first).to.be.instanceOf(Error);
    await new Promise((r) => setImmediate(r));
    reads[1]?.resolve(7);
    expect(await second).to.equal(7);
  });
});
