/**
 * What one API request costs the client and kube-apiserver, by protocol: the operator's
 * `Transport` over HTTP/1.1 and over HTTP/2, and (when `--undici DIR` names a directory
 * holding the `undici` package) undici's Pool over HTTP/1.1. On a fresh control plane, for
 * each client in turn: N requests, C in flight, alternating a GET and a merge PATCH of one
 * ConfigMap of the size of a StorageBucket; prints the client's CPU per request (this whole
 * process), kube-apiserver's CPU per request and requests per second.
 *
 *   npx tsx bench/client-cost.ts [--n 4000] [--concurrency 8] [--rounds 2] [--undici DIR] [--only NAME]
 */
import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import tls from 'node:tls';
import { parseArgs } from 'node:util';
import { Transport } from '../operator/runtime/transport';
import { startControlPlane } from '../test/support/control-plane';
import { parsePrometheus, sum } from '../test/support/prometheus';

interface Client {
  readonly name: string;
  request(method: 'GET' | 'PATCH', path: string, body?: string): Promise<string>;
  close(): Promise<void>;
}

const NS = 'client-cost';
const NAME = 'sample';

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      n: { type: 'string', default: '4000' },
      concurrency: { type: 'string', default: '8' },
      rounds: { type: 'string', default: '2' },
      undici: { type: 'string' },
      only: { type: 'string' },
    },
  });
  const n = Number(values.n);
  const concurrency = Number(values.concurrency);
  const cp = await startControlPlane();
  try {
    const rc = cp.restConfig();
    const mk: Record<string, () => Client> = {
      'transport http/1.1': () => transportClient(new Transport({ restConfig: rc, http2: false, qps: 0 }), 'transport http/1.1'),
      'transport h2': () => transportClient(new Transport({ restConfig: rc, http2: true, qps: 0 }), 'transport h2'),
    };
    if (values.undici) mk['undici pool'] = () => undiciClient(values.undici!, rc.server, rc.tls);
    await cp.kubectl(['create', 'namespace', NS]);
    await cp.kubectl(['create', 'configmap', NAME, '-n', NS, `--from-literal=payload=${'x'.repeat(1800)}`]);
    const serverCpu = async (): Promise<number> =>
      sum(parsePrometheus((await cp.kubectl(['get', '--raw', '/metrics'])).stdout), 'process_cpu_seconds_total');
    if (values.only) for (const k of Object.keys(mk)) if (!k.includes(values.only)) delete mk[k];
    const path = `/api/v1/namespaces/${NS}/configmaps/${NAME}`;
    console.log(`machine: Node ${process.version}; n ${n}, ${concurrency} in flight, GET and merge PATCH of a ~2 KiB ConfigMap`);
    for (let round = 1; round <= Number(values.rounds); round++) {
      for (const [name, make] of Object.entries(mk)) {
        const c = make();
        await run(c, path, 200, concurrency); // connections and JIT warm
        const threads0 = threadCpu();
        const cpu0 = process.cpuUsage();
        const s0 = await serverCpu();
        const t0 = performance.now();
        await run(c, path, n, concurrency);
        const wall = performance.now() - t0;
        const s1 = await serverCpu();
        const cpu = process.cpuUsage(cpu0);
        const threads1 = threadCpu();
        await c.close();
        const byThread = new Map<string, number>();
        for (const [tid, t1] of threads1) {
          const t0 = threads0.get(tid);
          const used = t1.ticks - (t0?.ticks ?? 0);
          if (used > 0) byThread.set(t1.name, (byThread.get(t1.name) ?? 0) + used);
        }
        const threadsLine = [...byThread]
          .sort((a, b) => b[1] - a[1])
          .map(([k, v]) => `${k} ${((v * 1e4) / n).toFixed(0)}`)
          .join(', ');
        const clientUs = (cpu.user + cpu.system) / n;
        const serverUs = ((s1 - s0) * 1e6) / n;
        console.log(
          `round ${round} ${name.padEnd(20)} client ${clientUs.toFixed(0).padStart(5)} us/request (user ${(cpu.user / n).toFixed(0)}, sys ${(cpu.system / n).toFixed(0)})  server ${serverUs.toFixed(0).padStart(5)} us/request  ${((n / wall) * 1000).toFixed(0)} requests/s`,
        );
        console.log(`        us/request by thread: ${threadsLine}`);
      }
    }
  } finally {
    await cp.stop();
  }
}

/** CPU ticks (1/100 s) of each thread of this process, by thread id, with the thread's name. */
function threadCpu(): Map<string, { name: string; ticks: number }> {
  const out = new Map<string, { name: string; ticks: number }>();
  for (const tid of readdirSync('/proc/self/task')) {
    try {
      const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
      const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      out.set(tid, { name, ticks: Number(f[11]) + Number(f[12]) });
    } catch {
      // the thread ended
    }
  }
  return out;
}

async function run(c: Client, path: string, n: number, concurrency: number): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < n) {
      const i = next++;
      if (i % 2 === 0) await c.request('GET', path);
      else await c.request('PATCH', path, JSON.stringify({ metadata: { annotations: { i: String(i) } } }));
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
}

function transportClient(t: Transport, name: string): Client {
  return {
    name,
    request: async (method, path, body) => {
      await t.json<unknown>({
        verb: method,
        method,
        path,
        ...(body !== undefined ? { body, contentType: 'application/merge-patch+json' } : {}),
      });
      return '';
    },
    close: () => Promise.resolve(t.close()),
  };
}

interface UndiciPool {
  request(o: {
    method: string;
    path: string;
    headers: Record<string, string>;
    body?: string;
  }): Promise<{ statusCode: number; body: { text(): Promise<string> } }>;
  close(): Promise<void>;
}

function undiciClient(dir: string, server: string, t: { ca?: Buffer; cert?: Buffer; key?: Buffer }): Client {
  const req = createRequire(join(dir, 'package.json'));
  const { Pool } = req('undici') as { Pool: new (origin: string, opts: object) => UndiciPool };
  const u = new URL(server);
  const pool = new Pool(server, {
    connections: 32,
    pipelining: 1,
    connect: (_opts: unknown, cb: (err: Error | null, socket: tls.TLSSocket | null) => void) => {
      const s = tls.connect({
        host: u.hostname,
        port: Number(u.port),
        ca: t.ca,
        cert: t.cert,
        key: t.key,
        ALPNProtocols: ['http/1.1'],
        servername: u.hostname === '127.0.0.1' ? undefined : u.hostname,
      });
      s.once('secureConnect', () => cb(null, s));
      s.once('error', (e) => cb(e, null));
      return s;
    },
  });
  return {
    name: 'undici pool',
    request: async (method, path, body) => {
      const headers: Record<string, string> = { accept: 'application/json', 'user-agent': 'bench' };
      if (body !== undefined) headers['content-type'] = 'application/merge-patch+json';
      const r = await pool.request({ method, path, headers, ...(body !== undefined ? { body } : {}) });
      const text = await r.body.text();
      if (r.statusCode >= 300) throw new Error(`HTTP ${r.statusCode}: ${text.slice(0, 200)}`);
      JSON.parse(text);
      return '';
    },
    close: () => pool.close(),
  };
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
