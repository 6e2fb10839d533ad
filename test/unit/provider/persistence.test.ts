import { expect } from 'chai';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Bucket } from '../../../provider';
import { parseSnapshot, writeFileAtomic } from '../../../provider/persistence';
import { call, captureLogger, create, createBody, start } from './helpers';
import { eventually, IN_PROCESS } from '../../support/eventually';

describe('provider persistence', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'provider-test-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('keeps buckets and idempotency keys across a restart; Provisioning resumes and ends', async () => {
    const dataFile = join(dir, 'state.json');
    // A fake clock makes "still Provisioning after the restart" exact, however slow the machine.
    const clock = { t: Date.parse('2030-01-01T00:00:00Z') };
    const now = (): number => clock.t;
    const first = await start({ dataFile, activationDelayMs: 5000, now });
    const kept = (await create(first.url, 'keep', createBody({ tags: { a: 'b' } }))).body as Bucket;
    const gone = (await create(first.url, 'gone')).body as Bucket;
    await call(first.url, `/buckets/${gone.id}`, { method: 'DELETE' });
    await first.close();
    clock.t += 4000;

    const second = await start({ dataFile, activationDelayMs: 5000, now });
    try {
      const got = await call(second.url, `/buckets/${kept.id}`);
      expect(got.status).to.equal(200);
      expect(got.body).to.deep.include({ id: kept.id, tags: { a: 'b' }, createdAt: kept.createdAt, phase: 'Provisioning' });
      const replay = await create(second.url, 'keep', createBody({ tags: { a: 'b' } }));
      expect(replay.status).to.equal(200);
      expect((replay.body as Bucket).id).to.equal(kept.id);
      expect((await create(second.url, 'gone')).status).to.equal(410);
      expect((await create(second.url, 'keep')).status).to.equal(409);
      expect(second.store.count()).to.equal(1);

      clock.t += 1000;
      const active = (await call(second.url, `/buckets/${kept.id}`)).body as Bucket;
      expect(active.phase).to.equal('Active');
      // The transition ends at the time fixed before the restart, not one delay after it.
      expect(Date.parse(active.updatedAt)).to.equal(Date.parse(kept.createdAt) + 5000);
    } finally {
      await second.close();
    }
  });

  it('turns Provisioning into Active after a real restart', async () => {
    const dataFile = join(dir, 'state.json');
    const first = await start({ dataFile, activationDelayMs: 150 });
    const { id } = (await create(first.url, 'k')).body as Bucket;
    await first.close();
    const second = await start({ dataFile, activationDelayMs: 150 });
    try {
      await eventually(async () => ((await call(second.url, `/buckets/${id}`)).body as Bucket).phase === 'Active', {
        ...IN_PROCESS,
        timeoutMs: 3000,
      });
    } finally {
      await second.close();
    }
  });

  it('debounces writes, flushes on close and leaves no temp files', async () => {
    const dataFile = join(dir, 'state.json');
    const p = await start({ dataFile, persistDebounceMs: 20 });
    await Promise.all(Array.from({ length: 25 }, (_, i) => create(p.url, `k${i}`)));
    await eventually(
      async () => {
        const snap = parseSnapshot(JSON.parse(await readFile(dataFile, 'utf8').catch(() => '{"version":1,"buckets":[],"idempotencyKeys":[]}')));
        return snap.buckets.length === 25 ? true : undefined;
      },
      { ...IN_PROCESS, timeoutMs: 3000 },
    );
    await create(p.url, 'last');
    await p.close();
    const snap = parseSnapshot(JSON.parse(await readFile(dataFile, 'utf8')));
    expect(snap.buckets).to.have.length(26);
    expect(snap.idempotencyKeys.map((k) => k.key)).to.include('last');
    expect(await readdir(dir)).to.deep.equal(['state.json']);
  });

  it('refuses to start on a corrupt data file instead of starting empty', async () => {
    const dataFile = join(dir, 'state.json');
    for (const content of ['{not json', '{"version":2}', '{"version":1,"buckets":[{"id":1}],"idempotencyKeys":[]}']) {
      await writeFile(dataFile, content);
      let error: unknown;
      try {
        const p = await start({ dataFile });
        await p.close();
      } catch (err) {
        error = err;
      }
      expect(error, content).to.be.instanceOf(Error);
      expect((error as Error).message).to.equal(`cannot load data file ${dataFile}`);
    }
  });

  it('logs a failed write and rejects close when the final flush fails', async () => {
    const dataFile = join(dir, 'missing-dir', 'state.json');
    const { logger, lines } = captureLogger();
    const p = await start({ dataFile, logger, persistDebounceMs: 5 });
    await create(p.url, 'k');
    await eventually(() => lines().some((l) => l.includes('cannot write data file')), { ...IN_PROCESS, timeoutMs: 3000 });
    let error: unknown;
    try {
      await p.close();
    } catch (err) {
      error = err;
    }
    expect((error as Error).message).to.equal(`cannot write data file ${dataFile}`);
  });

  it('writeFileAtomic replaces the file whole', async () => {
    const path = join(dir, 'f.json');
    await writeFileAtomic(path, 'one');
    await writeFileAtomic(path, 'two');
    expect(await readFile(path, 'utf8')).to.equal('two');
    expect(await readdir(dir)).to.deep.equal(['f.json']);
  });
});
