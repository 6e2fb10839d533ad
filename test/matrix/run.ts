/**
 * `npm run test:matrix [-- <minor or version>...]`: the support matrix's smoke suite
 * (smoke.test.ts) once per Kubernetes version of test/support/control-plane/matrix.env, or of
 * those named (`1.36`, `v1.36.3`), one after the other: each is a mocha run with a control plane
 * of its own, and two at once would only fight over the same two cores. Prints each version's
 * outcome and wall time; exits 1 when any failed. `npm run build:control-plane:matrix` builds
 * (or finds cached) what it runs.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { matrixVersions, type MatrixVersion } from '../support/control-plane';

const REPO = join(__dirname, '..', '..');
const SUITE = 'test/matrix/smoke.test.ts';

/** The matrix's versions `wanted` names (by minor or version), all of them when it names none. */
export function selectVersions(all: readonly MatrixVersion[], wanted: readonly string[]): MatrixVersion[] {
  if (wanted.length === 0) return [...all];
  return wanted.map((w) => {
    const found = all.find((m) => m.kubernetes === w || m.kubernetes === `v${w}` || m.minor === w.replace(/^v/, ''));
    if (!found) throw new Error(`'${w}' is not in matrix.env (it lists ${all.map((m) => m.kubernetes).join(', ')})`);
    return found;
  });
}

function runSuite(version: string): Promise<number> {
  const args = [
    '--import',
    'tsx',
    join('node_modules', 'mocha', 'bin', 'mocha.js'),
    '--bail',
    '--exit',
    '--timeout',
    '240000',
    '--slow',
    '30000',
    SUITE,
  ];
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { cwd: REPO, stdio: 'inherit', env: { ...process.env, BUCKETOPERATOR_K8S_VERSION: version } });
    child.on('error', reject);
    child.on('exit', (code, signal) => resolve(code ?? (signal ? 128 : 1)));
  });
}

async function main(): Promise<void> {
  const versions = selectVersions(await matrixVersions(), process.argv.slice(2));
  const results: Array<{ version: string; passed: boolean; seconds: number }> = [];
  for (const m of versions) {
    console.log(`\n=== Kubernetes ${m.kubernetes} (etcd ${m.etcd})`);
    const started = Date.now();
    const code = await runSuite(m.kubernetes);
    results.push({ version: m.kubernetes, passed: code === 0, seconds: Math.round((Date.now() - started) / 1000) });
  }
  console.log('\nKubernetes  result  seconds');
  for (const r of results) console.log(`${r.version.padEnd(11)} ${(r.passed ? 'passed' : 'FAILED').padEnd(7)} ${r.seconds}`);
  process.exitCode = results.every((r) => r.passed) ? 0 : 1;
}

if (require.main === module) {
  main().catch((err: unknown) => {
    console.error(err instanceof Error ? err.message : err);
    process.exitCode = 1;
  });
}
