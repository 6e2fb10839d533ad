import { CoordinationV1Api, CoreV1Api } from '@kubernetes/client-node';
import { expect } from 'chai';
import { Registry } from 'prom-client';
import { newControllerManagedBy } from '../../operator/runtime/builder';
import { KubeClient } from '../../operator/runtime/client';
import { InformerFactory } from '../../operator/runtime/informer-factory';
import { createLogger } from '../../operator/runtime/logging';
import { LeaderElectionLostError, Manager } from '../../operator/runtime/manager';
import { done } from '../../operator/runtime/reconcile';
import type { ResourceKind } from '../../operator/runtime/types';
import { type ControlPlane } from '../support/control-plane';
import { freshNamespace, sharedControlPlane } from './setup';
import { CONTROLLER_RUNTIME_METRIC_NAMES } from '../support/metric-names';
import { eventually } from '../support/eventually';

const ConfigMaps: ResourceKind = { group: '', version: 'v1', kind: 'ConfigMap', plural: 'configmaps', namespaced: true };
const Missing: ResourceKind = { group: 'example.com', version: 'v1', kind: 'Missing', plural: 'missings', namespaced: true };

interface Timing {
  leaseDurationMs: number;
  renewDeadlineMs: number;
  retryPeriodMs: number;
}
const FAST: Timing = { leaseDurationMs: 4_000, renewDeadlineMs: 3_000, retryPeriodMs: 500 };

interface Replica {
  readonly mgr: Manager;
  /** ConfigMap names this replica reconciled. */
  readonly seen: string[];
  readonly abort: AbortController;
  /** Settles with start()'s error, or undefined when it returned normally. */
  readonly result: Promise<unknown>;
  readonly client: KubeClient;
  /** True when this replica's informer cache holds ConfigMap `name` of `ns`. */
  cached(name: string): boolean;
  /** Lease reads (GETs: the toy controller makes no others) this replica has finished. */
  leaseReads(): number;
  /**
   * Resolves when the manager stops its runnables: it has stopped taking work (after losing the
   * lease its controllers are stopped by then) and is shutting down, its informers still running.
   */
  readonly stopping: Promise<void>;
}

function replica(
  cp: ControlPlane,
  ns: string,
  lease: string,
  opts: {
    timing?: Timing;
    releaseOnCancel?: boolean;
    kind?: ResourceKind;
    leaderElection?: boolean;
    /** Holds the manager's shutdown (and so its informers) until it settles. @default none */
    holdShutdown?: Promise<void>;
  } = {},
): Replica {
  const logger = createLogger({ level: 'silent' });
  const registry = new Registry();
  let gets = 0;
  const client = new KubeClient({
    restConfig: cp.restConfig(),
    registry,
    onRequest: (verb) => {
      if (verb === 'GET') gets++;
    },
  });
  const informers = new InformerFactory({ lw: client, logger });
  const mgr = new Manager({
    client,
    logger,
    informers,
    namespace: ns,
    leaderElection: {
      enabled: opts.leaderElection ?? true,
      namespace: ns,
      name: lease,
      releaseOnCancel: opts.releaseOnCancel ?? true,
      ...(opts.timing ?? FAST),
    },
    metricsBindAddress: '127.0.0.1:0',
    healthProbeBindAddress: '127.0.0.1:0',
    gracefulShutdownTimeoutMs: 5_000,
    registry,
  });
  const seen: string[] = [];
  let stopped!: () => void;
  const stopping = new Promise<void>((resolve) => (stopped = resolve));
  // The manager awaits its runnables before it stops the informers.
  mgr.addRunnable({
    name: 'shutdown-hold',
    async start(signal) {
      await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
      stopped();
      await opts.holdShutdown;
    },
  });
  newControllerManagedBy(mgr, 'toy')
    .for(opts.kind ?? ConfigMaps)
    .complete({
      async reconcile(req) {
        seen.push(req.name);
        return done();
      },
    });
  const abort = new AbortController();
  const result = mgr.start(abort.signal).then(
    () => undefined,
    (err: unknown) => err,
  );
  const cached = (name: string) =>
    informers.informers().some((i) => i.kind.kind === 'ConfigMap' && i.cache.get({ namespace: ns, name }) !== undefined);
  return { mgr, seen, abort, result, client, cached, leaseReads: () => gets, stopping };
}

async function stopAll(replicas: Replica[]): Promise<void> {
  for (const r of replicas) r.abort.abort();
  await Promise.all(replicas.map((r) => r.result));
  for (const r of replicas) r.client.close();
}

async function httpGet(url: string): Promise<{ status: number; body: string }> {
  const res = await fetch(url);
  return { status: res.status, body: await res.text() };
}

