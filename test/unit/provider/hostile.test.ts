/**
 * The mock provider's hostile modes over HTTP: what each answers, that it answers in place of
 * the handler (nothing is stored), that only authenticated API requests suffer it, that a huge
 * body is streamed as the client reads (the provider survives a client leaving early), and
 * their settings from JSON and the command line.
 */
import { expect } from 'chai';
import { request, type IncomingMessage } from 'node:http';
import { parseCli } from '../../../provider/cli';
import { MALFORMED_JSON_BODY, parseFaultSettings } from '../../../provider/faults';
import type { ProviderHandle } from '../../../provider';
import { eventually } from '../../support/eventually';
import { ADMIN_TOKEN, API_KEY, call, create, createBody, httpError, start } from './helpers';

/** Sends a GET with the API key and resolves with the response once its headers are in, unread. */
function headersOf(url: string, path: string): Promise<{ res: IncomingMessage; destroy: () => void }> {
  return new Promise((resolve, reject) => {
    const req = request(`${url}${path}`, { headers: { authorization: `Bearer ${API_KEY}` } }, (res) =>
      resolve({ res, destroy: () => req.destroy() }),
    );
    req.on('error', reject);
    req.end();
  });
}

/** Reads a response's body, counting its chunks' sizes. */
function readAll(res: IncomingMessage): Promise<{ text: string; chunks: number[] }> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    res.on('data', (c: Buffer) => parts.push(c));
    res.on('end', () => resolve({ text: Buffer.concat(parts).toString('utf8'), chunks: parts.map((p) => p.length) }));
    res.on('error', reject);
  });
}

