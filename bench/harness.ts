/**
 * The benchmark world: a real control plane with dist/ applied, the provider as a process, and
 * the operator as a process (so its CPU and memory are its own; the image's compiled build,
 * started with the Deployment's flags and env, see test/support/operator-process.ts), plus the
 * readings a scenario takes: operator API requests by verb, provider calls, reconciles.
 */
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { spawn } from 'node:child_process';
import { closeSync, mkdirSync, mkdtempSync, openSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeClient, resourcePath } from '../operator/runtime/client';
import { SharedInformer } from '../operator/runtime/informer';
import { createLogger } from '../operator/runtime/logging';
import { isNotFound } from '../operator/runtime/api-errors';
import { PROVIDER_CONFIG, SECRET, SERVICE, STORAGE_BUCKET } from '../operator/bucket/kinds';
import type { KubeObject, ResourceKind } from '../operator/runtime/types';
import type { StorageBucket } from '../operator/api/v1';
import { startControlPlane, type ControlPlane } from '../test/support/control-plane';
import { applyDist } from '../test/support/dist';
import { apply, bucketManifest, providerManifests } from '../test/support/kube';
import { startOperatorProcess, type OperatorProcess } from '../test/support/operator-process';
import { startProviderProcess, type ProviderProcess } from '../test/support/provider-process';
import { parsePrometheus, scrape, sum, type Sample } from '../test/support/prometheus';
import { eventually } from '../test/support/eventually';
import { rssMiB } from './metrics';
import { isReady, PEER_NAMESPACE, peerServiceAccount, startPeerProcess, type ReadyRule } from './peer';

/**
 * An operator under measurement: ours (the image build under its ServiceAccount and the
 * admission policy) or a peer started from a command template under its own ServiceAccount.
 */
export interface Subject {
  /** Name in the tables. */
  readonly name: string;
  /** When a bucket counts as ready for this operator. */
  readonly ready: ReadyRule;
  /**
   * Label of `rest_client_requests_total` that holds the request verb: ours counts LIST and
   * WATCH apart (`verb`), controller-runtime uses the HTTP method (`method`, lists are GETs).
   */
  readonly verbLabel: 'verb' | 'method';
  /** The peer's start command template; absent for ours. */
  readonly command?: string;
}

/** Ours, as the Deployment runs it. */
export const OURS: Subject = { name: 'ours', ready: { condition: 'Ready' }, verbLabel: 'verb' };

/** Counters read from the operator and the provider at one moment. */
export interface Reading {
  readonly at: number;
  readonly apiByVerb: Record<string, number>;
  readonly apiWrites: number;
  readonly providerCalls: number;
  readonly reconciles: number;
  /**
   * The operator's time in reconciles and items' time waiting in its work queue (sum, count),
   * by controller-runtime's metric names, which ours shares: whether a phase waited on the
   * workers' I/O or on free workers.
   */
  readonly operatorTimes: Record<'reconcile' | 'queue', { sum: number; count: number }>;
  /** kube-apiserver's CPU seconds so far: what the operator's traffic costs the control plane. */
  readonly apiServerCpu: number;
  /** kube-apiserver's time spent on requests (sum, count) by `VERB resource`, every client. */
  readonly apiServerLatency: Record<string, { sum: number; count: number }>;
}

const NAMESPACE: ResourceKind = { group: '', version: 'v1', kind: 'Namespace', plural: 'namespaces', namespaced: false };

