import { expect } from 'chai';
import { BucketStore } from '../../../provider/store';
import { createRequest, httpError, storeFixture } from './helpers';

const fixture = () => storeFixture({ resizeDelayMs: 500 });
const req = createRequest;

describe('provider/store', () => {
  it('creates a Provisioning bucket with a host-name endpoint, Active once the delay passed', () => {
    const { store, clock } = fixture();
    const { outcome, bucket } = store.create(req({ region: 'eu-west-1' }), 'k');
    expect(outcome).to.equal('created');
    expect(bucket.id).to.match(/^bucket-[0-9a-f]{12}$/);
    expect(bucket.endpoint).to.equal(`https://${bucket.id}.eu-west-1.storage.example`);
    expect(bucket.phase).to.equal('Provisioning');
    expect(bucket.idempotencyKey).to.equal('k');
    clock.t += 999;
    expect(store.get(bucket.id)?.phase).to.equal('Provisioning');
    clock.t += 1;
    const active = store.get(bucket.id);
    expect(active?.phase).to.equal('Active');
    expect(active?.updatedAt).to.equal(new Date(clock.t).toISOString());
    expect(active?.createdAt).to.equal(bucket.createdAt);
  });

  it('replays the same key and body, ignoring key order and explicit defaults', () => {
    const { store } = fixture();
    const first = store.create(req({ tags: { a: '1', b: '2' } }), 'k');
    const again = store.create(req({ tags: { b: '2', a: '1' }, encrypted: false }), 'k');
    expect(again.outcome).to.equal('replayed');
    expect(again.bucket.id).to.equal(first.bucket.id);
    expect(store.count()).to.equal(1);
  });

  it('rejects a key reused with another body (409) and a key whose bucket was deleted (410)', () => {
    const { store } = fixture();
    const { bucket } = store.create(req(), 'k');
    const reused = httpError(() => store.create(req({ sizeGB: 11 }), 'k'));
    expect([reused.status, reused.code]).to.deep.equal([409, 'IdempotencyKeyReused']);
    store.delete(bucket.id);
    const gone = httpError(() => store.create(req(), 'k'));
    expect([gone.status, gone.code]).to.deep.equal([410, 'BucketDeleted']);
    expect(store.count()).to.equal(0);
  });

  it('creates a new bucket for every request without a key', () => {
    const { store } = fixture();
    store.create(req());
    store.create(req());
    expect(store.count()).to.equal(2);
  });

  describe('update', () => {
    const cases: Record<string, { patch: Parameters<BucketStore['update']>[1]; status: number; code?: string; phase?: string }> = {
      'grow puts the bucket in Resizing': { patch: { sizeGB: 20 }, status: 200, phase: 'Resizing' },
      'same size changes nothing': { patch: { sizeGB: 10 }, status: 200, phase: 'Active' },
      'shrink is a 422': { patch: { sizeGB: 9 }, status: 422, code: 'ValidationFailed' },
      'tags and encryption keep it Active': { patch: { tags: { x: 'y' }, encrypted: true }, status: 200, phase: 'Active' },
    };
    for (const [name, tc] of Object.entries(cases)) {
      it(name, () => {
        const { store, clock } = fixture();
        const { bucket } = store.create(req(), 'k');
        clock.t += 1000;
        if (tc.status === 200) {
          expect(store.update(bucket.id, tc.patch).phase).to.equal(tc.phase);
        } else {
          const err = httpError(() => store.update(bucket.id, tc.patch));
          expect([err.status, err.code]).to.deep.equal([tc.status, tc.code]);
        }
      });
    }

    it('is a 409 NotReady while Provisioning and a 404 when absent', () => {
      const { store } = fixture();
      const { bucket } = store.create(req(), 'k');
      const notReady = httpError(() => store.update(bucket.id, { tags: {} }));
      expect([notReady.status, notReady.code]).to.deep.equal([409, 'NotReady']);
      const absent = httpError(() => store.update('bucket-000000000000', {}));
      expect([absent.status, absent.code]).to.deep.equal([404, 'NotFound']);
    });

    it('ends Resizing after resizeDelayMs', () => {
      const { store, clock } = fixture();
      const { bucket } = store.create(req(), 'k');
      clock.t += 1000;
      store.update(bucket.id, { sizeGB: 30 });
      clock.t += 499;
      expect(store.get(bucket.id)?.phase).to.equal('Resizing');
      clock.t += 1;
      expect(store.get(bucket.id)).to.include({ phase: 'Active', sizeGB: 30 });
    });

    it('reports a change only when something changed', () => {
      const { store, clock, changes } = fixture();
      const { bucket } = store.create(req({ tags: { a: '1' } }), 'k');
      clock.t += 1000;
      const before = changes();
      store.update(bucket.id, { sizeGB: 10, tags: { a: '1' }, encrypted: false });
      expect(changes()).to.equal(before);
      expect(store.get(bucket.id)?.updatedAt).to.equal(new Date(clock.t).toISOString());
    });
  });

  describe('query', () => {
    it('pages by id with continue tokens and filters by tags and key', () => {
      const { store } = fixture();
      for (let i = 0; i < 7; i++) store.create(req({ tags: { team: i % 2 === 0 ? 'even' : 'odd' } }), `k${i}`);
      const ids = store.list().map((b) => b.id);
      expect(ids).to.deep.equal([...ids].sort());

      const seen: string[] = [];
      let token: string | undefined;
      let after: string | undefined;
      do {
        const page = store.query({ tags: [], limit: 3, ...(after === undefined ? {} : { after }) });
        seen.push(...page.items.map((b) => b.id));
        token = page.continue;
        after = page.items.at(-1)?.id;
      } while (token !== undefined);
      expect(seen).to.deep.equal(ids);

      expect(store.query({ tags: [['team', 'even']], limit: 100 }).items).to.have.length(4);
      const byKey = store.query({ idempotencyKey: 'k3', tags: [], limit: 100 }).items;
      expect(byKey.map((b) => b.idempotencyKey)).to.deep.equal(['k3']);
      expect(store.query({ idempotencyKey: 'k3', tags: [['team', 'even']], limit: 100 }).items).to.deep.equal([]);
      expect(store.query({ idempotencyKey: 'nope', tags: [], limit: 100 }).items).to.deep.equal([]);
    });

    it('pages stay stable while buckets come and go: every survivor is seen exactly once', () => {
      const { store } = fixture();
      for (let i = 0; i < 6; i++) store.create(req({ tags: { managed: 'yes' } }));
      const before = store.list().map((b) => b.id);
      const first = store.query({ tags: [['managed', 'yes']], limit: 3 });
      // Between pages: one bucket of the first page and one of the rest go, and a new one comes.
      store.delete(before[0]!);
      store.delete(before[4]!);
      store.create(req({ tags: { managed: 'yes' } }));
      const after = first.items.at(-1)!.id;
      const rest = store.query({ tags: [['managed', 'yes']], limit: 1000, after });
      const seen = [...first.items, ...rest.items].map((b) => b.id);
      expect(new Set(seen).size).to.equal(seen.length);
      for (const id of before.filter((_, i) => i !== 0 && i !== 4)) expect(seen).to.include(id);
    });

    it('omits continue on the last page', () => {
      const { store } = fixture();
      store.create(req());
      store.create(req());
      expect(store.query({ tags: [], limit: 2 })).to.not.have.property('continue');
      expect(store.query({ tags: [], limit: 1 })).to.have.property('continue');
    });
  });

  it('admin patch sets anything, and an admin-set phase is sticky', () => {
    const { store, clock } = fixture();
    const { bucket } = store.create(req({ sizeGB: 50 }), 'k');
    const patched = store.adminPatch(bucket.id, { sizeGB: 5, encrypted: true, phase: 'Provisioning', tags: { drift: 'yes' } });
    expect(patched).to.include({ sizeGB: 5, encrypted: true, phase: 'Provisioning' });
    clock.t += 1_000_000;
    expect(store.get(bucket.id)?.phase).to.equal('Provisioning');
    expect(store.adminPatch('bucket-000000000000', {})).to.equal(undefined);
    expect(store.adminDelete(bucket.id)).to.equal(true);
    expect(store.adminDelete(bucket.id)).to.equal(false);
  });

  it('treats tag keys such as __proto__ as plain data', () => {
    const { store } = fixture();
    const tags = JSON.parse('{"__proto__":"x","constructor":"y"}') as Record<string, string>;
    const { bucket } = store.create(req({ tags }), 'k');
    expect(Object.keys(bucket.tags)).to.have.members(['__proto__', 'constructor']);
    expect(JSON.stringify(bucket.tags)).to.equal('{"__proto__":"x","constructor":"y"}');
  });

  it('restores a snapshot with phases computed from timestamps', () => {
    const { store, clock } = fixture();
    const { bucket } = store.create(req(), 'k');
    const snap = JSON.parse(JSON.stringify(store.snapshot())) as ReturnType<BucketStore['snapshot']>;
    const other = new BucketStore({ activationDelayMs: 1, resizeDelayMs: 1, now: () => clock.t });
    other.restore(snap);
    expect(other.get(bucket.id)?.phase).to.equal('Provisioning');
    clock.t += 1000;
    expect(other.get(bucket.id)?.phase).to.equal('Active');
    const replay = httpError(() => other.create(req({ sizeGB: 99 }), 'k'));
    expect(replay.code).to.equal('IdempotencyKeyReused');
  });
});
