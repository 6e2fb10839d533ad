/**
 * The benchmark scenarios. Each takes a running {@link Bench}, drives one situation a user
 * would judge the operator by, and returns figures; none passes or fails on a timing.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Bench, delta, fromZero, type Reading } from './harness';
import { cpuSeconds, peakRssMiB, rssMiB, rssParts } from './metrics';
import { breakdownFigures, byteBreakdown } from './object-bytes';
import { residentReport } from './resident';

/** Figures of one scenario run, printed as a table and stored as JSON. */
export type Figures = Record<string, number | string>;

/** Settings shared by the scenarios. */
export interface ScenarioSettings {
  /** Workers of the StorageBucket controller. */
  readonly workers: number;
  /** Provider calls per second per endpoint while converging (lifted so the API server sets the pace). */
  readonly convergeProviderQps: number;
  /** Length of the steady-state window. */
  readonly steadySeconds: number;
  /** Largest N whose deletion is measured (larger ones are left for the next scenario to share the cluster with). */
  readonly deleteUpTo: number;
  /** Idle: also print which pages of ours' executable are resident (bench/resident.ts). */
  readonly idleResident?: boolean;
}

const round = (x: number, d = 2) => Math.round(x * 10 ** d) / 10 ** d;
const meanMs = (t: { sum: number; count: number }) => (t.count > 0 ? round((t.sum / t.count) * 1000, 1) : 0);

/** Per-bucket costs between two readings. */
export function perBucket(d: Reading, n: number, prefix = ''): Figures {
  return {
    [`${prefix}api writes/bucket`]: round(d.apiWrites / n),
    [`${prefix}api PATCH/bucket`]: round((d.apiByVerb['PATCH'] ?? 0) / n),
    [`${prefix}api POST/bucket`]: round((d.apiByVerb['POST'] ?? 0) / n),
    [`${prefix}api GET/bucket`]: round((d.apiByVerb['GET'] ?? 0) / n),
    [`${prefix}provider calls/bucket`]: round(d.providerCalls / n),
    [`${prefix}reconciles/bucket`]: round(d.reconciles / n),
    [`${prefix}reconcile ms mean`]: meanMs(d.operatorTimes.reconcile),
    [`${prefix}queue wait ms mean`]: meanMs(d.operatorTimes.queue),
    [`${prefix}api server CPU s`]: round(d.apiServerCpu, 1),
    ...serverLatency(d, prefix),
  };
}

const OPERATOR_RESOURCES = new Set(['storagebuckets', 'secrets', 'services', 'events', 'leases']);

/** Mean kube-apiserver time of the write verbs on the objects an operator writes, in ms. */
function serverLatency(d: Reading, prefix: string): Figures {
  const out: Figures = {};
  for (const [k, v] of Object.entries(d.apiServerLatency)) {
    if (v.count < 10 || !/^(POST|PUT|PATCH|DELETE|APPLY|UPDATE|CREATE)\b/.test(k) || !OPERATOR_RESOURCES.has(k.split(' ')[1] ?? '')) continue;
    out[`${prefix}server ms ${k}`] = round((v.sum / v.count) * 1000, 1);
  }
  return out;
}

/**
 * Idle: the operator started on a cluster with none of its objects, left alone for `seconds`:
 * its RSS then, split into anonymous memory (what the process allocated) and file-backed pages
 * (its binary and libraries), its peak, and its CPU meanwhile; and the CPU it took to start (until
 * its /readyz answered).
 */
export async function idle(bench: Bench, seconds: number, s: ScenarioSettings): Promise<Figures> {
  await bench.stopOperator();
  const op = await bench.startOperator(s.workers, s.convergeProviderQps);
  const cpu0 = cpuSeconds(op.pid);
  await sleep(seconds * 1000);
  const parts = rssParts(op.pid);
  const figures: Figures = {
    'idle RSS MiB': round(parts.rss, 1),
    'idle RSS anon MiB': round(parts.anon, 1),
    'idle RSS file MiB': round(parts.file, 1),
    'idle peak RSS MiB': round(parts.peak, 1),
    'idle CPU %': round(((cpuSeconds(op.pid) - cpu0) / seconds) * 100, 2),
    // What starting cost, up to ready: part of every backlog and restart figure.
    'idle start CPU s': round(cpu0, 2),
  };
  console.log(`idle:`, JSON.stringify(figures));
  if (s.idleResident) console.log(residentReport(op.pid));
  await bench.stopOperator();
  return figures;
}

