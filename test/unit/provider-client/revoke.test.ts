/**
 * ProviderClient.revokeIdempotencyKey against the in-process provider (answers, fencing a late
 * commit, faults) and against endpoints that are not the provider (error classification).
 */
import { expect } from 'chai';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Registry } from 'prom-client';
import { ProviderClients } from '../../../operator/provider-client/client';
import { NOT_A_PROVIDER_ERROR } from '../../../operator/provider-client/error-body';
import { ProviderError } from '../../../operator/provider-client/errors';
import type { FaultSettings, ProviderHandle } from '../../../provider/index';
import { API_KEY, start } from '../provider/helpers';

const createReq = { region: 'us-east-1', sizeGB: 1, encrypted: false, tags: { owner: 'a' } };

async function rejection(p: Promise<unknown>): Promise<ProviderError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).to.be.instanceOf(ProviderError);
  return err as ProviderError;
}

describe('ProviderClient.revokeIdempotencyKey (against an in-process provider)', () => {
  let p: ProviderHandle;
  const clock = { t: Date.parse('2030-01-01T00:00:00Z') };
  const registry = new Registry();
  const clients = new ProviderClients({ qps: 1000, burst: 1000, registry, timeoutMs: 200 });
  beforeEach(async () => {
    p = await start({ now: () => clock.t });
  });
  afterEach(async () => {
    await p.close();
  });
  after(() => clients.close());

  const keys: Record<string, string> = {
    'a plain key': 'k-1',
    'a key with a slash, a space and a question mark': 'ns/name uid?x=1',
    // Percent signs must reach the provider as typed, not decoded twice.
    'a key with percent signs and a plus': 'a%2Fb+c',
  };
  for (const [name, key] of Object.entries(keys)) {
    it(`${name}: undefined when the key made nothing, then the key is fenced`, async () => {
      const client = clients.client(p.url, API_KEY);
      expect(await client.revokeIdempotencyKey(key)).to.equal(undefined);
      const err = await rejection(client.createBucket(createReq, key));
      expect({ status: err.status, code: err.code, retryable: err.retryable }).to.deep.equal({
        status: 410,
        code: 'IdempotencyKeyRevoked',
        retryable: false,
      });
      expect(p.stats().requests).to.include({ 'POST /idempotency-keys/{key}/revoke 200': 1 });
    });
  }

  it('resolves the live bucket the key made, which stays', async () => {
    const client = clients.client(p.url, API_KEY);
    const made = await client.createBucket(createReq, 'mine');
    const got = await client.revokeIdempotencyKey('mine');
    expect(got).to.deep.include({ id: made.id, idempotencyKey: 'mine', tags: { owner: 'a' } });
    expect((await client.getBucket(made.id))?.id).to.equal(made.id);
    expect((await client.revokeIdempotencyKey('mine'))?.id, 'revoking again').to.equal(made.id);
  });

  it('fences a create whose answer never came: the late commit makes nothing', async () => {
    const client = clients.client(p.url, API_KEY);
    p.faults.set({ lateCommitOnCreate: { count: 1, delayMs: 60_000 } });
    const timedOut = await rejection(client.createBucket(createReq, 'late'));
    expect({ status: timedOut.status, code: timedOut.code, retryable: timedOut.retryable }).to.deep.equal({
      status: 0,
      code: 'ETIMEDOUT',
      retryable: true,
    });
    expect(await client.findByIdempotencyKey('late'), 'lookup while the create is pending').to.equal(undefined);
    expect(await client.revokeIdempotencyKey('late')).to.equal(undefined);
    clock.t += 60_000;
    expect(p.store.count()).to.equal(0);
    expect(p.store.lateCommits().discarded.revoked).to.equal(1);
  });

  it('is timed under the operation label revoke', async () => {
    await clients.client(p.url, API_KEY).revokeIdempotencyKey('k');
    const metric = (await registry.getMetricsAsJSON()).find((m) => m.name.endsWith('provider_call_duration_seconds'));
    const labels = (metric?.values ?? []).map((v) => v.labels);
    expect(labels).to.deep.include({ operation: 'revoke', code: '200' });
  });

  const failures: Record<string, { faults: FaultSettings; want: { status: number; code: string; retryable: boolean; retryAfterMs?: number } }> = {
    'an outage is a retryable 503': { faults: { outage: true }, want: { status: 503, code: 'ServiceUnavailable', retryable: true } },
    'throttling is a retryable 429 with its Retry-After': {
      faults: { throttleRate: 1, retryAfterSeconds: 2 },
      want: { status: 429, code: 'Throttled', retryable: true, retryAfterMs: 2000 },
    },
    'an injected 500 is retryable': {
      faults: { failNext: { status: 500, count: 1 } },
      want: { status: 500, code: 'InternalError', retryable: true },
    },
  };
  for (const [name, tc] of Object.entries(failures)) {
    it(`${name}, and nothing was fenced`, async () => {
      const client = clients.client(p.url, API_KEY);
      p.faults.set(tc.faults);
      const err = await rejection(client.revokeIdempotencyKey('k'));
      expect({
        status: err.status,
        code: err.code,
        retryable: err.retryable,
        ...(tc.want.retryAfterMs === undefined ? {} : { retryAfterMs: err.retryAfterMs }),
      }).to.deep.equal(tc.want);
      p.faults.clear();
      expect((await client.createBucket(createReq, 'k')).idempotencyKey).to.equal('k');
    });
  }

  it('a rejected API key is an auth error', async () => {
    const err = await rejection(clients.client(p.url, 'wrong').revokeIdempotencyKey('k'));
    expect(err.isAuthError).to.equal(true);
  });
});

