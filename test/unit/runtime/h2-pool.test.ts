/**
 * The HTTP/2 session pool against a real loopback TLS server (node:http2), reached through a
 * TCP relay that can go silent the way a dead connection does (nothing forwarded, pings
 * included, the socket still open): a session is taken out of rotation when a stream given up
 * on it may mean a dead peer, retired sessions stay health-checked, sessions retire before
 * their stream IDs run out, and the receive windows are client-go's. Certificates come from
 * tls-fixtures.ts.
 */
import { expect } from 'chai';
import http2 from 'node:http2';
import net, { type AddressInfo } from 'node:net';
import { KubeClient } from '../../../operator/runtime/client';
import { connectTls } from '../../../operator/runtime/connect';
import { H2Pool, type H2PoolOptions } from '../../../operator/runtime/h2-pool';
import { staticToken } from '../../../operator/runtime/rest-config';
import type { ResourceKind } from '../../../operator/runtime/types';
import { eventually } from '../../support/eventually';
import { CA_CERT, SERVER_CERT, SERVER_KEY } from './tls-fixtures';

const ConfigMaps: ResourceKind = { group: '', version: 'v1', kind: 'ConfigMap', plural: 'configmaps', namespaced: true };

/** Paths the test server knows: an answer, a head and then nothing, nothing at all, a 3 MiB answer. */
const OK = '/ok';
const HEAD_ONLY = '/head-only';
const HANG = '/hang';
const BIG = '/big';
const BIG_BYTES = 3 * 1024 * 1024;

interface TestServer {
  readonly port: number;
  /** The server-side session of every request, in arrival order. */
  readonly requests: Array<{ path: string; session: http2.Http2Session; stream: http2.ServerHttp2Stream }>;
  /** Every session the server accepted, with the SETTINGS the client sent and the pings it got. */
  readonly sessions: Array<{ session: http2.ServerHttp2Session; initialWindowSize?: number; pings: number }>;
  close(): Promise<void>;
}

