/**
 * How long `kubectl bucket` takes from spawn to exit: the plugin as the package ships it (`npm
 * run build:lib`: the executable lib/cli/main.js and its bundles, scripts/bundle-plugin.ts) on
 * the pinned Node (scripts/pinned-node.ts), N runs of each command, one at a time, after one
 * untimed run each. The commands that talk to the API server run against
 *
 * - `refused`: a loopback port nothing listens on (the connection is refused at once);
 * - `reset`: a loopback listener that accepts and resets each connection, and notes when the
 *   first one arrived: the plugin's time to its first request, with no change to the plugin;
 * - `control plane` (`--control-plane`): the real one (test/support/control-plane) with the
 *   CRDs applied and one StorageBucket, its config and Secret, reached through a relay that
 *   notes the first connection the same way. No operator runs, so the bucket has no status.
 *
 * The untimed run also fills Node's compile cache, which the plugin turns on (cli/bin.ts), as
 * any run after a user's first finds it. Prints machine, date, Node and the command line with
 * the median and p90 of each, and the median CPU time (less inflated than wall time on a busy
 * machine); nothing passes or fails on a timing (bench/README.md).
 *
 *   npx tsx bench/cli-startup.ts [--n 20] [--no-build] [--control-plane] [--main FILE]...
 *
 * `--main` times another build of the plugin's main.js instead (no build then), e.g. a copy of
 * an earlier lib/ with a node_modules link beside it. Given more than once, the builds take
 * turns run by run (A, B, A, B, ...), so a machine whose load changes during the bench weighs
 * on each alike: the way to compare two builds. A first row, `node -e 0`, is the floor: a bare
 * Node start on the same machine at the same time.
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net, { type AddressInfo } from 'node:net';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { pinnedNode } from '../scripts/pinned-node';
import { CA_CERT } from '../test/unit/runtime/tls-fixtures';

const REPO = resolve(__dirname, '..');
const NS = 'bench';
const BUCKET = 'startup';

/** One timed run: wall time from spawn to exit, CPU time, and when the first connection reached the server (if one did). */
interface Run {
  readonly ms: number;
  /** User and system CPU of the plugin's process, which a loaded machine does not inflate as it does wall time. */
  readonly cpuMs: number;
  readonly code: number | null;
  readonly firstConnectionMs?: number;
}

/** Where a connecting command is pointed, and when it first connected there. */
interface Target {
  readonly name: string;
  readonly kubeconfig: string;
  /** Forgets the last run's connection. */
  reset(): void;
  /** When the first connection since `reset` arrived (performance.now()), if any. */
  firstConnection(): number | undefined;
  close(): void;
}

async function listen(server: net.Server): Promise<number> {
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  return (server.address() as AddressInfo).port;
}

/**
 * A kubeconfig naming `server`, with a token that no server here checks and a CA of its own,
 * as real kubeconfigs carry (without one, Node would load its bundled root certificates), in
 * the block style `kubectl config view --raw` writes.
 */
function tokenKubeconfig(dir: string, name: string, server: string): string {
  const path = join(dir, `${name}.kubeconfig`);
  writeFileSync(
    path,
    [
      'apiVersion: v1',
      'clusters:',
      '- cluster:',
      `    certificate-authority-data: ${Buffer.from(CA_CERT).toString('base64')}`,
      `    server: ${server}`,
      '  name: c',
      'contexts:',
      '- context:',
      '    cluster: c',
      `    namespace: ${NS}`,
      '    user: u',
      '  name: x',
      'current-context: x',
      'kind: Config',
      'users:',
      '- name: u',
      '  user:',
      '    token: bench',
      '',
    ].join('\n'),
  );
  return path;
}

/** A port that was free a moment ago: connections to it are refused. */
async function refusedTarget(dir: string): Promise<Target> {
  const probe = net.createServer();
  const port = await listen(probe);
  await new Promise((done) => probe.close(done));
  return {
    name: 'refused',
    kubeconfig: tokenKubeconfig(dir, 'refused', `https://127.0.0.1:${port}`),
    reset: () => undefined,
    firstConnection: () => undefined,
    close: () => undefined,
  };
}

/**
 * A listener that notes when a connection arrives; `onConnection` decides what becomes of it
 * (reset it, or relay it to the real server).
 */
async function notingTarget(name: string, onConnection: (socket: net.Socket) => void, kubeconfig: (port: number) => string): Promise<Target> {
  let first: number | undefined;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    first ??= performance.now();
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
    onConnection(socket);
  });
  const port = await listen(server);
  return {
    name,
    kubeconfig: kubeconfig(port),
    reset: () => (first = undefined),
    firstConnection: () => first,
    close: () => {
      for (const s of sockets) s.destroy();
      server.close();
    },
  };
}