/** The annotation that carries {@link Bench.peerPadBytes}. */
const PAD_ANNOTATION = 'bench.storage.avalonhosting.example/pad';
/** The field manager of the harness's creates: kubectl create's, as a user's bucket has. */
export const CREATOR_FIELD_MANAGER = 'kubectl-create';
const VERBS = ['GET', 'LIST', 'WATCH', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;

/** The running world of one benchmark run. */
export class Bench {
  readonly admin: KubeClient;
  /**
   * Every StorageBucket as the harness's own watch sees it. Progress is counted from it: a
   * paged list of all N every 2 s cost kube-apiserver more CPU than the operators it measures
   * at a few thousand buckets.
   */
  readonly buckets: SharedInformer<StorageBucket>;
  operator?: OperatorProcess;
  /** The operator that {@link startOperator} starts and the readings describe. */
  subject: Subject = OURS;
  private nsCounter = 0;
  private peerKubeconfig?: string;
  /** Set: ours writes a CPU profile there at exit and a heap snapshot on SIGUSR2. */
  profileDir?: string;
  /** Node options added after the Deployment's NODE_OPTIONS (they win): flag experiments only. */
  nodeOptions: readonly string[] = [];
  /** Set: ours runs on this Node binary instead of the pinned one the image runs. */
  oursNode?: string;
  /** Operator flags for ours beyond the Deployment's (local-only ones, see deployment-invocation.ts). */
  oursFlags: Readonly<Record<string, string>> = {};
  /** Set: kube-apiserver CPU profiles of each converge and delete phase are written there (`go tool pprof`). */
  apiServerProfileDir?: string;
  /** Length of each kube-apiserver CPU profile. */
  apiServerProfileSeconds = 10;
  /**
   * Bytes of padding the harness's creates add to each peer bucket (an annotation), so both
   * operators' objects can be made the same size: an experiment that tells a cost of the
   * object's bytes at kube-apiserver from one of the operator. 0: none.
   */
  peerPadBytes = 0;

  private constructor(
    readonly cp: ControlPlane,
    readonly provider: ProviderProcess,
    private readonly saKubeconfig: string,
    private readonly work: string,
    /** Where every operator process of this run appends its log; kept after the run. */
    readonly operatorLog: string,
    /** API keys of tenant accounts, one per tenant index (`tenantNamespace`). */
    private readonly tenantKeys: readonly string[],
  ) {
    // HTTP/1.1, as the operator speaks by default: over HTTP/2 a create of this client was seen
    // to hang for good at 100 tenants (the request never settled), which stalled the scenario.
    this.admin = new KubeClient({ restConfig: cp.restConfig(), maxSockets: 64, http2: false });
    this.buckets = new SharedInformer<StorageBucket>({ lw: this.admin, kind: STORAGE_BUCKET, logger: createLogger({ level: 'warn' }) });
    this.buckets.start();
  }

  /**
   * Starts a kube-apiserver CPU profile of `seconds` (its /debug/pprof, as admin) and resolves
   * with the file once written; stdout goes straight to the file (the profile is binary).
   */
  apiServerProfile(name: string, seconds: number): Promise<string> {
    const dir = this.apiServerProfileDir;
    if (dir === undefined) return Promise.resolve('');
    mkdirSync(dir, { recursive: true });
    const file = join(dir, `${name}.pprof`);
    return writeApiServerProfile(this.cp, file, seconds).then(() => file);
  }

  /** Buckets in `ns` (all namespaces when undefined) as the harness's watch has them. */
  private cached(ns?: string): StorageBucket[] {
    const all = this.buckets.cache.list();
    return ns === undefined ? all : all.filter((b) => b.metadata.namespace === ns);
  }

  /**
   * Starts control plane, dist/, provider (activation `providerDelayMs`), the provider knowing
   * `tenantAccounts` extra API keys: one provider account per tenant.
   */
  static async start(providerDelayMs: number, tenantAccounts = 0, operatorLog?: string): Promise<Bench> {
    const cp = await startControlPlane();
    try {
      await applyDist(cp);
      const work = mkdtempSync(join(tmpdir(), 'bucketoperator-bench-'));
      const tenantKeys = Array.from({ length: tenantAccounts }, (_, i) => `tk${i}-${randomBytes(8).toString('hex')}`);
      const keysFile = join(work, 'tenant-keys');
      writeFileSync(keysFile, tenantKeys.join('\n') + '\n');
      const provider = await startProviderProcess({
        activationDelayMs: providerDelayMs,
        ...(tenantAccounts > 0 ? { extraArgs: ['--api-keys-file', keysFile] } : {}),
      });
      const sa = await cp.serviceAccountKubeconfig('bucketoperator-system', 'bucketoperator-controller-manager', { expirationSeconds: 86_400 });
      return new Bench(cp, provider, sa, work, operatorLog ?? join(work, 'operator.log'), tenantKeys);
    } catch (err) {
      await cp.stop();
      throw err;
    }
  }

  /** A new namespace with the provider config and Secret in it. */
  async namespace(prefix: string): Promise<string> {
    const ns = `${prefix}-${++this.nsCounter}`;
    await apply(this.cp, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
    for (const m of providerManifests(ns, this.provider.url, this.provider.apiKey)) await apply(this.cp, m);
    return ns;
  }

  /**
   * A tenant: namespace `name`, its own credential Secret (the key of provider account
   * `account`) and config, created through the API (kubectl per object would set the pace).
   */
  async tenantNamespace(name: string, account: number): Promise<string> {
    const key = this.tenantKeys[account];
    if (key === undefined) throw new Error(`no tenant account ${account}: start the bench with more tenant accounts`);
    await this.admin.create(NAMESPACE, { apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
    const [secret, config] = providerManifests(name, this.provider.url, key);
    await this.admin.create(SECRET, secret as unknown as KubeObject);
    await this.admin.create(PROVIDER_CONFIG, config as unknown as KubeObject);
    return name;
  }

  /** Waits until `n` buckets in all namespaces are Ready (counted from the watch); ms since `since`. */
  async waitAllReadyEverywhere(n: number, since: number, timeoutMs: number): Promise<number> {
    await this.buckets.waitForSync();
    let printed = Date.now();
    await eventually(
      () => {
        const items = this.cached();
        const ready = items.filter((b) => isReady(this.subject.ready, b)).length;
        // A long converge shows its progress, so a stall is told from slowness while it runs.
        if (Date.now() - printed >= 30_000) {
          printed = Date.now();
          const rss = this.operator ? `, operator RSS ${Math.round(rssMiB(this.operator.pid))} MiB` : '';
          console.log(
            `  ${Math.round((printed - since) / 1000)} s: ${ready} of ${n} Ready (${items.length} exist)${rss}, load ${loadavg()[0]?.toFixed(2)}`,
          );
        }
        return ready >= n;
      },
      { description: `${n} buckets Ready in all namespaces`, timeoutMs, intervalMs: 250 },
    );
    return Date.now() - since;
  }

  /** Waits until one bucket is Ready, polling every 100 ms. */
  async waitReady(ns: string, name: string, timeoutMs: number): Promise<void> {
    await eventually(
      async () => {
        return isReady(this.subject.ready, await this.admin.get<StorageBucket>(STORAGE_BUCKET, ns, name));
      },
      { description: `${ns}/${name} Ready`, timeoutMs, intervalMs: 100 },
    );
  }

  /** True while the operator process started last has not exited. */
  operatorAlive(): boolean {
    const pid = this.operator?.pid;
    if (!pid) return false;
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  }

  /** Starts the operator process (info logs, to keep logging cost realistic); default provider limits unless given. */
  async startOperator(maxConcurrent: number, providerQps?: number): Promise<OperatorProcess> {
    if (this.subject.command !== undefined) {
      this.peerKubeconfig ??= await peerServiceAccount(this.cp);
      // The provider's own default limit when none is given, as ours gets its flag defaults.
      const qps = providerQps ?? 20;
      this.operator = await startPeerProcess(
        this.subject.command,
        {
          kubeconfig: this.peerKubeconfig,
          'provider-url': this.provider.url,
          'provider-key': this.provider.apiKey,
          workers: String(maxConcurrent),
          'provider-qps': String(qps),
          'provider-burst': String(qps * 2),
        },
        this.operatorLog,
      );
      return this.operator;
    }
    const qps: Record<string, string> = providerQps ? { 'provider-qps': String(providerQps), 'provider-burst': String(providerQps * 2) } : {};
    this.operator = await startOperatorProcess({
      kubeconfig: this.saKubeconfig,
      logFile: this.operatorLog,
      pollInterval: '3s',
      driftInterval: '60s',
      flags: { 'max-concurrent-reconciles': String(maxConcurrent), 'log-level': 'info', ...qps, ...this.oursFlags },
      ...(this.oursNode === undefined ? {} : { nodeBinary: this.oursNode }),
      nodeArgs: [
        ...this.nodeOptions,
        ...(this.profileDir
          ? ['--cpu-prof', `--cpu-prof-dir=${this.profileDir}`, '--heapsnapshot-signal=SIGUSR2', `--diagnostic-dir=${this.profileDir}`]
          : []),
      ],
    });
    return this.operator;
  }

  /** Has ours write a heap snapshot into the profile directory and waits until it is complete. */
  async heapSnapshot(): Promise<void> {
    const dir = this.profileDir;
    const pid = this.operator?.pid;
    if (dir === undefined || !pid) return;
    const before = new Set(readdirSync(dir));
    process.kill(pid, 'SIGUSR2');
    await eventually(
      () => {
        const fresh = readdirSync(dir).filter((f) => f.endsWith('.heapsnapshot') && !before.has(f));
        // V8 writes the file in one go and closes it; a size that holds for a poll means done.
        return fresh.length > 0 && fresh.every((f) => statSync(join(dir, f)).size > 0 && Date.now() - statSync(join(dir, f)).mtimeMs > 2000);
      },
      { description: 'the heap snapshot to be written', timeoutMs: 120_000, intervalMs: 500 },
    );
  }

  async stopOperator(): Promise<void> {
    if (!this.operator) return;
    await this.operator.kill('SIGTERM');
    this.operator = undefined;
    await this.releasePeerLeases();
  }

  /**
   * Releases the peer's leader-election Lease once its process has exited, as ours does itself
   * on SIGTERM. controller-runtime keeps the Lease unless told to release it
   * (LeaderElectionReleaseOnCancel), and client-go's leader election makes a new candidate wait
   * a whole lease duration from when it first sees a held Lease, however old its last renewal:
   * every peer start after the first waited 16 to 18 s inside the measured phase, which earlier
   * figures counted against the peer. Only one operator runs at a time, so no holder is alive.
   */
  private async releasePeerLeases(): Promise<void> {
    const res = await this.cp.kubectl(['get', 'leases', '-n', PEER_NAMESPACE, '-o', 'json']);
    if (res.code !== 0) throw new Error(`list leases in ${PEER_NAMESPACE}: ${res.stderr}`);
    const leases = (JSON.parse(res.stdout) as { items: { metadata: { name: string }; spec?: { holderIdentity?: string } }[] }).items;
    for (const l of leases.filter((x) => x.spec?.holderIdentity)) {
      const patch = await this.cp.kubectl([
        'patch',
        'lease',
        '-n',
        PEER_NAMESPACE,
        l.metadata.name,
        '--type=merge',
        '-p',
        '{"spec":{"holderIdentity":""}}',
      ]);
      if (patch.code !== 0) throw new Error(`release lease ${l.metadata.name}: ${patch.stderr}`);
    }
  }

  /**
   * Creates `n` buckets with 20 requests in flight, as `kubectl apply` of many files would, under
   * kubectl create's field manager: without one the server names the entry after the User-Agent,
   * `bucketoperator`, and the spec's fields land in the operator's own entry, which then reads
   * larger than the operator makes it.
   */
  async createBuckets(ns: string, n: number): Promise<void> {
    const pad = this.subject !== OURS && this.peerPadBytes > 0 ? { [PAD_ANNOTATION]: 'x'.repeat(this.peerPadBytes) } : undefined;
    await inFlight(n, 20, async (i) => {
      const manifest = bucketManifest(ns, `b${String(i).padStart(5, '0')}`, { sizeGB: 10 }, pad) as unknown as StorageBucket;
      await this.admin.create(STORAGE_BUCKET, manifest, { fieldManager: CREATOR_FIELD_MANAGER });
    });
  }

  /** Number of buckets in `ns` and how many are Ready, as the harness's watch has them. */
  async count(ns: string): Promise<{ total: number; ready: number }> {
    await this.buckets.waitForSync();
    const items = this.cached(ns);
    const ready = items.filter((b) => isReady(this.subject.ready, b)).length;
    return { total: items.length, ready };
  }

  /**
   * Waits until every one of `n` buckets is Ready; returns elapsed ms since `since` (checked
   * every `intervalMs` against the harness's watch, which costs the API server nothing more).
   */
  async waitAllReady(ns: string, n: number, since: number, timeoutMs: number, intervalMs = 100): Promise<number> {
    await eventually(async () => (await this.count(ns)).ready === n, {
      description: `${n} buckets Ready in ${ns}`,
      timeoutMs,
      intervalMs,
    });
    return Date.now() - since;
  }

  /**
   * Mean size in bytes of the JSON the API server returns for a StorageBucket and for the
   * Secret and Service an operator owns in `ns` (managedFields included), over the first
   * `sample` of each: what kube-apiserver decodes, copies and encodes on every request about one.
   */
  async objectBytes(ns: string, sample = 50): Promise<{ bucket: number; secret: number; service: number }> {
    const examples: Record<string, unknown> = {};
    const mean = async (kind: ResourceKind) => {
      // One page only: a paged list of all N would itself be the load.
      const res = await this.cp.kubectl(['get', '--raw', `${resourcePath(kind, ns)}?limit=${sample}`]);
      if (res.code !== 0) throw new Error(`list ${kind.plural} in ${ns}: ${res.stderr}`);
      const items = (JSON.parse(res.stdout) as { items?: KubeObject[] }).items ?? [];
      const owned = items.filter((o) => kind === STORAGE_BUCKET || (o.metadata?.ownerReferences?.length ?? 0) > 0);
      const first = owned[0] as (KubeObject & { data?: Record<string, string> }) | undefined;
      // A Secret's values stay out of the file; their lengths tell the bytes.
      examples[kind.plural] = first?.data
        ? { ...first, data: Object.fromEntries(Object.entries(first.data).map(([k, v]) => [k, `<${v.length} bytes>`])) }
        : first;
      return owned.length === 0 ? 0 : Math.round(owned.reduce((a, o) => a + JSON.stringify(o).length, 0) / owned.length);
    };
    const bytes = { bucket: await mean(STORAGE_BUCKET), secret: await mean(SECRET), service: await mean(SERVICE) };
    // One object of each kind as the server stores it, beside the operator's log: what the bytes are.
    writeFileSync(`${this.operatorLog.replace(/\.operator\.log$|\.log$/, '')}.${ns}.objects.json`, JSON.stringify(examples, null, 2) + '\n');
    return bytes;
  }

  /**
   * The bytes etcd holds for one StorageBucket of `ns` (the first by key), as kube-apiserver
   * stored it: JSON with managedFields, read from etcd's gateway rather than through the API,
   * which would re-encode it.
   */
  async storedBucket(ns: string): Promise<string | undefined> {
    const prefix = `/registry/${STORAGE_BUCKET.group}/${STORAGE_BUCKET.plural}/${ns}/`;
    const end = prefix.slice(0, -1) + String.fromCharCode(prefix.charCodeAt(prefix.length - 1) + 1);
    const b64 = (x: string) => Buffer.from(x, 'utf8').toString('base64');
    const res = await fetch(`${this.cp.etcdUrl}/v3/kv/range`, {
      method: 'POST',
      body: JSON.stringify({ key: b64(prefix), range_end: b64(end), limit: 1 }),
      signal: AbortSignal.timeout(10_000),
    });
    if (!res.ok) throw new Error(`etcd range ${prefix}: ${res.status}`);
    const kv = ((await res.json()) as { kvs?: Array<{ value: string }> }).kvs?.[0];
    return kv === undefined ? undefined : Buffer.from(kv.value, 'base64').toString('utf8');
  }

  /** Creates `n` Opaque Secrets of `sizeKiB` each, unrelated to the operator, 20 in flight. */
  async createSecrets(ns: string, n: number, sizeKiB: number): Promise<void> {
    const payload = Buffer.alloc(sizeKiB * 1024, 'x')
      .toString('base64')
      .slice(0, sizeKiB * 1024);
    await inFlight(n, 20, async (i) => {
      await this.admin.create(SECRET, {
        apiVersion: 'v1',
        kind: 'Secret',
        type: 'Opaque',
        metadata: { name: `release-${String(i).padStart(5, '0')}`, namespace: ns, labels: { owner: 'helm' } },
        data: { release: payload },
      });
    });
  }

  /** Deletes a namespace without waiting for it to go. */
  async deleteNamespace(ns: string): Promise<void> {
    await this.cp.kubectl(['delete', 'namespace', ns, '--wait=false']);
  }

  /**
   * Deletes every bucket in `ns`, 20 DELETEs in flight as `createBuckets` creates them;
   * resolves with the ms from the first DELETE until none is left in Kubernetes. Not `kubectl
   * delete --all`, which sends one DELETE after another and at 10,000 sets the pace itself, nor
   * one DeleteCollection, which the API server gives up on after 60 s at a few thousand.
   */
  async deleteAll(ns: string, timeoutMs: number): Promise<number> {
    await this.buckets.waitForSync();
    const names = this.cached(ns).map((b) => b.metadata.name ?? '');
    const t0 = Date.now();
    await inFlight(names.length, 20, async (i) => {
      await this.admin.delete(STORAGE_BUCKET, ns, names[i] ?? '').catch((err: unknown) => {
        // Already gone is what was asked for.
        if (!isNotFound(err)) throw err;
      });
    });
    await eventually(async () => (await this.count(ns)).total === 0, {
      description: `buckets in ${ns} to be gone`,
      timeoutMs,
      intervalMs: 100,
    });
    return Date.now() - t0;
  }

  /**
   * Deletes `ns` and waits until it is gone. A delete phase ends when the last StorageBucket is
   * gone, but the garbage collector's deletes of the 2N owned Secrets and Services run on at
   * kube-controller-manager's 20 requests/s (about 150 s for 1,000 buckets); left to it, they
   * fall into the next operator's measured phase. The namespace controller removes them in a
   * few collection deletes instead.
   */
  async clearNamespace(ns: string, timeoutMs: number): Promise<number> {
    const t0 = Date.now();
    const res = await this.cp.kubectl(['delete', 'namespace', ns, '--wait=true', `--timeout=${Math.round(timeoutMs / 1000)}s`]);
    if (res.code !== 0) throw new Error(`delete namespace ${ns}: ${res.stderr}`);
    return Date.now() - t0;
  }

  /**
   * Buckets the provider still holds, in every account and namespace (a peer may not tag its
   * buckets with their namespace); scenarios leave none behind, so any is an orphan.
   */
  async leftAtProvider(): Promise<number> {
    return (await this.provider.buckets()).length;
  }

  /**
   * Waits until the operator's StorageBucket controller is idle: nothing queued and no worker
   * busy, in three readings a second apart (items waiting out a requeue delay are not queued
   * yet, so a polling operator reads idle between its polls), or until `capMs` have passed. A
   * steady window opened on a fixed delay after the last Ready caught a queue still draining
   * (the peer's at 10,000 buckets).
   */
  async settle(capMs: number): Promise<void> {
    const t0 = Date.now();
    let quiet = 0;
    while (quiet < 3 && Date.now() - t0 < capMs) {
      const samples: Sample[] = this.operator ? await scrape(this.operator.metricsUrl) : [];
      const depth = sum(samples, 'workqueue_depth', { name: 'storagebucket' });
      const busy = sum(samples, 'controller_runtime_active_workers', { controller: 'storagebucket' });
      quiet = depth === 0 && busy === 0 ? quiet + 1 : 0;
      if (quiet < 3) await sleep(1000);
    }
  }

  /** Counters at this moment. */
  async read(): Promise<Reading> {
    const samples: Sample[] = this.operator ? await scrape(this.operator.metricsUrl) : [];
    const apiByVerb: Record<string, number> = {};
    for (const v of VERBS) apiByVerb[v] = sum(samples, 'rest_client_requests_total', { [this.subject.verbLabel]: v });
    const server = parsePrometheus((await this.cp.kubectl(['get', '--raw', '/metrics'])).stdout);
    const apiServerLatency: Record<string, { sum: number; count: number }> = {};
    for (const smp of server) {
      const m = /^apiserver_request_duration_seconds_(sum|count)$/.exec(smp.name);
      if (!m) continue;
      const k = `${smp.labels['verb'] ?? ''} ${smp.labels['resource'] ?? ''}`;
      const e = (apiServerLatency[k] ??= { sum: 0, count: 0 });
      if (m[1] === 'sum') e.sum += smp.value;
      else e.count += smp.value;
    }
    return {
      at: Date.now(),
      apiServerCpu: sum(server, 'process_cpu_seconds_total'),
      apiServerLatency,
      apiByVerb,
      apiWrites: (apiByVerb['POST'] ?? 0) + (apiByVerb['PUT'] ?? 0) + (apiByVerb['PATCH'] ?? 0) + (apiByVerb['DELETE'] ?? 0),
      providerCalls: (await this.provider.stats()).total,
      reconciles: sum(samples, 'controller_runtime_reconcile_total', { controller: 'storagebucket' }),
      operatorTimes: {
        reconcile: {
          sum: sum(samples, 'controller_runtime_reconcile_time_seconds_sum', { controller: 'storagebucket' }),
          count: sum(samples, 'controller_runtime_reconcile_time_seconds_count', { controller: 'storagebucket' }),
        },
        queue: {
          sum: sum(samples, 'workqueue_queue_duration_seconds_sum', { name: 'storagebucket' }),
          count: sum(samples, 'workqueue_queue_duration_seconds_count', { name: 'storagebucket' }),
        },
      },
    };
  }

  async stop(): Promise<void> {
    await this.stopOperator();
    await this.buckets.stop();
    this.admin.close();
    await this.provider.stop();
    await this.cp.stop();
    rmSync(this.work, { recursive: true, force: true });
  }
}

/** Runs `task(0..n-1)` with at most `concurrency` in flight, as `kubectl apply` of many files would. */
/**
 * Writes a kube-apiserver CPU profile of the next `seconds` (its /debug/pprof, as admin) to
 * `file`; stdout goes straight to the file (the profile is binary).
 */
export function writeApiServerProfile(cp: ControlPlane, file: string, seconds: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const out = openSync(file, 'w');
    const child = spawn(cp.binaries.kubectl, [`--kubeconfig=${cp.kubeconfigPath}`, 'get', '--raw', `/debug/pprof/profile?seconds=${seconds}`], {
      stdio: ['ignore', out, 'inherit'],
    });
    child.on('error', reject);
    child.on('exit', (code) => {
      closeSync(out);
      if (code === 0) resolve();
      else reject(new Error(`kube-apiserver profile ${file}: kubectl exited ${String(code)}`));
    });
  });
}

export async function inFlight(n: number, concurrency: number, task: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < n) await task(next++);
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
}

/** b - a, per key. */
export function delta(a: Reading, b: Reading): Reading {
  const apiByVerb: Record<string, number> = {};
  for (const k of Object.keys(b.apiByVerb)) apiByVerb[k] = (b.apiByVerb[k] ?? 0) - (a.apiByVerb[k] ?? 0);
  const apiServerLatency: Record<string, { sum: number; count: number }> = {};
  for (const [k, v] of Object.entries(b.apiServerLatency))
    apiServerLatency[k] = { sum: v.sum - (a.apiServerLatency[k]?.sum ?? 0), count: v.count - (a.apiServerLatency[k]?.count ?? 0) };
  return {
    at: b.at - a.at,
    apiServerCpu: b.apiServerCpu - a.apiServerCpu,
    apiServerLatency,
    apiByVerb,
    apiWrites: b.apiWrites - a.apiWrites,
    providerCalls: b.providerCalls - a.providerCalls,
    reconciles: b.reconciles - a.reconciles,
    operatorTimes: {
      reconcile: minus(b.operatorTimes.reconcile, a.operatorTimes.reconcile),
      queue: minus(b.operatorTimes.queue, a.operatorTimes.queue),
    },
  };
}

const minus = (b: { sum: number; count: number }, a: { sum: number; count: number }) => ({ sum: b.sum - a.sum, count: b.count - a.count });

/** A reading of a process that has not started yet: its counters are all zero. */
export function fromZero(r: Reading): Reading {
  const zero = { sum: 0, count: 0 };
  return { ...r, apiByVerb: {}, apiWrites: 0, reconciles: 0, operatorTimes: { reconcile: zero, queue: zero } };
}