/** An HTTP/2 TLS server that answers OK (and any /api path) at once and never answers HANG. */
async function serveH2(): Promise<TestServer> {
  const server = http2.createSecureServer({ cert: SERVER_CERT, key: SERVER_KEY, settings: { maxConcurrentStreams: 100 } });
  const requests: TestServer['requests'] = [];
  const sessions: TestServer['sessions'] = [];
  server.on('session', (session) => {
    const seen: TestServer['sessions'][number] = { session, pings: 0 };
    sessions.push(seen);
    session.on('remoteSettings', (s) => (seen.initialWindowSize = s.initialWindowSize));
    session.on('ping', () => seen.pings++);
    session.on('error', () => undefined);
  });
  server.on('stream', (stream: http2.ServerHttp2Stream, headers) => {
    const path = String(headers[':path']);
    requests.push({ path, session: stream.session!, stream });
    stream.on('error', () => undefined);
    if (path === HANG) return;
    stream.respond({ ':status': 200, 'content-type': 'application/json' });
    if (path === HEAD_ONLY) return;
    stream.end(path === BIG ? Buffer.alloc(BIG_BYTES, 'x') : JSON.stringify({ metadata: { name: 'a', namespace: 'ns' } }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    requests,
    sessions,
    close: async () => {
      for (const s of sessions) s.session.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** One client connection through the relay. */
interface Link {
  frozen: boolean;
  /** The client closed its end (the pool destroyed or closed the session). */
  clientClosed: boolean;
}

/**
 * A TCP relay in front of the server. `freeze()` makes every connection open at that moment go
 * silent both ways, as a peer that vanished without a FIN or RST; later connections work.
 */
async function relay(targetPort: number): Promise<{ port: number; links: Link[]; freeze(): void; close(): Promise<void> }> {
  const links: Link[] = [];
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const link: Link = { frozen: false, clientClosed: false };
    links.push(link);
    const upstream = net.connect(targetPort, '127.0.0.1');
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('error', () => undefined);
      s.on('close', () => sockets.delete(s));
    }
    client.on('data', (d: Buffer) => link.frozen || upstream.write(d));
    upstream.on('data', (d: Buffer) => link.frozen || client.write(d));
    client.on('close', () => {
      link.clientClosed = true;
      upstream.destroy();
    });
    upstream.on('close', () => link.frozen || client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    links,
    freeze: () => links.forEach((l) => (l.frozen = !l.clientClosed)),
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function pool(port: number, opts: Partial<H2PoolOptions> = {}): H2Pool {
  return new H2Pool({
    origin: `https://127.0.0.1:${port}`,
    connect: () => connectTls({ host: '127.0.0.1', port, tls: { ca: CA_CERT } }, ['h2'], 5_000),
    ...opts,
  });
}

/** A GET on a pooled stream, as the transport sends it; resolves with the body. */
async function get(p: H2Pool, path: string): Promise<string> {
  const slot = await p.acquire();
  const stream = slot.session.request({ ':path': path });
  stream.on('close', () => slot.release());
  return new Promise((resolve, reject) => {
    let body = '';
    stream.setEncoding('utf8');
    stream.on('response', () => slot.read());
    stream.on('data', (c: string) => (body += c));
    stream.on('end', () => resolve(body));
    stream.on('error', reject);
  });
}

/** Opens a stream on a pooled session; `giveUp` does what the transport does at a deadline or abort. */
async function open(p: H2Pool, path: string): Promise<{ stream: http2.ClientHttp2Stream; closed: Promise<void>; giveUp(): void }> {
  const slot = await p.acquire();
  const stream = slot.session.request({ ':path': path });
  stream.on('error', () => undefined);
  stream.on('response', () => slot.read());
  const closed = new Promise<void>((resolve) => stream.on('close', resolve));
  void closed.then(() => slot.release());
  return {
    stream,
    closed,
    giveUp: () => {
      slot.cancelled();
      stream.destroy();
    },
  };
}

describe('H2Pool', () => {
  let server: TestServer;
  let relayed: Awaited<ReturnType<typeof relay>>;
  let p: H2Pool | undefined;

  beforeEach(async () => {
    server = await serveH2();
    relayed = await relay(server.port);
  });

  afterEach(async () => {
    p?.close();
    p = undefined;
    await relayed.close();
    await server.close();
  });

  describe('a stream given up (deadline or abort)', () => {
    it('on a peer that stopped answering: the session is handed out no more, the next request gets a new one, and the session is destroyed when the ping goes unanswered', async function () {
      this.timeout(10_000);
      // The health check alone (30 s quiet, then 15 s) cannot be what finds the dead connection here.
      p = pool(relayed.port, { pingTimeoutMs: 500 });
      await get(p, OK);
      relayed.freeze();
      const lost = await open(p, HANG);
      lost.giveUp();
      expect(p.size(), 'sessions in rotation right after giving up').to.equal(0);
      expect(JSON.parse(await get(p, OK))).to.have.nested.property('metadata.name', 'a');
      expect(relayed.links, 'connections opened').to.have.length(2);
      await eventually(() => relayed.links[0]!.clientClosed, { description: 'the silent connection to be closed by the pool', timeoutMs: 5_000 });
      expect(server.sessions[1]!.session.closed, 'the new session').to.equal(false);
    });

    it('on a live peer: the ping is answered and the session goes back into rotation', async function () {
      this.timeout(10_000);
      p = pool(relayed.port, { pingTimeoutMs: 5_000 });
      await get(p, OK);
      const slow = await open(p, HANG);
      slow.giveUp();
      expect(p.size(), 'sessions in rotation until the ping is answered').to.equal(0);
      await eventually(() => p!.size() === 1, { description: 'the session to be back in rotation', timeoutMs: 5_000 });
      expect(server.sessions[0]!.pings, 'pings the server received').to.equal(1);
      await get(p, OK);
      expect(relayed.links, 'connections opened').to.have.length(1);
    });

    it('after the session read something since the stream was sent: no ping is needed, the session stays in rotation', async () => {
      p = pool(relayed.port);
      await get(p, OK);
      const answered = await open(p, HEAD_ONLY);
      await new Promise((resolve) => answered.stream.once('response', resolve));
      answered.giveUp();
      expect(p.size()).to.equal(1);
    });
  });

  describe('a retired session whose peer vanished', () => {
    const retireBy: Record<string, (p: H2Pool, server: TestServer) => void> = {
      'a GOAWAY from the server': (_p, s) => {
        const hung = s.requests.find((r) => r.path === HANG)!;
        hung.session.goaway(http2.constants.NGHTTP2_NO_ERROR, hung.stream.id);
      },
      'closing the pool': (p) => p.close(),
    };
    for (const [name, retire] of Object.entries(retireBy)) {
      it(`is destroyed by the health check, failing its open streams (retired by ${name})`, async function () {
        this.timeout(10_000);
        p = pool(relayed.port, { readIdleTimeoutMs: 200, pingTimeoutMs: 300 });
        const watch = await open(p, HANG);
        await eventually(() => server.requests.length === 1, { description: 'the server to receive the stream', timeoutMs: 5_000 });
        retire(p, server);
        await eventually(() => p!.size() === 0, { description: 'the session to leave the rotation', timeoutMs: 5_000 });
        relayed.freeze();
        await eventually(() => watch.stream.closed && relayed.links[0]!.clientClosed, {
          description: 'the draining session to be destroyed with its stream',
          timeoutMs: 8_000,
        });
      });
    }
  });

  it('retires a session before its stream IDs run out: later requests use a new session, the old one closes', async function () {
    this.timeout(10_000);
    p = pool(relayed.port, { maxStreamsPerSession: 3 });
    for (let i = 0; i < 4; i++) await get(p, OK);
    const [a, b, c, d] = server.requests.map((r) => r.session);
    expect([b, c], 'the budget of the first session').to.deep.equal([a, a]);
    expect(d, 'the fourth request').to.not.equal(a);
    await eventually(() => a!.closed || a!.destroyed, { description: 'the spent session to close', timeoutMs: 5_000 });
  });

  describe('receive windows (client-go: 4 MiB per stream, 1 GiB per connection)', () => {
    it('are what the server sees', async () => {
      p = pool(relayed.port);
      await get(p, OK);
      expect(server.sessions[0]!.initialWindowSize, 'SETTINGS_INITIAL_WINDOW_SIZE').to.equal(4 * 1024 * 1024);
      // What the server may still send on the connection, a small answer later.
      expect(server.sessions[0]!.session.state.remoteWindowSize, 'connection window').to.be.greaterThan(1024 ** 3 - 1024);
    });

    it('let the server send a 3 MiB answer whole before the client reads a byte of it', async function () {
      this.timeout(10_000);
      p = pool(relayed.port);
      const big = await open(p, BIG);
      big.stream.pause();
      // With Node's 64 KiB default window the server's stream would wait for the reader here.
      await eventually(() => server.requests.find((r) => r.path === BIG)?.stream.writableFinished, {
        description: 'the server to have sent the whole answer',
        timeoutMs: 8_000,
      });
      let received = 0;
      big.stream.on('data', (c: Buffer) => (received += c.length));
      big.stream.resume();
      await big.closed;
      expect(received).to.equal(BIG_BYTES);
    });
  });
});

describe('Transport over HTTP/2: a request given up on a dead connection', () => {
  const giveUpBy: Record<string, { requestTimeoutMs: number; signal?: () => AbortSignal }> = {
    'its deadline passing': { requestTimeoutMs: 300 },
    // The Lease renewal's case: the elector aborts the attempt at its renew deadline.
    'an abort': { requestTimeoutMs: 30_000, signal: () => AbortSignal.timeout(300) },
  };
  for (const [name, tc] of Object.entries(giveUpBy)) {
    it(`after ${name}, the next request gets a fresh session at once instead of after the health check`, async function () {
      this.timeout(10_000);
      const server = await serveH2();
      const relayed = await relay(server.port);
      const client = new KubeClient({
        restConfig: {
          server: `https://127.0.0.1:${relayed.port}`,
          tls: { ca: Buffer.from(CA_CERT) },
          credentials: staticToken('tok'),
          source: 'test',
        },
        requestTimeoutMs: tc.requestTimeoutMs,
        pingTimeoutMs: 1_000,
      });
      try {
        await client.get(ConfigMaps, 'ns', 'a');
        relayed.freeze();
        const err = await client.get(ConfigMaps, 'ns', 'a', tc.signal ? { signal: tc.signal() } : {}).catch((e: unknown) => e);
        expect(err, 'the request on the dead connection').to.be.instanceOf(Error);
        // Well inside a renew deadline, and far from ReadIdleTimeout (30 s) + PingTimeout.
        const again = await client.get(ConfigMaps, 'ns', 'a', { timeoutMs: 3_000 });
        expect(again.metadata?.name).to.equal('a');
        const [first, retry] = server.requests.map((r) => r.session);
        expect(server.requests, 'requests the server received').to.have.length(2);
        expect(retry, 'the session of the answered retry').to.not.equal(first);
        await eventually(() => first!.closed || first!.destroyed, { description: 'the dead connection to be closed', timeoutMs: 5_000 });
      } finally {
        client.close();
        await relayed.close();
        await server.close();
      }
    });
  }
});
