/**
 * Short load check of the mock provider: starts `provider/main.ts` as a child process on a
 * loopback ephemeral port, drives creates then gets through a keep-alive agent with fixed
 * concurrency, prints requests/second and latency percentiles, and stops the child.
 * Bounded in request count and in time; prints figures only, no pass/fail.
 *
 *   npx tsx bench/provider-load.ts
 */
import { spawn } from 'node:child_process';
import { Agent, request } from 'node:http';
import { createInterface } from 'node:readline';

const CONCURRENCY = 16;
/** Creates sent first and reported apart: the child's JIT is cold for the first thousands. */
const WARMUP = 3000;
const CREATES = 3000;
const GETS = 10000;
/** Longest a phase may run; a phase stops early when it is reached. */
const PHASE_LIMIT_MS = 15_000;
/** Whole run, including start-up; the child is killed when it is reached. */
const RUN_LIMIT_MS = 60_000;
const API_KEY = 'bench-key';

interface Result {
  status: number;
  body: string;
}

function send(agent: Agent, url: string, method: string, path: string, headers: Record<string, string>, body?: string): Promise<Result> {
  return new Promise((resolve, reject) => {
    const req = request(`${url}${path}`, { agent, method, headers: { authorization: `Bearer ${API_KEY}`, ...headers } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

interface PhaseReport {
  name: string;
  requests: number;
  errors: number;
  seconds: number;
  latenciesMs: number[];
}

/** Runs `total` calls of `op` with CONCURRENCY workers, stopping at PHASE_LIMIT_MS. */
async function phase(name: string, total: number, op: (i: number) => Promise<boolean>): Promise<PhaseReport> {
  const latenciesMs: number[] = [];
  let next = 0;
  let errors = 0;
  const started = performance.now();
  const deadline = started + PHASE_LIMIT_MS;
  const worker = async (): Promise<void> => {
    while (next < total && performance.now() < deadline) {
      const i = next++;
      const t0 = performance.now();
      const ok = await op(i).catch(() => false);
      latenciesMs.push(performance.now() - t0);
      if (!ok) errors++;
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  return { name, requests: latenciesMs.length, errors, seconds: (performance.now() - started) / 1000, latenciesMs };
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
}

function print(r: PhaseReport): void {
  const sorted = [...r.latenciesMs].sort((a, b) => a - b);
  const rps = r.requests / r.seconds;
  process.stdout.write(
    `${r.name.padEnd(8)} ${String(r.requests).padStart(6)} req in ${r.seconds.toFixed(2)} s = ${rps.toFixed(0).padStart(6)} req/s` +
      `  p50 ${percentile(sorted, 50).toFixed(2)} ms  p99 ${percentile(sorted, 99).toFixed(2)} ms  errors ${r.errors}\n`,
  );
}

async function main(): Promise<void> {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', 'provider/main.ts', '--port', '0', '--host', '127.0.0.1', '--api-key', API_KEY, '--activation-delay-ms', '0'],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const guard = setTimeout(() => {
    process.stderr.write('bench run limit reached, stopping\n');
    child.kill('SIGKILL');
    process.exit(1);
  }, RUN_LIMIT_MS);
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  try {
    const url = await new Promise<string>((resolve, reject) => {
      // Keep reading stdout for the whole run so access logs never block the child on a full pipe.
      createInterface({ input: child.stdout }).on('line', (line) => {
        if (!line.includes('"provider listening"')) return;
        const entry = JSON.parse(line) as { url?: string };
        if (entry.url !== undefined) resolve(entry.url);
      });
      void exited.then((code) => reject(new Error(`provider exited with ${code} before listening`)));
    });
    const agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY });
    const ids: string[] = [];
    const json = { 'content-type': 'application/json' };
    const body = JSON.stringify({ region: 'us-east-1', sizeGB: 10, tags: { bench: 'yes' } });

    process.stdout.write(`provider ${url}, concurrency ${CONCURRENCY}, keep-alive, access logs on (info)\n`);
    const createOp =
      (prefix: string) =>
      async (i: number): Promise<boolean> => {
        const res = await send(agent, url, 'POST', '/buckets', { ...json, 'idempotency-key': `${prefix}-${i}` }, body);
        if (res.status !== 201) return false;
        ids.push((JSON.parse(res.body) as { id: string }).id);
        return true;
      };
    print(await phase('warmup', WARMUP, createOp('warmup')));
    print(await phase('create', CREATES, createOp('bench')));
    const gets = await phase('get', GETS, async (i) => {
      const id = ids[i % ids.length];
      if (id === undefined) return false;
      return (await send(agent, url, 'GET', `/buckets/${id}`, {})).status === 200;
    });
    print(gets);
    agent.destroy();
  } finally {
    child.kill('SIGTERM');
    await exited;
    clearTimeout(guard);
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`bench failed: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exitCode = 1;
});
