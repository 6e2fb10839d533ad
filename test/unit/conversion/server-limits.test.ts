/**
 * The conversion webhook against clients that try to exhaust it, over real TLS on loopback:
 * bodies too large (declared, or chunked without end), more reviews in flight than it takes,
 * more connections than it keeps, handshakes and headers that never finish. Each case asserts
 * what the client sees (an answer, a closed connection), never how long it took: the deadlines
 * are set short so that the mocha timeout, not a sleep, is what a hanging server runs into.
 */
import { expect } from 'chai';
import { connect as netConnect, type Socket } from 'node:net';
import { request, type RequestOptions } from 'node:https';
import type { IncomingMessage } from 'node:http';
import { connect as tlsConnect, type TLSSocket } from 'node:tls';
import { pino } from 'pino';
import * as v1 from '../../../operator/api/v1';
import * as v2 from '../../../operator/api/v2';
import { serviceDnsNames } from '../../../operator/conversion/certificates';
import type { ConversionLimits } from '../../../operator/conversion/limits';
import { reviewConversion } from '../../../operator/conversion/review';
import { DEFAULT_CERT_POLICY } from '../../../operator/conversion/rotation';
import { applyRotation, CertSecretKey, servingCredentials } from '../../../operator/conversion/secret-certs';
import { ConversionServer } from '../../../operator/conversion/server';
import { eventually, IN_PROCESS } from '../../support/eventually';

const MiB = 1024 * 1024;
const logger = pino({ level: 'silent' });

const bucket = (i: number): v1.StorageBucket => ({
  apiVersion: v1.API_VERSION,
  kind: 'StorageBucket',
  metadata: { name: `b-${i}`, namespace: 'team-a' },
  spec: { region: 'eu-west-1', sizeGB: 3, providerRef: { name: 'default' } },
});
const reviewBody = (uid: string, objects: unknown[] = [bucket(0)]) =>
  JSON.stringify({ apiVersion: 'apiextensions.k8s.io/v1', kind: 'ConversionReview', request: { uid, desiredAPIVersion: v2.API_VERSION, objects } });

const data = applyRotation({ kind: 'create', reason: 'test' }, undefined, Date.now(), DEFAULT_CERT_POLICY, {
  commonName: 'bucketoperator-webhook',
  dnsNames: serviceDnsNames('bucketoperator-webhook', 'ns'),
  ipAddresses: ['127.0.0.1'],
});
const serving = servingCredentials(data)!;
const ca = data[CertSecretKey.caBundle]!;

interface Started {
  readonly server: ConversionServer;
  readonly port: number;
}

async function start(limits: Partial<ConversionLimits> = {}): Promise<Started> {
  const server = new ConversionServer({ metrics: { observe: () => undefined }, logger, limits });
  server.setCertificate(serving);
  const { port } = await server.listen(0, '127.0.0.1');
  return { server, port };
}

/** A TLS connection to the webhook, once its handshake is done. */
function tls(port: number): Promise<TLSSocket> {
  return new Promise((resolve, reject) => {
    const socket = tlsConnect({ host: '127.0.0.1', port, ca }, () => resolve(socket));
    socket.once('error', reject);
  });
}

/** Everything `socket` receives until the other side closes it. */
function untilClosed(socket: Socket): Promise<string> {
  const chunks: Buffer[] = [];
  socket.on('data', (c: Buffer) => chunks.push(c));
  return new Promise((resolve) => {
    socket.once('close', () => resolve(Buffer.concat(chunks).toString('latin1')));
    // A reset is a way of being closed too; 'close' follows it.
    socket.on('error', () => undefined);
  });
}

const statusOf = (raw: string) => Number(/^HTTP\/1\.1 (\d{3})/.exec(raw)?.[1] ?? 0);

interface Reply {
  readonly status: number;
  readonly headers: IncomingMessage['headers'];
  readonly body: string;
}

function replyOf(res: IncomingMessage): Promise<Reply> {
  const chunks: Buffer[] = [];
  res.on('data', (c: Buffer) => chunks.push(c));
  return new Promise((resolve, reject) => {
    res.once('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
    res.once('error', reject);
  });
}

function options(port: number, headers: Record<string, string | number>): RequestOptions {
  return { host: '127.0.0.1', port, path: '/convert', method: 'POST', ca, agent: false, headers: { 'content-type': 'application/json', ...headers } };
}

function post(port: number, body: string): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = request(options(port, { 'content-length': Buffer.byteLength(body) }), (res) => resolve(replyOf(res)));
    req.once('error', reject);
    req.end(body);
  });
}

