import { expect } from 'chai';
import { createHash } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Bucket, BucketList, ProviderHandle } from '../../../provider';
import { defaultAccountOf, parseApiKeyEntry } from '../../../provider/auth';
import { parseCli } from '../../../provider/cli';
import { startProviderProcess } from '../../support/provider-process';
import { ADMIN_TOKEN, call, createBody, start, type CallOptions, type Response } from './helpers';

const KEY_A = 'tenant-a-key-0123456789';
const KEY_B = 'tenant-b-key-9876543210';
const A = (opts: CallOptions = {}): CallOptions => ({ ...opts, auth: `Bearer ${KEY_A}` });
const B = (opts: CallOptions = {}): CallOptions => ({ ...opts, auth: `Bearer ${KEY_B}` });
const ADMIN = `Bearer ${ADMIN_TOKEN}`;
const MISSING = 'bucket-0000000000ff';

function createAs(url: string, who: (o?: CallOptions) => CallOptions, key: string, body: unknown = createBody()): Promise<Response> {
  return call(url, '/buckets', who({ method: 'POST', body, headers: { 'idempotency-key': key } }));
}

/** Status, code and message with the bucket id taken out, to compare "someone else's" with "missing". */
function shape(res: Response, id: string): { status: number; code: unknown; message: unknown } {
  const body = res.body as { code?: unknown; message?: unknown };
  return { status: res.status, code: body.code, message: typeof body.message === 'string' ? body.message.replace(id, '<id>') : body.message };
}

