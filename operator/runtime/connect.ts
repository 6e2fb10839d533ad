/**
 * Opening connections to the API server for the transport: direct or through an HTTP(S)
 * proxy's CONNECT tunnel, then TLS with ALPN (`h2` first, as client-go offers it). Also the
 * HTTP/1.1 agents, which open their sockets the same way so a proxy works on both protocols.
 */
import http from 'node:http';
import https from 'node:https';
import net, { isIP } from 'node:net';
import type { Duplex } from 'node:stream';
import tls from 'node:tls';
import type { ProxyServer } from './proxy';

/** Where and how to reach the server, minus per-request credentials. */
export interface Endpoint {
  /** Host without brackets (an IPv6 address as `::1`). */
  readonly host: string;
  readonly port: number;
  readonly tls?: tls.ConnectionOptions;
  readonly proxy?: ProxyServer;
}

/** `host:port` as a URL authority (IPv6 in brackets). */
export function authority(host: string, port: number): string {
  return `${isIP(host) === 6 ? `[${host}]` : host}:${port}`;
}

/** Host of a URL without the brackets Node keeps around an IPv6 address. */
export function bareHost(url: URL): string {
  return url.hostname.replace(/^\[(.*)\]$/, '$1');
}

/**
 * Opens a CONNECT tunnel to `host:port` through `proxy`; resolves with the raw socket. The
 * error names the proxy by host and port only (its URL may carry a password).
 */
export function tunnel(proxy: ProxyServer, host: string, port: number, timeoutMs: number): Promise<Duplex> {
  return new Promise((resolve, reject) => {
    const target = authority(host, port);
    const headers: http.OutgoingHttpHeaders = { Host: target };
    const auth = proxy.authorization();
    if (auth) headers['Proxy-Authorization'] = auth;
    const mod = proxy.protocol === 'https:' ? https : http;
    const req = mod.request({ host: proxy.host, port: proxy.port, method: 'CONNECT', path: target, headers, agent: false });
    const timer = timeoutMs > 0 ? setTimeout(() => req.destroy(new Error(`timed out after ${timeoutMs}ms`)), timeoutMs) : undefined;
    req.once('connect', (res, socket) => {
      if (timer) clearTimeout(timer);
      if (res.statusCode !== 200) {
        socket.destroy();
        reject(new Error(`proxy ${proxy.display} refused CONNECT: HTTP ${res.statusCode}`));
        return;
      }
      resolve(socket);
    });
    req.once('error', (err) => {
      if (timer) clearTimeout(timer);
      const code = (err as NodeJS.ErrnoException).code ?? err.message;
      reject(Object.assign(new Error(`proxy ${proxy.display} failed: ${code}`, { cause: err }), { code }));
    });
    req.end();
  });
}

/**
 * A TLS connection with ALPN `protocols`; resolves after the handshake, so the caller can
 * read `alpnProtocol`. SNI is the configured server name, else the host unless it is an IP.
 */
export async function connectTls(ep: Endpoint, protocols: string[], timeoutMs: number): Promise<tls.TLSSocket> {
  const socket = ep.proxy ? await tunnel(ep.proxy, ep.host, ep.port, timeoutMs) : undefined;
  return new Promise((resolve, reject) => {
    const servername = ep.tls?.servername ?? (isIP(ep.host) ? undefined : ep.host);
    const s = tls.connect({
      ...ep.tls,
      host: ep.host,
      port: ep.port,
      ALPNProtocols: protocols,
      ...(servername ? { servername } : {}),
      ...(socket ? { socket } : {}),
    });
    const timer = timeoutMs > 0 ? setTimeout(() => s.destroy(new Error(`timed out after ${timeoutMs}ms`)), timeoutMs) : undefined;
    s.once('secureConnect', () => {
      if (timer) clearTimeout(timer);
      s.removeListener('error', onError);
      resolve(s);
    });
    const onError = (err: Error): void => {
      if (timer) clearTimeout(timer);
      reject(err);
    };
    s.once('error', onError);
  });
}

/** Options of `ConnectingAgent`. */
export interface ConnectingAgentOptions extends https.AgentOptions {
  readonly secure: boolean;
  readonly proxy?: ProxyServer;
  /** Called for every new connection (a metric). */
  readonly onConnection?: () => void;
  readonly connectTimeoutMs: number;
}

/**
 * A keep-alive HTTP/1.1 agent whose sockets go through the proxy's tunnel when one is set.
 * TLS options stay in the request options, which key the pool, so a rotated client
 * certificate gets new connections.
 */
export class ConnectingAgent extends https.Agent {
  private readonly secure: boolean;
  private readonly proxy?: ProxyServer;
  private readonly onConnection?: () => void;
  private readonly connectTimeoutMs: number;

  constructor(opts: ConnectingAgentOptions) {
    const { secure, proxy, onConnection, connectTimeoutMs, ...agentOpts } = opts;
    super(agentOpts);
    // One class for both schemes: https.Agent keys its pool by TLS options (a rotated
    // client certificate needs new sockets); plain http only needs the scheme it checks.
    if (!secure) Object.assign(this, { protocol: 'http:', defaultPort: 80 });
    this.secure = secure;
    this.proxy = proxy;
    this.onConnection = onConnection;
    this.connectTimeoutMs = connectTimeoutMs;
  }

  override createConnection(options: https.RequestOptions, callback?: (err: Error | null, stream: Duplex) => void): Duplex | null | undefined {
    this.onConnection?.();
    const host = String(options.host ?? options.hostname ?? 'localhost').replace(/^\[(.*)\]$/, '$1');
    const port = Number(options.port ?? (this.secure ? 443 : 80));
    // No SNI for an IP address (Node warns, and the certificate is then checked by IP SAN).
    const servername = options.servername || (isIP(host) ? '' : host);
    const secure = (socket?: Duplex): Duplex =>
      tls.connect({ ...(options as tls.ConnectionOptions), host, port, servername, ...(socket ? { socket } : {}) });
    if (!this.proxy) return this.secure ? secure() : net.connect({ host, port });
    const done = callback ?? (() => undefined);
    tunnel(this.proxy, host, port, this.connectTimeoutMs).then(
      (socket) => done(null, this.secure ? secure(socket) : socket),
      (err: Error) => done(err, undefined as unknown as Duplex),
    );
    return undefined;
  }
}