async function exactlyOneLeader(replicas: Replica[], timeoutMs: number): Promise<Replica> {
  return eventually(
    async () => {
      const leaders = replicas.filter((r) => r.mgr.isLeader());
      return leaders.length === 1 ? leaders[0] : undefined;
    },
    { description: 'exactly one leader', timeoutMs, intervalMs: 50 },
  );
}

describe('runtime: leader election and manager (real control plane)', function () {
  this.timeout(120_000);
  let cp: ControlPlane;
  let ns: string;
  const running: Replica[] = [];

  before(async () => {
    cp = await sharedControlPlane();
  });
  beforeEach(async () => {
    ns = await freshNamespace(cp, 'rt-leader');
  });
  afterEach(async () => {
    await stopAll(running.splice(0));
  });

  async function createConfigMap(name: string): Promise<void> {
    await cp
      .kubeConfig()
      .makeApiClient(CoreV1Api)
      .createNamespacedConfigMap({ namespace: ns, body: { metadata: { name } } });
  }

  async function holderOf(lease: string): Promise<string> {
    const l = await cp.kubeConfig().makeApiClient(CoordinationV1Api).readNamespacedLease({ name: lease, namespace: ns });
    return l.spec?.holderIdentity ?? '';
  }

  it('elects exactly one leader, and only the leader reconciles', async () => {
    const a = replica(cp, ns, 'toy');
    const b = replica(cp, ns, 'toy');
    running.push(a, b);
    const leader = await exactlyOneLeader([a, b], 20_000);
    const follower = leader === a ? b : a;
    expect(await holderOf('toy')).to.equal(leader.mgr.identity);

    await createConfigMap('one');
    await eventually(() => leader.seen.includes('one'), {
      description: 'the leader to reconcile ConfigMap one',
      timeoutMs: 30_000,
    });
    // Barrier: the follower's cache holds `one` and a ConfigMap created after it, which the
    // leader has reconciled too. Handlers enqueue as the event is applied, so a follower
    // running its controller would have reconciled `one` long before `two` arrived.
    await createConfigMap('two');
    await eventually(() => follower.cached('one') && follower.cached('two') && leader.seen.includes('two'), {
      description: 'the follower to cache one and two, and the leader to reconcile two',
      timeoutMs: 30_000,
      intervalMs: 20,
    });
    expect(follower.seen).to.deep.equal([]);
    expect([a, b].filter((r) => r.mgr.isLeader())).to.have.length(1);
  });

  it('a standby takes over after the leader crashes, within leaseDuration plus retry periods', async () => {
    const a = replica(cp, ns, 'crash', { releaseOnCancel: false });
    const b = replica(cp, ns, 'crash', { releaseOnCancel: false });
    running.push(a, b);
    const leader = await exactlyOneLeader([a, b], 20_000);
    const standby = leader === a ? b : a;

    // Abort without releasing the lease: to the standby this is a crash.
    leader.abort.abort();
    expect(await leader.result).to.equal(undefined);
    expect(await holderOf('crash'), 'lease left behind').to.equal(leader.mgr.identity);

    // Worst case: the last renewal was seen up to 1.2 retry periods late, and expiry is
    // noticed up to 1.2 retry periods after it happens; one second of slack for the API.
    const bound = FAST.leaseDurationMs + 2.4 * FAST.retryPeriodMs + 1_000;
    await eventually(() => standby.mgr.isLeader(), {
      description: 'the standby to take over',
      timeoutMs: bound,
      intervalMs: 50,
    });
    expect(await holderOf('crash')).to.equal(standby.mgr.identity);
    await createConfigMap('after-crash');
    await eventually(() => standby.seen.includes('after-crash'), {
      description: 'the new leader to reconcile',
      timeoutMs: 30_000,
    });
  });

  it('a graceful stop releases the lease so the standby takes over at once', async () => {
    const slow: Timing = { leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 500 };
    const a = replica(cp, ns, 'graceful', { timing: slow });
    const b = replica(cp, ns, 'graceful', { timing: slow });
    running.push(a, b);
    const leader = await exactlyOneLeader([a, b], 20_000);
    const standby = leader === a ? b : a;
    // Barrier: the standby has read the lease since the leader took it (two reads finished,
    // so at least one was sent after), so without the release it would wait the full 15 s.
    const readsBefore = standby.leaseReads();
    await eventually(() => standby.leaseReads() >= readsBefore + 2, {
      description: 'the standby to read the held lease',
      timeoutMs: 10 * slow.retryPeriodMs,
      intervalMs: 20,
    });

    leader.abort.abort();
    expect(await leader.result).to.equal(undefined);
    // Released: no longer the old leader's. The standby may already hold it (it retries every
    // 500 ms); that it takes over well before the 15 s lease could expire is checked next.
    expect(await holderOf('graceful'), 'released on stop').to.be.oneOf(['', standby.mgr.identity]);
    await eventually(() => standby.mgr.isLeader(), {
      description: 'the standby to take over a released lease',
      timeoutMs: 3 * slow.retryPeriodMs + 1_000,
      intervalMs: 50,
    });
  });

  it('a leader whose lease is taken stops reconciling at once, while its caches still run, and start() rejects', async () => {
    // Holds the manager's shutdown after it has stopped its controllers, so its informers keep
    // delivering: a reconcile after the loss would then be seen, not prevented by the stop.
    let release!: () => void;
    const hold = new Promise<void>((resolve) => (release = resolve));
    const a = replica(cp, ns, 'stolen', { holdShutdown: hold });
    running.push(a);
    try {
      await exactlyOneLeader([a], 20_000);
      await createConfigMap('before-loss');
      await eventually(() => a.seen.includes('before-loss'), { description: 'the leader to reconcile before-loss', timeoutMs: 30_000 });
      const res = await cp.kubectl([
        'patch',
        'lease',
        'stolen',
        '-n',
        ns,
        '--type=merge',
        '-p',
        JSON.stringify({ spec: { holderIdentity: 'intruder', leaseDurationSeconds: 60 } }),
      ]);
      expect(res.code, res.stderr).to.equal(0);
      await a.stopping;
      expect(a.mgr.isLeader()).to.equal(false);
      const countBefore = a.seen.length;
      // Barrier: `a`'s own cache holds both ConfigMaps (its informers still run, so a controller
      // still running would have been handed the first well before the second arrived), and a
      // witness without leader election has reconciled both.
      const witness = replica(cp, ns, 'witness', { leaderElection: false });
      running.push(witness);
      await createConfigMap('after-loss-1');
      await createConfigMap('after-loss-2');
      await eventually(
        () => a.cached('after-loss-1') && a.cached('after-loss-2') && witness.seen.includes('after-loss-1') && witness.seen.includes('after-loss-2'),
        { description: 'a to cache, and the witness to reconcile, after-loss-1 and -2', timeoutMs: 30_000, intervalMs: 20 },
      );
      expect(a.seen.slice(countBefore), 'reconciles after losing the lease').to.deep.equal([]);
    } finally {
      release();
    }
    expect(await a.result).to.be.instanceOf(LeaderElectionLostError);
  });

  it('serves the controller-runtime metric names on /metrics', async () => {
    const a = replica(cp, ns, 'metrics');
    running.push(a);
    await exactlyOneLeader([a], 20_000);
    await createConfigMap('m');
    await eventually(() => a.seen.includes('m'), { description: 'a reconcile', timeoutMs: 30_000 });
    const { metrics } = await a.mgr.listening();
    const res = await httpGet(`http://127.0.0.1:${metrics?.port}/metrics`);
    expect(res.status).to.equal(200);
    for (const name of [...CONTROLLER_RUNTIME_METRIC_NAMES, 'rest_client_requests_total']) {
      expect(res.body, name).to.match(new RegExp(`^# TYPE ${name} `, 'm'));
    }
    expect(res.body).to.include('leader_election_master_status{name="metrics"} 1');
    expect(res.body).to.match(/controller_runtime_reconcile_total\{controller="toy",result="success"\} [1-9]/);
  });

  it('/readyz fails while an informer cannot sync and passes once synced; /healthz is live', async () => {
    const stuck = replica(cp, ns, 'ready-stuck', { kind: Missing, leaderElection: false });
    const fine = replica(cp, ns, 'ready-fine', { leaderElection: false });
    running.push(stuck, fine);
    const stuckAddr = (await stuck.mgr.listening()).health;
    const fineAddr = (await fine.mgr.listening()).health;

    const notReady = await httpGet(`http://127.0.0.1:${stuckAddr?.port}/readyz?verbose`);
    expect(notReady.status).to.equal(500);
    expect(notReady.body).to.match(/\[-\]informers failed: informers not ready: Missing \(not synced\)/);
    expect((await httpGet(`http://127.0.0.1:${stuckAddr?.port}/healthz`)).status, 'alive though not ready').to.equal(200);

    const ready = await eventually(
      async () => {
        const r = await httpGet(`http://127.0.0.1:${fineAddr?.port}/readyz?verbose`);
        return r.status === 200 ? r : undefined;
      },
      { description: '/readyz to pass', timeoutMs: 30_000 },
    );
    expect(ready.body).to.include('[+]informers ok');
    expect((await httpGet(`http://127.0.0.1:${fineAddr?.port}/readyz/informers`)).body).to.equal('ok');
    expect((await httpGet(`http://127.0.0.1:${fineAddr?.port}/healthz?verbose`)).body).to.include('[+]event-loop ok');
    expect((await httpGet(`http://127.0.0.1:${fineAddr?.port}/readyz/nope`)).status).to.equal(404);
  });
});
