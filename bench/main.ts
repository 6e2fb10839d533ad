/**
 * `npm run bench`: measures the operator as its users would judge it, on the real control
 * plane and the real provider process, prints a table and writes JSON to bench/results/.
 * No pass/fail: the figures go into bench/README.md with the machine they came from.
 *
 *   npm run bench -- [--scenarios bulk,backlog,secrets] [--sizes 1000,10000]
 *                    [--backlog-sizes 10000] [--provider-delay-ms 2000] [--steady-seconds 120]
 *                    [--converge-provider-qps 500] [--workers 8]
 *                    [--unrelated-secrets 10000] [--unrelated-secret-kib 10] [--delete-up-to 2000]
 *                    [--tenants 1000] [--buckets-per-tenant 10] [--tenants-in-flight 10]
 *                    [--noisy-buckets 5000] [--quiet-probes 5]
 *
 * Scenarios: bulk, backlog, secrets (the default set), tenants, noisy.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Bench } from './harness';
import { backlog, bulkCreate, unrelatedSecrets, type Figures, type ScenarioSettings } from './scenarios';
import { noisyNeighbour, tenants } from './tenants';

const { values } = parseArgs({
  options: {
    scenarios: { type: 'string', default: 'bulk,backlog,secrets' },
    sizes: { type: 'string', default: '1000,10000' },
    'backlog-sizes': { type: 'string', default: '10000' },
    'provider-delay-ms': { type: 'string', default: '2000' },
    'steady-seconds': { type: 'string', default: '120' },
    'converge-provider-qps': { type: 'string', default: '500' },
    workers: { type: 'string', default: '8' },
    'unrelated-secrets': { type: 'string', default: '10000' },
    'unrelated-secret-kib': { type: 'string', default: '10' },
    'delete-up-to': { type: 'string', default: '2000' },
    tenants: { type: 'string', default: '1000' },
    'buckets-per-tenant': { type: 'string', default: '10' },
    'tenants-in-flight': { type: 'string', default: '10' },
    'noisy-buckets': { type: 'string', default: '5000' },
    'quiet-probes': { type: 'string', default: '5' },
  },
});
const list = (s: string) =>
  s
    .split(',')
    .map((x) => Number(x.trim()))
    .filter((x) => Number.isInteger(x) && x > 0);
const scenarios = new Set(values.scenarios.split(',').map((x) => x.trim()));
const providerDelayMs = Number(values['provider-delay-ms']);
const settings: ScenarioSettings = {
  workers: Number(values.workers),
  // The provider's default 20 calls/s per endpoint would alone set the pace of N = 10,000
  // (2 calls per bucket: ~17 min); lifted, the API server's write rate sets it.
  convergeProviderQps: Number(values['converge-provider-qps']),
  steadySeconds: Number(values['steady-seconds']),
  deleteUpTo: Number(values['delete-up-to']),
};

interface Row {
  readonly scenario: string;
  readonly n: number;
  readonly figures: Figures;
}

async function main(): Promise<void> {
  const started = new Date();
  // Other work shares the machine: the load average goes with every figure.
  const load = () =>
    loadavg()
      .map((x) => x.toFixed(2))
      .join(' ');
  const loadAtStart = load();
  console.log(`bench ${started.toISOString()}: scenarios ${[...scenarios].join(',')}; provider delay ${providerDelayMs} ms; load ${loadAtStart}`);
  const rows: Row[] = [];
  const tenantCount = Number(values.tenants);
  // One provider account per tenant; the noisy and the quiet tenant need two.
  const accounts = Math.max(scenarios.has('tenants') ? tenantCount : 0, scenarios.has('noisy') ? 2 : 0);
  const stamp = started.toISOString().replace(/[:.]/g, '-');
  mkdirSync(join(__dirname, 'results'), { recursive: true });
  // Kept for reading after the run (*.log is not committed).
  const operatorLog = join(__dirname, 'results', `bench-${stamp}.operator.log`);
  console.log(`operator log: ${operatorLog}`);
  const bench = await Bench.start(providerDelayMs, accounts, operatorLog);
  try {
    if (scenarios.has('bulk'))
      for (const n of list(values.sizes)) rows.push({ scenario: 'bulk create', n, figures: await bulkCreate(bench, n, settings) });
    if (scenarios.has('backlog'))
      for (const n of list(values['backlog-sizes'])) rows.push({ scenario: 'backlog', n, figures: await backlog(bench, n, settings) });
    if (scenarios.has('tenants')) {
      const t = {
        tenants: tenantCount,
        bucketsPerTenant: Number(values['buckets-per-tenant']),
        tenantsInFlight: Number(values['tenants-in-flight']),
      };
      rows.push({ scenario: 'tenants', n: t.tenants * t.bucketsPerTenant, figures: await tenants(bench, t, settings) });
    }
    if (scenarios.has('noisy')) {
      const t = { noisyBuckets: Number(values['noisy-buckets']), quietProbes: Number(values['quiet-probes']) };
      rows.push({ scenario: 'noisy neighbour', n: t.noisyBuckets, figures: await noisyNeighbour(bench, t, settings) });
    }
    if (scenarios.has('secrets')) {
      const count = Number(values['unrelated-secrets']);
      rows.push({
        scenario: 'unrelated secrets',
        n: 0,
        figures: await unrelatedSecrets(bench, count, Number(values['unrelated-secret-kib']), settings),
      });
    }
  } finally {
    await bench.stop();
  }
  const machine = `${cpus().length} x ${cpus()[0]?.model ?? 'cpu'}, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}`;
  const loadAtEnd = load();
  console.log(
    `\nmachine: ${machine}; provider delay ${providerDelayMs} ms; workers ${settings.workers}; converge provider qps ${settings.convergeProviderQps}`,
  );
  console.log(`load average (1, 5, 15 min): ${loadAtStart} at start, ${loadAtEnd} at end; argv: ${process.argv.slice(2).join(' ')}`);
  for (const row of rows) {
    console.log(`\n${row.scenario} n=${row.n}`);
    for (const [k, v] of Object.entries(row.figures)) console.log(`  ${k.padEnd(40)} ${v}`);
  }
  const file = join(__dirname, 'results', `bench-${stamp}.json`);
  writeFileSync(
    file,
    JSON.stringify(
      { started, machine, load: { start: loadAtStart, end: loadAtEnd }, argv: process.argv.slice(2), providerDelayMs, settings, rows },
      null,
      2,
    ),
  );
  console.log(`\nwrote ${file}`);
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? (err.stack ?? err.message) : err);
  process.exitCode = 1;
});