/**
 * Bulk create: the operator runs, N buckets are created at once; then steady state, a restart
 * with a new bucket created into the restart backlog, and deletion of all N.
 */
export async function bulkCreate(bench: Bench, n: number, s: ScenarioSettings): Promise<Figures> {
  const ns = await bench.namespace(`bulk${n}`);
  const latencyNs = await bench.namespace(`late${n}`);
  const op = await bench.startOperator(s.workers, s.convergeProviderQps);
  const figures: Figures = { 'idle RSS MiB (0 buckets)': round(rssMiB(op.pid), 0) };
  const cpu0 = cpuSeconds(op.pid);
  const r0 = await bench.read();
  const t0 = Date.now();
  const profile = bench.apiServerProfile(`${bench.subject.name}-${ns}-converge`, bench.apiServerProfileSeconds);
  await bench.createBuckets(ns, n);
  figures['created s'] = round((Date.now() - t0) / 1000, 1);
  figures['all Ready s'] = round((await bench.waitAllReady(ns, n, t0, 60 * 60_000)) / 1000, 1);
  const r1 = await bench.read();
  figures['converge CPU s'] = round(cpuSeconds(op.pid) - cpu0, 1);
  figures['converge peak RSS MiB'] = round(peakRssMiB(op.pid), 0);
  // A profile longer than the phase runs on past it; the phase's counters are read already.
  await profile;
  Object.assign(figures, perBucket(delta(r0, r1), n));
  console.log(`bulk create n=${n}:`, JSON.stringify(figures));

  Object.assign(figures, await steady(bench, op.pid, n, s.steadySeconds));
  Object.assign(figures, await restartBacklog(bench, n, latencyNs, s));
  if (n <= s.deleteUpTo) Object.assign(figures, await deleteAll(bench, ns, n));
  Object.assign(figures, perBucketLife(figures, 'api server CPU s', n));
  await bench.stopOperator();
  return figures;
}

/**
 * kube-apiserver's CPU per bucket-life (created, Ready, deleted), in ms: the converge phase's
 * and the delete phase's server CPU over N. What a cluster pays per bucket, whatever operator.
 */
export function perBucketLife(figures: Figures, convergeKey: string, n: number): Figures {
  const converge = figures[convergeKey];
  const del = figures['delete api server CPU s'];
  if (typeof converge !== 'number' || typeof del !== 'number' || n <= 0) return {};
  return { 'api server CPU ms per bucket-life': round(((converge + del) * 1000) / n, 1) };
}

/**
 * Backlog: N buckets are created while the operator is down (an install onto a cluster that
 * already holds them, or a long outage); then the operator starts and converges them.
 */
export async function backlog(bench: Bench, n: number, s: ScenarioSettings): Promise<Figures> {
  await bench.stopOperator();
  const ns = await bench.namespace(`backlog${n}`);
  const t0 = Date.now();
  await bench.createBuckets(ns, n);
  const figures: Figures = { 'created (operator down) s': round((Date.now() - t0) / 1000, 1) };
  // No operator runs now, so this reads the provider's counters only.
  const r0 = await bench.read();
  const t1 = Date.now();
  const op = await bench.startOperator(s.workers, s.convergeProviderQps);
  const cpu0 = cpuSeconds(op.pid);
  const profile = bench.apiServerProfile(`${bench.subject.name}-${ns}-converge`, bench.apiServerProfileSeconds);
  figures['backlog all Ready s'] = round((await bench.waitAllReady(ns, n, t1, 60 * 60_000)) / 1000, 1);
  const r1 = await bench.read();
  figures['backlog CPU s'] = round(cpuSeconds(op.pid) - cpu0, 1);
  figures['backlog peak RSS MiB'] = round(peakRssMiB(op.pid), 0);
  // A profile longer than the phase runs on past it; the phase's counters are read already.
  await profile;
  const bytes = await bench.objectBytes(ns);
  figures['Ready StorageBucket JSON bytes'] = bytes.bucket;
  figures['owned Secret JSON bytes'] = bytes.secret;
  figures['owned Service JSON bytes'] = bytes.service;
  const stored = await bench.storedBucket(ns);
  if (stored !== undefined) Object.assign(figures, breakdownFigures(byteBreakdown(stored), 'stored StorageBucket bytes'));
  // The new process's counters start at zero.
  Object.assign(figures, perBucket(delta(fromZero(r0), r1), n, 'backlog '));
  console.log(`backlog n=${n}:`, JSON.stringify(figures));
  if (n <= s.deleteUpTo) Object.assign(figures, await deleteAll(bench, ns, n));
  Object.assign(figures, perBucketLife(figures, 'backlog api server CPU s', n));
  await bench.stopOperator();
  return figures;
}

