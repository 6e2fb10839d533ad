/**
 * `kubectl bucket` end to end, run as a user runs it: the compiled plugin (the package's lib
 * build) on PATH as `kubectl-bucket`, invoked through `kubectl bucket ...` with the admin
 * kubeconfig, against the real control plane and the operator under its ServiceAccount. The
 * tree and the watch are also drawn in a real terminal (tmux), where colour must appear; in a
 * pipe it must not. Exit codes are asserted as scripts would use them.
 */
import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { parse, stringify } from 'yaml';
import { asV2 } from '../support/as-v2';
import { startControlPlane, type ControlPlane } from '../support/control-plane';
import { eventually } from '../support/eventually';
import { REPO } from '../support/image';
import {
  apply,
  bucketManifest,
  credentialsSecretManifest,
  getJson,
  kubectlOk,
  providerManifests,
  waitForGone,
  waitForObject,
  type BucketJson,
} from '../support/kube';
import { buildPlugin } from '../support/plugin';
import { useStack, type Tenant } from '../support/stack';
import { tmux } from '../support/test-tools';
import { sharedControlPlane } from './setup';

const run = promisify(execFile);
const GROUP = 'storage.avalonhosting.example';
const PAUSED = 'storage.avalonhosting.example/paused';
const ADOPT = 'storage.avalonhosting.example/adopt-id';
const ESC = '\x1b[';