describe('conversion webhook server: no client can exhaust it (real TLS over loopback)', () => {
  let started: Started | undefined;
  afterEach(async () => {
    await started?.server.stop(100);
    started = undefined;
  });

  it('a declared Content-Length over the default cap (8 MiB > 7 MiB) is answered 413 and closed without a byte of the body sent', async () => {
    started = await start();
    const socket = await tls(started.port);
    const received = untilClosed(socket);
    // Headers only: a server that waited for the body would answer nothing until its deadline.
    socket.write(`POST /convert HTTP/1.1\r\nHost: webhook\r\nContent-Type: application/json\r\nContent-Length: ${8 * MiB}\r\n\r\n`);
    const raw = await received;
    expect(statusOf(raw)).to.equal(413);
    expect(raw).to.match(/request body exceeds 7340032 bytes/);
    // The connection was closed, so the next review needs a new one, and is answered.
    expect((await post(started.port, reviewBody('after'))).status).to.equal(200);
  });

  it('a chunked body is cut as it passes the default cap: 413 and the connection closed while the client still sends', async () => {
    started = await start();
    const { port } = started;
    let sent = 0;
    const outcome = await new Promise<{ status: number; closed: boolean }>((resolve) => {
      let status = 0;
      const req = request(options(port, { 'transfer-encoding': 'chunked' }), (res) => {
        status = res.statusCode ?? 0;
        res.resume();
      });
      // Whatever ends the exchange (the answer, then the close, or a reset), the client learns it through 'close'.
      req.once('close', () => resolve({ status, closed: true }));
      req.on('error', () => undefined);
      const chunk = Buffer.alloc(64 * 1024, 0x20);
      // 8 MiB, and never the end of the body: the old 32 MiB cap would wait for more forever.
      const pump = () => {
        while (sent < 8 * MiB && !req.destroyed) {
          sent += chunk.length;
          if (!req.write(chunk)) {
            req.once('drain', pump);
            return;
          }
        }
      };
      pump();
    });
    expect(outcome).to.deep.equal({ status: 413, closed: true });
    expect((await post(port, reviewBody('after'))).status).to.equal(200);
  });

  it('a finished chunked body of 8 MiB is refused 413, where the old 32 MiB cap read it all', async () => {
    started = await start();
    const { port } = started;
    const status = await new Promise<number>((resolve, reject) => {
      const req = request(options(port, { 'transfer-encoding': 'chunked' }), (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      // The connection is closed after the answer, with the client possibly still sending.
      req.on('error', reject);
      const chunk = Buffer.alloc(64 * 1024, 0x20);
      let sent = 0;
      const pump = () => {
        while (sent < 8 * MiB) {
          sent += chunk.length;
          if (!req.write(chunk)) {
            req.once('drain', pump);
            return;
          }
        }
        req.end();
      };
      pump();
    });
    // A server that read it all would answer 400: eight MiB of spaces are not JSON.
    expect(status).to.equal(413);
  });

  it('the review past maxInFlight is answered 429 with Retry-After while the others are read; those are answered, and a seat frees', async () => {
    started = await start({ maxInFlight: 2 });
    const { server, port } = started;
    const body = reviewBody('held');
    const half = Math.floor(body.length / 2);
    // Two reviews hold their seats: headers and half the body sent, the rest held back.
    const held = [0, 1].map(() => {
      const req = request(options(port, { 'content-length': Buffer.byteLength(body) }));
      const reply = new Promise<Reply>((resolve, reject) => {
        req.once('response', (res) => resolve(replyOf(res)));
        req.once('error', reject);
      });
      req.write(body.slice(0, half));
      return { req, reply };
    });
    await eventually(() => server.reviewsInFlight === 2, { ...IN_PROCESS, description: 'two reviews in flight' });
    const refused = await post(port, reviewBody('third'));
    expect(refused.status).to.equal(429);
    expect(refused.headers['retry-after']).to.equal('1');
    for (const { req } of held) req.end(body.slice(half));
    expect((await Promise.all(held.map((h) => h.reply))).map((r) => r.status)).to.deep.equal([200, 200]);
    await eventually(() => server.reviewsInFlight === 0, { ...IN_PROCESS, description: 'the seats given back' });
    expect((await post(port, reviewBody('fourth'))).status).to.equal(200);
  });

  it('a chunked review past maxInFlight is answered 429 on a connection that closes, since its body could go on', async () => {
    started = await start({ maxInFlight: 1 });
    const { server, port } = started;
    const body = reviewBody('held');
    const held = request(options(port, { 'content-length': Buffer.byteLength(body) }));
    const heldReply = new Promise<Reply>((resolve, reject) => {
      held.once('response', (res) => resolve(replyOf(res)));
      held.once('error', reject);
    });
    held.write(body.slice(0, 10));
    await eventually(() => server.reviewsInFlight === 1, { ...IN_PROCESS, description: 'one review in flight' });
    const socket = await tls(port);
    const received = untilClosed(socket);
    // Headers and the first chunk, and never the last one.
    socket.write('POST /convert HTTP/1.1\r\nHost: webhook\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n4\r\n{"a"\r\n');
    const raw = await received;
    expect(statusOf(raw)).to.equal(429);
    expect(raw).to.match(/\r\nretry-after: 1\r\n/i);
    held.end(body.slice(10));
    expect((await heldReply).status).to.equal(200);
  });

  it('a connection past maxConnections is closed as it is accepted; once one closes, a new one is served', async () => {
    started = await start({ maxConnections: 2 });
    const { port } = started;
    const open = [await tls(port), await tls(port)];
    const refused = await tls(port).then(
      (s) => {
        s.destroy();
        return 'handshake completed';
      },
      (err: unknown) => (err as Error).message,
    );
    expect(refused).to.match(/socket disconnected|ECONNRESET|socket hang up/i);
    const closed = untilClosed(open[0]!);
    open[0]!.destroy();
    await closed;
    const again = await eventually(() => tls(port), { ...IN_PROCESS, description: 'a connection accepted again' });
    const answer = untilClosed(again);
    again.end(
      `POST /convert HTTP/1.1\r\nHost: webhook\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: ${Buffer.byteLength(reviewBody('again'))}\r\n\r\n${reviewBody('again')}`,
    );
    expect(statusOf(await answer)).to.equal(200);
    open[1]!.destroy();
  });

  it('a slowloris (headers never finished) is answered 408 and closed at the header deadline', async () => {
    started = await start({ headersTimeoutMs: 300, requestTimeoutMs: 1000, deadlineCheckIntervalMs: 100 });
    const socket = await tls(started.port);
    const received = untilClosed(socket);
    socket.write('POST /convert HTTP/1.1\r\nHost: webhook\r\nX-Slow: ');
    expect(statusOf(await received)).to.equal(408);
  });

  it('a body that never ends is answered 408 and closed at the request deadline', async () => {
    started = await start({ headersTimeoutMs: 300, requestTimeoutMs: 600, deadlineCheckIntervalMs: 100 });
    const socket = await tls(started.port);
    const received = untilClosed(socket);
    socket.write('POST /convert HTTP/1.1\r\nHost: webhook\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"kind":');
    expect(await received).to.satisfy((raw: string) => raw === '' || statusOf(raw) === 408);
    await eventually(() => started!.server.reviewsInFlight === 0, { ...IN_PROCESS, description: 'the seat given back' });
  });

  it('a TCP connection that never starts its TLS handshake is closed at the handshake deadline', async () => {
    started = await start({ handshakeTimeoutMs: 300 });
    const socket = netConnect({ host: '127.0.0.1', port: started.port });
    await new Promise((resolve) => socket.once('connect', resolve));
    expect(await untilClosed(socket)).to.equal('');
  });

  it('a review of 3,000 objects is answered in full, object for object what the review at once answers', async () => {
    started = await start();
    const objects = Array.from({ length: 3000 }, (_, i) => bucket(i));
    const body = reviewBody('many', objects);
    const reply = await post(started.port, body);
    expect(reply.status).to.equal(200);
    const whole = reviewConversion(JSON.parse(body));
    expect(JSON.parse(reply.body)).to.deep.equal(whole.kind === 'review' ? whole.review : undefined);
  });
});
