/**
 * Runs the integration tests in lanes: each lane is one mocha process with its own control
 * plane (test/integration/setup.ts starts one per mocha run), and the files are dealt to the
 * lanes by their measured wall times, longest first. Most of a file's time is waiting on
 * controllers, webhooks and pollers rather than computing, so two lanes on two cores finish
 * in a little over half the time of one.
 *
 * `tsx scripts/test-integration.ts [files...]`; with files, they run in one lane, in order.
 * BUCKETOPERATOR_TEST_LANES sets the number of lanes (default 2); the files that need the node
 * run in one more lane of their own.
 */
import { spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { createInterface } from 'node:readline';
import { dealByWeight, lanesFromEnv } from './lanes';

const REPO = join(__dirname, '..');
const DIR = 'test/integration';

/**
 * Wall time per file in seconds, hooks included, printed at the end of a run on the 2-core CI
 * machine (2026-12-04: two lanes and the node's own; the first file of a lane also pays for its
 * control plane's start).
 * Refresh it from that table when files move; a file missing here counts as 30 s.
 */
const SECONDS: Readonly<Record<string, number>> = {
  'node-operator.test.ts': 232,
  'bucket-lifecycle.test.ts': 163,
  'storage-migration.test.ts': 139,
  'conversion-webhook.test.ts': 123,
  'hostile-tenants.test.ts': 92,
  'bucket-drift.test.ts': 84,
  'provenance.test.ts': 76,
  'upgrade.test.ts': 71,
  'uninstall.test.ts': 61,
  'cli.test.ts': 56,
  'many-tenants.test.ts': 52,
  'demo.test.ts': 51,
  'ci-example.test.ts': 44,
  'node.test.ts': 42,
  'release-artifacts.test.ts': 38,
  'bucket-late-create.test.ts': 33,
  'bucket-crash.test.ts': 31,
  'cert-manager.test.ts': 26,
  'manifests.test.ts': 24,
  'pack.test.ts': 22,
  'lean-cache.test.ts': 21,
  'readme-walkthrough.test.ts': 19,
  'runtime-informer.test.ts': 18,
  'provider-config.test.ts': 18,
  'control-plane.test.ts': 17,
  'bucket-observe.test.ts': 15,
  'gitops-health.test.ts': 11,
  'admission-policy.test.ts': 10,
  'runtime-leader.test.ts': 8,
  'runtime-toy-controller.test.ts': 5,
  'bucket-adoption.test.ts': 4,
  'runtime-rest-config.test.ts': 2,
  'image.test.ts': 1,
};

/**
 * Files that start the machine's one node (test/support/node takes a machine-wide lock): they
 * run one after another in an extra lane, so they never wait on each other's node.
 */
const NEEDS_NODE = /^test\/integration\/(node[-.]|demo\.)/;

function testFiles(): string[] {
  return readdirSync(join(REPO, DIR))
    .filter((f) => f.endsWith('.test.ts'))
    .sort()
    .map((f) => join(DIR, f));
}

type LaneResult = { code: number; times: Array<[string, number]> };

/** One mocha process over `files`, its output prefixed with the lane's name. */
function runLane(name: string, files: string[]): Promise<LaneResult> {
  const mocha = join(REPO, 'node_modules', '.bin', 'mocha');
  const args = ['--config', '.mocharc.integration.json', '--reporter', './test/support/file-times-reporter.ts', ...files];
  const child = spawn(mocha, args, { cwd: REPO, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, BUCKETOPERATOR_TEST_LANE: name } });
  const times: Array<[string, number]> = [];
  const prefix = `[${name}] `;
  for (const stream of [child.stdout, child.stderr]) {
    createInterface({ input: stream }).on('line', (line) => {
      const m = /^file-time (\d+(?:\.\d+)?) (.+)$/.exec(line);
      if (m) times.push([m[2] ?? '', Number(m[1])]);
      else process.stdout.write(prefix + line + '\n');
    });
  }
  const stop = (sig: NodeJS.Signals) => child.kill(sig);
  process.once('SIGINT', stop).once('SIGTERM', stop);
  return new Promise((resolve) => {
    child.once('close', (code, signal) => resolve({ code: code ?? (signal ? 1 : 0), times }));
  });
}

async function main(): Promise<void> {
  const given = process.argv.slice(2).map((f) => relative(REPO, join(process.cwd(), f)));
  const files = given.length > 0 ? given : testFiles();
  const weight = (f: string): number => SECONDS[f.slice(DIR.length + 1)] ?? 30;
  const onNode = files.filter((f) => NEEDS_NODE.test(f)).sort((a, b) => weight(b) - weight(a));
  const lanes =
    given.length > 0
      ? [files]
      : [
          ...dealByWeight(
            files.filter((f) => !NEEDS_NODE.test(f)),
            weight,
            lanesFromEnv(process.env),
          ),
          // A lane of their own beside the others: their time is spent waiting on kubelet,
          // rollouts and grace periods (a third of a core), not computing.
          ...(onNode.length > 0 ? [onNode] : []),
        ];
  const began = performance.now();
  const results = await Promise.all(lanes.map((laneFiles, i) => runLane(`lane ${i + 1}`, laneFiles)));
  const all = results.flatMap((r) => r.times).sort((a, b) => b[1] - a[1]);
  process.stdout.write('\nIntegration files by wall time (hooks included):\n');
  for (const [file, s] of all) process.stdout.write(`  ${s.toFixed(1).padStart(6)} s  ${file}\n`);
  results.forEach((r, i) => {
    const sum = r.times.reduce((t, [, s]) => t + s, 0);
    process.stdout.write(`lane ${i + 1}: ${lanes[i]?.length ?? 0} files, ${sum.toFixed(0)} s, exit ${r.code}\n`);
  });
  process.stdout.write(`all lanes: ${((performance.now() - began) / 1000).toFixed(0)} s\n`);
  process.exitCode = results.some((r) => r.code !== 0) ? 1 : 0;
}

void main();
