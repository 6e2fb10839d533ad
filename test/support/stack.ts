/**
 * The operator stack an end-to-end test file runs against, and the tenants its tests run in.
 *
 * A stack is dist/ applied to a control plane, one mock provider process, and the operator
 * process (the image build, started as its Deployment starts it, under its ServiceAccount
 * token). `useStack()` starts one per test file in a `before` hook and stops it in `after`;
 * the demo (`npm start`) calls `startStack()` itself.
 *
 * How tests stay independent of each other's order:
 * - The stack holds processes, never test state. Each `it` calls `stack.tenant()` first and
 *   works only in the tenant it gets: a fresh namespace (generateName, so it never repeats)
 *   with its own credential Secret and BucketProviderConfig `provider`. Bucket names may
 *   repeat between tests; namespaces do not.
 * - Provider buckets are read by the tenant's namespace tag (`provider.buckets(t.ns)`), so
 *   another test's buckets at the shared provider are never seen.
 * - Request counters and faults belong to a provider process, not to a namespace. A test that
 *   counts provider requests or sets faults asks for a provider of its own
 *   (`tenant({ ownProvider: {} })`): only its namespace's config points there, so nothing
 *   another test did, or left running, shows up in its counts. Own providers are stopped after
 *   each test, and the shared provider's faults are reset, even when the test failed.
 * - A test that restarts the operator leaves a running one behind; the next test needs no more.
 * So any one test passes alone (`mocha --grep`) as it does in the whole file; see
 * test/integration/bucket-*.test.ts.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FaultSettings } from '../../provider';
import type { ControlPlane } from './control-plane';
import { applyDist } from './dist';
import { eventually } from './eventually';
import { apply, freshNamespace, providerManifests } from './kube';
import { startOperatorProcess, type OperatorProcess, type OperatorProcessOptions } from './operator-process';
import { startProviderProcess, type ProviderProcess, type ProviderProcessOptions } from './provider-process';

/** The ServiceAccount the operator runs as, as dist/ creates it. */
const OPERATOR_SA = { namespace: 'bucketoperator-system', name: 'bucketoperator-controller-manager' } as const;

/** A provider process and the faults it starts with. */
export interface ProviderSetup extends ProviderProcessOptions {
  /** Faults in force from the start. @default none */
  readonly faults?: FaultSettings;
}

/** Options of {@link startStack} and {@link useStack}. */
export interface StackOptions {
  /** Names the temporary directory (operator log) and prefixes tenant namespaces. */
  readonly name: string;
  /** The shared provider process. @default activationDelayMs 500, no faults */
  readonly provider?: ProviderSetup;
  /**
   * The operator process, besides its kubeconfig and log file; `false` starts none (for a
   * file that runs the operator in-process).
   * @default the Deployment's flags with startOperatorProcess's test defaults
   */
  readonly operator?: Omit<OperatorProcessOptions, 'kubeconfig' | 'logFile'> | false;
  /** Lifetime of the operator's ServiceAccount token. @default the TokenRequest default (1 h) */
  readonly tokenExpirationSeconds?: number;
  /**
   * Whether stop() waits (a bounded time) for the tenants' buckets to be deprovisioned. Off for
   * a file that leaves buckets paused or blocked on purpose: they would only use up the bound.
   * @default true
   */
  readonly waitForCleanup?: boolean;
}

/** Options of {@link Stack.tenant}. */
export interface TenantOptions {
  /** A provider process for this tenant alone, for a test that counts requests or sets faults. */
  readonly ownProvider?: ProviderSetup;
  /** The namespace's prefix. @default the stack's name */
  readonly prefix?: string;
}

/** Where one test runs: a namespace of its own and the provider its config `provider` points at. */
export interface Tenant {
  readonly ns: string;
  /** The shared provider, or the tenant's own with `ownProvider`. */
  readonly provider: ProviderProcess;
}

/** A running stack; see the module comment for what it guarantees tests. */
export interface Stack {
  readonly cp: ControlPlane;
  /** The shared provider process. */
  readonly provider: ProviderProcess;
  /** The operator process running now (a new one after {@link Stack.restartOperator}). */
  readonly operator: OperatorProcess;
  /** Kubeconfig of the operator's ServiceAccount. */
  readonly kubeconfig: string;
  /** Temporary directory of this stack; `operator.log` is in it. */
  readonly dir: string;
  /** Creates a tenant: a fresh namespace with a credential Secret and BucketProviderConfig `provider`. */
  tenant(opts?: TenantOptions): Promise<Tenant>;
  /** Stops the operator with `signal` (SIGKILL: a crash) and starts it again with the same options. */
  restartOperator(signal?: NodeJS.Signals): Promise<OperatorProcess>;
  /** The operator's /metrics text. */
  metrics(): Promise<string>;
  /**
   * Resets the shared provider's faults, deletes the namespaces of tenants with their own
   * provider (deprovisioned while it still runs) and stops those providers; run after each test.
   */
  endTest(): Promise<void>;
  /**
   * Deletes the remaining tenants' namespaces and gives the operator a bounded time to
   * deprovision their buckets (so later files' operators do not inherit them), then stops
   * every process. Keeps the directory with the operator log when `keepLogs`.
   */
  stop(opts?: { keepLogs?: boolean }): Promise<void>;
}

const CLEANUP_MS = 20_000;

