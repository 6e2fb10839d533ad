/**
 * The provider client against endpoints that answer too much or too slowly (the mock provider's
 * hostile modes, and raw node:http servers for shapes it does not make): every call ends with
 * an error that names the limit and the endpoint's host, having read no more than the limit,
 * and the client goes on serving other calls.
 */
import { expect } from 'chai';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Registry } from 'prom-client';
import {
  DEFAULT_MAX_ANSWER_BYTES,
  NOT_JSON,
  ProviderClients,
  UNUSABLE_LIST,
  type ProviderClientsOptions,
} from '../../../operator/provider-client/client';
import { NOT_A_PROVIDER_ERROR, REDIRECT_NOT_FOLLOWED } from '../../../operator/provider-client/error-body';
import { ProviderAnswerTooLargeError, ProviderError, ProviderTimeoutError } from '../../../operator/provider-client/errors';
import type { ProviderHandle } from '../../../provider';
import { eventually } from '../../support/eventually';
import { API_KEY, start } from '../provider/helpers';

/** The most a read can pass its cap by: the one socket chunk that passed it (libuv reads 64 KiB). */
const ONE_CHUNK = 64 * 1024;
const BUCKET_ID = 'bucket-000000000001';

async function rejection(p: Promise<unknown>): Promise<ProviderError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err, 'the call should have failed').to.be.instanceOf(ProviderError);
  return err as ProviderError;
}