describe('provider hostile modes', () => {
  let p: ProviderHandle;
  beforeEach(async () => {
    p = await start();
  });
  afterEach(async () => {
    await p.close();
  });

  const huge: Record<
    string,
    { args: { chunked: boolean; status?: 200 | 503 }; want: { status: number; contentLength: string | undefined; code?: string } }
  > = {
    'with Content-Length': { args: { chunked: false }, want: { status: 200, contentLength: String(200_000) } },
    'chunked, without Content-Length': { args: { chunked: true }, want: { status: 200, contentLength: undefined } },
    'as an error answer': {
      args: { chunked: false, status: 503 },
      want: { status: 503, contentLength: String(200_000), code: 'ServiceUnavailable' },
    },
  };
  for (const [name, { args, want }] of Object.entries(huge)) {
    it(`hugeAnswerBytes ${name}: a JSON body of exactly that many bytes, in place of the handler`, async () => {
      p.faults.set({ hugeAnswerBytes: 200_000, hugeAnswerChunked: args.chunked, ...(args.status ? { hugeAnswerStatus: args.status } : {}) });
      const res = await create(p.url, 'k');
      const body = res.body as { code?: string };
      expect({ status: res.status, contentLength: res.headers['content-length'], ...(want.code ? { code: body.code } : {}) }).to.deep.equal(want);
      expect(Buffer.byteLength(res.text)).to.equal(200_000);
      expect(p.store.count(), 'buckets made').to.equal(0);
    });
  }

  it('streams a huge body as the client reads it, and stops when the client leaves', async () => {
    p.faults.set({ hugeAnswerBytes: 64 * 1024 ** 3, hugeAnswerChunked: true });
    const { res, destroy } = await headersOf(p.url, '/account');
    let read = 0;
    await new Promise<void>((resolve) => {
      res.on('data', (c: Buffer) => {
        read += c.length;
        if (read > 1024 * 1024) {
          destroy();
          resolve();
        }
      });
    });
    // The writer returns (and counts the answer) only once the client is gone: had it built
    // the 64 GiB body first, it could not have sent any of it.
    await eventually(() => p.stats().requests['GET /account 200'] === 1, { description: 'the huge answer to end', timeoutMs: 5000 });
    expect((await call(p.url, '/healthz')).status).to.equal(200);
  });

  it('trickleIntervalMs: headers at once, then the body one byte at a time', async () => {
    p.faults.set({ trickleIntervalMs: 1 });
    const { res } = await headersOf(p.url, '/account');
    expect(res.statusCode).to.equal(200);
    const { text, chunks } = await readAll(res);
    expect(JSON.parse(text)).to.have.property('account');
    expect(new Set(chunks)).to.deep.equal(new Set([1]));
    expect(chunks).to.have.length(Buffer.byteLength(text));
  });

  it('trickles error answers too, but never an unauthenticated one', async () => {
    p.faults.set({ trickleIntervalMs: 1, outage: true });
    const { res } = await headersOf(p.url, '/buckets');
    const { chunks } = await readAll(res);
    expect({ status: res.statusCode, oneByteChunks: chunks.every((c) => c === 1) }).to.deep.equal({ status: 503, oneByteChunks: true });
    const unauthenticated = await call(p.url, '/buckets', { auth: null });
    expect(unauthenticated.status).to.equal(401);
  });

  it('malformedJson: 200 application/json with a document cut short', async () => {
    p.faults.set({ malformedJson: true });
    const { res: raw } = await headersOf(p.url, '/buckets/bucket-000000000000');
    expect({ status: raw.statusCode, type: raw.headers['content-type'], body: (await readAll(raw)).text }).to.deep.equal({
      status: 200,
      type: 'application/json; charset=utf-8',
      body: MALFORMED_JSON_BODY,
    });
    expect(() => JSON.parse(MALFORMED_JSON_BODY) as unknown).to.throw(SyntaxError);
  });

  it('redirectTo: 307 to the target plus the path and query, with nothing stored', async () => {
    p.faults.set({ redirectTo: 'http://elsewhere.example:9000/' });
    const res = await call(p.url, '/buckets?limit=5', { method: 'POST', body: createBody(), headers: { 'idempotency-key': 'k' } });
    expect({ status: res.status, location: res.headers.location }).to.deep.equal({
      status: 307,
      location: 'http://elsewhere.example:9000/buckets?limit=5',
    });
    expect(p.store.count()).to.equal(0);
  });

  it('resetRate 1: every connection reset with no answer, counted as dropped', async () => {
    p.faults.set({ resetRate: 1 });
    const err = await call(p.url, '/account').then(
      () => undefined,
      (e: unknown) => e as NodeJS.ErrnoException,
    );
    expect(err?.code).to.equal('ECONNRESET');
    expect(p.stats().requests).to.deep.equal({ 'GET /account dropped': 1 });
  });

  it('leave /healthz, /admin and requests that fail auth alone', async () => {
    p.faults.set({ resetRate: 1, hugeAnswerBytes: 1_000_000 });
    expect((await call(p.url, '/healthz')).text).to.equal('{"status":"ok"}');
    expect((await call(p.url, '/admin/faults', { auth: `Bearer ${ADMIN_TOKEN}` })).status).to.equal(200);
    expect((await call(p.url, '/buckets', { auth: 'Bearer wrong' })).status).to.equal(403);
  });

  it('apply in order: a reset before a redirect before a huge answer before malformed JSON', async () => {
    const all = { redirectTo: 'http://elsewhere.example', hugeAnswerBytes: 100, malformedJson: true };
    p.faults.set({ resetRate: 1, ...all });
    expect(await call(p.url, '/account').catch((e: NodeJS.ErrnoException) => e.code)).to.equal('ECONNRESET');
    p.faults.set(all);
    expect((await call(p.url, '/account')).status).to.equal(307);
    p.faults.set({ hugeAnswerBytes: 100, malformedJson: true });
    expect(Buffer.byteLength((await call(p.url, '/account')).text)).to.equal(100);
  });

  describe('settings', () => {
    const refused: Record<string, { args: unknown; want: RegExp }> = {
      'resetRate above 1': { args: { resetRate: 2 }, want: /^resetRate: must be a number between 0 and 1/ },
      'redirectTo not a URL': { args: { redirectTo: 'elsewhere' }, want: /^redirectTo: must be an absolute http\(s\) URL/ },
      'redirectTo another scheme': { args: { redirectTo: 'file:///etc/passwd' }, want: /^redirectTo: must be an absolute http\(s\) URL/ },
      'hugeAnswerBytes too small to frame': { args: { hugeAnswerBytes: 10 }, want: /^hugeAnswerBytes: must be 0 or at least 64/ },
      'hugeAnswerBytes negative': { args: { hugeAnswerBytes: -1 }, want: /^hugeAnswerBytes: must be an integer/ },
      'hugeAnswerStatus 404': { args: { hugeAnswerStatus: 404 }, want: /^hugeAnswerStatus: must be one of 200, 429, 500, 502, 503, 504/ },
      'hugeAnswerChunked a string': { args: { hugeAnswerChunked: 'yes' }, want: /^hugeAnswerChunked: must be a boolean/ },
      'malformedJson a number': { args: { malformedJson: 1 }, want: /^malformedJson: must be a boolean/ },
      'trickleIntervalMs too long': { args: { trickleIntervalMs: 3_600_000 }, want: /^trickleIntervalMs: must be an integer/ },
    };
    for (const [name, tc] of Object.entries(refused)) {
      it(`refuses ${name}`, () => {
        const err = httpError(() => parseFaultSettings(tc.args));
        expect([err.status, err.message]).to.satisfy(([status, message]: [number, string]) => status === 422 && tc.want.test(message));
      });
    }

    it('are off by default and switch at run time with PUT /admin/faults', async () => {
      expect(p.faults.get()).to.deep.include({
        resetRate: 0,
        redirectTo: null,
        hugeAnswerBytes: 0,
        hugeAnswerChunked: false,
        hugeAnswerStatus: 200,
        malformedJson: false,
        trickleIntervalMs: 0,
      });
      const res = await call(p.url, '/admin/faults', {
        method: 'PUT',
        auth: `Bearer ${ADMIN_TOKEN}`,
        body: { hugeAnswerBytes: 400_000_000, hugeAnswerChunked: true },
      });
      expect(res.status).to.equal(200);
      expect(p.faults.get()).to.deep.include({ hugeAnswerBytes: 400_000_000, hugeAnswerChunked: true });
    });

    it('are read from the command line', async () => {
      const { options } = await parseCli(
        [
          '--api-key',
          'k',
          '--reset-rate',
          '0.5',
          '--redirect-to',
          'http://elsewhere.example',
          '--huge-answer-bytes',
          '400000000',
          '--huge-answer-chunked',
          '--huge-answer-status',
          '503',
          '--malformed-json',
          '--trickle-interval-ms',
          '1000',
        ],
        {},
      );
      expect(options.faults).to.deep.equal({
        resetRate: 0.5,
        redirectTo: 'http://elsewhere.example',
        hugeAnswerBytes: 400_000_000,
        hugeAnswerChunked: true,
        hugeAnswerStatus: 503,
        malformedJson: true,
        trickleIntervalMs: 1000,
      });
    });

    it('refuses a bad flag naming it', async () => {
      const err = await parseCli(['--api-key', 'k', '--huge-answer-bytes', 'lots'], {}).then(
        () => undefined,
        (e: unknown) => e as Error,
      );
      expect(err?.message).to.equal('--huge-answer-bytes must be a non-negative integer');
    });
  });
});