/** Starts a stack on `cp`: applies dist/, starts the provider and (unless disabled) the operator. */
export async function startStack(cp: ControlPlane, opts: StackOptions): Promise<Stack> {
  await applyDist(cp);
  const dir = mkdtempSync(join(tmpdir(), `bucketoperator-${opts.name}-`));
  const startProvider = async (setup: ProviderSetup = {}): Promise<ProviderProcess> => {
    const p = await startProviderProcess({ activationDelayMs: 500, ...setup });
    if (setup.faults) await p.setFaults(setup.faults);
    return p;
  };
  const [provider, kubeconfig] = await Promise.all([
    startProvider(opts.provider),
    cp.serviceAccountKubeconfig(
      OPERATOR_SA.namespace,
      OPERATOR_SA.name,
      opts.tokenExpirationSeconds === undefined ? {} : { expirationSeconds: opts.tokenExpirationSeconds },
    ),
  ]);
  const operatorOptions = opts.operator === false ? undefined : { ...opts.operator, kubeconfig, logFile: join(dir, 'operator.log') };
  let operator = operatorOptions ? await startOperatorProcess(operatorOptions) : undefined;
  const namespaces: string[] = [];
  let ownTenants: Tenant[] = [];

  const running = (): OperatorProcess => {
    if (!operator) throw new Error(`stack ${opts.name} runs no operator process`);
    return operator;
  };

  return {
    cp,
    provider,
    get operator() {
      return running();
    },
    kubeconfig,
    dir,
    async tenant(t = {}) {
      const [ns, p] = await Promise.all([
        freshNamespace(cp, t.prefix ?? opts.name),
        t.ownProvider ? startProvider(t.ownProvider) : Promise.resolve(provider),
      ]);
      if (p === provider) namespaces.push(ns);
      else ownTenants.push({ ns, provider: p });
      await apply(cp, { apiVersion: 'v1', kind: 'List', items: providerManifests(ns, p.url, p.apiKey) });
      return { ns, provider: p };
    },
    async restartOperator(signal = 'SIGTERM') {
      await operator?.kill(signal);
      operator = undefined;
      if (!operatorOptions) throw new Error(`stack ${opts.name} runs no operator process`);
      operator = await startOperatorProcess(operatorOptions);
      return operator;
    },
    async metrics() {
      return (await fetch(running().metricsUrl)).text();
    },
    async endTest() {
      const own = ownTenants;
      ownTenants = [];
      await Promise.all([...own.map((t) => t.provider.setFaults({})), provider.setFaults(opts.provider?.faults ?? {})]);
      // Deprovisioned while their provider still runs; then the provider goes.
      await deleteTenants(
        cp,
        own.map((t) => t.ns),
        operator !== undefined,
        true,
      );
      await Promise.all(own.map((t) => t.provider.stop()));
    },
    async stop({ keepLogs = false } = {}) {
      await deleteTenants(cp, [...namespaces, ...ownTenants.map((t) => t.ns)], operator !== undefined, opts.waitForCleanup ?? true);
      await operator?.kill('SIGTERM');
      await Promise.all([...ownTenants.map((t) => t.provider.stop()), provider.stop()]);
      if (keepLogs) console.log(`stack ${opts.name}: operator log kept in ${dir}`);
      else rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * Deletes `namespaces` while the stack's operator process runs (without one, nothing would
 * release their buckets' finalizers, so they are left as they are) and, when `wait`, waits a
 * bounded time for their StorageBuckets to be deprovisioned, so no later operator inherits
 * buckets whose provider is gone. Best effort: a bucket left paused or blocked stays.
 */
async function deleteTenants(cp: ControlPlane, namespaces: string[], operatorRuns: boolean, wait: boolean): Promise<void> {
  if (namespaces.length === 0 || !operatorRuns) return;
  await cp.kubectl(['delete', 'namespace', ...namespaces, '--wait=false', '--ignore-not-found']);
  if (!wait) return;
  const left = async (): Promise<string[]> => {
    const res = await cp.kubectl(['get', 'sbucket', '-A', '-o', 'jsonpath={range .items[*]}{.metadata.namespace}{"\\n"}{end}']);
    return res.stdout.split('\n').filter((ns) => namespaces.includes(ns));
  };
  await eventually(async () => (await left()).length === 0, {
    description: `the StorageBuckets in ${namespaces.join(', ')} to be deprovisioned`,
    timeoutMs: CLEANUP_MS,
    intervalMs: 250,
  }).catch((err: unknown) => console.log(`cleanup: ${err instanceof Error ? err.message : String(err)}`));
}

/**
 * Registers mocha hooks in the enclosing `describe`: starts a stack on `controlPlane()` before
 * its tests, runs {@link Stack.endTest} after each, and stops the stack after all of them,
 * keeping the operator log when a test failed. Returns the stack, usable from the first test.
 */
export function useStack(controlPlane: () => Promise<ControlPlane>, opts: StackOptions): Stack {
  let stack: Stack | undefined;
  let failed = false;
  const current = (): Stack => {
    if (!stack) throw new Error(`stack ${opts.name} is used before its before() hook ran`);
    return stack;
  };
  before(async function () {
    this.timeout(180_000);
    stack = await startStack(await controlPlane(), opts);
  });
  afterEach(async function () {
    if (this.currentTest?.state === 'failed') failed = true;
    await stack?.endTest();
  });
  after(async function () {
    this.timeout(60_000);
    await stack?.stop({ keepLogs: failed });
  });
  return {
    get cp() {
      return current().cp;
    },
    get provider() {
      return current().provider;
    },
    get operator() {
      return current().operator;
    },
    get kubeconfig() {
      return current().kubeconfig;
    },
    get dir() {
      return current().dir;
    },
    tenant: (t) => current().tenant(t),
    restartOperator: (signal) => current().restartOperator(signal),
    metrics: () => current().metrics(),
    endTest: () => current().endTest(),
    stop: (o) => current().stop(o),
  };
}