async function listen(server: Server): Promise<string> {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

function hostOf(url: string): string {
  return new URL(url).host;
}

describe('provider client: bounded answers (against the hostile mock provider)', () => {
  let p: ProviderHandle;
  let clients: ProviderClients;
  const make = (opts: ProviderClientsOptions = {}): ProviderClients => {
    clients = new ProviderClients({ qps: 1000, burst: 1000, registry: new Registry(), ...opts });
    return clients;
  };
  beforeEach(async () => {
    p = await start({ activationDelayMs: 0 });
  });
  afterEach(async () => {
    clients.close();
    await p.close();
  });

  /** The huge answer's writer returns (its request is counted) once the client has gone. */
  const answerEnded = (route: string, status: number) =>
    eventually(() => p.stats().requests[`GET ${route} ${status}`] === 1, {
      description: `the provider to see the client leave ${route}`,
      timeoutMs: 5000,
    });

  it('refuses a 400 MB answer on its Content-Length, before reading a byte of it', async () => {
    p.faults.set({ hugeAnswerBytes: 400_000_000 });
    const client = make().client(p.url, API_KEY);
    const err = await rejection(client.getBucket(BUCKET_ID));
    expect(err).to.be.instanceOf(ProviderAnswerTooLargeError);
    const tooLarge = err as ProviderAnswerTooLargeError;
    expect({
      status: err.status,
      code: err.code,
      retryable: err.retryable,
      limitKind: tooLarge.limitKind,
      bytesRead: tooLarge.bytesRead,
    }).to.deep.equal({
      status: 0,
      code: 'AnswerTooLarge',
      retryable: true,
      limitKind: 'bytes',
      bytesRead: 0,
    });
    expect(err.message).to.equal(`provider get failed: the answer from ${hostOf(p.url)} is larger than 1 MiB (the answer size limit)`);
    await answerEnded('/buckets/{id}', 200);
  });

  it('cuts a chunked 400 MB answer as soon as it passes the cap, having read at most one chunk more', async () => {
    p.faults.set({ hugeAnswerBytes: 400_000_000, hugeAnswerChunked: true });
    const err = await rejection(make().client(p.url, API_KEY).getBucket(BUCKET_ID));
    expect(err).to.be.instanceOf(ProviderAnswerTooLargeError);
    const { bytesRead, limit } = err as ProviderAnswerTooLargeError;
    expect(limit).to.equal(DEFAULT_MAX_ANSWER_BYTES);
    expect(bytesRead).to.be.greaterThan(DEFAULT_MAX_ANSWER_BYTES);
    expect(bytesRead).to.be.at.most(DEFAULT_MAX_ANSWER_BYTES + ONE_CHUNK);
    await answerEnded('/buckets/{id}', 200);
  });

  it('lets a list page be larger than an answer, and caps it at its own limit', async () => {
    const c = make({ maxAnswerBytes: 64 * 1024, maxListPageBytes: 256 * 1024 });
    const client = c.client(p.url, API_KEY);
    p.faults.set({ hugeAnswerBytes: 128 * 1024, hugeAnswerChunked: true });
    // 128 KiB: too large for an answer, read whole as a page (then refused as no list).
    expect(await rejection(client.getBucket(BUCKET_ID))).to.be.instanceOf(ProviderAnswerTooLargeError);
    const page = await rejection(client.listBuckets({}));
    expect(page.code).to.equal(`${UNUSABLE_LIST}.NoItems`);
    p.faults.set({ hugeAnswerBytes: 512 * 1024, hugeAnswerChunked: true });
    const tooLarge = await rejection(client.listBuckets({}));
    expect(tooLarge).to.be.instanceOf(ProviderAnswerTooLargeError);
    expect(tooLarge.message).to.equal(`provider list failed: the answer from ${hostOf(p.url)} is larger than 256 KiB (the answer size limit)`);
  });

  it('trims a huge error answer while reading: its status counts, its body is never buffered', async () => {
    for (const chunked of [false, true]) {
      p.faults.set({ hugeAnswerBytes: 400_000_000, hugeAnswerChunked: chunked, hugeAnswerStatus: 503 });
      p.resetStats();
      const err = await rejection(make().client(p.url, API_KEY).getBucket(BUCKET_ID));
      expect({ chunked, status: err.status, code: err.code, retryable: err.retryable, message: err.message }).to.deep.equal({
        chunked,
        status: 503,
        code: 'HTTP503',
        retryable: true,
        message: `provider get failed: 503 HTTP503: ${NOT_A_PROVIDER_ERROR}`,
      });
      await answerEnded('/buckets/{id}', 503);
      clients.close();
    }
  });

  it('ends a body trickled a byte at a time at the call deadline, not the idle timeout', async () => {
    p.faults.set({ trickleIntervalMs: 100 });
    const err = await rejection(make({ timeoutMs: 5000, deadlineMs: 500 }).client(p.url, API_KEY).accountId());
    expect(err).to.be.instanceOf(ProviderTimeoutError);
    expect({ kind: (err as ProviderTimeoutError).timeoutKind, status: err.status, code: err.code, retryable: err.retryable }).to.deep.equal({
      kind: 'deadline',
      status: 0,
      code: 'ETIMEDOUT',
      retryable: true,
    });
    expect(err.message).to.equal(`provider account failed: ${hostOf(p.url)} did not finish answering within 500 ms (the call deadline)`);
  });

  it('ends a slow answer (a long delay, then 503) at the idle timeout', async () => {
    p.faults.set({ latencyMs: 3000, outage: true });
    const err = await rejection(make({ timeoutMs: 300 }).client(p.url, API_KEY).getBucket(BUCKET_ID));
    expect(err).to.be.instanceOf(ProviderTimeoutError);
    expect((err as ProviderTimeoutError).timeoutKind).to.equal('idle');
    expect(err.message).to.equal(`provider get failed: ${hostOf(p.url)} sent nothing for 300 ms (the idle timeout)`);
  });

  it('does not follow a redirect to another host, and says so without the Location', async () => {
    let seen = 0;
    const other = createServer((_req, res) => {
      seen++;
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"account":"stolen"}');
    });
    const otherUrl = await listen(other);
    try {
      p.faults.set({ redirectTo: `${otherUrl}/collect?token=abc` });
      const err = await rejection(make().client(p.url, API_KEY).accountId());
      expect({ status: err.status, code: err.code, retryable: err.retryable, message: err.message }).to.deep.equal({
        status: 307,
        code: 'HTTP307',
        retryable: false,
        message: `provider account failed: 307 HTTP307: ${REDIRECT_NOT_FOLLOWED}`,
      });
      expect(seen, 'requests at the host redirected to').to.equal(0);
    } finally {
      other.closeAllConnections();
      await new Promise((r) => other.close(r));
    }
  });

  it('reports malformed JSON as a clear, retryable error', async () => {
    p.faults.set({ malformedJson: true });
    const err = await rejection(make().client(p.url, API_KEY).getBucket(BUCKET_ID));
    expect({ status: err.status, code: err.code, retryable: err.retryable, message: err.message }).to.deep.equal({
      status: 200,
      code: NOT_JSON,
      retryable: true,
      message: 'provider get answered 200 with a body that is not JSON',
    });
  });

  it('reports a connection reset as a retryable transport error', async () => {
    p.faults.set({ resetRate: 1 });
    const err = await rejection(make().client(p.url, API_KEY).getBucket(BUCKET_ID));
    expect({ status: err.status, code: err.code, retryable: err.retryable }).to.deep.equal({ status: 0, code: 'ECONNRESET', retryable: true });
  });

  it('goes on serving calls once a hostile answer was cut', async () => {
    const client = make().client(p.url, API_KEY);
    p.faults.set({ hugeAnswerBytes: 50_000_000, hugeAnswerChunked: true });
    await rejection(client.accountId());
    p.faults.clear();
    expect(await client.accountId()).to.match(/^acct-/);
  });

  it('names the host in its messages, never the API key or userinfo of the endpoint', async () => {
    p.faults.set({ hugeAnswerBytes: 400_000_000 });
    const { port } = new URL(p.url);
    const err = await rejection(make().client(`http://someone:hunter2@127.0.0.1:${port}`, API_KEY).getBucket(BUCKET_ID));
    expect(err.message).to.include(`127.0.0.1:${port}`);
    for (const secret of [API_KEY, 'hunter2', 'someone']) expect(err.message).to.not.include(secret);
  });
});

