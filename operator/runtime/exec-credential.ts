/**
 * kubeconfig exec credential plugins (client.authentication.k8s.io/v1 and v1beta1), as
 * client-go runs them: the plugin gets `KUBERNETES_EXEC_INFO`, prints an ExecCredential on
 * stdout, and its credential is reused until `expirationTimestamp` (or until the API server
 * answers 401). Its stderr goes to ours, so a plugin's own hints reach the operator's log;
 * its stdout carries the secret and never appears in an error.
 */
import { spawn } from 'node:child_process';
import { errorDetail, oneLineText, type CredentialSource, type Credentials } from './rest-config';

/** The ExecCredential versions this loader speaks. */
export const EXEC_API_VERSIONS = ['client.authentication.k8s.io/v1', 'client.authentication.k8s.io/v1beta1'] as const;

/** An ExecCredential API version. */
export type ExecApiVersion = (typeof EXEC_API_VERSIONS)[number];

/** The cluster as a plugin sees it with `provideClusterInfo: true` (ExecCredential spec.cluster). */
export interface ExecClusterInfo {
  readonly server: string;
  readonly 'tls-server-name'?: string;
  readonly 'insecure-skip-tls-verify'?: boolean;
  /** base64 PEM, as in a kubeconfig. */
  readonly 'certificate-authority-data'?: string;
  /** The cluster's `extensions` entry named `client.authentication.k8s.io/exec`. */
  readonly config?: unknown;
}

/** A kubeconfig `user.exec` stanza, with the command already resolved. */
export interface ExecConfig {
  readonly apiVersion: ExecApiVersion;
  readonly command: string;
  readonly args?: readonly string[];
  /** Added to the inherited environment. */
  readonly env?: Readonly<Record<string, string>>;
  /** Shown when the command is missing (kubeconfig `installHint`). */
  readonly installHint?: string;
  /** Set when the kubeconfig asks for `provideClusterInfo`. */
  readonly cluster?: ExecClusterInfo;
}

/** Options of `ExecCredentialSource`. */
export interface ExecCredentialOptions {
  /** Environment the plugin inherits. */
  readonly env: NodeJS.ProcessEnv;
  /** Kill a plugin that has not answered by then. @default 60000 */
  readonly timeoutMs?: number;
  /** Wall-clock milliseconds, compared with `expirationTimestamp`. @default Date.now */
  readonly now?: () => number;
}

// A credential is a few KiB at most; anything larger is a broken plugin, not a token.
const MAX_OUTPUT = 1 << 20;

/**
 * Runs the plugin when no unexpired credential is cached. Concurrent requests share one run,
 * so a burst of requests after expiry starts one process, not one per request.
 */
export class ExecCredentialSource implements CredentialSource {
  private readonly timeoutMs: number;
  private readonly now: () => number;
  private cached?: { readonly creds: Credentials; readonly expiresAt?: number };
  private running?: Promise<Credentials>;

  constructor(
    private readonly cfg: ExecConfig,
    private readonly opts: ExecCredentialOptions,
  ) {
    this.timeoutMs = opts.timeoutMs ?? 60_000;
    this.now = opts.now ?? Date.now;
  }

