/**
 * What the HTTP/2 receive windows cost a large LIST answer: a loopback TLS HTTP/2 server sends
 * a JSON list of ConfigMaps through a relay that delays every chunk by half a round trip each
 * way; the client is either Node's defaults (64 KiB per stream and per connection, what the
 * pool announced before) or the operator's `H2Pool` (client-go's 4 MiB per stream, 1 GiB per
 * connection). Prints, per round-trip time, the median time the whole answer took: a client whose
 * window is smaller than what the link carries in one round trip waits a round trip for every
 * WINDOW_UPDATE. Everything runs in this one process, so loopback figures are CPU-bound.
 *
 *   npx tsx bench/h2-window.ts [--mib 16] [--rtts-ms 0,2,10,20] [--rounds 3]
 */
import http2 from 'node:http2';
import net, { type AddressInfo } from 'node:net';
import type tls from 'node:tls';
import { parseArgs } from 'node:util';
import { connectTls } from '../operator/runtime/connect';
import { H2Pool } from '../operator/runtime/h2-pool';
import { CA_CERT, SERVER_CERT, SERVER_KEY } from '../test/unit/runtime/tls-fixtures';

interface Transfer {
  readonly ms: number;
  readonly bytes: number;
}

/** A ConfigMap list of about `mib` MiB, as kube-apiserver would answer a LIST. */
function listBody(mib: number): Buffer {
  const value = 'v'.repeat(1000);
  const items: unknown[] = [];
  let size = 0;
  for (let i = 0; size < mib * 1024 * 1024; i++) {
    const item = { metadata: { name: `cm-${i}`, namespace: 'bench', resourceVersion: String(i) }, data: { value } };
    size += JSON.stringify(item).length + 1;
    items.push(item);
  }
  return Buffer.from(JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMapList', metadata: { resourceVersion: '1' }, items }));
}

async function listen(server: net.Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

/** A relay that delays each chunk by `oneWayMs` in each direction, keeping their order. */
async function delayingRelay(target: number, oneWayMs: number): Promise<{ port: number; close(): void }> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(target, '127.0.0.1');
    const forward = (from: net.Socket, to: net.Socket): void => {
      from.on('data', (d: Buffer) => (oneWayMs > 0 ? setTimeout(() => to.write(d), oneWayMs) : to.write(d)));
      from.on('close', () => to.destroy());
      from.on('error', () => undefined);
      sockets.add(from);
    };
    forward(client, upstream);
    forward(upstream, client);
  });
  const port = await listen(server);
  return {
    port,
    close: () => {
      for (const s of sockets) s.destroy();
      server.close();
    },
  };
}

/** Reads one answer off `stream` and times it. */
function time(stream: http2.ClientHttp2Stream): Promise<Transfer> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    let bytes = 0;
    stream.on('data', (c: Buffer) => (bytes += c.length));
    stream.on('end', () => resolve({ ms: performance.now() - started, bytes }));
    stream.on('error', reject);
  });
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      mib: { type: 'string', default: '16' },
      'rtts-ms': { type: 'string', default: '0,2,10,20' },
      rounds: { type: 'string', default: '3' },
    },
  });
  const body = listBody(Number(values.mib));
  const server = http2.createSecureServer({ cert: SERVER_CERT, key: SERVER_KEY });
  server.on('stream', (stream: http2.ServerHttp2Stream) => {
    stream.on('error', () => undefined);
    stream.respond({ ':status': 200, 'content-type': 'application/json' });
    stream.end(body);
  });
  const serverPort = await listen(server);
  console.log(`answer: ${(body.length / 1048576).toFixed(1)} MiB; median of ${values.rounds} rounds; Node ${process.version}`);
  console.log('rtt ms | client                             | transfer ms | MiB/s');
  for (const rtt of values['rtts-ms'].split(',').map(Number)) {
    const relay = await delayingRelay(serverPort, rtt / 2);
    const connect = (): Promise<tls.TLSSocket> => connectTls({ host: '127.0.0.1', port: relay.port, tls: { ca: CA_CERT } }, ['h2'], 10_000);
    const clients: Record<string, () => Promise<{ transfer: () => Promise<Transfer>; close(): void }>> = {
      'Node defaults (64 KiB, before)': async () => {
        const socket = await connect();
        const session = http2.connect(`https://127.0.0.1:${relay.port}`, { createConnection: () => socket });
        return { transfer: () => time(session.request({ ':path': '/list' })), close: () => session.destroy() };
      },
      'H2Pool (4 MiB / 1 GiB, client-go)': async () => {
        const pool = new H2Pool({ origin: `https://127.0.0.1:${relay.port}`, connect });
        return {
          transfer: async () => {
            const slot = await pool.acquire();
            const stream = slot.session.request({ ':path': '/list' });
            stream.on('close', () => slot.release());
            return time(stream);
          },
          close: () => pool.close(),
        };
      },
    };
    for (const [name, make] of Object.entries(clients)) {
      const client = await make();
      await client.transfer(); // warm: connection, TLS, first SETTINGS
      const runs: Transfer[] = [];
      for (let i = 0; i < Number(values.rounds); i++) runs.push(await client.transfer());
      client.close();
      const ms = median(runs.map((r) => r.ms));
      const mibs = body.length / 1048576 / (ms / 1000);
      if (runs.some((r) => r.bytes !== body.length)) throw new Error(`${name}: an answer arrived incomplete`);
      console.log(`${String(rtt).padStart(6)} | ${name.padEnd(34)} | ${ms.toFixed(0).padStart(11)} | ${mibs.toFixed(1).padStart(6)}`);
    }
    relay.close();
  }
  server.close();
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