/**
 * CPU time of this process's reaped children so far (cutime + cstime of /proc/self/stat), in
 * ms: libuv reaps a child before its 'exit' event, so the difference around one run is that
 * run's CPU. The kernel counts in clock ticks (10 ms here), so it is a coarse figure per run.
 */
function childrenCpuMs(): number {
  const stat = readFileSync('/proc/self/stat', 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // Fields 16 and 17 of proc(5), counted from the state (field 3).
  return ((Number(fields[13]) + Number(fields[14])) * 1000) / CLOCK_TICKS;
}

/** sysconf(_SC_CLK_TCK): 100 on Linux for as long as proc(5) has reported in ticks. */
const CLOCK_TICKS = 100;

function percentile(xs: readonly number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.max(0, Math.ceil((p / 100) * s.length) - 1)] ?? NaN;
}

/** Spawns `node argv` (the plugin's main.js and its arguments) and times it; stdout and stderr are read and dropped. */
function runOnce(node: string, argv: readonly string[], env: NodeJS.ProcessEnv, target?: Target): Promise<Run> {
  target?.reset();
  return new Promise((done, fail) => {
    const cpu = childrenCpuMs();
    const started = performance.now();
    const child = spawn(node, argv, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.resume();
    child.stderr.resume();
    child.on('error', fail);
    child.on('exit', (code) => {
      const ms = performance.now() - started;
      const first = target?.firstConnection();
      done({ ms, cpuMs: childrenCpuMs() - cpu, code, ...(first === undefined ? {} : { firstConnectionMs: first - started }) });
    });
  });
}

/** One row of the table. */
interface Row {
  /** Which build ran, when the bench compares several (`--main` more than once). */
  readonly build?: string;
  readonly command: string;
  readonly target: string;
  readonly runs: readonly Run[];
}

function fmt(ms: number): string {
  return Number.isFinite(ms) ? (ms / 1000).toFixed(3) : '-';
}

function table(rows: readonly Row[]): string {
  const builds = rows.some((r) => r.build !== undefined);
  const head = [
    ...(builds ? ['build'] : []),
    'command',
    'server',
    'exit',
    'median s',
    'p90 s',
    'cpu median s',
    'first conn. median s',
    'first conn. p90 s',
  ];
  const body = rows.map((r) => {
    const wall = r.runs.map((x) => x.ms);
    const first = r.runs.flatMap((x) => (x.firstConnectionMs === undefined ? [] : [x.firstConnectionMs]));
    const codes = [...new Set(r.runs.map((x) => String(x.code)))].join('/');
    return [
      ...(builds ? [r.build ?? '-'] : []),
      r.command,
      r.target,
      codes,
      fmt(percentile(wall, 50)),
      fmt(percentile(wall, 90)),
      fmt(
        percentile(
          r.runs.map((x) => x.cpuMs),
          50,
        ),
      ),
      first.length ? fmt(percentile(first, 50)) : '-',
      first.length ? fmt(percentile(first, 90)) : '-',
    ];
  });
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((b) => b[i]!.length)));
  return [head, ...body].map((cells) => cells.map((c, i) => c.padEnd(widths[i]!)).join('  ')).join('\n');
}

/** The real control plane with the CRDs, one bucket and its config; `stop` ends it. */
async function controlPlaneTarget(dir: string): Promise<Target & { stop(): Promise<void> }> {
  // Loaded only when asked for: the control plane's helpers pull in client-node.
  const { startControlPlane } = await import('../test/support/control-plane/index.js');
  const { apply, bucketManifest, kubectlOk, providerManifests } = await import('../test/support/kube.js');
  const cp = await startControlPlane();
  try {
    await kubectlOk(cp, ['apply', '-f', join(REPO, 'dist', '00-crds.yaml')]);
    await kubectlOk(cp, ['wait', '--for=condition=Established', '--timeout=60s', 'crd', '--all']);
    await kubectlOk(cp, ['create', 'namespace', NS]);
    for (const m of providerManifests(NS, 'https://provider.invalid', 'bench-key')) await apply(cp, m);
    await apply(cp, bucketManifest(NS, BUCKET));
    const upstream = new URL(cp.server);
    const admin = readFileSync(cp.kubeconfigPath, 'utf8');
    const relay = await notingTarget(
      'control plane',
      (socket) => {
        const to = net.connect(Number(upstream.port), upstream.hostname);
        // As Go's and kubectl's sockets are: Node's net sockets wait for an ACK before sending a
        // short segment (Nagle), and with the server's delayed ACKs that held each round trip
        // through the relay up to 40 ms (a `why` measured 0.28 s through it, 0.15 s without).
        socket.setNoDelay(true);
        to.setNoDelay(true);
        to.on('error', () => socket.destroy());
        socket.pipe(to).pipe(socket);
        socket.on('close', () => to.destroy());
      },
      (port) => {
        const path = join(dir, 'control-plane.kubeconfig');
        // Same credentials and CA; the relay listens on 127.0.0.1 too, so the serving certificate still matches.
        writeFileSync(path, admin.split(cp.server).join(`https://127.0.0.1:${port}`), { mode: 0o600 });
        return path;
      },
    );
    return {
      ...relay,
      stop: async () => {
        relay.close();
        await cp.stop();
      },
    };
  } catch (err) {
    await cp.stop();
    throw err;
  }
}

