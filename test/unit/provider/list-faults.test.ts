import { expect } from 'chai';
import { request as httpRequest } from 'node:http';
import type { Bucket, BucketList, FaultSettings, ProviderHandle } from '../../../provider';
import { defaultAccountOf } from '../../../provider/auth';
import { parseCli } from '../../../provider/cli';
import { parseFaultSettings } from '../../../provider/faults';
import { eventually, IN_PROCESS } from '../../support/eventually';
import { ADMIN_TOKEN, call, createBody, httpError, start, type CallOptions, type Response } from './helpers';

const KEY_A = 'broken-tenant-key-0001';
const KEY_B = 'quiet-tenant-key-0002';
const A = (opts: CallOptions = {}): CallOptions => ({ ...opts, auth: `Bearer ${KEY_A}` });
const B = (opts: CallOptions = {}): CallOptions => ({ ...opts, auth: `Bearer ${KEY_B}` });
const SCAN = '/buckets?tag=managed-by%3Dbucketoperator&limit=1';

/** True when the answer is a usable page: JSON with an `items` array. */
function usable(res: Response): boolean {
  return res.status === 200 && typeof res.body === 'object' && res.body !== null && Array.isArray((res.body as BucketList).items);
}

describe('provider list faults', () => {
  let p: ProviderHandle;
  beforeEach(async () => {
    p = await start({ apiKeys: [KEY_A, KEY_B] });
    for (const who of [A, A, B, B]) {
      await call(p.url, '/buckets', who({ method: 'POST', body: createBody({ tags: { 'managed-by': 'bucketoperator' } }) }));
    }
  });
  afterEach(async () => {
    await p.close();
  });

  const cases: Record<string, { faults: FaultSettings; want: (res: Response) => void }> = {
    listEmptyObject: {
      faults: { listEmptyObject: true },
      want: (res) => {
        expect([res.status, res.body]).to.deep.equal([200, {}]);
      },
    },
    listNotJson: {
      faults: { listNotJson: true },
      want: (res) => {
        expect(res.status).to.equal(200);
        expect(res.headers['content-type']).to.match(/^text\/html/);
        expect(() => JSON.parse(res.text) as unknown).to.throw();
      },
    },
    listErrorStatus: {
      faults: { listErrorStatus: 500 },
      want: (res) => {
        expect([res.status, (res.body as { code: string }).code]).to.deep.equal([500, 'InternalError']);
      },
    },
    listRepeatContinue: {
      faults: { listRepeatContinue: true },
      want: (res) => {
        const page = res.body as BucketList;
        expect(page.items).to.have.length(1);
        expect(page.continue).to.be.a('string').and.not.equal('');
      },
    },
  };
  for (const [name, tc] of Object.entries(cases)) {
    it(`${name} breaks the scoped account's list only; the other account and lookups by key are fine`, async () => {
      p.faults.set({ ...tc.faults, listFaultAccount: defaultAccountOf(KEY_A) });
      tc.want(await call(p.url, SCAN, A()));
      const quiet = await call(p.url, SCAN, B());
      expect(usable(quiet), quiet.text).to.equal(true);
      // The create path's lookup and single-bucket reads are not the scan's list.
      expect(usable(await call(p.url, '/buckets?idempotencyKey=none', A()))).to.equal(true);
      const [one] = p.store.list();
      expect((await call(p.url, `/buckets/${(one as Bucket).id}`, { auth: null })).status).to.equal(401);
    });

    it(`${name} without an account breaks every account's list`, async () => {
      p.faults.set(tc.faults);
      tc.want(await call(p.url, SCAN, A()));
      tc.want(await call(p.url, SCAN, B()));
    });
  }

  it('listRepeatContinue answers the same token on every page, forever', async () => {
    p.faults.set({ listRepeatContinue: true });
    // Ids and token, not whole items: a bucket's activation may land between two pages and
    // change its phase, which says nothing about the token (it made this test flaky under load).
    const shape = (l: BucketList) => ({ ids: l.items.map((b) => b.id), continue: l.continue });
    const first = (await call(p.url, SCAN, A())).body as BucketList;
    expect(first.continue).to.be.a('string');
    let token = first.continue as string;
    for (let i = 0; i < 5; i++) {
      const page = (await call(p.url, `${SCAN}&continue=${encodeURIComponent(token)}`, A())).body as BucketList;
      expect(shape(page)).to.deep.equal(shape(first));
      token = page.continue as string;
    }
  });

  it('listSlowBodyMs drips a complete page over the given time, for the scoped account only', async () => {
    p.faults.set({ listSlowBodyMs: 300, listFaultAccount: defaultAccountOf(KEY_A) });
    const pieces: number[] = [];
    const started = performance.now();
    const body = await new Promise<string>((resolve, reject) => {
      const req = httpRequest(`${p.url}/buckets`, { headers: { authorization: `Bearer ${KEY_A}` } }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => {
          chunks.push(c);
          pieces.push(performance.now() - started);
        });
        res.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
        res.on('error', reject);
      });
      req.on('error', reject);
      req.end();
    });
    // Lower bounds only: a timer never fires early, a loaded machine may add any amount.
    expect(performance.now() - started).to.be.at.least(290);
    expect(pieces.length).to.be.greaterThan(1);
    expect((JSON.parse(body) as BucketList).items).to.have.length(2);
    // The other account's list is not dripped: its whole body arrives in one piece.
    const quiet = await call(p.url, '/buckets', B());
    expect(usable(quiet)).to.equal(true);
  });

  it('listSlowBodyMs stops dripping when the client gives up', async () => {
    p.faults.set({ listSlowBodyMs: 60_000 });
    await new Promise<void>((resolve, reject) => {
      const req = httpRequest(`${p.url}/buckets`, { headers: { authorization: `Bearer ${KEY_A}` } }, () => {
        req.destroy();
        resolve();
      });
      req.on('error', (err: NodeJS.ErrnoException) => (err.code === 'ECONNRESET' ? undefined : reject(err)));
      req.end();
    });
    // The answer is counted once the drip has ended: at once, not a minute later.
    await eventually(() => p.stats().requests['GET /buckets 200'] === 1, { ...IN_PROCESS, description: 'the abandoned drip to end' });
  });

  it('leaves the admin view of the buckets alone', async () => {
    p.faults.set({ listErrorStatus: 503, listEmptyObject: true });
    const res = await call(p.url, '/admin/buckets', { auth: `Bearer ${ADMIN_TOKEN}` });
    expect((res.body as BucketList).items).to.have.length(4);
  });

  describe('settings', () => {
    const refused: Record<string, { args: unknown; want: RegExp }> = {
      'listErrorStatus 404': { args: { listErrorStatus: 404 }, want: /^listErrorStatus: must be one of/ },
      'listEmptyObject a string': { args: { listEmptyObject: 'yes' }, want: /^listEmptyObject: must be a boolean/ },
      'listNotJson a number': { args: { listNotJson: 1 }, want: /^listNotJson: must be a boolean/ },
      'listRepeatContinue null': { args: { listRepeatContinue: null }, want: /^listRepeatContinue: must be a boolean/ },
      'listSlowBodyMs negative': { args: { listSlowBodyMs: -1 }, want: /^listSlowBodyMs: must be an integer/ },
      'listSlowBodyMs too long': { args: { listSlowBodyMs: 3_600_000 }, want: /^listSlowBodyMs: must be an integer/ },
      'listFaultAccount not an account name': { args: { listFaultAccount: 'a b' }, want: /^listFaultAccount: must be an account name/ },
    };
    for (const [name, tc] of Object.entries(refused)) {
      it(`refuses ${name}`, () => {
        const err = httpError(() => parseFaultSettings(tc.args));
        expect([err.status, err.message]).to.satisfy(([status, message]: [number, string]) => status === 422 && tc.want.test(message));
      });
    }

    it('are off by default and switch at run time with PUT /admin/faults', async () => {
      expect(p.faults.get()).to.deep.include({
        listErrorStatus: null,
        listEmptyObject: false,
        listNotJson: false,
        listRepeatContinue: false,
        listSlowBodyMs: 0,
        listFaultAccount: null,
      });
      const res = await call(p.url, '/admin/faults', {
        method: 'PUT',
        auth: `Bearer ${ADMIN_TOKEN}`,
        body: { listNotJson: true, listFaultAccount: 'team-a' },
      });
      expect(res.status).to.equal(200);
      expect(p.faults.get()).to.deep.include({ listNotJson: true, listFaultAccount: 'team-a' });
    });

    it('are read from the command line', async () => {
      const { options } = await parseCli(
        [
          '--api-key',
          'k',
          '--list-error-status',
          '503',
          '--list-empty-object',
          '--list-not-json',
          '--list-repeat-continue',
          '--list-slow-body-ms',
          '2500',
          '--list-fault-account',
          'team-a',
        ],
        {},
      );
      expect(options.faults).to.deep.equal({
        listErrorStatus: 503,
        listEmptyObject: true,
        listNotJson: true,
        listRepeatContinue: true,
        listSlowBodyMs: 2500,
        listFaultAccount: 'team-a',
      });
    });
  });
});
