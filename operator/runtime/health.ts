/**
 * Probe and metrics endpoints on node:http: /healthz (liveness), /readyz (readiness) and
 * /metrics, with named checks and `?verbose` / `?exclude=` / `/readyz/<name>` as the
 * Kubernetes API server serves them. Both can share one port or use two. Further check sets
 * may be served below them (`/readyz/controller`, and `/readyz/controller/<name>`): readiness
 * of one part of the process that the Pod's readiness leaves out.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';

/** A named check: resolves when healthy, throws (or rejects) with the reason otherwise. */
export type Check = () => void | Promise<void>;

/** The checks behind one endpoint (/healthz, /readyz, /readyz/controller). */
export class CheckSet {
  private readonly checks = new Map<string, Check>();

  /** `endpoint` is its path without the leading slash, e.g. `readyz` or `readyz/controller`. */
  constructor(readonly endpoint: string) {
    if (!/^[a-z0-9][-a-z0-9]*(\/[a-z0-9][-a-z0-9]*)*$/.test(endpoint)) throw new Error(`check endpoint "${endpoint}" must be a lowercase path`);
  }

  /** Registers `check` under `name` (unique, used in the output and in `/<endpoint>/<name>`). */
  add(name: string, check: Check): void {
    if (!/^[a-z0-9][-a-z0-9]*$/.test(name)) throw new Error(`check name "${name}" must be lowercase alphanumerics and '-'`);
    if (this.checks.has(name)) throw new Error(`${this.endpoint} check "${name}" is already registered`);
    this.checks.set(name, check);
  }

  /** Names of the registered checks, in registration order. */
  names(): string[] {
    return [...this.checks.keys()];
  }

  /** Runs the checks (all, or only `only`), skipping `exclude`; never rejects. */
  async run(opts: { only?: string; exclude?: readonly string[] } = {}): Promise<CheckResult[] | undefined> {
    const selected = [...this.checks].filter(([name]) => (opts.only ? name === opts.only : !opts.exclude?.includes(name)));
    if (opts.only && selected.length === 0) return undefined;
    return Promise.all(
      selected.map(async ([name, check]): Promise<CheckResult> => {
        try {
          await check();
          return { name, ok: true };
        } catch (err) {
          return { name, ok: false, reason: err instanceof Error ? err.message : String(err) };
        }
      }),
    );
  }
}

/** Outcome of one check. */
export interface CheckResult {
  readonly name: string;
  readonly ok: boolean;
  readonly reason?: string;
}

/**
 * Renders results the way kube-apiserver does: `ok` alone when healthy and not verbose,
 * otherwise one `[+]name ok` / `[-]name failed: ...` line per check.
 */
export function renderChecks(endpoint: string, results: readonly CheckResult[], verbose: boolean): { status: number; body: string } {
  const failed = results.some((r) => !r.ok);
  if (!failed && !verbose) return { status: 200, body: 'ok' };
  const lines = results.map((r) => (r.ok ? `[+]${r.name} ok` : `[-]${r.name} failed: ${verbose ? (r.reason ?? 'unknown') : 'reason withheld'}`));
  lines.push(failed ? `${endpoint} check failed` : `${endpoint} check passed`);
  return { status: failed ? 500 : 200, body: `${lines.join('\n')}\n` };
}

/**
 * A liveness check that fails when timers have been starved for longer than `maxLagMs`:
 * a loop stuck on synchronous work answers no probe, but one that keeps being blocked
 * between probes is caught here. Call `stop` to clear its timer.
 */
export function eventLoopCheck(maxLagMs = 5_000, intervalMs = 500): { check: Check; stop(): void } {
  let last = performance.now();
  let worstLag = 0;
  const timer = setInterval(() => {
    const now = performance.now();
    worstLag = Math.max(0, now - last - intervalMs);
    last = now;
  }, intervalMs);
  // Only measures; it must not keep a stopping process alive.
  timer.unref();
  return {
    check: () => {
      const sinceTick = performance.now() - last - intervalMs;
      const lag = Math.max(worstLag, sinceTick);
      if (lag > maxLagMs) throw new Error(`event loop lagged ${Math.round(lag)} ms`);
    },
    stop: () => clearInterval(timer),
  };
}

/** host and port of a bind address such as ":8080", "127.0.0.1:0" or "[::1]:9000". */
export interface BindAddress {
  readonly host?: string;
  readonly port: number;
}

/** Parses a controller-runtime style bind address; "0" or "" means disabled (undefined). */
export function parseBindAddress(address: string | undefined): BindAddress | undefined {
  if (address === undefined || address === '' || address === '0') return undefined;
  const colon = address.lastIndexOf(':');
  if (colon < 0) throw new Error(`bind address "${address}" must look like "host:port" or ":port"`);
  const rawHost = address.slice(0, colon).replace(/^\[(.*)\]$/, '$1');
  const port = Number(address.slice(colon + 1));
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`bind address "${address}" has an invalid port`);
  return rawHost ? { host: rawHost, port } : { port };
}