async function bench(): Promise<void> {
  const { values } = parseArgs({
    options: {
      n: { type: 'string', default: '20' },
      'no-build': { type: 'boolean', default: false },
      'control-plane': { type: 'boolean', default: false },
      main: { type: 'string', multiple: true },
    },
  });
  const mains = values.main?.length ? values.main.map((m) => resolve(m)) : [join(REPO, 'lib', 'cli', 'main.js')];
  const n = Number(values.n);
  if (!Number.isInteger(n) || n < 1) throw new Error(`--n must be a positive integer, got ${values.n}`);
  if (!values['no-build'] && !values.main) execFileSync('npm', ['run', 'build:lib'], { cwd: REPO, stdio: ['ignore', 'ignore', 'inherit'] });
  const node = pinnedNode();
  const dir = mkdtempSync(join(tmpdir(), 'bucketoperator-cli-startup-'));
  // A home of its own: no ~/.kube/config of the machine's is read, no $KUBECONFIG.
  const env: NodeJS.ProcessEnv = { PATH: '/usr/bin:/bin', HOME: dir, LANG: 'C.UTF-8' };
  const targets: Target[] = [
    await refusedTarget(dir),
    await notingTarget(
      'reset',
      (socket) => socket.resetAndDestroy(),
      (port) => tokenKubeconfig(dir, 'reset', `https://127.0.0.1:${port}`),
    ),
  ];
  let cp: Awaited<ReturnType<typeof controlPlaneTarget>> | undefined;
  try {
    if (values['control-plane']) targets.push((cp = await controlPlaneTarget(dir)));
    const cases: { command: string; args: string[]; target?: Target }[] = [
      { command: '--help', args: ['--help'] },
      { command: 'version', args: ['version'] },
    ];
    for (const target of targets) {
      for (const command of ['why', 'trace']) {
        cases.push({ command: `${command} ${BUCKET}`, args: [command, BUCKET, '-n', NS, '--kubeconfig', target.kubeconfig], target });
      }
    }
    const refused = targets[0]!;
    cases.push({ command: `pause ${BUCKET}`, args: ['pause', BUCKET, '-n', NS, '--kubeconfig', refused.kubeconfig], target: refused });
    cases.push({
      command: 'report',
      args: ['report', '-n', NS, '-f', join(dir, 'report.tar.gz'), '--kubeconfig', refused.kubeconfig],
      target: refused,
    });

    const load = loadavg();
    console.log(`date: ${new Date().toISOString()}`);
    console.log(`machine: ${cpus().length} cpus, ${cpus()[0]?.model ?? 'unknown model'}; load average ${load.map((l) => l.toFixed(2)).join(' ')}`);
    console.log(`node: ${node.path} (v${node.version})`);
    console.log(`command: tsx bench/cli-startup.ts ${process.argv.slice(2).join(' ')}`.trimEnd());
    const builds = mains.map((main, i) => ({ main, name: mains.length > 1 ? String.fromCharCode(65 + i) : undefined }));
    for (const b of builds) {
      console.log(`plugin${b.name ? ` ${b.name}` : ''}: ${node.path} ${b.main} <args>`);
    }
    console.log(`${n} timed runs each after one untimed, one at a time${mains.length > 1 ? ', the builds taking turns' : ''}, spawn to exit\n`);
    const rows: Row[] = [];
    const floor: Run[] = [];
    await runOnce(node.path, ['-e', '0'], env);
    for (let i = 0; i < n; i++) floor.push(await runOnce(node.path, ['-e', '0'], env));
    rows.push({ ...(mains.length > 1 ? { build: '-' } : {}), command: 'node -e 0', target: '-', runs: floor });
    for (const c of cases) {
      const runs = builds.map(() => [] as Run[]);
      for (const b of builds) await runOnce(node.path, [b.main, ...c.args], env, c.target);
      for (let i = 0; i < n; i++) {
        for (const [j, b] of builds.entries()) runs[j]!.push(await runOnce(node.path, [b.main, ...c.args], env, c.target));
      }
      for (const [j, b] of builds.entries()) {
        rows.push({ ...(b.name ? { build: b.name } : {}), command: c.command, target: c.target?.name ?? '-', runs: runs[j]! });
      }
    }
    console.log(table(rows));
    console.log(
      `\nload average at end: ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}`,
    );
  } finally {
    for (const t of targets) if (t !== cp) t.close();
    await cp?.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

bench().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