/** Steady state with N Ready buckets: nothing to write, the provider asked as little as possible. */
async function steady(bench: Bench, pid: number, n: number, seconds: number): Promise<Figures> {
  // Let the last owned-object and config events pass before the window opens, then wait for
  // the controller to drain what they queued: the window measures a steady loop, not a tail.
  const t0 = Date.now();
  await sleep(5_000);
  await bench.settle(10 * 60_000);
  const settledS = (Date.now() - t0) / 1000;
  const cpu0 = cpuSeconds(pid);
  const s0 = await bench.read();
  await sleep(seconds * 1000);
  const s1 = await bench.read();
  // With --profile-dir: a heap snapshot of N Ready buckets at rest (bench/heapsnapshot.ts reads it).
  if (bench.profileDir !== undefined && bench.subject.command === undefined) await bench.heapSnapshot();
  const d = delta(s0, s1);
  const perHour = 3600 / seconds;
  const figures: Figures = {
    'steady settled after s': round(settledS, 0),
    'steady CPU %': round(((cpuSeconds(pid) - cpu0) / seconds) * 100, 2),
    'steady RSS MiB': round(rssMiB(pid), 0),
    'steady api writes/h': round(d.apiWrites * perHour, 0),
    // With leader election on (as the Deployment runs it) the Lease is renewed every 2 s by PUT;
    // everything else is what the buckets cost.
    'steady api writes/h excl. Lease renewals': round((d.apiWrites - (d.apiByVerb['PUT'] ?? 0)) * perHour, 0),
    'steady provider calls/h': round(d.providerCalls * perHour, 0),
    'steady provider calls/bucket/h': round((d.providerCalls / n) * perHour, 3),
  };
  console.log(`steady n=${n}:`, JSON.stringify(figures));
  return figures;
}

/**
 * Restart with N Ready buckets, and one bucket created right after the new process starts,
 * while the initial pass over all N is queued: how long a user waits for it.
 */
async function restartBacklog(bench: Bench, n: number, latencyNs: string, s: ScenarioSettings): Promise<Figures> {
  await bench.stopOperator();
  const before = await bench.read();
  const t0 = Date.now();
  const op = await bench.startOperator(s.workers, s.convergeProviderQps);
  const readyProbeMs = Date.now() - t0;
  const t1 = Date.now();
  await bench.createBuckets(latencyNs, 1);
  const newReadyMs = await bench.waitAllReady(latencyNs, 1, t1, 10 * 60_000, 100);
  // Long enough for the initial pass over every cached object to finish.
  await sleep(Math.max(10_000, n * 2));
  const after = await bench.read();
  const d = delta(fromZero(before), after);
  const figures: Figures = {
    'restart ready s': round(readyProbeMs / 1000, 1),
    'restart new bucket Ready s': round(newReadyMs / 1000, 1),
    // The new bucket's own writes are in here (about 7): the N Ready ones should add none.
    'restart api writes (incl. the new bucket)': d.apiWrites,
    'restart provider calls/bucket': round(d.providerCalls / n, 3),
    'restart CPU s': round(cpuSeconds(op.pid), 1),
  };
  console.log(`restart n=${n}:`, JSON.stringify(figures));
  await bench.deleteAll(latencyNs, 5 * 60_000);
  return figures;
}