  async get(): Promise<Credentials> {
    const c = this.cached;
    if (c && (c.expiresAt === undefined || this.now() < c.expiresAt)) return c.creds;
    this.running ??= this.run().finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  invalidate(): void {
    this.cached = undefined;
  }

  private async run(): Promise<Credentials> {
    const stdout = await this.spawn();
    const parsed = parseExecCredential(stdout, this.cfg.apiVersion, this.describe());
    this.cached = parsed;
    return parsed.creds;
  }

  private describe(): string {
    return `exec plugin "${this.cfg.command}"`;
  }

  private spawn(): Promise<string> {
    const info = {
      apiVersion: this.cfg.apiVersion,
      kind: 'ExecCredential',
      spec: { interactive: false, ...(this.cfg.cluster ? { cluster: this.cfg.cluster } : {}) },
    };
    const env = { ...this.opts.env, ...this.cfg.env, KUBERNETES_EXEC_INFO: JSON.stringify(info) };
    return new Promise((resolve, reject) => {
      let settled = false;
      const finish = (err: Error | undefined, out?: string): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        if (err) reject(err);
        else resolve(out ?? '');
      };
      const child = spawn(this.cfg.command, [...(this.cfg.args ?? [])], { env, stdio: ['ignore', 'pipe', 'inherit'] });
      const chunks: Buffer[] = [];
      let size = 0;
      let failure: Error | undefined;
      // A hung plugin would otherwise hold every request of the operator.
      const timer = setTimeout(() => {
        failure ??= new Error(`${this.describe()} did not finish within ${this.timeoutMs} ms`);
        child.kill('SIGKILL');
      }, this.timeoutMs);
      child.stdout.on('data', (c: Buffer) => {
        size += c.length;
        if (size <= MAX_OUTPUT) chunks.push(c);
        else if (!failure) {
          failure = new Error(`${this.describe()} printed more than ${MAX_OUTPUT} bytes`);
          child.kill('SIGKILL');
        }
      });
      child.on('error', (err) => {
        const missing = (err as NodeJS.ErrnoException).code === 'ENOENT';
        const hint = missing && this.cfg.installHint ? `: ${oneLineText(this.cfg.installHint)}` : '';
        failure ??= new Error(`${this.describe()} ${missing ? 'not found' : `cannot start: ${errorDetail(err)}`}${hint}`, { cause: err });
        // Node does not promise a 'close' after a failed spawn.
        if (child.pid === undefined) finish(failure);
      });
      child.on('close', (code, signal) => {
        if (failure) finish(failure);
        else if (signal) finish(new Error(`${this.describe()} was killed by ${signal}`));
        else if (code !== 0) finish(new Error(`${this.describe()} exited with code ${code}`));
        else finish(undefined, Buffer.concat(chunks).toString('utf8'));
      });
    });
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Checks a plugin's stdout and extracts its credential and expiry. Errors say what is wrong
 * with the output, never what it contained.
 */
export function parseExecCredential(stdout: string, apiVersion: ExecApiVersion, what: string): { creds: Credentials; expiresAt?: number } {
  let doc: unknown;
  try {
    doc = JSON.parse(stdout) as unknown;
  } catch {
    throw new Error(`${what} did not print an ExecCredential as JSON`);
  }
  if (!isRecord(doc) || doc.kind !== 'ExecCredential') throw new Error(`${what} did not print an ExecCredential`);
  if (doc.apiVersion !== apiVersion) {
    const got = typeof doc.apiVersion === 'string' ? oneLineText(doc.apiVersion, 80) : typeof doc.apiVersion;
    throw new Error(`${what} answered with apiVersion "${got}", the kubeconfig asks for "${apiVersion}"`);
  }
  const status = doc.status;
  if (!isRecord(status)) throw new Error(`${what} printed an ExecCredential without status`);
  const field = (name: string): string | undefined => {
    const v = status[name];
    if (v === undefined || v === null || v === '') return undefined;
    if (typeof v !== 'string') throw new Error(`${what}: status.${name} is not a string`);
    return v;
  };
  const token = field('token');
  const cert = field('clientCertificateData');
  const key = field('clientKeyData');
  if ((cert === undefined) !== (key === undefined)) {
    throw new Error(`${what}: status has ${cert ? 'clientCertificateData without clientKeyData' : 'clientKeyData without clientCertificateData'}`);
  }
  if (token === undefined && cert === undefined) throw new Error(`${what}: status has neither a token nor a client certificate`);
  const expiry = field('expirationTimestamp');
  let expiresAt: number | undefined;
  if (expiry !== undefined) {
    expiresAt = Date.parse(expiry);
    if (!Number.isFinite(expiresAt)) throw new Error(`${what}: status.expirationTimestamp is not an RFC 3339 time`);
  }
  const creds: Credentials = { ...(token ? { token } : {}), ...(cert && key ? { cert, key } : {}) };
  return expiresAt === undefined ? { creds } : { creds, expiresAt };
}