describe('provider accounts', () => {
  describe('keys and account names', () => {
    const cases: Record<string, { args: string; want: { key: string; account: string } }> = {
      'a plain key is an account of its own': { args: 'plain-key', want: { key: 'plain-key', account: defaultAccountOf('plain-key') } },
      'ACCOUNT:KEY names the account': { args: 'team-a:secret-1', want: { key: 'secret-1', account: 'team-a' } },
      'only the first colon splits': { args: 'team-a:se:cret', want: { key: 'se:cret', account: 'team-a' } },
      'a leading colon is part of the key': { args: ':secret', want: { key: ':secret', account: defaultAccountOf(':secret') } },
      'a trailing colon is part of the key': { args: 'team-a:', want: { key: 'team-a:', account: defaultAccountOf('team-a:') } },
      'a prefix that is no account name is part of the key': { args: 'a/b:c', want: { key: 'a/b:c', account: defaultAccountOf('a/b:c') } },
    };
    for (const [name, tc] of Object.entries(cases)) {
      it(name, () => {
        expect(parseApiKeyEntry(tc.args)).to.deep.equal(tc.want);
      });
    }

    it('derives a plain key account from its SHA-256, never from the key itself', () => {
      const hex = createHash('sha256').update(KEY_A).digest('hex');
      expect(defaultAccountOf(KEY_A)).to.equal(`acct-${hex.slice(0, 12)}`);
      expect(defaultAccountOf(KEY_A)).to.not.include(KEY_A.slice(0, 6));
    });

    it('refuses a key configured for two accounts at start', async () => {
      let error: unknown;
      await start({ apiKeys: ['x:same-key', 'y:same-key'] }).then(
        (p) => p.close(),
        (err: unknown) => {
          error = err;
        },
      );
      expect(String(error)).to.match(/two accounts/);
      expect(String(error)).to.not.include('same-key');
    });

    it('reads ACCOUNT:KEY lines from --api-keys-file as written', async () => {
      const dir = await mkdtemp(join(tmpdir(), 'provider-accounts-'));
      try {
        const file = join(dir, 'keys');
        await writeFile(file, 'team:k1\nteam:k2\nlone-key\n');
        const { options } = await parseCli(['--api-keys-file', file], {});
        expect(options.apiKeys).to.deep.equal(['team:k1', 'team:k2', 'lone-key']);
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    });
  });

  describe('isolation between two accounts', () => {
    let p: ProviderHandle;
    let bucketA: Bucket;
    beforeEach(async () => {
      p = await start({ apiKeys: [KEY_A, KEY_B] });
      bucketA = (await createAs(p.url, A, 'shared-key')).body as Bucket;
    });
    afterEach(async () => {
      await p.close();
    });

    it('labels each bucket with its account and never with the key', async () => {
      expect(bucketA.account).to.equal(defaultAccountOf(KEY_A));
      const raw = (await call(p.url, `/buckets/${bucketA.id}`, A())).text;
      expect(raw).to.not.include(KEY_A);
    });

    // Another account's bucket must look exactly like a missing one: no oracle for ids.
    const foreign: Record<string, { args: CallOptions }> = {
      get: { args: {} },
      patch: { args: { method: 'PATCH', body: { sizeGB: 20 } } },
      delete: { args: { method: 'DELETE' } },
    };
    for (const [name, tc] of Object.entries(foreign)) {
      it(`${name} of another account's bucket answers 404 exactly as for a missing one, and changes nothing`, async () => {
        const theirs = await call(p.url, `/buckets/${bucketA.id}`, B(tc.args));
        const missing = await call(p.url, `/buckets/${MISSING}`, B(tc.args));
        expect(shape(theirs, bucketA.id)).to.deep.equal(shape(missing, MISSING));
        expect(theirs.status).to.equal(404);
        const still = await call(p.url, `/buckets/${bucketA.id}`, A());
        expect(still.status).to.equal(200);
        expect((still.body as Bucket).sizeGB).to.equal(bucketA.sizeGB);
      });
    }

    it('lists only the caller account buckets; the admin view lists every account', async () => {
      const bucketB = (await createAs(p.url, B, 'b-only')).body as Bucket;
      const ids = async (opts: CallOptions): Promise<string[]> => ((await call(p.url, '/buckets', opts)).body as BucketList).items.map((b) => b.id);
      expect(await ids(A())).to.deep.equal([bucketA.id]);
      expect(await ids(B())).to.deep.equal([bucketB.id]);
      const admin = (await call(p.url, '/admin/buckets', { auth: ADMIN })).body as BucketList;
      expect(admin.items.map((b) => b.id).sort()).to.deep.equal([bucketA.id, bucketB.id].sort());
      expect(
        p.store
          .list()
          .map((b) => b.account)
          .sort(),
      ).to.deep.equal([defaultAccountOf(KEY_A), defaultAccountOf(KEY_B)].sort());
    });

    it('pages one account list without the other account buckets in between', async () => {
      for (let i = 0; i < 3; i++) {
        await createAs(p.url, A, `a-${i}`);
        await createAs(p.url, B, `b-${i}`);
      }
      const seen: string[] = [];
      let cont: string | undefined;
      do {
        const page = (await call(p.url, `/buckets?limit=1${cont === undefined ? '' : `&continue=${encodeURIComponent(cont)}`}`, B()))
          .body as BucketList;
        seen.push(...page.items.map((b) => b.account));
        cont = page.continue;
      } while (cont !== undefined);
      expect(seen).to.deep.equal(Array(3).fill(defaultAccountOf(KEY_B)));
    });

    it('scopes idempotency keys: the same key makes one bucket per account, and each replays its own', async () => {
      const first = await createAs(p.url, B, 'shared-key');
      expect(first.status).to.equal(201);
      const bucketB = first.body as Bucket;
      expect(bucketB.id).to.not.equal(bucketA.id);
      const replayA = await createAs(p.url, A, 'shared-key');
      const replayB = await createAs(p.url, B, 'shared-key');
      expect([replayA.status, (replayA.body as Bucket).id]).to.deep.equal([200, bucketA.id]);
      expect([replayB.status, (replayB.body as Bucket).id]).to.deep.equal([200, bucketB.id]);
      // A lookup by key finds only the caller's bucket.
      const lookup = (await call(p.url, '/buckets?idempotencyKey=shared-key', B())).body as BucketList;
      expect(lookup.items.map((b) => b.id)).to.deep.equal([bucketB.id]);
      // Another body under the key is a reuse only within the account that used it.
      expect((await createAs(p.url, B, 'a-only-key', createBody({ sizeGB: 1 }))).status).to.equal(201);
      expect((await createAs(p.url, A, 'a-only-key', createBody({ sizeGB: 2 }))).status).to.equal(201);
    });

    it('scopes revocation: a key revoked in one account still creates in the other', async () => {
      const revoked = await call(p.url, '/idempotency-keys/shared-key/revoke', B({ method: 'POST' }));
      // B's key made nothing, so B learns nothing about A's bucket under the same key.
      expect(revoked.body).to.deep.equal({ bucket: null });
      expect((await createAs(p.url, B, 'shared-key')).body).to.deep.include({ code: 'IdempotencyKeyRevoked' });
      const replayA = await createAs(p.url, A, 'shared-key');
      expect([replayA.status, (replayA.body as Bucket).id]).to.deep.equal([200, bucketA.id]);
      const revokedA = await call(p.url, '/idempotency-keys/shared-key/revoke', A({ method: 'POST' }));
      expect((revokedA.body as { bucket: Bucket }).bucket.id).to.equal(bucketA.id);
    });
  });

  describe('ACCOUNT:KEY', () => {
    it('lets keys of one account share its buckets (a rotation) while another account stays apart', async () => {
      const p = await start({ apiKeys: ['team:old-key', 'team:new-key', 'other:other-key'] });
      try {
        const made = (
          await call(p.url, '/buckets', { method: 'POST', body: createBody(), headers: { 'idempotency-key': 'k' }, auth: 'Bearer old-key' })
        ).body as Bucket;
        expect(made.account).to.equal('team');
        const viaNew = await call(p.url, `/buckets/${made.id}`, { auth: 'Bearer new-key' });
        expect([viaNew.status, (viaNew.body as Bucket).id]).to.deep.equal([200, made.id]);
        const replay = await call(p.url, '/buckets', {
          method: 'POST',
          body: createBody(),
          headers: { 'idempotency-key': 'k' },
          auth: 'Bearer new-key',
        });
        expect([replay.status, (replay.body as Bucket).id]).to.deep.equal([200, made.id]);
        expect((await call(p.url, `/buckets/${made.id}`, { auth: 'Bearer other-key' })).status).to.equal(404);
        // The account-qualified form is not itself a key.
        expect((await call(p.url, '/buckets', { auth: 'Bearer team:old-key' })).status).to.equal(403);
      } finally {
        await p.close();
      }
    });
  });

  describe('POST /admin/api-keys', () => {
    let p: ProviderHandle;
    beforeEach(async () => {
      p = await start({ apiKeys: [KEY_A] });
    });
    afterEach(async () => {
      await p.close();
    });
    const add = (body: unknown, auth: string | null = ADMIN): Promise<Response> => call(p.url, '/admin/api-keys', { method: 'POST', body, auth });

    it('adds a key at run time as an account of its own, and again changes nothing', async () => {
      expect((await call(p.url, '/buckets', { auth: 'Bearer late-key' })).status).to.equal(403);
      const added = await add({ key: 'late-key' });
      expect([added.status, added.body]).to.deep.equal([201, { account: defaultAccountOf('late-key') }]);
      expect(added.text).to.not.include('late-key');
      expect((await call(p.url, '/buckets', { auth: 'Bearer late-key' })).status).to.equal(200);
      expect((await add({ key: 'late-key' })).status).to.equal(200);
    });

    it('adds a key to a named account, which then shares its buckets', async () => {
      const first = await add({ key: 'k-one', account: 'team' });
      expect(first.body).to.deep.equal({ account: 'team' });
      await add({ key: 'k-two', account: 'team' });
      const made = (await call(p.url, '/buckets', { method: 'POST', body: createBody(), auth: 'Bearer k-one' })).body as Bucket;
      expect((await call(p.url, `/buckets/${made.id}`, { auth: 'Bearer k-two' })).status).to.equal(200);
      expect((await call(p.url, `/buckets/${made.id}`, A())).status).to.equal(404);
      expect(p.addApiKey('k-three', 'team')).to.equal('team');
      expect((await call(p.url, `/buckets/${made.id}`, { auth: 'Bearer k-three' })).status).to.equal(200);
    });

    const refused: Record<string, { args: { body: unknown; auth?: string | null }; want: { status: number; code: string } }> = {
      'no admin token': { args: { body: { key: 'x-key' }, auth: null }, want: { status: 401, code: 'Unauthorized' } },
      'an API key instead of the admin token': {
        args: { body: { key: 'x-key' }, auth: `Bearer ${KEY_A}` },
        want: { status: 403, code: 'Forbidden' },
      },
      'a key of another account': { args: { body: { key: KEY_A, account: 'elsewhere' } }, want: { status: 409, code: 'Conflict' } },
      'an empty key': { args: { body: { key: '' } }, want: { status: 422, code: 'ValidationFailed' } },
      'a key with whitespace': { args: { body: { key: 'a b' } }, want: { status: 422, code: 'ValidationFailed' } },
      'a bad account name': { args: { body: { key: 'x-key', account: 'no spaces' } }, want: { status: 422, code: 'ValidationFailed' } },
      'an unknown field': { args: { body: { key: 'x-key', extra: 1 } }, want: { status: 422, code: 'ValidationFailed' } },
    };
    for (const [name, tc] of Object.entries(refused)) {
      it(`refuses ${name}`, async () => {
        const res = await add(tc.args.body, tc.args.auth === undefined ? ADMIN : tc.args.auth);
        expect([res.status, (res.body as { code: string }).code]).to.deep.equal([tc.want.status, tc.want.code]);
        expect(res.text).to.not.include(KEY_A);
        expect((await call(p.url, '/buckets', { auth: 'Bearer x-key' })).status).to.equal(403);
      });
    }
  });

  describe('persistence', () => {
    let dir: string;
    beforeEach(async () => {
      dir = await mkdtemp(join(tmpdir(), 'provider-accounts-'));
    });
    afterEach(async () => {
      await rm(dir, { recursive: true, force: true });
    });

    it('keeps each bucket, idempotency key and revocation in its account across a restart', async () => {
      const dataFile = join(dir, 'state.json');
      const first = await start({ dataFile, apiKeys: [KEY_A, KEY_B] });
      const a = (await createAs(first.url, A, 'k')).body as Bucket;
      const b = (await createAs(first.url, B, 'k')).body as Bucket;
      await call(first.url, '/idempotency-keys/fenced/revoke', B({ method: 'POST' }));
      await first.close();

      // The keys in another order: accounts follow the keys, not the default account.
      const second = await start({ dataFile, apiKeys: [KEY_B, KEY_A] });
      try {
        expect((await call(second.url, `/buckets/${a.id}`, A())).status).to.equal(200);
        expect((await call(second.url, `/buckets/${a.id}`, B())).status).to.equal(404);
        expect(((await createAs(second.url, A, 'k')).body as Bucket).id).to.equal(a.id);
        expect(((await createAs(second.url, B, 'k')).body as Bucket).id).to.equal(b.id);
        expect((await createAs(second.url, B, 'fenced')).status).to.equal(410);
        expect((await createAs(second.url, A, 'fenced')).status).to.equal(201);
      } finally {
        await second.close();
      }
    });

    it('loads a data file written before accounts into the account of the first key', async () => {
      const dataFile = join(dir, 'old.json');
      const t = Date.parse('2030-01-01T00:00:00Z');
      const old = {
        version: 1,
        buckets: [
          {
            id: 'bucket-00000000000a',
            region: 'us-east-1',
            sizeGB: 10,
            encrypted: false,
            tags: {},
            phase: 'Active',
            idempotencyKey: 'k',
            createdAt: t,
            updatedAt: t,
          },
        ],
        idempotencyKeys: [
          { key: 'k', bucketId: 'bucket-00000000000a', fingerprint: JSON.stringify({ region: 'us-east-1', sizeGB: 10, encrypted: false, tags: {} }) },
        ],
        revokedKeys: ['fenced'],
      };
      await writeFile(dataFile, JSON.stringify(old));
      const p = await start({ dataFile, apiKeys: [KEY_B, KEY_A] });
      try {
        const got = await call(p.url, '/buckets/bucket-00000000000a', B());
        expect([got.status, (got.body as Bucket).account]).to.deep.equal([200, defaultAccountOf(KEY_B)]);
        expect((await call(p.url, '/buckets/bucket-00000000000a', A())).status).to.equal(404);
        expect((await createAs(p.url, B, 'k')).status).to.equal(200);
        expect((await createAs(p.url, B, 'fenced')).status).to.equal(410);
        expect((await createAs(p.url, A, 'fenced')).status).to.equal(201);
      } finally {
        await p.close();
      }
    });
  });

  describe('the provider process of test/support', () => {
    it('starts with a thousand extra keys from a keys file, adds one at run time, and lists every account', async function () {
      this.timeout(60_000);
      const keys = Array.from({ length: 1000 }, (_, i) => `tenant-${i}-key`);
      const provider = await startProviderProcess({ apiKeys: [...keys, 'team:rotating-key'] });
      try {
        const made: string[] = [];
        for (const key of [provider.apiKey, keys[999] as string, 'rotating-key']) {
          const res = await fetch(`${provider.url}/buckets`, {
            method: 'POST',
            headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
            body: JSON.stringify({ region: 'us-east-1', sizeGB: 1, tags: { 'kubernetes-namespace': 'ns-x' } }),
          });
          expect(res.status, key).to.equal(201);
          made.push(((await res.json()) as Bucket).id);
        }
        expect((await provider.buckets('ns-x')).map((b) => b.id).sort()).to.deep.equal([...made].sort());
        expect(await provider.addApiKey('late-key', 'team')).to.equal('team');
        const viaLate = await fetch(`${provider.url}/buckets/${made[2] as string}`, { headers: { authorization: 'Bearer late-key' } });
        expect(viaLate.status).to.equal(200);
        expect(await provider.addApiKey('own-key')).to.equal(defaultAccountOf('own-key'));
      } finally {
        await provider.stop();
      }
    });
  });
});