/**
 * Every request kube-apiserver served in a phase, from every client, by `VERB resource`, per
 * bucket (those of at least one per 20 buckets): what the server did besides the operator's own
 * requests (the garbage collector's, the harness's, watches opened).
 */
function serverRequests(d: Reading, n: number, prefix: string): Figures {
  const out: Figures = {};
  for (const [k, v] of Object.entries(d.apiServerLatency).sort(([a], [b]) => a.localeCompare(b))) {
    if (v.count * 20 >= n) out[`${prefix}server requests/bucket ${k}`] = round(v.count / n);
  }
  return out;
}

/**
 * Delete all (one DELETE per bucket, 20 in flight; see `Bench.deleteAll`): time until none is
 * left, and what it cost; then the namespace is cleared, outside the measurement.
 */
async function deleteAll(bench: Bench, ns: string, n: number): Promise<Figures> {
  const d0 = await bench.read();
  const pid = bench.operator?.pid;
  const cpu0 = pid ? cpuSeconds(pid) : 0;
  const profile = bench.apiServerProfile(`${bench.subject.name}-${ns}-delete`, bench.apiServerProfileSeconds);
  const w0 = process.hrtime.bigint() / 1000n;
  const ms = await bench.deleteAll(ns, 60 * 60_000);
  const w1 = process.hrtime.bigint() / 1000n;
  const d1 = await bench.read();
  const cpu = pid ? cpuSeconds(pid) - cpu0 : 0;
  await profile;
  const figures: Figures = {
    'delete s': round(ms / 1000, 1),
    // The operator's CPU in the phase: on a machine the API server saturates, what the operator
    // takes is taken from the server.
    'delete CPU s': round(cpu, 1),
    // The phase on the monotonic clock of V8's profiles: `bench/cpuprofile.ts --from-us --to-us`.
    'delete window monotonic us': `${w0}-${w1}`,
    ...perBucket(delta(d0, d1), n, 'delete '),
    ...serverRequests(delta(d0, d1), n, 'delete '),
    'left at provider': await bench.leftAtProvider(),
  };
  // Outside the measured phase, so the next run starts on a control plane with nothing left to
  // collect (before this, each run's garbage-collector tail fell into the next one's phase).
  figures['namespace cleared after s'] = round((await bench.clearNamespace(ns, 10 * 60_000)) / 1000, 1);
  console.log(`delete n=${n}:`, JSON.stringify(figures));
  return figures;
}

/**
 * Unrelated Secrets: `count` Secrets of `sizeKiB` that have nothing to do with the operator
 * (Helm keeps releases like that) land in another namespace; the operator's RSS should not move.
 */
export async function unrelatedSecrets(bench: Bench, count: number, sizeKiB: number, s: ScenarioSettings): Promise<Figures> {
  await bench.stopOperator();
  const op = await bench.startOperator(s.workers, s.convergeProviderQps);
  await sleep(10_000);
  const before = rssMiB(op.pid);
  const ns = await bench.namespace(`unrelated`);
  const t0 = Date.now();
  await bench.createSecrets(ns, count, sizeKiB);
  const createdS = (Date.now() - t0) / 1000;
  // Give the watch (if it were caching them) time to deliver every one.
  await sleep(20_000);
  const after = rssMiB(op.pid);
  // And a restart with them present: the initial list is where a cache of them would show.
  await bench.stopOperator();
  const op2 = await bench.startOperator(s.workers, s.convergeProviderQps);
  await sleep(10_000);
  const figures: Figures = {
    [`unrelated Secrets`]: `${count} x ${sizeKiB} KiB`,
    'created s': round(createdS, 1),
    'RSS before MiB': round(before, 1),
    'RSS after MiB': round(after, 1),
    'RSS delta MiB': round(after - before, 1),
    'restarted with them: RSS MiB': round(rssMiB(op2.pid), 1),
    'restarted with them: peak RSS MiB': round(peakRssMiB(op2.pid), 1),
  };
  console.log('unrelated secrets:', JSON.stringify(figures));
  await bench.stopOperator();
  await bench.deleteNamespace(ns);
  return figures;
}