describe('ProviderClient.revokeIdempotencyKey (against an endpoint that is not the provider)', () => {
  let server: Server;
  let url: string;
  let answer: (res: import('node:http').ServerResponse) => void;
  const clients = new ProviderClients({ qps: 1000, burst: 1000, timeoutMs: 200 });
  before(async () => {
    server = createServer((_req, res) => answer(res));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(async () => {
    clients.close();
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  const cases: Record<
    string,
    { answer: (res: import('node:http').ServerResponse) => void; want: { status: number; code: string; retryable: boolean; message: string } }
  > = {
    // An old provider without the route: "not found" must not read as "the key made no bucket".
    'a 404 (no such route) is an error, not "no bucket"': {
      answer: (res) => res.writeHead(404, { 'content-type': 'application/json' }).end('{"code":"NotFound","message":"no such route"}'),
      want: { status: 404, code: 'NotFound', retryable: false, message: 'provider revoke failed: 404 NotFound: no such route' },
    },
    'a reflected body of another service is not shown': {
      answer: (res) => res.writeHead(400, { 'content-type': 'application/json' }).end('{"message":"internal page: token=abc"}'),
      want: { status: 400, code: 'HTTP400', retryable: false, message: `provider revoke failed: 400 HTTP400: ${NOT_A_PROVIDER_ERROR}` },
    },
    'no answer is a retryable timeout': {
      answer: () => undefined,
      // HOST: the endpoint's host and port, which the message names (never its key).
      want: { status: 0, code: 'ETIMEDOUT', retryable: true, message: 'provider revoke failed: HOST sent nothing for 200 ms (the idle timeout)' },
    },
  };
  for (const [name, tc] of Object.entries(cases)) {
    it(name, async () => {
      answer = tc.answer;
      const err = await rejection(clients.client(url, 'k').revokeIdempotencyKey('key'));
      expect({ status: err.status, code: err.code, retryable: err.retryable, message: err.message }).to.deep.equal({
        ...tc.want,
        message: tc.want.message.replace('HOST', new URL(url).host),
      });
    });
  }
});
