/**
 * What etcd holds, read through its JSON gateway, and docs/v2.md's marked shell blocks run as
 * written: the two things the storage migration is judged by. "Rewritten in v2" is then proven
 * by the bytes, not inferred from a CRD's status.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { walkthroughBlocks, type ShellBlock } from '../../scripts/docs/walkthrough';
import { GROUP } from '../../operator/api/v1';
import type { ControlPlane } from '../support/control-plane';
import { REPO } from '../support/image';

const run = promisify(execFile);
const b64 = (s: string) => Buffer.from(s, 'utf8').toString('base64');
const unb64 = (s: string) => Buffer.from(s, 'base64').toString('utf8');

/** How many objects of `resource` (all namespaces) etcd holds in each apiVersion. */
export async function storedApiVersions(cp: ControlPlane, resource: string): Promise<Record<string, number>> {
  const prefix = `/registry/${GROUP}/${resource}/`;
  const end = prefix.slice(0, -1) + String.fromCharCode(prefix.charCodeAt(prefix.length - 1) + 1);
  const res = await fetch(`${cp.etcdUrl}/v3/kv/range`, { method: 'POST', body: JSON.stringify({ key: b64(prefix), range_end: b64(end) }) });
  if (!res.ok) throw new Error(`etcd range ${prefix}: ${res.status} ${await res.text()}`);
  const body = (await res.json()) as { kvs?: Array<{ value: string }> };
  const out: Record<string, number> = {};
  for (const kv of body.kvs ?? []) {
    const { apiVersion } = JSON.parse(unb64(kv.value)) as { apiVersion: string };
    out[apiVersion] = (out[apiVersion] ?? 0) + 1;
  }
  return out;
}

/** The `<!-- walkthrough -->` blocks of a document of the repository, in order. */
export function documentedBlocks(file: string): ShellBlock[] {
  return walkthroughBlocks(readFileSync(join(REPO, file), 'utf8'));
}

/**
 * Runs `script` in bash with `set -euo pipefail` from the repository root (the docs name
 * `dist/...` paths from there), with the control plane's kubectl first on PATH and its admin
 * kubeconfig, as a cluster admin following the docs would. Throws with the output on failure.
 */
export async function runDocumented(cp: ControlPlane, script: string, where: string): Promise<string> {
  const home = mkdtempSync(join(tmpdir(), 'bucketoperator-matrix-home-'));
  try {
    const env = {
      PATH: [dirname(cp.binaries.kubectl), '/usr/bin', '/bin'].join(':'),
      HOME: home,
      KUBECONFIG: cp.kubeconfigPath,
      LANG: 'C.UTF-8',
    };
    const { stdout, stderr } = await run('bash', ['--noprofile', '--norc', '-c', `set -euo pipefail\n${script}\n`], {
      env,
      cwd: REPO,
      timeout: 120_000,
      maxBuffer: 16 << 20,
    }).catch((err: unknown) => {
      const e = err as { stdout?: string; stderr?: string };
      throw new Error(`${where} failed:\n${script}\n--- its output:\n${e.stdout ?? ''}${e.stderr ?? ''}`, { cause: err });
    });
    return stdout + stderr;
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
}
