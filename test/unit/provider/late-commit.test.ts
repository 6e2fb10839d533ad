/**
 * The lateCommitOnCreate fault and the idempotency-key fence (POST /idempotency-keys/{key}/revoke).
 * Due commits settle from the clock, so a fake clock makes every "before" and "after" exact:
 * no test waits for a commit, and none sleeps to show that something did not happen.
 */
import { expect } from 'chai';
import { mkdtemp, rm } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FaultController, LATE_COMMIT_DELAY_MS_MAX, parseFaultSettings } from '../../../provider/faults';
import type { Bucket, BucketList, LateCommitReport, ProviderHandle, RevokeResult } from '../../../provider/index';
import { BucketStore } from '../../../provider/store';
import { ADMIN_TOKEN, API_KEY, call, create, createBody, createRequest, httpError, start, STORE_T0, storeFixture } from './helpers';
import { eventually, IN_PROCESS } from '../../support/eventually';

const T0 = STORE_T0;
const fixture = () => storeFixture({ resizeDelayMs: 1000 });
const req = createRequest;

/** Ids of the live buckets a lookup by key finds. */
function lookUp(store: BucketStore, key: string): string[] {
  return store.query({ idempotencyKey: key, tags: [], limit: 100 }).items.map((b) => b.id);
}

describe('provider lateCommitOnCreate settings', () => {
  const invalid: Record<string, { settings: unknown; field: string }> = {
    'a number': { settings: { lateCommitOnCreate: 1 }, field: 'lateCommitOnCreate' },
    'an array': { settings: { lateCommitOnCreate: [1, 10] }, field: 'lateCommitOnCreate' },
    'an unknown field': { settings: { lateCommitOnCreate: { count: 1, delayMs: 10, rate: 1 } }, field: 'lateCommitOnCreate.rate' },
    'no count': { settings: { lateCommitOnCreate: { delayMs: 10 } }, field: 'lateCommitOnCreate.count' },
    'a negative count': { settings: { lateCommitOnCreate: { count: -1, delayMs: 10 } }, field: 'lateCommitOnCreate.count' },
    'a fractional count': { settings: { lateCommitOnCreate: { count: 0.5, delayMs: 10 } }, field: 'lateCommitOnCreate.count' },
    'no delay': { settings: { lateCommitOnCreate: { count: 1 } }, field: 'lateCommitOnCreate.delayMs' },
    'a negative delay': { settings: { lateCommitOnCreate: { count: 1, delayMs: -1 } }, field: 'lateCommitOnCreate.delayMs' },
    'a delay above the bound': {
      settings: { lateCommitOnCreate: { count: 1, delayMs: LATE_COMMIT_DELAY_MS_MAX + 1 } },
      field: 'lateCommitOnCreate.delayMs',
    },
    'a delay as a string': { settings: { lateCommitOnCreate: { count: 1, delayMs: '10s' } }, field: 'lateCommitOnCreate.delayMs' },
  };
  for (const [name, tc] of Object.entries(invalid)) {
    it(`rejects ${name} with a 422 naming ${tc.field}`, () => {
      const err = httpError(() => parseFaultSettings(tc.settings));
      expect(err.status).to.equal(422);
      expect(err.message.startsWith(`${tc.field}: `), err.message).to.equal(true);
    });
  }

  const valid: Record<string, { settings: unknown; want: unknown }> = {
    'null (off)': { settings: { lateCommitOnCreate: null }, want: null },
    'a count and a delay': { settings: { lateCommitOnCreate: { count: 2, delayMs: 15_000 } }, want: { count: 2, delayMs: 15_000 } },
    'the largest delay': {
      settings: { lateCommitOnCreate: { count: 1, delayMs: LATE_COMMIT_DELAY_MS_MAX } },
      want: { count: 1, delayMs: LATE_COMMIT_DELAY_MS_MAX },
    },
    'a delay of 0': { settings: { lateCommitOnCreate: { count: 1, delayMs: 0 } }, want: { count: 1, delayMs: 0 } },
  };
  for (const [name, tc] of Object.entries(valid)) {
    it(`accepts ${name}`, () => {
      expect(parseFaultSettings(tc.settings).lateCommitOnCreate).to.deep.equal(tc.want);
    });
  }

  it('is off by default and counts down, once per held create', () => {
    expect(new FaultController().lateCommit()).to.equal(undefined);
    const faults = new FaultController({ lateCommitOnCreate: { count: 2, delayMs: 700 } });
    expect([faults.lateCommit(), faults.lateCommit(), faults.lateCommit()]).to.deep.equal([700, 700, undefined]);
    expect(faults.get().lateCommitOnCreate).to.deep.equal({ count: 0, delayMs: 700 });
  });
});

