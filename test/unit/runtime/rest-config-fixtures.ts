/**
 * Temporary kubeconfig files and a tiny exec credential plugin for the REST config tests.
 * Everything lives in one directory per test, removed by `cleanup`.
 */
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';

/** A scratch directory with helpers to write files into it. */
export interface Scratch {
  readonly dir: string;
  /** Writes `content` to `name` inside the directory and returns the absolute path. */
  file(name: string, content: string | Buffer, mode?: number): string;
  /** Writes a kubeconfig with one context `ctx` joining `cluster` and `user`. */
  kubeconfig(cluster: Record<string, unknown>, user?: Record<string, unknown>, extra?: Record<string, unknown>): string;
  cleanup(): void;
}

/** Creates a scratch directory under the system temp dir. */
export function scratch(): Scratch {
  const dir = mkdtempSync(join(tmpdir(), 'bucketoperator-restcfg-'));
  const s: Scratch = {
    dir,
    file(name, content, mode) {
      const path = join(dir, name);
      writeFileSync(path, content);
      if (mode !== undefined) chmodSync(path, mode);
      return path;
    },
    kubeconfig(cluster, user, extra = {}) {
      return s.file(
        'config',
        stringify({
          apiVersion: 'v1',
          kind: 'Config',
          clusters: [{ name: 'c', cluster }],
          users: user ? [{ name: 'u', user }] : [],
          contexts: [{ name: 'ctx', context: { cluster: 'c', ...(user ? { user: 'u' } : {}) } }],
          'current-context': 'ctx',
          ...extra,
        }),
      );
    },
    cleanup() {
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return s;
}

/**
 * An exec plugin (a node script run through its shebang). Each run appends KUBERNETES_EXEC_INFO
 * to `<dir>/runs.log` and prints an ExecCredential with token `tok-<run number>`. Env knobs:
 * PLUGIN_API_VERSION, PLUGIN_EXPIRES (expirationTimestamp), PLUGIN_CERT (adds a client
 * certificate pair), PLUGIN_STDOUT (printed verbatim instead), PLUGIN_EXIT (exit code).
 */
export function writePlugin(s: Scratch, name = 'plugin.js'): { path: string; runs(): unknown[] } {
  const log = join(s.dir, 'runs.log');
  const script = `#!${process.execPath}
const fs = require('node:fs');
const log = ${JSON.stringify(log)};
fs.appendFileSync(log, process.env.KUBERNETES_EXEC_INFO + '\\n');
const n = fs.readFileSync(log, 'utf8').trim().split('\\n').length;
if (process.env.PLUGIN_EXIT) process.exit(Number(process.env.PLUGIN_EXIT));
if (process.env.PLUGIN_STDOUT) { process.stdout.write(process.env.PLUGIN_STDOUT); process.exit(0); }
const status = { token: 'tok-' + n };
if (process.env.PLUGIN_EXPIRES) status.expirationTimestamp = process.env.PLUGIN_EXPIRES;
if (process.env.PLUGIN_CERT) { status.clientCertificateData = 'CERT-' + n; status.clientKeyData = 'KEY-' + n; }
process.stdout.write(JSON.stringify({ apiVersion: process.env.PLUGIN_API_VERSION, kind: 'ExecCredential', status }));
`;
  const path = s.file(name, script, 0o755);
  return {
    path,
    runs: () => {
      try {
        return readFileSync(log, 'utf8')
          .trim()
          .split('\n')
          .filter((l) => l !== '')
          .map((l) => JSON.parse(l) as unknown);
      } catch {
        return [];
      }
    },
  };
}

/** A kubeconfig `exec` stanza for the plugin, with its knobs as env entries. */
export function execStanza(
  apiVersion: string,
  command: string,
  knobs: Record<string, string> = {},
  more: Record<string, unknown> = {},
): Record<string, unknown> {
  return {
    apiVersion,
    command,
    env: Object.entries({ PLUGIN_API_VERSION: apiVersion, ...knobs }).map(([name, value]) => ({ name, value })),
    interactiveMode: 'Never',
    ...more,
  };
}
