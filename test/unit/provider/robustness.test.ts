import { expect } from 'chai';
import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import type { ProviderHandle } from '../../../provider';
import { API_KEY, call, start } from './helpers';

/** Sends raw bytes, half-closes, and collects whatever comes back until the server closes. */
function raw(url: string, bytes: Buffer): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    const socket = connect({ host: hostname, port: Number(port) }, () => socket.end(bytes));
    socket.on('data', (c: Buffer) => chunks.push(c));
    // A reset after garbage is an acceptable answer; only a crash or a hang is not.
    socket.on('error', () => undefined);
    socket.on('close', () => resolve(Buffer.concat(chunks).toString('latin1')));
    socket.setTimeout(3000, () => socket.destroy());
  });
}

/** Seeded bytes, so a failing case can be replayed. */
function garbage(seed: number, length: number): Buffer {
  let x = seed;
  const out = Buffer.alloc(length);
  for (let i = 0; i < length; i++) {
    x = (x * 1103515245 + 12345) >>> 0;
    out[i] = x >>> 24;
  }
  return out;
}

/** Streams `total` bytes as a chunked body; resolves with the status as soon as it arrives. */
function streamBody(url: string, total: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${url}/buckets`, {
      method: 'POST',
      headers: { authorization: `Bearer ${API_KEY}`, 'content-type': 'application/json' },
    });
    let answered = false;
    req.on('response', (res) => {
      answered = true;
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    // Writing into a connection the server closed fails after the answer; that is expected.
    req.on('error', (err) => {
      if (!answered) reject(err);
    });
    const chunk = Buffer.alloc(16 * 1024, 0x20);
    let sent = 0;
    const pump = (): void => {
      while (sent < total && !req.destroyed) {
        sent += chunk.length;
        if (!req.write(chunk)) {
          req.once('drain', pump);
          return;
        }
      }
      if (!req.destroyed) req.end();
    };
    req.write('{"region":"');
    pump();
  });
}

describe('provider robustness', () => {
  let p: ProviderHandle;
  before(async () => {
    p = await start();
  });
  after(async () => {
    await p.close();
  });
  afterEach(async () => {
    expect((await call(p.url, '/healthz')).status).to.equal(200);
  });

  for (const seed of [1, 2, 3, 4, 5, 6, 7, 8]) {
    it(`survives random bytes (seed ${seed})`, async () => {
      const answer = await raw(p.url, garbage(seed, 64 + seed * 500));
      if (answer !== '') expect(answer).to.match(/^HTTP\/1\.1 4\d\d /);
    });
  }

  const malformed: Record<string, [bytes: string, status: string]> = {
    'unknown method': ['BREW /buckets HTTP/1.1\r\nHost: x\r\n\r\n', '400'],
    'bad header line': ['GET /healthz HTTP/1.1\r\nno colon here\r\n\r\n', '400'],
    'negative content-length': ['POST /buckets HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n', '400'],
    'huge header': [`GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20000)}\r\n\r\n`, '431'],
  };
  for (const [name, [bytes, status]] of Object.entries(malformed)) {
    it(`answers ${status} to ${name}`, async () => {
      const answer = await raw(p.url, Buffer.from(bytes, 'latin1'));
      expect(answer).to.match(new RegExp(`^HTTP/1\\.1 ${status} `));
      expect(answer).to.include('"code":"BadRequest"');
    });
  }

  it('survives a client that disconnects mid-body', async () => {
    const { hostname, port } = new URL(p.url);
    await new Promise<void>((resolve) => {
      const socket = connect({ host: hostname, port: Number(port) }, () => {
        socket.write(
          `POST /buckets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${API_KEY}\r\n` +
            'Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"region":',
          () => setTimeout(() => socket.destroy(), 20),
        );
      });
      socket.on('error', () => undefined);
      socket.on('close', () => resolve());
    });
    expect(p.store.count()).to.equal(0);
  });

  it('answers 413 to a declared 10 MiB body without reading it', async () => {
    const res = await call(p.url, '/buckets', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: Buffer.alloc(10 * 1024 * 1024, 0x20),
    }).catch((err: unknown) => err);
    if (res instanceof Error) {
      // The server may close before the upload ends; then the client cannot read the 413.
      expect((res as NodeJS.ErrnoException).code).to.be.oneOf(['EPIPE', 'ECONNRESET']);
    } else {
      expect((res as { status: number }).status).to.equal(413);
    }
  });

  it('answers 413 to a chunked body that grows past the limit', async () => {
    expect(await streamBody(p.url, 2 * 1024 * 1024)).to.equal(413);
  });

  const bodies: Record<string, [body: Buffer, statuses: number[]]> = {
    'invalid UTF-8': [Buffer.from([0x7b, 0xff, 0xfe, 0x7d]), [400]],
    'deep nesting': [Buffer.from(`${'['.repeat(30000)}${']'.repeat(30000)}`), [400, 422]],
    'NUL bytes': [Buffer.alloc(100), [400]],
    'JSON null': [Buffer.from('null'), [422]],
    'JSON number': [Buffer.from('12'), [422]],
    'prototype keys': [Buffer.from('{"__proto__":{"region":"us-east-1"},"sizeGB":1}'), [422]],
    'random bytes as JSON': [garbage(99, 4000), [400]],
  };
  for (const [name, [body, statuses]] of Object.entries(bodies)) {
    it(`answers ${statuses.join(' or ')} to ${name}`, async () => {
      const res = await call(p.url, '/buckets', { method: 'POST', headers: { 'content-type': 'application/json' }, body });
      expect(res.status).to.be.oneOf(statuses);
      expect(res.body).to.have.property('code');
    });
  }
});