describe('provider/store late commits and revoked keys', () => {
  it('a pending commit is invisible until due, then commits at its due time', () => {
    const { store, clock } = fixture();
    store.commitLater(req({ tags: { a: 'b' } }), 'k', 5000);
    clock.t += 4999;
    expect(lookUp(store, 'k'), 'lookup by key while pending').to.deep.equal([]);
    expect(store.count()).to.equal(0);
    expect(store.lateCommits().pending).to.deep.equal([{ idempotencyKey: 'k', commitAt: new Date(T0 + 5000).toISOString() }]);

    clock.t += 1;
    const [id] = lookUp(store, 'k');
    expect(id).to.be.a('string');
    const bucket = store.get(id ?? '');
    // Made when due, not when first read: its phase runs from the due time.
    expect(bucket).to.deep.include({ idempotencyKey: 'k', tags: { a: 'b' }, phase: 'Provisioning', createdAt: new Date(T0 + 5000).toISOString() });
    expect(store.lateCommits()).to.deep.equal({ pending: [], committed: 1, discarded: { revoked: 0, keyUsed: 0 } });
    // The key is consumed by the late commit: a retry is a replay of that bucket.
    expect(store.create(req({ tags: { a: 'b' } }), 'k')).to.deep.include({ outcome: 'replayed' });
  });

  const consumed: Record<string, { meanwhile: (store: BucketStore) => void }> = {
    'a retry with the key committed': { meanwhile: (store) => void store.create(req(), 'k') },
    'a retry with the key and another body committed': { meanwhile: (store) => void store.create(req({ sizeGB: 99 }), 'k') },
    'a retry committed and its bucket was deleted': {
      meanwhile: (store) => store.delete(store.create(req(), 'k').bucket.id),
    },
    'an earlier late commit with the key committed': { meanwhile: (store) => store.commitLater(req(), 'k', 0) },
  };
  for (const [name, tc] of Object.entries(consumed)) {
    it(`makes no second bucket when ${name} before it was due`, () => {
      const { store, clock } = fixture();
      store.commitLater(req(), 'k', 5000);
      tc.meanwhile(store);
      const before = store.list().map((b) => b.id);
      clock.t += 5000;
      expect(store.list().map((b) => b.id)).to.deep.equal(before);
      expect(store.lateCommits().discarded).to.deep.equal({ revoked: 0, keyUsed: 1 });
    });
  }

  it('a create without a key commits late all the same', () => {
    const { store, clock } = fixture();
    store.commitLater(req(), undefined, 10);
    expect(store.lateCommits().pending).to.deep.equal([{ commitAt: new Date(T0 + 10).toISOString() }]);
    clock.t += 10;
    expect(store.count()).to.equal(1);
  });

  it('commits due commits in due order, whatever the order they arrived in', () => {
    const { store, clock } = fixture();
    store.commitLater(req({ sizeGB: 2 }), 'k', 2000);
    store.commitLater(req({ sizeGB: 1 }), 'k', 1000);
    clock.t += 3000;
    expect(store.list().map((b) => b.sizeGB)).to.deep.equal([1]);
    expect(store.lateCommits()).to.deep.include({ committed: 1, discarded: { revoked: 0, keyUsed: 1 } });
  });

  const revokes: Record<string, { setup: (store: BucketStore) => void; want: 'bucket' | 'none' }> = {
    'a key that made a live bucket': { setup: (store) => void store.create(req(), 'k'), want: 'bucket' },
    'a key never used': { setup: () => undefined, want: 'none' },
    'a key whose bucket was deleted': { setup: (store) => store.delete(store.create(req(), 'k').bucket.id), want: 'none' },
    'a key with a create still pending': { setup: (store) => store.commitLater(req(), 'k', 5000), want: 'none' },
  };
  for (const [name, tc] of Object.entries(revokes)) {
    it(`revoking ${name} answers ${tc.want === 'bucket' ? 'that bucket, kept' : 'none'}, the same again, and fences the key`, () => {
      const { store, clock } = fixture();
      tc.setup(store);
      const live = lookUp(store, 'k');
      const first = store.revokeIdempotencyKey('k');
      expect(first?.id).to.equal(tc.want === 'bucket' ? live[0] : undefined);
      expect(store.revokeIdempotencyKey('k')?.id, 'revoking again').to.equal(first?.id);
      // Kept, and still found by key: the caller decides whether it is theirs to delete.
      expect(lookUp(store, 'k')).to.deep.equal(live);
      const count = store.count();
      const err = httpError(() => store.create(req(), 'k'));
      expect([err.status, err.code]).to.deep.equal([410, 'IdempotencyKeyRevoked']);
      clock.t += 10_000;
      expect(store.count(), 'buckets once any pending commit was due').to.equal(count);
    });
  }

  it('discards a pending commit of a revoked key when due, and counts it', () => {
    const { store, clock } = fixture();
    store.commitLater(req(), 'k', 5000);
    store.revokeIdempotencyKey('k');
    clock.t += 5000;
    expect(store.count()).to.equal(0);
    expect(store.lateCommits()).to.deep.equal({ pending: [], committed: 0, discarded: { revoked: 1, keyUsed: 0 } });
  });

  it('a revoke after the due time answers the late bucket: the commit happened first', () => {
    const { store, clock } = fixture();
    store.commitLater(req(), 'k', 5000);
    clock.t += 5000;
    const got = store.revokeIdempotencyKey('k');
    expect(got?.idempotencyKey).to.equal('k');
    expect(store.lateCommits().committed).to.equal(1);
  });

  it('a revoked key is never held: the create is refused at once', () => {
    const { store } = fixture();
    store.revokeIdempotencyKey('k');
    expect(store.wouldCreate('k')).to.equal(false);
    expect(store.wouldCreate(undefined)).to.equal(true);
    expect(store.wouldCreate('fresh')).to.equal(true);
  });

  it('keeps revoked keys in the snapshot and drops pending commits, so a restart loses them', () => {
    const { store, clock } = fixture();
    store.revokeIdempotencyKey('fenced');
    store.commitLater(req(), 'pending', 5000);
    const snap = JSON.parse(JSON.stringify(store.snapshot())) as ReturnType<BucketStore['snapshot']>;
    expect(snap.revoked).to.deep.equal([{ account: 'default', key: 'fenced' }]);
    const other = new BucketStore({ activationDelayMs: 1, resizeDelayMs: 1, now: () => clock.t });
    other.restore(snap);
    clock.t += 5000;
    expect(other.count()).to.equal(0);
    expect(other.lateCommits().pending).to.deep.equal([]);
    expect(httpError(() => other.create(req(), 'fenced')).code).to.equal('IdempotencyKeyRevoked');
    // A snapshot of an older version, without revoked keys, restores as none revoked.
    other.restore({ version: 1, buckets: [], idempotencyKeys: [] });
    expect(other.create(req(), 'fenced').outcome).to.equal('created');
  });

  it('a revoke is a change to save; revoking again is not', () => {
    const { store, changes } = fixture();
    store.revokeIdempotencyKey('k');
    expect(changes()).to.equal(1);
    store.revokeIdempotencyKey('k');
    expect(changes()).to.equal(1);
  });
});

