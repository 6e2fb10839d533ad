/**
 * `npm run bench`: measures the operator as its users would judge it, on the real control
 * plane and the real provider process, prints a table and writes JSON to bench/results/.
 * No pass/fail: the figures go into bench/README.md with the machine they came from.
 *
 *   npm run bench -- [--sizes 100,1000] [--concurrency 1,8,32] [--concurrency-size 100]
 *                    [--provider-delay-ms 2000] [--steady-seconds 60] [--concurrency-provider-qps 1000]
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Bench, delta, type Reading } from './harness';
import { cpuSeconds, peakRssMiB, rssMiB } from './metrics';

const { values } = parseArgs({
  options: {
    sizes: { type: 'string', default: '100,1000' },
    concurrency: { type: 'string', default: '1,8,32' },
    'concurrency-size': { type: 'string', default: '100' },
    'provider-delay-ms': { type: 'string', default: '2000' },
    'steady-seconds': { type: 'string', default: '60' },
    'concurrency-provider-qps': { type: 'string', default: '1000' },
  },
});
const list = (s: string) => s.split(',').map((x) => Number(x.trim())).filter((x) => Number.isInteger(x) && x > 0);
const sizes = list(values.sizes);
const concurrencies = list(values.concurrency);
const concurrencySize = Number(values['concurrency-size']);
const providerDelayMs = Number(values['provider-delay-ms']);
const steadySeconds = Number(values['steady-seconds']);
// The concurrency runs lift the provider rate limit, or it alone would set the pace.
const concurrencyQps = Number(values['concurrency-provider-qps']);

interface Row { scenario: string; n: number; workers: number; figures: Record<string, number | string> }
const rows: Row[] = [];
const round = (x: number, d = 2) => Math.round(x * 10 ** d) / 10 ** d;
const perBucket = (d: Reading, n: number) => ({
  'api GET/bucket': round((d.apiByVerb['GET'] ?? 0) / n),
  'api writes/bucket': round(d.apiWrites / n),
  'api PATCH/bucket': round((d.apiByVerb['PATCH'] ?? 0) / n),
  'provider calls/bucket': round(d.providerCalls / n),
  'reconciles/bucket': round(d.reconciles / n),
});

async function converge(bench: Bench, n: number, workers: number, full: boolean, providerQps?: number): Promise<void> {
  const op = await bench.startOperator(workers, providerQps);
  const ns = await bench.namespace(`conv${n}w${workers}`);
  const cpu0 = cpuSeconds(op.pid);
  const r0 = await bench.read();
  const t0 = Date.now();
  await bench.createBuckets(ns, n);
  const readyMs = await bench.waitAllReady(ns, n, t0, 30 * 60_000);
  const r1 = await bench.read();
  const cpuConverge = cpuSeconds(op.pid) - cpu0;
  const figures: Record<string, number | string> = {
    'ready s': round(readyMs / 1000, 1),
    'operator CPU s': round(cpuConverge, 1),
    'peak RSS MiB': round(peakRssMiB(op.pid), 0),
    ...perBucket(delta(r0, r1), n),
  };
  console.log(`converge n=${n} workers=${workers}:`, JSON.stringify(figures));

  if (full) {
    // Steady state: every bucket Ready; nothing should be written, the provider polled once per
    // drift interval. A short settle lets the last owned-object and config events pass first.
    await new Promise((r) => setTimeout(r, 10_000));
    const cpuS0 = cpuSeconds(op.pid);
    const s0 = await bench.read();
    await new Promise((r) => setTimeout(r, steadySeconds * 1000));
    const s1 = await bench.read();
    const d = delta(s0, s1);
    const perHour = 3600 / steadySeconds;
    figures['steady CPU %'] = round(((cpuSeconds(op.pid) - cpuS0) / steadySeconds) * 100, 2);
    figures['steady RSS MiB'] = round(rssMiB(op.pid), 0);
    figures['steady api writes/h'] = round(d.apiWrites * perHour, 0);
    figures['steady provider calls/bucket/h'] = round((d.providerCalls / n) * perHour, 1);
    console.log(`steady n=${n}:`, JSON.stringify(figures));

    // Restart with N Ready buckets: time to ready, and what the new process writes.
    await bench.stopOperator();
    const tr = Date.now();
    const op2 = await bench.startOperator(workers, providerQps);
    const readyProbeMs = Date.now() - tr;
    // Long enough for the initial pass over every cached object to finish. The new process's
    // counters start at zero, and the provider's are read from before the restart.
    await new Promise((r) => setTimeout(r, Math.max(5000, n * 10)));
    const q1 = await bench.read();
    const dq = delta({ ...s1, apiByVerb: {}, apiWrites: 0, reconciles: 0 }, q1);
    figures['restart ready s'] = round(readyProbeMs / 1000, 1);
    figures['restart api writes'] = dq.apiWrites;
    figures['restart provider calls/bucket'] = round(dq.providerCalls / n, 2);
    figures['restart reconciles/bucket'] = round(dq.reconciles / n, 2);
    figures['restart CPU s'] = round(cpuSeconds(op2.pid), 1);
    console.log(`restart n=${n}:`, JSON.stringify(figures));
  }

  const d0 = await bench.read();
  const deleteMs = await bench.deleteAll(ns, 30 * 60_000);
  const d1 = await bench.read();
  const dd = delta(d0, d1);
  figures['delete s'] = round(deleteMs / 1000, 1);
  figures['delete provider calls/bucket'] = round(dd.providerCalls / n, 2);
  figures['left at provider'] = await bench.leftAtProvider(ns);
  rows.push({ scenario: full ? 'converge+steady+restart' : `concurrency (provider qps ${providerQps ?? 20})`, n, workers, figures });
  await bench.stopOperator();
}

async function main(): Promise<void> {
  const started = new Date();
  console.log(`bench: sizes ${sizes.join(',')}, concurrency ${concurrencies.join(',')} at n=${concurrencySize}, provider delay ${providerDelayMs} ms`);
  const bench = await Bench.start(providerDelayMs);
  try {
    for (const n of sizes) await converge(bench, n, 8, true);
    for (const w of concurrencies) await converge(bench, concurrencySize, w, false, concurrencyQps);
  } finally {
    await bench.stop();
  }
  const machine = `${cpus().length} x ${cpus()[0]?.model ?? 'cpu'}, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}`;
  console.log(`\nmachine: ${machine}; provider delay ${providerDelayMs} ms; poll 3s; drift 60s; provider qps 20/burst 40`);
  for (const row of rows) {
    console.log(`\n${row.scenario} n=${row.n} maxConcurrentReconciles=${row.workers}`);
    for (const [k, v] of Object.entries(row.figures)) console.log(`  ${k.padEnd(34)} ${v}`);
  }
  mkdirSync(join(__dirname, 'results'), { recursive: true });
  const file = join(__dirname, 'results', `bench-${started.toISOString().replace(/[:.]/g, '-')}.json`);
  writeFileSync(file, JSON.stringify({ started, machine, providerDelayMs, rows }, null, 2));
  console.log(`\nwrote ${file}`);
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.stack ?? err.message : err);
  process.exitCode = 1;
});
