/**
 * `npm run bench`: measures the operator as its users would judge it, on the real control
 * plane and the real provider process, prints a table and writes JSON to bench/results/.
 * No pass/fail: the figures go into bench/README.md with the machine they came from.
 *
 *   npm run bench -- [--scenarios bulk,backlog,secrets] [--sizes 1000,10000]
 *                    [--backlog-sizes 10000] [--provider-delay-ms 2000] [--steady-seconds 120] [--idle-seconds 30]
 *                    [--converge-provider-qps 500] [--workers 8]
 *                    [--unrelated-secrets 10000] [--unrelated-secret-kib 10] [--delete-up-to 2000]
 *                    [--tenants 1000] [--buckets-per-tenant 10] [--tenants-in-flight 10]
 *                    [--noisy-buckets 5000] [--quiet-probes 5]
 *                    [--peer-build ../shared/peers/seed-go | --peer-command '<template>']
 *                    [--peer-name seed-go] [--peer-ready phase=Active] [--peer-first] [--peer-pad-bytes 0] [--rounds 1]
 *                    [--apiserver-profile-dir DIR] [--apiserver-profile-seconds 10]
 *                    [--profile-dir DIR] [--node-options '<V8 flags for ours>'] [--ours-flag name=value ...]
 *                    [--ours-node PATH] [--idle-resident]
 *
 *                    [--conversion-objects 10000] [--conversion-gets 1000] [--conversion-lists 3]
 *
 * Scenarios: bulk, backlog, secrets (the default set), idle, tenants, noisy, conversion (last:
 * it leaves both CRDs serving v2 through the webhook).
 *
 * Side by side: with --peer-build (a Go peer built by bench/build-peer.sh, started with its
 * README's flags) or --peer-command (any start command; placeholders {kubeconfig},
 * {metrics-port}, {health-port}, {provider-url}, {provider-key}, {workers}, {provider-qps},
 * {provider-burst}), the bulk and backlog scenarios run for ours and then for the peer on the
 * same control plane and provider, and a table of ratios (ours / peer) follows the figures.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { execFileSync } from 'node:child_process';
import { Bench, OURS, type Subject } from './harness';
import { medianRatios, ratios, type MedianComparison } from './compare';
import { parseReadyRule, SEED_GO_TEMPLATE } from './peer';
import { backlog, bulkCreate, idle, unrelatedSecrets, type Figures, type ScenarioSettings } from './scenarios';
import { noisyNeighbour, tenants } from './tenants';
import { conversion } from './conversion';
import { operatorNode } from '../test/support/image';

const { values } = parseArgs({
  options: {
    scenarios: { type: 'string', default: 'bulk,backlog,secrets' },
    sizes: { type: 'string', default: '1000,10000' },
    'backlog-sizes': { type: 'string', default: '10000' },
    'provider-delay-ms': { type: 'string', default: '2000' },
    'steady-seconds': { type: 'string', default: '120' },
    'idle-seconds': { type: 'string', default: '30' },
    'converge-provider-qps': { type: 'string', default: '500' },
    workers: { type: 'string', default: '8' },
    'unrelated-secrets': { type: 'string', default: '10000' },
    'unrelated-secret-kib': { type: 'string', default: '10' },
    'delete-up-to': { type: 'string', default: '100000' },
    tenants: { type: 'string', default: '1000' },
    'buckets-per-tenant': { type: 'string', default: '10' },
    'tenants-in-flight': { type: 'string', default: '10' },
    'noisy-buckets': { type: 'string', default: '5000' },
    'quiet-probes': { type: 'string', default: '5' },
    'conversion-objects': { type: 'string', default: '10000' },
    'conversion-gets': { type: 'string', default: '1000' },
    'conversion-lists': { type: 'string', default: '3' },
    'peer-build': { type: 'string' },
    'profile-dir': { type: 'string' },
    'idle-resident': { type: 'boolean', default: false },
    'apiserver-profile-dir': { type: 'string' },
    'apiserver-profile-seconds': { type: 'string', default: '10' },
    'node-options': { type: 'string' },
    'ours-node': { type: 'string' },
    'ours-flag': { type: 'string', multiple: true },
    'peer-command': { type: 'string' },
    'peer-name': { type: 'string', default: 'peer' },
    'peer-ready': { type: 'string', default: 'phase=Active' },
    'peer-first': { type: 'boolean', default: false },
    rounds: { type: 'string', default: '1' },
    'peer-pad-bytes': { type: 'string', default: '0' },
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
  idleResident: values['idle-resident'],
};

interface Row {
  readonly scenario: string;
  readonly n: number;
  /** Which operator the figures are of. */
  readonly subject: string;
  /** Which of `--rounds` (1 when there is one). */
  readonly round: number;
  readonly figures: Figures;
}