interface Result {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

const isReady = (b: BucketJson) =>
  b.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true && b.status?.observedGeneration === b.metadata.generation;

describe('kubectl bucket (the plugin on PATH, through kubectl, against the real control plane)', function () {
  this.timeout(120_000);
  let built: Promise<string> | undefined;
  // Registered before the stack's hook so that a cold build (one tsc run) overlaps its start.
  before(() => {
    built = buildPlugin();
    built.catch(() => undefined); // awaited below; this only keeps an early failure from going unhandled
  });
  const stack = useStack(sharedControlPlane, { name: 'cli', provider: { activationDelayMs: 300 } });
  let pluginDir: string;
  let tmp: string;
  let env: NodeJS.ProcessEnv;

  before(async function () {
    this.timeout(180_000);
    pluginDir = await built!;
    tmp = mkdtempSync(join(tmpdir(), 'bucketoperator-cli-'));
    const kubectlDir = dirname(stack.cp.binaries.kubectl);
    env = {
      PATH: [pluginDir, kubectlDir, dirname(process.execPath), '/usr/bin', '/bin'].join(':'),
      HOME: tmp,
      KUBECONFIG: stack.cp.kubeconfigPath,
      LANG: 'C.UTF-8',
    };
  });
  after(() => {
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  /** `kubectl bucket <args>` in a pipe; the exit code is returned, not thrown. */
  const bucket = async (args: string[], extraEnv: NodeJS.ProcessEnv = {}): Promise<Result> => {
    try {
      const { stdout, stderr } = await run('kubectl', ['bucket', ...args], { env: { ...env, ...extraEnv }, timeout: 60_000 });
      return { code: 0, stdout, stderr };
    } catch (err) {
      const e = err as { code?: number; stdout?: string; stderr?: string };
      if (typeof e.code !== 'number') throw err;
      return { code: e.code, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
    }
  };
  const ready = (t: Tenant, name: string) =>
    waitForObject<BucketJson>(stack.cp, 'sbucket', name, t.ns, isReady, `StorageBucket ${t.ns}/${name} to be Ready`);
  /** No output may ever hold the tenant's API key, plain or base64. */
  const noKey = (t: Tenant, ...texts: string[]) => {
    for (const text of texts) expect(text).to.not.include(t.provider.apiKey).and.not.include(Buffer.from(t.provider.apiKey).toString('base64'));
  };

  it('trace names a missing credential Secret as the root cause; why says it is not terminal and how to fix it; the watch in a terminal follows it to Ready', async () => {
    const t = await stack.tenant();
    const { cp } = stack;
    // A config of its own whose Secret does not exist yet.
    await apply(cp, {
      apiVersion: 'storage.avalonhosting.example/v1',
      kind: 'BucketProviderConfig',
      metadata: { name: 'late', namespace: t.ns },
      spec: { endpoint: t.provider.url, insecure: true, secretRef: { name: 'late-key', key: 'apiKey' } },
    });
    await apply(cp, bucketManifest(t.ns, 'logs', { providerRef: { name: 'late' } }));

    const traced = await eventually(
      async () => {
        const r = await bucket(['trace', 'logs', '-n', t.ns]);
        // The Secret's row is there at once (the plugin reads the objects); the bucket's once the operator reported.
        return r.code === 4 && /^StorageBucket\/logs\s+False\s+False\s+SecretNotFound/m.test(r.stdout) ? r : undefined;
      },
      { description: 'trace to report the missing Secret, and the bucket waiting for it', timeoutMs: 30_000, intervalMs: 500 },
    );
    const lines = traced.stdout.split('\n');
    expect(lines[0]).to.match(/^Root cause: Secret\/late-key \(credentials\): SecretNotFound: Secret \S+\/late-key not found$/);
    expect(traced.stdout).to.match(/│ {2}└─ Secret\/late-key \(credentials\)\s+False\s+-\s+SecretNotFound/);
    expect(traced.stdout).to.match(/^StorageBucket\/logs\s+False\s+False\s+SecretNotFound/m);
    expect(traced.stdout, 'no colour in a pipe').to.not.include(ESC);

    const json = await bucket(['trace', 'logs', '-n', t.ns, '-o', 'json']);
    expect(json.code).to.equal(4);
    const doc = JSON.parse(json.stdout) as { class: string; rootCause: { kind: string; name: string; reason: string }; fix: string[] };
    expect(doc.rootCause).to.include({ kind: 'Secret', name: 'late-key', reason: 'SecretNotFound' });
    expect(doc.class).to.equal('progressing');

    const wide = await bucket(['trace', 'logs', `--namespace=${t.ns}`, '-o', 'wide']);
    expect(wide.stdout).to.include(`Secret ${t.ns}/late-key not found`);

    const why = await bucket(['why', 'logs', '-n', t.ns]);
    expect(why.code).to.equal(4);
    expect(why.stdout.trim().split('\n')).to.have.length(1);
    expect(why.stdout).to.include(`Root cause: Secret ${t.ns}/late-key (credentials)`).and.include('Not terminal');
    expect(why.stdout).to.include(
      `Fix: kubectl create secret generic late-key -n ${t.ns} --from-literal=apiKey=<API key> && kubectl label secret -n ${t.ns} late-key storage.avalonhosting.example/secret-type=provider-credentials`,
    );

    // The watch, in a real terminal: the tree in colour, then the same pane after the fix.
    const socket = `bucketoperator-cli-${process.pid}`;
    const tm = (args: string[]) => run(tmux(), ['-L', socket, ...args], { env: { ...env, TERM: 'xterm-256color' } });
    const script = join(tmp, 'watch.sh');
    // The trap keeps the shell (and so the pane) alive past Ctrl-C, to print the plugin's exit code.
    writeFileSync(script, `trap 'true' INT\nkubectl bucket trace logs -n ${t.ns} --watch\necho "exit=$?"\nsleep 300\n`);
    await tm(['-f', '/dev/null', 'new-session', '-d', '-s', 'w', '-x', '180', '-y', '40', `sh ${script}`]);
    try {
      const pane = async (escapes = false) => (await tm(['capture-pane', '-p', ...(escapes ? ['-e'] : []), '-t', 'w'])).stdout;
      await eventually(async () => (await pane()).includes('Root cause: Secret/late-key'), {
        description: 'the watch to draw the tree',
        timeoutMs: 20_000,
        intervalMs: 250,
      });
      expect(await pane(true), 'colour on a terminal').to.include(`${ESC}31m`);
      expect(await pane()).to.include('Ctrl-C to stop');

      await apply(cp, credentialsSecretManifest(t.ns, 'late-key', t.provider.apiKey));
      const done = await eventually(
        async () => {
          const p = await pane();
          return p.includes('Ready: nothing is wrong') && /ProviderBucket\/bucket-\S+ \(per status\)\s+True/.test(p) ? p : undefined;
        },
        { description: 'the watch to redraw the bucket Ready', timeoutMs: 45_000, intervalMs: 250 },
      );
      expect(done).to.not.include('Root cause');
      await tm(['send-keys', '-t', 'w', 'C-c']);
      await eventually(async () => (await pane()).includes('exit=0'), {
        description: 'the watch to end with exit code 0 on Ctrl-C',
        timeoutMs: 10_000,
        intervalMs: 200,
      });
    } finally {
      await tm(['kill-server']).catch(() => undefined);
    }

    const fixed = await bucket(['why', 'logs', '-n', t.ns]);
    expect([fixed.code, fixed.stdout]).to.satisfy(([code, out]: [number, string]) => code === 0 && out.includes('is Ready: provider bucket'));

    // -A: a line (trace) or a paragraph (why) for every bucket of every namespace, this one Ready among them.
    const all = await bucket(['trace', '-A']);
    expect(all.stdout.split('\n')[0]).to.match(/^NAMESPACE\s+NAME\s+READY\s+SYNCED\s+REASON\s+AGE\s+ROOT CAUSE$/);
    expect(all.stdout).to.match(new RegExp(`^${t.ns}\\s+logs\\s+True\\s+True\\s+Available\\s+\\S+\\s+-$`, 'm'));
    expect([0, 4, 5], 'the worst code of all buckets listed').to.include(all.code);
    const whyAll = await bucket(['why', '--all-namespaces']);
    expect(whyAll.stdout.split('\n')).to.include(fixed.stdout.trim());
    noKey(t, traced.stdout, json.stdout, wide.stdout, why.stdout, fixed.stdout, all.stdout, whyAll.stdout);
  });

  it('pause, resume, reconcile --wait, orphan and adopt make the documented edits; refused ones send nothing; --context and exit codes', async () => {
    const t = await stack.tenant();
    const { cp } = stack;
    await apply(cp, bucketManifest(t.ns, 'first'));
    const first = await ready(t, 'first');
    const id = first.status!.id!;

    // --context picks a context other than the current one, which points nowhere.
    const kc = parse(readFileSync(stack.cp.kubeconfigPath, 'utf8')) as {
      clusters: { name: string; cluster: Record<string, unknown> }[];
      contexts: { name: string; context: Record<string, string> }[];
      'current-context': string;
    };
    const good = kc['current-context'];
    kc.clusters.push({ name: 'nowhere', cluster: { server: 'https://127.0.0.1:1' } });
    kc.contexts.push({ name: 'nowhere', context: { cluster: 'nowhere', user: kc.contexts[0]!.context['user']! } });
    kc['current-context'] = 'nowhere';
    const twoContexts = join(tmp, `two-contexts-${t.ns}.yaml`);
    writeFileSync(twoContexts, stringify(kc));
    const broken = await bucket(['why', 'first', '-n', t.ns], { KUBECONFIG: twoContexts });
    expect(broken.code).to.equal(1);
    expect(broken.stderr).to.include('cannot reach the API server');
    const viaContext = await bucket(['why', 'first', '-n', t.ns, '--context', good], { KUBECONFIG: twoContexts });
    expect([viaContext.code, viaContext.stdout]).to.satisfy(([c, o]: [number, string]) => c === 0 && o.includes(`is Ready: provider bucket ${id}`));

    expect((await bucket(['trace', 'absent', '-n', t.ns])).code, 'not found').to.equal(3);
    expect((await bucket(['trace', 'first', '-n', t.ns, '-o', 'yaml'])).code, 'usage').to.equal(2);

    // pause: the annotation, and why/trace say stalled (5) with resume as the fix.
    const paused = await bucket(['pause', 'first', '-n', t.ns]);
    expect([paused.code, paused.stdout.trim()]).to.deep.equal([0, `storagebucket ${t.ns}/first paused`]);
    expect((await getJson<BucketJson>(cp, 'sbucket', 'first', t.ns))?.metadata.annotations?.[PAUSED]).to.equal('true');
    const pausedWhy = await eventually(
      async () => {
        const r = await bucket(['why', 'first', '-n', t.ns]);
        return r.code === 5 ? r : undefined;
      },
      { description: 'why to report the pause', timeoutMs: 20_000, intervalMs: 300 },
    );
    expect(pausedWhy.stdout).to.include('is paused').and.include(`Fix: kubectl bucket resume first -n ${t.ns}`);
    expect((await bucket(['pause', 'first', '-n', t.ns])).stdout).to.include('already paused');
    const resumed = await bucket(['resume', 'first', '-n', t.ns]);
    expect(resumed.code).to.equal(0);
    expect((await getJson<BucketJson>(cp, 'sbucket', 'first', t.ns))?.metadata.annotations ?? {}).to.not.have.property(PAUSED);

    // reconcile --wait returns once the operator echoed the request.
    const rec = await bucket(['reconcile', 'first', '-n', t.ns, '--wait', '--timeout', '45s']);
    expect(rec.code, rec.stderr).to.equal(0);
    const requested = /reconcile requested at (\S+)/.exec(rec.stdout)?.[1];
    expect((await getJson<BucketJson>(cp, 'sbucket', 'first', t.ns))?.status?.lastHandledReconcileAt).to.equal(requested);

    // orphan, then delete: the provider bucket stays.
    expect((await bucket(['orphan', 'first', '-n', t.ns])).code).to.equal(0);
    expect((await getJson<{ spec: { deletionPolicy: string } }>(cp, 'sbucket', 'first', t.ns))?.spec.deletionPolicy).to.equal('Orphan');
    await kubectlOk(cp, ['delete', 'sbucket', 'first', '-n', t.ns, '--wait=false']);
    await waitForGone(cp, 'sbucket', 'first', t.ns);
    expect((await t.provider.buckets(t.ns)).map((b) => b.id)).to.include(id);

    // adopt it into a second StorageBucket, created paused so that it makes no bucket of its own.
    await apply(cp, bucketManifest(t.ns, 'second', {}, { [PAUSED]: 'true' }));
    const refused = await bucket(['adopt', 'second', '-n', t.ns, '--id', 'has space']);
    expect([refused.code, refused.stderr.trim()]).to.deep.equal([2, 'error: --id must not contain whitespace']);
    expect((await getJson<BucketJson>(cp, 'sbucket', 'second', t.ns))?.metadata.annotations ?? {}).to.not.have.property(ADOPT);
    expect((await bucket(['adopt', 'second', '-n', t.ns, '--id', id])).code).to.equal(0);
    expect((await bucket(['resume', 'second', '-n', t.ns])).code).to.equal(0);
    const second = await ready(t, 'second');
    expect(second.status?.id).to.equal(id);
    expect((await t.provider.buckets(t.ns)).filter((b) => b.tags['kubernetes-name'] === 'second').map((b) => b.id)).to.deep.equal([id]);
    // Adopting over a managed bucket is refused before anything is sent.
    const over = await bucket(['adopt', 'second', '-n', t.ns, '--id', 'bucket-other']);
    expect(over.code).to.equal(2);
    expect(over.stderr).to.include(`already manages provider bucket ${id}`);
  });

  it("report writes one archive: objects redacted (Secrets, env values, last-applied), Events, summary, the operator's own Pods and logs or why not, metrics", async () => {
    const t = await stack.tenant();
    await apply(stack.cp, bucketManifest(t.ns, 'logs'));
    await ready(t, 'logs');
    // Another app in the operator's namespace: nothing of it may go into the bundle.
    const bystander = `bystander-${t.ns}`;
    const bystanderToken = `bystander-token-${t.provider.apiKey.slice(0, 6)}`;
    await apply(stack.cp, {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: bystander, namespace: 'bucketoperator-system', labels: { app: bystander } },
      spec: {
        selector: { matchLabels: { app: bystander } },
        template: {
          metadata: { labels: { app: bystander } },
          spec: {
            containers: [
              {
                name: 'app',
                image: 'registry.invalid/app:1',
                env: [{ name: 'TOKEN', value: bystanderToken }],
                // What the namespace's Pod Security admission (restricted) asks of every Pod.
                securityContext: {
                  allowPrivilegeEscalation: false,
                  capabilities: { drop: ['ALL'] },
                  runAsNonRoot: true,
                  seccompProfile: { type: 'RuntimeDefault' },
                },
              },
            ],
          },
        },
      },
    });
    // Its Pod exists before the report, so leaving it out is the selector's doing.
    await eventually(
      async () =>
        (await stack.cp.kubectl(['get', 'pods', '-n', 'bucketoperator-system', '-l', `app=${bystander}`, '-o', 'name'])).stdout.trim() !== '',
      { description: `a Pod of Deployment ${bystander}`, timeoutMs: 30_000, intervalMs: 300 },
    );
    const file = join(tmp, `report-${t.ns}.tar.gz`);
    let res: Result;
    try {
      res = await bucket(['report', '-n', t.ns, '-f', file, '--metrics-url', stack.operator.metricsUrl]);
    } finally {
      await kubectlOk(stack.cp, ['delete', 'deployment', bystander, '-n', 'bucketoperator-system', '--wait=false']);
    }
    expect(res.code, res.stderr).to.equal(0);
    expect(res.stdout).to.include(`wrote ${file}`);
    const out = join(tmp, `report-${t.ns}`);
    await run('mkdir', ['-p', out]);
    await run('tar', ['-xzf', file, '-C', out]);
    const [root] = (await run('ls', [out])).stdout.trim().split('\n');
    const read = (p: string) => readFileSync(join(out, root!, p), 'utf8');
    const nsDir = `namespaces/${t.ns}`;
    for (const f of ['README.txt', 'summary.txt', 'errors.txt', 'operator/pods.yaml', 'operator/deployments.yaml', 'operator/metrics.txt']) {
      expect(existsSync(join(out, root!, f)), f).to.equal(true);
    }
    expect(read('summary.txt')).to.include(`StorageBucket ${t.ns}/logs is Ready`);
    expect(read(`${nsDir}/storagebuckets.yaml`)).to.include('name: logs');
    expect(read(`${nsDir}/bucketproviderconfigs.yaml`)).to.include('name: provider');
    expect(read(`${nsDir}/events.yaml`)).to.include('CreatedBucket');
    const secrets = read(`${nsDir}/secrets.yaml`);
    expect(secrets).to.include('name: provider-key').and.include('name: logs-access').and.include('apiKey: <redacted>');
    const deployments = read('operator/deployments.yaml');
    expect(deployments).to.include('bucketoperator-controller-manager').and.not.include(bystander);
    // The shipped Deployment's env (NODE_OPTIONS) keeps its name, not its value; kubectl apply's copy of it goes too.
    expect(deployments).to.include('name: NODE_OPTIONS').and.include('value: <redacted>').and.not.include('--max-old-space-size');
    expect(deployments).to.include('kubectl.kubernetes.io/last-applied-configuration: <redacted>');
    expect(read(`${nsDir}/storagebuckets.yaml`)).to.include('kubectl.kubernetes.io/last-applied-configuration: <redacted>');
    expect(read('operator/pods.yaml')).to.not.include(bystander);
    expect(read('operator/metrics.txt')).to.include('bucketoperator_buckets_exist');
    // The control plane runs no kubelet: an operator Pod is Pending, and its log is reported unreadable rather than left out silently.
    const pods = (parse(read('operator/pods.yaml')) as { items: { metadata: { name: string } }[] }).items.map((p) => p.metadata.name);
    for (const pod of pods) {
      expect(
        existsSync(join(out, root!, 'operator', 'logs', `${pod}_manager.log`)) ||
          read('errors.txt').includes(`logs of Pod bucketoperator-system/${pod} container manager: `),
        pod,
      ).to.equal(true);
    }
    const all = (await run('sh', ['-c', `cat $(find ${join(out, root!)} -type f)`], { maxBuffer: 64 * 1024 * 1024 })).stdout;
    noKey(t, all, res.stdout);
    expect(all).to.not.include(bystanderToken);

    // -A covers every namespace that holds a StorageBucket or config, this one included.
    const everywhere = join(tmp, `report-all-${t.ns}.tar.gz`);
    const resAll = await bucket(['report', '-A', '-f', everywhere, '--metrics-url', stack.operator.metricsUrl]);
    expect(resAll.code, resAll.stderr).to.equal(0);
    const listing = (await run('tar', ['-tzf', everywhere])).stdout;
    expect(listing).to.include(`/namespaces/${t.ns}/storagebuckets.yaml`);
    expect(resAll.stdout).to.match(/wrote .*: \d+ files, \d+ StorageBuckets/);
  });

  describe('on another cluster', () => {
    let bare: ControlPlane | undefined;
    after(async () => {
      await bare?.stop();
    });

    it('without the CRD says so (exit 6, naming the context and server); with v2 stored and its webhook down, reads and edits use v2 and convert in process', async function () {
      this.timeout(300_000);
      bare = await startControlPlane();
      const cluster = bare;
      // The user's kubeconfig: the shared cluster (current) and the bare one as a second context.
      type Named = { name: string } & Record<string, unknown>;
      const mine = parse(readFileSync(stack.cp.kubeconfigPath, 'utf8')) as Record<string, Named[]>;
      const theirs = parse(readFileSync(cluster.kubeconfigPath, 'utf8')) as Record<string, Named[]>;
      const renamed = (list: string, name: string) => ({ ...theirs[list]![0]!, name });
      const context = { name: 'bare', context: { cluster: 'bare', user: 'bare-admin' } };
      const kubeconfig = join(tmp, 'with-bare-context.yaml');
      writeFileSync(
        kubeconfig,
        stringify({
          ...mine,
          clusters: [...mine['clusters']!, renamed('clusters', 'bare')],
          users: [...mine['users']!, renamed('users', 'bare-admin')],
          contexts: [...mine['contexts']!, context],
        }),
      );
      const inBare = (args: string[]) => bucket([...args, '--context', 'bare'], { KUBECONFIG: kubeconfig });
      // The same cluster as the kubeconfig's current context, with no --context flag.
      const bareCurrent = join(tmp, 'bare-current.yaml');
      writeFileSync(bareCurrent, stringify({ ...(parse(readFileSync(kubeconfig, 'utf8')) as object), 'current-context': 'bare' }));

      // No CRD there: neither "not found" (3) nor a connection error (1).
      for (const [args, run] of [
        [['why', 'logs', '-n', 'default'], inBare],
        [['trace', '-A'], inBare],
        [['pause', 'logs', '-n', 'default'], inBare],
        [['report', '-n', 'default', '-f', join(tmp, 'bare.tgz')], inBare],
        [['why', 'logs'], (a: string[]) => bucket(a, { KUBECONFIG: bareCurrent })],
      ] as const) {
        const r = await run([...args]);
        expect([r.code, r.stderr.trim()], args.join(' ')).to.deep.equal([
          6,
          `error: the StorageBucket API (${GROUP}) is not served in context "bare" (server ${cluster.server}): no CustomResourceDefinition of the group is installed there; pick the cluster with --context, or install BucketOperator there`,
        ]);
      }

      // v1 stored, v2 served beside it through a webhook that is not there (no operator on this cluster).
      const applyBare = async (manifest: unknown) => {
        const r = await cluster.kubectl(['apply', '-f', '-'], { input: typeof manifest === 'string' ? manifest : JSON.stringify(manifest) });
        if (r.code !== 0) throw new Error(`kubectl apply on the bare cluster: ${r.stderr}`);
      };
      await applyBare(readFileSync(join(REPO, 'dist', 'v2', '00-crds.yaml'), 'utf8'));
      await eventually(async () => (await cluster.kubectl(['get', `storagebuckets.v2.${GROUP}`, '-A'])).code === 0, {
        description: 'the v2 StorageBucket API to be served on the bare cluster',
        timeoutMs: 30_000,
        intervalMs: 300,
      });
      const ns = 'team-x';
      await applyBare({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
      await applyBare({
        apiVersion: 'v1',
        kind: 'List',
        items: [...providerManifests(ns, 'http://127.0.0.1:1', 'bare-key'), bucketManifest(ns, 'old')],
      });
      // Then v2 becomes the storage version, and a bucket is written in v2.
      await applyBare(readFileSync(join(REPO, 'dist', 'v2-stored', '00-crds.yaml'), 'utf8'));
      await eventually(
        async () => {
          const r = await cluster.kubectl(['apply', '-f', '-'], { input: JSON.stringify(asV2(bucketManifest(ns, 'new'))) });
          return r.code === 0;
        },
        { description: 'a v2 StorageBucket to be created once v2 is stored', timeoutMs: 30_000, intervalMs: 300 },
      );
      const down = await cluster.kubectl(['get', `storagebuckets.v1.${GROUP}`, 'new', '-n', ns]);
      expect([down.code, down.stderr], 'reading it as v1 needs the webhook, which is down').to.satisfy(
        ([c, e]: [number, string]) => c !== 0 && e.includes('conversion webhook'),
      );

      // Stored as v2: read as v2 (the preferred version), converted in process; its config (stored as v1) read as v1.
      const newWhy = await inBare(['why', 'new', '-n', ns]);
      expect(newWhy.code, newWhy.stderr).to.equal(4);
      expect(newWhy.stdout).to.match(new RegExp(`^StorageBucket ${ns}/new is not Ready \\(no status yet\\)`));
      const newTrace = await inBare(['trace', 'new', '-n', ns, '-o', 'json']);
      const doc = JSON.parse(newTrace.stdout) as { tree: { children: { kind: string; name: string; reason: string }[] } };
      expect(doc.tree.children.find((c) => c.kind === 'BucketProviderConfig')).to.include({ name: 'provider' });
      expect(doc.tree.children.find((c) => c.kind === 'BucketProviderConfig')?.reason).to.not.equal('ProviderConfigNotFound');
      // Stored as v1: v2 needs the webhook, so it is read as v1.
      const oldWhy = await inBare(['why', 'old', '-n', ns]);
      expect([oldWhy.code, oldWhy.stderr]).to.deep.equal([4, '']);
      // An edit goes to the version the bucket was read in.
      const paused = await inBare(['pause', 'new', '-n', ns]);
      expect([paused.code, paused.stdout.trim()]).to.deep.equal([0, `storagebucket ${ns}/new paused`]);
      const got = await cluster.kubectl(['get', `storagebuckets.v2.${GROUP}`, 'new', '-n', ns, '-o', 'json']);
      expect((JSON.parse(got.stdout) as BucketJson).metadata.annotations?.[PAUSED]).to.equal('true');

      // A list holds both, so no version can be served without the webhook: the error says so and names it.
      const list = await inBare(['trace', '-A']);
      expect(list.code).to.equal(1);
      expect(list.stderr).to.match(
        new RegExp(
          `^error: cannot read storagebuckets in all namespaces in any served version \\(v2, v1\\): the conversion webhook of storagebuckets\\.${GROUP.replace(/\./g, '\\.')} \\(the operator's\\) failed`,
        ),
      );
      expect(list.stderr).to.include('bucketoperator-webhook');
    });
  });
});
