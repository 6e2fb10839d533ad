/**
 * The mock provider as a real child process (`provider/main.ts`), driven over HTTP only: the
 * operator under test talks to it exactly as it would to a cloud API.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createWriteStream, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { FaultSettings, ProviderStats } from '../../provider';
import type { ProviderBucket } from '../../operator/provider-client';
import { freePort } from './ports';
import { eventually } from './eventually';

const REPO = resolve(__dirname, '..', '..');

/** Options of {@link startProviderProcess}. */
export interface ProviderProcessOptions {
  /** @default 500 */
  readonly activationDelayMs?: number;
  readonly dataFile?: string;
  readonly extraArgs?: readonly string[];
  /**
   * Extra API keys at start, each an account of its own unless written `ACCOUNT:KEY`. Passed
   * in a temp `--api-keys-file`, so a thousand keys neither bloat the environment nor show in
   * the process list. `apiKey` stays the first key (the default account).
   */
  readonly apiKeys?: readonly string[];
}

/** A running provider process. */
export interface ProviderProcess {
  readonly url: string;
  readonly apiKey: string;
  readonly adminToken: string;
  /** Path of the process's combined stdout/stderr. */
  readonly logFile: string;
  /** Every account's buckets, optionally only those tagged with this Kubernetes namespace. */
  buckets(namespace?: string): Promise<ProviderBucket[]>;
  /** Accepts `key` from now on, for `account` (default: an account of its own); resolves with the account. */
  addApiKey(key: string, account?: string): Promise<string>;
  setFaults(faults: FaultSettings): Promise<void>;
  stats(): Promise<ProviderStats>;
  /** Changes a bucket behind the operator's back. */
  tamper(id: string, patch: Record<string, unknown>): Promise<void>;
  /** Deletes a bucket behind the operator's back. */
  remove(id: string): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Requests counted in `stats` whose key (`"<METHOD> <route template> <status>"`, e.g.
 * `"DELETE /buckets/{id} 503"`) matches `pattern`; the test's own admin calls never match
 * a pattern on `/buckets`.
 */
export function countRequests(stats: ProviderStats, pattern: RegExp): number {
  return Object.entries(stats.requests)
    .filter(([key]) => pattern.test(key))
    .reduce((n, [, v]) => n + v, 0);
}

/** Writes the keys file of {@link ProviderProcessOptions.apiKeys}; readable only by its owner. */
function keysFile(dir: string, keys: readonly string[]): string {
  const path = join(dir, 'api-keys');
  writeFileSync(path, `${keys.join('\n')}\n`, { mode: 0o600 });
  return path;
}

/** Starts `provider/main.ts` on a free port and waits for /healthz. */
export async function startProviderProcess(opts: ProviderProcessOptions = {}): Promise<ProviderProcess> {
  const port = await freePort();
  const apiKey = `pk-${randomBytes(12).toString('hex')}`;
  const adminToken = `adm-${randomBytes(12).toString('hex')}`;
  const dir = mkdtempSync(join(tmpdir(), 'bucketoperator-provider-'));
  const logFile = join(dir, 'provider.log');
  const args = [
    '--import',
    'tsx',
    join(REPO, 'provider', 'main.ts'),
    '--port',
    String(port),
    '--activation-delay-ms',
    String(opts.activationDelayMs ?? 500),
    '--log-level',
    'warn',
    ...(opts.dataFile ? ['--data-file', opts.dataFile] : []),
    ...(opts.apiKeys !== undefined && opts.apiKeys.length > 0 ? ['--api-keys-file', keysFile(dir, opts.apiKeys)] : []),
    ...(opts.extraArgs ?? []),
  ];
  const child: ChildProcess = spawn(process.execPath, args, {
    cwd: REPO,
    env: { ...process.env, PROVIDER_API_KEYS: apiKey, PROVIDER_ADMIN_TOKEN: adminToken },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const log = createWriteStream(logFile);
  child.stdout?.pipe(log);
  child.stderr?.pipe(log);
  let exited = false;
  child.once('exit', () => {
    exited = true;
  });
  const url = `http://127.0.0.1:${port}`;
  await eventually(async () => (await fetch(`${url}/healthz`)).ok, {
    description: 'the provider process to listen',
    timeoutMs: 30_000,
    abortIf: () => (exited ? `provider exited; see ${logFile}` : undefined),
  });

  const call = async (method: string, path: string, token: string, body?: unknown): Promise<unknown> => {
    const res = await fetch(`${url}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    if (!res.ok && res.status !== 404) throw new Error(`provider ${method} ${path}: ${res.status} ${text}`);
    return text ? JSON.parse(text) : undefined;
  };

  return {
    url,
    apiKey,
    adminToken,
    logFile,
    async buckets(namespace) {
      const out: ProviderBucket[] = [];
      let cont: string | undefined;
      const tag = namespace ? `&tag=${encodeURIComponent(`kubernetes-namespace=${namespace}`)}` : '';
      do {
        // The admin view: every account's buckets, and never subject to list faults.
        const page = (await call('GET', `/admin/buckets?limit=1000${tag}${cont ? `&continue=${encodeURIComponent(cont)}` : ''}`, adminToken)) as {
          items: ProviderBucket[];
          continue?: string;
        };
        out.push(...page.items);
        cont = page.continue;
      } while (cont);
      return out;
    },
    async addApiKey(key, account) {
      const res = (await call('POST', '/admin/api-keys', adminToken, account === undefined ? { key } : { key, account })) as { account: string };
      return res.account;
    },
    async setFaults(faults) {
      await call('PUT', '/admin/faults', adminToken, faults);
    },
    async stats() {
      return (await call('GET', '/admin/stats', adminToken)) as ProviderStats;
    },
    async tamper(id, patch) {
      await call('PATCH', `/admin/buckets/${id}`, adminToken, patch);
    },
    async remove(id) {
      await call('DELETE', `/admin/buckets/${id}`, adminToken);
    },
    async stop() {
      if (!exited) {
        const gone = new Promise((r) => child.once('exit', r));
        child.kill('SIGTERM');
        await Promise.race([gone, new Promise((r) => setTimeout(r, 5000))]);
        if (!exited) child.kill('SIGKILL');
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