describe('provider client: bounded answers (against raw endpoints)', () => {
  let server: Server;
  let url: string;
  let answer: (res: ServerResponse, path: string) => void;
  let clients: ProviderClients;
  before(async () => {
    server = createServer((req, res) => answer(res, req.url ?? '/'));
    url = await listen(server);
  });
  afterEach(() => clients.close());
  after(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  it('cuts an answer within its bytes whose JSON values would cost the heap many times its size', async () => {
    // 60 KiB of empty arrays: under 1 MiB, but 20,000 arrays for JSON.parse to make.
    const body = `[${'[],'.repeat(20_000)}[]]`;
    answer = (res) => res.writeHead(200, { 'content-type': 'application/json' }).end(body);
    clients = new ProviderClients({ registry: new Registry() });
    const err = await rejection(clients.client(url, 'k').getBucket(BUCKET_ID));
    expect(err).to.be.instanceOf(ProviderAnswerTooLargeError);
    expect({ limitKind: (err as ProviderAnswerTooLargeError).limitKind, limit: (err as ProviderAnswerTooLargeError).limit }).to.deep.equal({
      limitKind: 'values',
      limit: 16_384,
    });
    expect(err.message).to.equal(`provider get failed: the answer from ${hostOf(url)} holds more than 16384 JSON values (the answer size limit)`);
  });

  it('caps the pages of one list together, since each page stays in memory until the last', async () => {
    let pages = 0;
    const item = (i: number) => ({ id: `bucket-${String(i).padStart(12, '0')}`, tags: { pad: 'x'.repeat(900) } });
    answer = (res) => {
      pages++;
      // Each page is about 92 KiB, well under the page cap, and always says more follow: the
      // third one passes 250 KiB in all.
      const items = Array.from({ length: 100 }, (_, i) => item(pages * 100 + i));
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ items, continue: `page-${pages}` }));
    };
    clients = new ProviderClients({ registry: new Registry(), qps: 1000, burst: 1000, maxListBytes: 250 * 1024 });
    const err = await rejection(clients.client(url, 'k').listBuckets({}));
    expect(err).to.be.instanceOf(ProviderAnswerTooLargeError);
    expect((err as ProviderAnswerTooLargeError).limitKind).to.equal('listTotal');
    expect(err.message).to.equal(`provider list failed: the bucket list from ${hostOf(url)} is larger than 250 KiB in total (the list size limit)`);
    expect(pages).to.equal(3);
  });

  it('refuses a page with more buckets than it asked for', async () => {
    const items = Array.from({ length: 1001 }, (_, i) => ({ id: `b-${i}` }));
    answer = (res) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ items }));
    clients = new ProviderClients({ registry: new Registry() });
    const err = await rejection(clients.client(url, 'k').listBuckets({}));
    expect({ code: err.code, retryable: err.retryable }).to.deep.equal({ code: `${UNUSABLE_LIST}.TooManyItems`, retryable: true });
  });

  it('reads a lookup by idempotency key that is not a list as an unusable list, not a crash', async () => {
    answer = (res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    clients = new ProviderClients({ registry: new Registry() });
    const err = await rejection(clients.client(url, 'k').findByIdempotencyKey('key'));
    expect(err.code).to.equal(`${UNUSABLE_LIST}.NoItems`);
  });

  it('refuses limits that are not positive integers, naming them', () => {
    expect(() => new ProviderClients({ maxAnswerBytes: 0 })).to.throw(/maxAnswerBytes=0/);
    expect(() => new ProviderClients({ deadlineMs: 1.5 })).to.throw(/deadlineMs=1.5/);
  });
});