/** The peer from the command line, if any: built from a directory, or a start command. */
function peerSubject(): Subject | undefined {
  let command = values['peer-command'];
  let name = values['peer-name'];
  if (values['peer-build'] !== undefined) {
    const out = execFileSync('bash', [join(__dirname, 'build-peer.sh'), values['peer-build']], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const binary = out.trim().split('\n').pop() ?? '';
    command ??= SEED_GO_TEMPLATE.replace('{binary}', binary);
    if (name === 'peer') name = 'seed-go';
  }
  if (command === undefined) return undefined;
  return { name, ready: parseReadyRule(values['peer-ready']), verbLabel: 'method', command };
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
  const peer = peerSubject();
  // Ours first, then the peer, for each scenario and size: the two see the same cluster state.
  // --peer-first swaps them, to tell an effect of the order (what the first run leaves the
  // control plane to do) from one of the operator.
  const subjects: Subject[] = peer ? (values['peer-first'] ? [peer, OURS] : [OURS, peer]) : [OURS];
  // --rounds K: K pairs per size, the order swapped every round (ours-peer, peer-ours, ...), so
  // a machine that slows down or speeds up over the minutes favours neither.
  const rounds = Math.max(1, Number(values.rounds));
  const each = async (scenario: string, n: number, run: () => Promise<Figures>) => {
    for (let round = 1; round <= rounds; round++) {
      for (const subject of round % 2 === 1 ? subjects : [...subjects].reverse()) {
        bench.subject = subject;
        console.log(`--- ${scenario} n=${n}: ${subject.name}${rounds > 1 ? ` (round ${round} of ${rounds})` : ''}`);
        rows.push({ scenario, n, subject: subject.name, round, figures: await run() });
      }
    }
    bench.subject = OURS;
  };
  const tenantCount = Number(values.tenants);
  // One provider account per tenant; the noisy and the quiet tenant need two.
  const accounts = Math.max(scenarios.has('tenants') ? tenantCount : 0, scenarios.has('noisy') ? 2 : 0);
  const stamp = started.toISOString().replace(/[:.]/g, '-');
  mkdirSync(join(__dirname, 'results'), { recursive: true });
  // Kept for reading after the run (*.log is not committed).
  const operatorLog = join(__dirname, 'results', `bench-${stamp}.operator.log`);
  console.log(`operator log: ${operatorLog}`);
  const bench = await Bench.start(providerDelayMs, accounts, operatorLog);
  if (values['profile-dir'] !== undefined) bench.profileDir = values['profile-dir'];
  if (values['apiserver-profile-dir'] !== undefined) bench.apiServerProfileDir = values['apiserver-profile-dir'];
  bench.apiServerProfileSeconds = Number(values['apiserver-profile-seconds']);
  bench.peerPadBytes = Number(values['peer-pad-bytes']);
  // Experiments with V8 flags before they go into the Deployment; the figures say which ran.
  bench.oursFlags = Object.fromEntries(
    (values['ours-flag'] ?? []).map((f) => {
      const eq = f.indexOf('=');
      return eq < 0 ? [f, 'true'] : [f.slice(0, eq), f.slice(eq + 1)];
    }),
  );
  // Another Node release for ours (the pinned one by default): before/after figures of a runtime move.
  if (values['ours-node'] !== undefined) bench.oursNode = values['ours-node'];
  if (values['node-options'] !== undefined) bench.nodeOptions = values['node-options'].split(/\s+/).filter(Boolean);
  try {
    if (scenarios.has('idle')) await each('idle', 0, () => idle(bench, Number(values['idle-seconds']), settings));
    if (scenarios.has('bulk')) for (const n of list(values.sizes)) await each('bulk create', n, () => bulkCreate(bench, n, settings));
    if (scenarios.has('backlog')) for (const n of list(values['backlog-sizes'])) await each('backlog', n, () => backlog(bench, n, settings));
    if (scenarios.has('tenants')) {
      const t = {
        tenants: tenantCount,
        bucketsPerTenant: Number(values['buckets-per-tenant']),
        tenantsInFlight: Number(values['tenants-in-flight']),
      };
      rows.push({ scenario: 'tenants', n: t.tenants * t.bucketsPerTenant, subject: OURS.name, round: 1, figures: await tenants(bench, t, settings) });
    }
    if (scenarios.has('noisy')) {
      const t = { noisyBuckets: Number(values['noisy-buckets']), quietProbes: Number(values['quiet-probes']) };
      rows.push({ scenario: 'noisy neighbour', n: t.noisyBuckets, subject: OURS.name, round: 1, figures: await noisyNeighbour(bench, t, settings) });
    }
    if (scenarios.has('secrets')) {
      const count = Number(values['unrelated-secrets']);
      rows.push({
        scenario: 'unrelated secrets',
        n: 0,
        subject: OURS.name,
        round: 1,
        figures: await unrelatedSecrets(bench, count, Number(values['unrelated-secret-kib']), settings),
      });
    }
    // Last: it leaves both CRDs serving v2 through the webhook.
    if (scenarios.has('conversion')) {
      const c = { objects: Number(values['conversion-objects']), gets: Number(values['conversion-gets']), lists: Number(values['conversion-lists']) };
      rows.push({ scenario: 'conversion', n: c.objects, subject: OURS.name, round: 1, figures: await conversion(bench, c) });
    }
  } finally {
    await bench.stop();
  }
  const oursNode = execFileSync(bench.oursNode ?? operatorNode(), ['--version'], { encoding: 'utf8' }).trim();
  const machine = `${cpus().length} x ${cpus()[0]?.model ?? 'cpu'}, ${Math.round(totalmem() / 2 ** 30)} GiB, harness on Node ${process.version}, ours on Node ${oursNode}`;
  const loadAtEnd = load();
  console.log(
    `\nmachine: ${machine}; provider delay ${providerDelayMs} ms; workers ${settings.workers}; converge provider qps ${settings.convergeProviderQps}`,
  );
  console.log(`load average (1, 5, 15 min): ${loadAtStart} at start, ${loadAtEnd} at end; argv: ${process.argv.slice(2).join(' ')}`);
  for (const row of rows) {
    console.log(`\n${row.scenario} n=${row.n} (${row.subject}${rounds > 1 ? `, round ${row.round}` : ''})`);
    for (const [k, v] of Object.entries(row.figures)) console.log(`  ${k.padEnd(40)} ${v}`);
  }
  const compared = peer ? ratios(rows, OURS.name, peer.name) : [];
  const medians = rounds > 1 ? medianRatios(compared) : [];
  for (const c of rounds > 1 ? medians : compared) {
    const what = rounds > 1 ? `medians of ${rounds} rounds (ours, peer, ratio; then each round's ratio)` : '';
    console.log(`\n${c.scenario} n=${c.n}: ${OURS.name} / ${peer?.name ?? ''} ${what}`);
    for (const r of c.figures) {
      const each = 'perRound' in c ? `   [${(c as MedianComparison).perRound[r.figure]?.map((x) => x.toFixed(2)).join(' ') ?? ''}]` : '';
      console.log(`  ${r.figure.padEnd(40)} ${String(r.ours).padStart(10)} ${String(r.peer).padStart(10)}   ${r.ratio.toFixed(2)}x${each}`);
    }
  }
  const file = join(__dirname, 'results', `bench-${stamp}.json`);
  writeFileSync(
    file,
    JSON.stringify(
      {
        started,
        machine,
        load: { start: loadAtStart, end: loadAtEnd },
        argv: process.argv.slice(2),
        providerDelayMs,
        settings,
        rows,
        compared,
        medians,
      },
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