/** Options of `ProbeServers`. */
export interface ProbeServersOptions {
  /** Where /metrics is served; "0" disables. */
  readonly metricsBindAddress?: string;
  /** Where /healthz and /readyz are served; "0" disables. The same address shares one server. */
  readonly healthProbeBindAddress?: string;
  readonly registry: Registry;
  readonly healthz: CheckSet;
  readonly readyz: CheckSet;
  /**
   * More check sets, each at `/<endpoint>` (and `/<endpoint>/<name>`); a path below another
   * set's (`readyz/controller`) takes precedence over that set's check of the same name.
   * @default none
   */
  readonly more?: readonly CheckSet[];
  readonly logger: Logger;
}

/** Addresses the servers actually bound (ports resolved when 0 was asked for). */
export interface BoundAddresses {
  readonly metrics?: AddressInfo;
  readonly health?: AddressInfo;
}

/** The metrics and probe HTTP servers (one or two). */
export class ProbeServers {
  private readonly servers: Server[] = [];
  private bound: BoundAddresses = {};
  /** Every check set, the longest endpoint first so that `/readyz/controller` is not read as check "controller" of /readyz. */
  private readonly sets: readonly CheckSet[];

  constructor(private readonly opts: ProbeServersOptions) {
    this.sets = [opts.healthz, opts.readyz, ...(opts.more ?? [])].sort((a, b) => b.endpoint.length - a.endpoint.length);
  }

  /** Binds the servers; rejects when a port is taken. */
  async start(): Promise<BoundAddresses> {
    const metrics = parseBindAddress(this.opts.metricsBindAddress);
    const health = parseBindAddress(this.opts.healthProbeBindAddress);
    const shared = metrics && health && metrics.host === health.host && metrics.port === health.port && metrics.port !== 0;
    if (shared) {
      const addr = await this.listen(metrics, { metrics: true, health: true });
      this.bound = { metrics: addr, health: addr };
    } else {
      const m = metrics ? await this.listen(metrics, { metrics: true, health: false }) : undefined;
      const h = health ? await this.listen(health, { metrics: false, health: true }) : undefined;
      this.bound = { ...(m ? { metrics: m } : {}), ...(h ? { health: h } : {}) };
    }
    return this.bound;
  }

  /** What `start` bound. */
  addresses(): BoundAddresses {
    return this.bound;
  }

  /** Closes the servers, dropping idle keep-alive connections so close cannot hang. */
  async stop(): Promise<void> {
    const servers = this.servers.splice(0);
    await Promise.all(
      servers.map(
        (s) =>
          new Promise<void>((resolve) => {
            s.close(() => resolve());
            s.closeAllConnections();
          }),
      ),
    );
  }

  private listen(at: BindAddress, serve: { metrics: boolean; health: boolean }): Promise<AddressInfo> {
    const server = createServer((req, res) => {
      this.handle(req, res, serve).catch((err: unknown) => {
        this.opts.logger.error({ err, url: req.url }, 'Probe server handler failed');
        if (!res.headersSent) res.writeHead(500);
        res.end();
      });
    });
    return new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(at.port, at.host, () => {
        server.off('error', reject);
        this.servers.push(server);
        resolve(server.address() as AddressInfo);
      });
    });
  }

  private async handle(req: IncomingMessage, res: ServerResponse, serve: { metrics: boolean; health: boolean }): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://probe');
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD' }).end();
      return;
    }
    if (serve.metrics && url.pathname === '/metrics') {
      const body = await this.opts.registry.metrics();
      res.writeHead(200, { 'content-type': this.opts.registry.contentType }).end(body);
      return;
    }
    if (serve.health) {
      const found = this.route(url.pathname);
      if (found) {
        const { set, only } = found;
        const results = await set.run({ ...(only ? { only } : {}), exclude: url.searchParams.getAll('exclude') });
        if (!results) {
          res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end(`no ${set.endpoint} check "${only}"\n`);
          return;
        }
        const { status, body } = renderChecks(only ?? set.endpoint, results, url.searchParams.has('verbose'));
        res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', 'x-content-type-options': 'nosniff' }).end(body);
        return;
      }
    }
    res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('not found\n');
  }

  /** The check set `pathname` names, and the one check in it when the path names one. */
  private route(pathname: string): { set: CheckSet; only?: string } | undefined {
    const path = pathname.replace(/\/$/, '');
    for (const set of this.sets) {
      const base = `/${set.endpoint}`;
      if (path === base) return { set };
      const rest = path.startsWith(`${base}/`) ? path.slice(base.length + 1) : undefined;
      if (rest && !rest.includes('/')) return { set, only: rest };
    }
    return undefined;
  }
}