/**
 * POST /buckets that gives up after `timeoutMs`, as a client with a timeout does; resolves
 * the error (or the status, if an answer came).
 */
function createGivingUp(url: string, key: string, timeoutMs: number): Promise<{ error?: string; status?: number }> {
  const payload = JSON.stringify(createBody());
  return new Promise((resolve) => {
    const r = httpRequest(
      `${url}/buckets`,
      {
        method: 'POST',
        timeout: timeoutMs,
        headers: {
          authorization: `Bearer ${API_KEY}`,
          'content-type': 'application/json',
          'content-length': String(Buffer.byteLength(payload)),
          'idempotency-key': key,
        },
      },
      (res) => {
        res.resume();
        resolve({ status: res.statusCode ?? 0 });
      },
    );
    r.on('timeout', () => r.destroy(Object.assign(new Error('timed out'), { code: 'ETIMEDOUT' })));
    r.on('error', (err: NodeJS.ErrnoException) => resolve({ error: err.code ?? err.message }));
    r.end(payload);
  });
}

describe('provider late commits and revoke over HTTP', () => {
  let p: ProviderHandle;
  const clock = { t: T0 };
  const admin = { auth: `Bearer ${ADMIN_TOKEN}` };
  beforeEach(async () => {
    clock.t = T0;
    p = await start({ now: () => clock.t });
  });
  afterEach(async () => {
    await p.close();
  });
  const report = async (): Promise<LateCommitReport> => (await call(p.url, '/admin/late-commits', admin)).body as LateCommitReport;
  const revoke = (key: string) => call(p.url, `/idempotency-keys/${encodeURIComponent(key)}/revoke`, { method: 'POST' });

  it('never answers a held create (the client times out), and commits it when due', async () => {
    const put = await call(p.url, '/admin/faults', { ...admin, method: 'PUT', body: { lateCommitOnCreate: { count: 1, delayMs: 30_000 } } });
    expect(put.status).to.equal(200);
    expect(await createGivingUp(p.url, 'late', 200)).to.deep.equal({ error: 'ETIMEDOUT' });
    expect(((await call(p.url, '/admin/faults', admin)).body as { lateCommitOnCreate: unknown }).lateCommitOnCreate).to.deep.equal({
      count: 0,
      delayMs: 30_000,
    });
    expect((await report()).pending).to.deep.equal([{ idempotencyKey: 'late', commitAt: new Date(T0 + 30_000).toISOString() }]);
    expect(((await call(p.url, '/buckets?idempotencyKey=late')).body as BucketList).items).to.deep.equal([]);
    // Counted when the provider sees the client's socket close, which may follow the client's
    // own error by a tick.
    await eventually(() => (p.stats().requests['POST /buckets dropped'] === 1 ? true : undefined), IN_PROCESS);

    clock.t += 30_000;
    const found = ((await call(p.url, '/buckets?idempotencyKey=late')).body as BucketList).items;
    expect(found.map((b) => b.idempotencyKey)).to.deep.equal(['late']);
    expect(await report()).to.deep.equal({ pending: [], committed: 1, discarded: { revoked: 0, keyUsed: 0 } });
  });

  it('answers replays and refusals at once and holds only new creates', async () => {
    const existing = (await create(p.url, 'kept')).body as Bucket;
    p.faults.set({ lateCommitOnCreate: { count: 5, delayMs: 1000 } });
    const replay = await create(p.url, 'kept');
    expect([replay.status, (replay.body as Bucket).id]).to.deep.equal([200, existing.id]);
    expect((await create(p.url, 'kept', createBody({ sizeGB: 99 }))).status).to.equal(409);
    expect(p.faults.get().lateCommitOnCreate?.count).to.equal(5);
  });

  it('a retry after the timeout makes the bucket, and the late commit makes no second one', async () => {
    p.faults.set({ lateCommitOnCreate: { count: 1, delayMs: 30_000 } });
    expect(await createGivingUp(p.url, 'k', 200)).to.deep.equal({ error: 'ETIMEDOUT' });
    const retry = await create(p.url, 'k');
    expect(retry.status).to.equal(201);
    clock.t += 30_000;
    expect(p.store.list().map((b) => b.id)).to.deep.equal([(retry.body as Bucket).id]);
    expect((await report()).discarded).to.deep.equal({ revoked: 0, keyUsed: 1 });
  });

  it('revoke discards the pending commit, answers null, and a later create is 410 IdempotencyKeyRevoked', async () => {
    p.faults.set({ lateCommitOnCreate: { count: 1, delayMs: 30_000 } });
    expect(await createGivingUp(p.url, 'k/1', 200)).to.deep.equal({ error: 'ETIMEDOUT' });
    const res = await revoke('k/1');
    expect([res.status, res.body]).to.deep.equal([200, { bucket: null } satisfies RevokeResult]);
    const again = await create(p.url, 'k/1');
    expect([again.status, (again.body as { code: string }).code]).to.deep.equal([410, 'IdempotencyKeyRevoked']);
    clock.t += 30_000;
    expect(p.store.count()).to.equal(0);
    expect(await report()).to.deep.equal({ pending: [], committed: 0, discarded: { revoked: 1, keyUsed: 0 } });
    expect(p.stats().requests).to.include({ 'POST /idempotency-keys/{key}/revoke 200': 1 });
  });

  it('revoke answers the live bucket the key made, keeps it, and answers the same again', async () => {
    const made = (await create(p.url, 'mine', createBody({ tags: { owner: 'x' } }))).body as Bucket;
    const first = await revoke('mine');
    expect(first.status).to.equal(200);
    expect((first.body as RevokeResult).bucket).to.deep.include({ id: made.id, tags: { owner: 'x' } });
    expect(((await revoke('mine')).body as RevokeResult).bucket?.id).to.equal(made.id);
    expect((await call(p.url, `/buckets/${made.id}`)).status).to.equal(200);
  });

  const refusals: Record<string, { path: string; opts: Parameters<typeof call>[2]; status: number; code: string }> = {
    'a key longer than 255 characters': {
      path: `/idempotency-keys/${'k'.repeat(256)}/revoke`,
      opts: { method: 'POST' },
      status: 422,
      code: 'ValidationFailed',
    },
    'no Authorization header': { path: '/idempotency-keys/k/revoke', opts: { method: 'POST', auth: null }, status: 401, code: 'Unauthorized' },
    'the admin token': {
      path: '/idempotency-keys/k/revoke',
      opts: { method: 'POST', auth: `Bearer ${ADMIN_TOKEN}` },
      status: 403,
      code: 'Forbidden',
    },
    GET: { path: '/idempotency-keys/k/revoke', opts: { method: 'GET' }, status: 405, code: 'MethodNotAllowed' },
    'an empty key': { path: '/idempotency-keys//revoke', opts: { method: 'POST' }, status: 404, code: 'NotFound' },
  };
  for (const [name, tc] of Object.entries(refusals)) {
    it(`revoke with ${name} answers ${tc.status} ${tc.code}`, async () => {
      const res = await call(p.url, tc.path, tc.opts);
      expect([res.status, (res.body as { code: string }).code]).to.deep.equal([tc.status, tc.code]);
    });
  }

  it('revoke suffers the faults of the API-key routes, and a failed revoke fences nothing', async () => {
    p.faults.set({ outage: true });
    expect((await revoke('k')).status).to.equal(503);
    p.faults.clear();
    expect((await create(p.url, 'k')).status).to.equal(201);
  });
});

describe('provider revoked keys across a restart', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'provider-revoke-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('a revoked key stays revoked; a pending commit lost by the restart never commits', async () => {
    const dataFile = join(dir, 'state.json');
    const clock = { t: T0 };
    const first = await start({ dataFile, now: () => clock.t });
    await call(first.url, '/idempotency-keys/fenced/revoke', { method: 'POST' });
    first.faults.set({ lateCommitOnCreate: { count: 1, delayMs: 5000 } });
    expect(await createGivingUp(first.url, 'pending', 200)).to.deep.equal({ error: 'ETIMEDOUT' });
    await first.close();

    const second = await start({ dataFile, now: () => clock.t });
    try {
      clock.t += 5000;
      expect(second.store.count()).to.equal(0);
      expect((await create(second.url, 'fenced')).status).to.equal(410);
      expect((await create(second.url, 'pending')).status).to.equal(201);
    } finally {
      await second.close();
    }
  });
});
