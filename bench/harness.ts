/**
 * The benchmark world: a real control plane with dist/ applied, the provider as a process, and
 * the operator as a process (so its CPU and memory are its own; the image's compiled build,
 * started with the Deployment's flags and env, see test/support/operator-process.ts), plus the
 * readings a scenario takes: operator API requests by verb, provider calls, reconciles.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeClient } from '../operator/runtime/client';
import { PROVIDER_CONFIG, SECRET, STORAGE_BUCKET } from '../operator/bucket/kinds';
import type { KubeObject, ResourceKind } from '../operator/runtime/types';
import type { StorageBucket } from '../operator/api/v1';
import { startControlPlane, type ControlPlane } from '../test/support/control-plane';
import { applyDist } from '../test/support/dist';
import { apply, bucketManifest, providerManifests } from '../test/support/kube';
import { startOperatorProcess, type OperatorProcess } from '../test/support/operator-process';
import { startProviderProcess, type ProviderProcess } from '../test/support/provider-process';
import { scrape, sum, type Sample } from '../test/support/prometheus';
import { eventually } from '../test/support/eventually';
import { rssMiB } from './metrics';

/** Counters read from the operator and the provider at one moment. */
export interface Reading {
  readonly at: number;
  readonly apiByVerb: Record<string, number>;
  readonly apiWrites: number;
  readonly providerCalls: number;
  readonly reconciles: number;
}

const NAMESPACE: ResourceKind = { group: '', version: 'v1', kind: 'Namespace', plural: 'namespaces', namespaced: false };

const VERBS = ['GET', 'LIST', 'WATCH', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;

/** The running world of one benchmark run. */
export class Bench {
  readonly admin: KubeClient;
  operator?: OperatorProcess;
  private nsCounter = 0;

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

  /** Waits until `n` buckets in all namespaces are Ready (one paged list every 5 s); ms since `since`. */
  async waitAllReadyEverywhere(n: number, since: number, timeoutMs: number): Promise<number> {
    let printed = Date.now();
    await eventually(
      async () => {
        const { items } = await this.admin.list<StorageBucket>(STORAGE_BUCKET, { limit: 1000 });
        const ready = items.filter((b) => b.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')).length;
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
      { description: `${n} buckets Ready in all namespaces`, timeoutMs, intervalMs: 5000 },
    );
    return Date.now() - since;
  }

  /** Waits until one bucket is Ready, polling every 100 ms. */
  async waitReady(ns: string, name: string, timeoutMs: number): Promise<void> {
    await eventually(
      async () => {
        const b = await this.admin.get<StorageBucket>(STORAGE_BUCKET, ns, name);
        return b.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true;
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
    const qps: Record<string, string> = providerQps ? { 'provider-qps': String(providerQps), 'provider-burst': String(providerQps * 2) } : {};
    this.operator = await startOperatorProcess({
      kubeconfig: this.saKubeconfig,
      logFile: this.operatorLog,
      pollInterval: '3s',
      driftInterval: '60s',
      flags: { 'max-concurrent-reconciles': String(maxConcurrent), 'log-level': 'info', ...qps },
    });
    return this.operator;
  }

  async stopOperator(): Promise<void> {
    await this.operator?.kill('SIGTERM');
    this.operator = undefined;
  }

  /** Creates `n` buckets with 20 requests in flight, as `kubectl apply` of many files would. */
  async createBuckets(ns: string, n: number): Promise<void> {
    await inFlight(n, 20, async (i) => {
      await this.admin.create(STORAGE_BUCKET, bucketManifest(ns, `b${String(i).padStart(5, '0')}`, { sizeGB: 10 }) as unknown as StorageBucket);
    });
  }

  /** Number of buckets in `ns` and how many are Ready. */
  async count(ns: string): Promise<{ total: number; ready: number }> {
    const { items } = await this.admin.list<StorageBucket>(STORAGE_BUCKET, { namespace: ns, limit: 500 });
    const ready = items.filter((b) => b.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')).length;
    return { total: items.length, ready };
  }

  /**
   * Waits until every one of `n` buckets is Ready; returns elapsed ms since `since`. Large N
   * is polled less often: each poll lists all N, which would load the API server it measures.
   */
  async waitAllReady(ns: string, n: number, since: number, timeoutMs: number, intervalMs = n >= 2000 ? 2000 : 250): Promise<number> {
    await eventually(async () => (await this.count(ns)).ready === n, {
      description: `${n} buckets Ready in ${ns}`,
      timeoutMs,
      intervalMs,
    });
    return Date.now() - since;
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

  /** Deletes every bucket in `ns`; resolves with the ms until none is left in Kubernetes. */
  async deleteAll(ns: string, timeoutMs: number): Promise<number> {
    const t0 = Date.now();
    await this.cp.kubectl(['delete', 'sbucket', '--all', '-n', ns, '--wait=false']);
    await eventually(async () => (await this.count(ns)).total === 0, {
      description: `buckets in ${ns} to be gone`,
      timeoutMs,
      intervalMs: 250,
    });
    return Date.now() - t0;
  }

  /** Buckets the provider still holds for `ns` (one provider call, made by the harness). */
  async leftAtProvider(ns: string): Promise<number> {
    return (await this.provider.buckets(ns)).length;
  }

  /** Counters at this moment. */
  async read(): Promise<Reading> {
    const samples: Sample[] = this.operator ? await scrape(this.operator.metricsUrl) : [];
    const apiByVerb: Record<string, number> = {};
    for (const v of VERBS) apiByVerb[v] = sum(samples, 'rest_client_requests_total', { verb: v });
    return {
      at: Date.now(),
      apiByVerb,
      apiWrites: (apiByVerb['POST'] ?? 0) + (apiByVerb['PUT'] ?? 0) + (apiByVerb['PATCH'] ?? 0) + (apiByVerb['DELETE'] ?? 0),
      providerCalls: (await this.provider.stats()).total,
      reconciles: sum(samples, 'controller_runtime_reconcile_total', { controller: 'storagebucket' }),
    };
  }

  async stop(): Promise<void> {
    await this.stopOperator();
    this.admin.close();
    await this.provider.stop();
    await this.cp.stop();
    rmSync(this.work, { recursive: true, force: true });
  }
}

/** Runs `task(0..n-1)` with at most `concurrency` in flight, as `kubectl apply` of many files would. */
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
  return {
    at: b.at - a.at,
    apiByVerb,
    apiWrites: b.apiWrites - a.apiWrites,
    providerCalls: b.providerCalls - a.providerCalls,
    reconciles: b.reconciles - a.reconciles,
  };
}
