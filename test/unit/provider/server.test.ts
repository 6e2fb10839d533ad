import { expect } from 'chai';
import type { Bucket, BucketList, ProviderHandle } from '../../../provider';
import { ADMIN_TOKEN, API_KEY, call, create, createBody, start, type CallOptions } from './helpers';
import { eventually, IN_PROCESS } from '../../support/eventually';
import type { FaultController } from '../../../provider/faults';

describe('provider HTTP API', () => {
  let p: ProviderHandle;
  beforeEach(async () => {
    p = await start({ activationDelayMs: 50, resizeDelayMs: 50 });
  });
  afterEach(async () => {
    await p.close();
  });

  async function activeBucket(key = 'active'): Promise<Bucket> {
    const created = (await create(p.url, key)).body as Bucket;
    return eventually(() => (p.store.get(created.id)?.phase === 'Active' ? p.store.get(created.id) : undefined), { ...IN_PROCESS, timeoutMs: 3000 });
  }

  it('close() lets in-flight requests finish and then stops listening', async () => {
    const slow = await start();
    slow.faults.set({ latencyMs: 100 });
    // close() must come once the request is in the handler: a fixed wait before it let a loaded
    // machine close the listener before the connection was accepted (ECONNRESET, seen in a run).
    let arrived = (): void => undefined;
    const inHandler = new Promise<void>((resolve) => (arrived = resolve));
    // The handle's switch is the server's FaultController, which every api request asks first.
    const faults = slow.faults as FaultController;
    const latencyMs = faults.latencyMs.bind(faults);
    faults.latencyMs = () => {
      arrived();
      return latencyMs();
    };
    const inFlight = call(slow.url, '/buckets');
    await inHandler;
    await slow.close();
    expect((await inFlight).status).to.equal(200);
    const after = await call(slow.url, '/healthz').catch((err: NodeJS.ErrnoException) => err.code);
    expect(after).to.be.oneOf(['ECONNREFUSED', 'ECONNRESET']);
  });

  it('GET /healthz answers without auth', async () => {
    const res = await call(p.url, '/healthz', { auth: null });
    expect(res.status).to.equal(200);
    expect(res.body).to.deep.equal({ status: 'ok' });
  });

  describe('POST /buckets', () => {
    it('creates a Provisioning bucket that becomes Active', async () => {
      const res = await create(p.url, 'k1', createBody({ encrypted: true, tags: { team: 'a' } }));
      expect(res.status).to.equal(201);
      const bucket = res.body as Bucket;
      expect(bucket).to.include({ region: 'us-east-1', sizeGB: 10, encrypted: true, phase: 'Provisioning', idempotencyKey: 'k1' });
      expect(bucket.tags).to.deep.equal({ team: 'a' });
      expect(bucket.endpoint).to.equal(`https://${bucket.id}.us-east-1.storage.example`);
      expect(Date.parse(bucket.createdAt)).to.equal(Date.parse(bucket.updatedAt));
      expect(res.headers.location).to.equal(`/buckets/${bucket.id}`);
      expect(res.headers['x-request-id']).to.be.a('string');
      const active = await eventually(
        async () => {
          const got = await call(p.url, `/buckets/${bucket.id}`);
          return (got.body as Bucket).phase === 'Active' ? (got.body as Bucket) : undefined;
        },
        { ...IN_PROCESS, timeoutMs: 3000 },
      );
      expect(Date.parse(active.updatedAt)).to.be.greaterThan(Date.parse(bucket.createdAt));
    });

    it('replays the same key and body with 200 and Idempotent-Replayed', async () => {
      const first = await create(p.url, 'k1');
      const again = await create(p.url, 'k1', { ...createBody(), encrypted: false, tags: {} });
      expect(again.status).to.equal(200);
      expect(again.headers['idempotent-replayed']).to.equal('true');
      expect((again.body as Bucket).id).to.equal((first.body as Bucket).id);
      expect(p.store.count()).to.equal(1);
    });

    it('rejects the same key with another body as 409 IdempotencyKeyReused', async () => {
      await create(p.url, 'k1');
      const res = await create(p.url, 'k1', createBody({ sizeGB: 11 }));
      expect(res.status).to.equal(409);
      expect(res.body).to.deep.include({ code: 'IdempotencyKeyReused' });
    });

    it('answers 410 BucketDeleted for a key whose bucket was deleted', async () => {
      const { id } = (await create(p.url, 'k1')).body as Bucket;
      expect((await call(p.url, `/buckets/${id}`, { method: 'DELETE' })).status).to.equal(204);
      const res = await create(p.url, 'k1');
      expect(res.status).to.equal(410);
      expect(res.body).to.deep.include({ code: 'BucketDeleted' });
      expect(p.store.count()).to.equal(0);
    });

    it('creates exactly one bucket for 20 concurrent requests with one key', async () => {
      p.faults.set({ latencyMs: 20 });
      const results = await Promise.all(Array.from({ length: 20 }, () => create(p.url, 'same-key')));
      const statuses = results.map((r) => r.status).sort((a, b) => a - b);
      expect(statuses).to.deep.equal([...Array<number>(19).fill(200), 201]);
      expect(new Set(results.map((r) => (r.body as Bucket).id)).size).to.equal(1);
      expect(p.store.count()).to.equal(1);
    });

    it('creates a bucket per request without a key', async () => {
      await call(p.url, '/buckets', { method: 'POST', body: createBody() });
      await call(p.url, '/buckets', { method: 'POST', body: createBody() });
      expect(p.store.count()).to.equal(2);
      expect(p.store.list()[0]).to.not.have.property('idempotencyKey');
    });
  });

  describe('GET /buckets', () => {
    it('lists by id, filters by tag and key, and pages with continue', async () => {
      for (let i = 0; i < 5; i++) await create(p.url, `k${i}`, createBody({ tags: { n: String(i), all: 'yes' } }));
      const all = (await call(p.url, '/buckets')).body as BucketList;
      expect(all.items.map((b) => b.id)).to.deep.equal(p.store.list().map((b) => b.id));
      expect(all).to.not.have.property('continue');

      const byTag = (await call(p.url, '/buckets?tag=n=3&tag=all=yes')).body as BucketList;
      expect(byTag.items.map((b) => b.tags.n)).to.deep.equal(['3']);
      const byKey = (await call(p.url, '/buckets?idempotencyKey=k2')).body as BucketList;
      expect(byKey.items.map((b) => b.idempotencyKey)).to.deep.equal(['k2']);

      const ids: string[] = [];
      let next: string | undefined = '';
      while (next !== undefined) {
        const query: string = next === '' ? '?limit=2' : `?limit=2&continue=${encodeURIComponent(next)}`;
        const page = (await call(p.url, `/buckets${query}`)).body as BucketList;
        ids.push(...page.items.map((b) => b.id));
        next = page.continue;
      }
      expect(ids).to.deep.equal(all.items.map((b) => b.id));
    });

    it('rejects a bad query with 422 naming the parameter', async () => {
      const res = await call(p.url, '/buckets?limit=5000');
      expect(res.status).to.equal(422);
      expect(res.body).to.deep.include({ code: 'ValidationFailed' });
      expect((res.body as { message: string }).message).to.match(/^limit: /);
    });
  });

  describe('GET, PATCH, DELETE /buckets/{id}', () => {
    it('gets a bucket or answers 404', async () => {
      const { id } = (await create(p.url, 'k')).body as Bucket;
      expect((await call(p.url, `/buckets/${id}`)).status).to.equal(200);
      const missing = await call(p.url, '/buckets/bucket-000000000000');
      expect(missing.status).to.equal(404);
      expect(missing.body).to.deep.include({ code: 'NotFound' });
    });

    it('grows a bucket through Resizing back to Active', async () => {
      const bucket = await activeBucket();
      const res = await call(p.url, `/buckets/${bucket.id}`, { method: 'PATCH', body: { sizeGB: 20, tags: { t: '1' } } });
      expect(res.status).to.equal(200);
      expect(res.body).to.include({ sizeGB: 20, phase: 'Resizing' });
      await eventually(() => p.store.get(bucket.id)?.phase === 'Active', { ...IN_PROCESS, timeoutMs: 3000 });
      expect(p.store.get(bucket.id)?.tags).to.deep.equal({ t: '1' });
    });

    const patchErrors: Record<string, { body: unknown; provisioning?: boolean; status: number; code: string }> = {
      shrink: { body: { sizeGB: 5 }, status: 422, code: 'ValidationFailed' },
      'while Provisioning': { body: { sizeGB: 20 }, provisioning: true, status: 409, code: 'NotReady' },
      'unknown field': { body: { region: 'eu-west-1' }, status: 422, code: 'ValidationFailed' },
      'size too big': { body: { sizeGB: 10001 }, status: 422, code: 'ValidationFailed' },
    };
    for (const [name, tc] of Object.entries(patchErrors)) {
      it(`PATCH ${name} -> ${tc.status} ${tc.code}`, async () => {
        const id = tc.provisioning === true ? ((await create(p.url, 'slow')).body as Bucket).id : (await activeBucket()).id;
        if (tc.provisioning === true) p.store.adminPatch(id, { phase: 'Provisioning' });
        const res = await call(p.url, `/buckets/${id}`, { method: 'PATCH', body: tc.body });
        expect(res.status).to.equal(tc.status);
        expect(res.body).to.deep.include({ code: tc.code });
      });
    }

    it('PATCH of an absent bucket is 404', async () => {
      const res = await call(p.url, '/buckets/bucket-000000000000', { method: 'PATCH', body: {} });
      expect(res.status).to.equal(404);
    });

    it('DELETE answers 204, then 404 (which clients treat as done)', async () => {
      const { id } = (await create(p.url, 'k')).body as Bucket;
      const first = await call(p.url, `/buckets/${id}`, { method: 'DELETE' });
      expect(first.status).to.equal(204);
      expect(first.text).to.equal('');
      const second = await call(p.url, `/buckets/${id}`, { method: 'DELETE' });
      expect(second.status).to.equal(404);
      expect(second.body).to.deep.include({ code: 'NotFound' });
    });
  });

  describe('errors', () => {
    const cases: Record<string, { path: string; opts: CallOptions; status: number; code: string; headers?: Record<string, string> }> = {
      'unknown route': { path: '/nope', opts: {}, status: 404, code: 'NotFound' },
      'trailing slash': { path: '/buckets/', opts: {}, status: 404, code: 'NotFound' },
      'nested path': { path: '/buckets/a/b', opts: {}, status: 404, code: 'NotFound' },
      'bad percent-encoding': { path: '/buckets/%E0%A4%A', opts: {}, status: 404, code: 'NotFound' },
      'PUT /buckets': { path: '/buckets', opts: { method: 'PUT' }, status: 405, code: 'MethodNotAllowed', headers: { allow: 'GET, POST' } },
      'POST /buckets/{id}': {
        path: '/buckets/x',
        opts: { method: 'POST' },
        status: 405,
        code: 'MethodNotAllowed',
        headers: { allow: 'GET, PATCH, DELETE' },
      },
      'DELETE /healthz': { path: '/healthz', opts: { method: 'DELETE' }, status: 405, code: 'MethodNotAllowed', headers: { allow: 'GET' } },
      'POST /admin/faults': {
        path: '/admin/faults',
        opts: { method: 'POST' },
        status: 405,
        code: 'MethodNotAllowed',
        headers: { allow: 'GET, PUT' },
      },
      'GET /admin/buckets/{id}': {
        path: '/admin/buckets/x',
        opts: { method: 'GET' },
        status: 405,
        code: 'MethodNotAllowed',
        headers: { allow: 'PATCH, DELETE' },
      },
      'no Authorization': { path: '/buckets', opts: { auth: null }, status: 401, code: 'Unauthorized', headers: { 'www-authenticate': 'Bearer' } },
      'Basic auth': {
        path: '/buckets',
        opts: { auth: 'Basic dXNlcjpwYXNz' },
        status: 401,
        code: 'Unauthorized',
        headers: { 'www-authenticate': 'Bearer' },
      },
      'wrong key': { path: '/buckets', opts: { auth: 'Bearer wrong' }, status: 403, code: 'Forbidden' },
      'admin token on /buckets': { path: '/buckets', opts: { auth: `Bearer ${ADMIN_TOKEN}` }, status: 403, code: 'Forbidden' },
      'wrong content type': {
        path: '/buckets',
        opts: { method: 'POST', body: 'region=us-east-1', headers: { 'content-type': 'application/x-www-form-urlencoded' } },
        status: 415,
        code: 'UnsupportedMediaType',
      },
      'no content type': { path: '/buckets', opts: { method: 'POST', body: '{}' }, status: 415, code: 'UnsupportedMediaType' },
      'malformed JSON': {
        path: '/buckets',
        opts: { method: 'POST', body: '{"region":', headers: { 'content-type': 'application/json' } },
        status: 400,
        code: 'MalformedJSON',
      },
      'empty body': {
        path: '/buckets',
        opts: { method: 'POST', body: '', headers: { 'content-type': 'application/json; charset=utf-8' } },
        status: 400,
        code: 'MalformedJSON',
      },
      'body over 64 KiB': {
        path: '/buckets',
        opts: { method: 'POST', body: createBody({ tags: { a: 'x'.repeat(70 * 1024) } }) },
        status: 413,
        code: 'PayloadTooLarge',
      },
      'unknown region': { path: '/buckets', opts: { method: 'POST', body: createBody({ region: 'mars-1' }) }, status: 422, code: 'ValidationFailed' },
      'sizeGB not an integer': {
        path: '/buckets',
        opts: { method: 'POST', body: createBody({ sizeGB: 2.5 }) },
        status: 422,
        code: 'ValidationFailed',
      },
      'Idempotency-Key too long': {
        path: '/buckets',
        opts: { method: 'POST', body: createBody(), headers: { 'idempotency-key': 'k'.repeat(256) } },
        status: 422,
        code: 'ValidationFailed',
      },
    };
    for (const [name, tc] of Object.entries(cases)) {
      it(`${name} -> ${tc.status} ${tc.code}`, async () => {
        const res = await call(p.url, tc.path, tc.opts);
        expect(res.status).to.equal(tc.status);
        expect(res.headers['content-type']).to.equal('application/json; charset=utf-8');
        const body = res.body as { code: string; message: string };
        expect(body.code).to.equal(tc.code);
        expect(body.message).to.be.a('string').and.not.equal('');
        for (const [header, value] of Object.entries(tc.headers ?? {})) expect(res.headers[header]).to.equal(value);
      });
    }

    it('answers 500 InternalError when a handler throws unexpectedly, and keeps serving', async () => {
      p.store.get = (): never => {
        throw new Error('boom');
      };
      const res = await call(p.url, '/buckets/bucket-000000000000');
      expect(res.status).to.equal(500);
      expect(res.body).to.deep.equal({ code: 'InternalError', message: 'internal error' });
      expect((await call(p.url, '/healthz')).status).to.equal(200);
    });

    it('echoes a safe X-Request-Id and replaces an unsafe one', async () => {
      const safe = await call(p.url, '/healthz', { headers: { 'x-request-id': 'abc-123' } });
      expect(safe.headers['x-request-id']).to.equal('abc-123');
      const unsafe = await call(p.url, '/healthz', { headers: { 'x-request-id': 'a b<script>' } });
      expect(unsafe.headers['x-request-id']).to.match(/^[0-9a-f-]{36}$/);
    });
  });

  describe('admin API', () => {
    const admin = `Bearer ${ADMIN_TOKEN}`;

    it('guards admin routes with the admin token, not an API key', async () => {
      expect((await call(p.url, '/admin/stats', { auth: null })).status).to.equal(401);
      expect((await call(p.url, '/admin/stats', { auth: `Bearer ${API_KEY}` })).status).to.equal(403);
      expect((await call(p.url, '/admin/stats', { auth: admin })).status).to.equal(200);
    });

    it('PUT and GET /admin/faults switch faults at run time', async () => {
      const put = await call(p.url, '/admin/faults', { method: 'PUT', auth: admin, body: { failNext: { status: 503, count: 1 } } });
      expect(put.status).to.equal(200);
      expect(put.body).to.deep.include({ failNext: { status: 503, count: 1 }, outage: false });
      expect((await call(p.url, '/buckets')).status).to.equal(503);
      expect((await call(p.url, '/buckets')).status).to.equal(200);
      const got = await call(p.url, '/admin/faults', { auth: admin });
      expect(got.body).to.deep.include({ failNext: { status: 503, count: 0 } });
      const bad = await call(p.url, '/admin/faults', { method: 'PUT', auth: admin, body: { errorRate: 2 } });
      expect(bad.status).to.equal(422);
      expect((bad.body as { message: string }).message).to.match(/^errorRate: /);
    });

    it('GET /admin/stats counts requests by method, route and status; DELETE resets', async () => {
      const bucket = await activeBucket();
      p.resetStats();
      for (let i = 0; i < 3; i++) await call(p.url, `/buckets/${bucket.id}`);
      await call(p.url, '/buckets/bucket-000000000000');
      await call(p.url, '/nope');
      const stats = (await call(p.url, '/admin/stats', { auth: admin })).body as { total: number; requests: Record<string, number> };
      expect(stats.requests).to.deep.equal({ 'GET * 404': 1, 'GET /buckets/{id} 200': 3, 'GET /buckets/{id} 404': 1 });
      expect(stats.total).to.equal(5);
      expect(p.stats().requests['GET /admin/stats 200']).to.equal(1);
      expect((await call(p.url, '/admin/stats', { method: 'DELETE', auth: admin })).status).to.equal(204);
      expect(p.stats()).to.deep.equal({ total: 1, requests: { 'DELETE /admin/stats 204': 1 } });
    });

    it('PATCH /admin/buckets/{id} sets drift directly, even a smaller size', async () => {
      const bucket = await activeBucket();
      const res = await call(p.url, `/admin/buckets/${bucket.id}`, {
        method: 'PATCH',
        auth: admin,
        body: { sizeGB: 1, encrypted: true, phase: 'Resizing', tags: { drift: 'yes' } },
      });
      expect(res.status).to.equal(200);
      expect(res.body).to.include({ sizeGB: 1, encrypted: true, phase: 'Resizing' });
      const seen = (await call(p.url, `/buckets/${bucket.id}`)).body as Bucket;
      expect(seen.tags).to.deep.equal({ drift: 'yes' });
      const bad = await call(p.url, `/admin/buckets/${bucket.id}`, { method: 'PATCH', auth: admin, body: { phase: 'Gone' } });
      expect(bad.status).to.equal(422);
      const missing = await call(p.url, '/admin/buckets/bucket-000000000000', { method: 'PATCH', auth: admin, body: {} });
      expect(missing.status).to.equal(404);
    });

    it('DELETE /admin/buckets/{id} removes a bucket behind the client', async () => {
      const { id } = (await create(p.url, 'k')).body as Bucket;
      expect((await call(p.url, `/admin/buckets/${id}`, { method: 'DELETE', auth: admin })).status).to.equal(204);
      expect((await call(p.url, `/buckets/${id}`)).status).to.equal(404);
      expect((await call(p.url, `/admin/buckets/${id}`, { method: 'DELETE', auth: admin })).status).to.equal(404);
      expect((await create(p.url, 'k')).status).to.equal(410);
    });

    it('is absent (404) when no admin token is configured', async () => {
      const plain = await start({ adminToken: undefined });
      try {
        for (const path of ['/admin/faults', '/admin/stats', '/admin/buckets/x']) {
          const res = await call(plain.url, path, { auth: `Bearer ${ADMIN_TOKEN}` });
          expect(res.status, path).to.equal(404);
        }
      } finally {
        await plain.close();
      }
    });
  });
});
