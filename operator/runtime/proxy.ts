/**
 * HTTP proxy selection as Go's `golang.org/x/net/http/httpproxy` does it (what client-go
 * uses through `http.ProxyFromEnvironment`): HTTPS_PROXY for https servers, HTTP_PROXY for
 * http ones (upper case first, then lower case), NO_PROXY exceptions, and never a proxy for
 * localhost or a loopback address.
 *
 * main.ts passes the environment; nothing here reads `process.env`. A proxy URL may carry
 * basic credentials: they live only in a closure, so neither JSON nor a logger ever sees
 * them, and every message names the proxy by host and port alone.
 */
import { BlockList, isIP } from 'node:net';

/** One proxy server, credential-free but for `authorization()`. */
export interface ProxyServer {
  readonly protocol: 'http:' | 'https:';
  /** Host without brackets. */
  readonly host: string;
  readonly port: number;
  /** `http://host:port`, for messages. */
  readonly display: string;
  /** The Proxy-Authorization header value, when the URL carried user:password. */
  authorization(): string | undefined;
}

/** The proxy settings of the environment, parsed once at startup. */
export interface ProxyConfig {
  readonly httpsProxy?: ProxyServer;
  readonly httpProxy?: ProxyServer;
  /** The NO_PROXY list as written (it holds no secret). */
  readonly noProxy: string;
}

function envAny(env: NodeJS.ProcessEnv, ...names: string[]): string {
  for (const n of names) {
    const v = env[n];
    if (v !== undefined && v !== '') return v;
  }
  return '';
}

/** Parses a proxy URL (`host:port` alone means http://); throws one line without the credentials. */
export function parseProxyUrl(raw: string, what: string): ProxyServer {
  let url: URL;
  try {
    url = new URL(/^[a-z][a-z0-9+.-]*:\/\//i.test(raw) ? raw : `http://${raw}`);
  } catch {
    throw new Error(`${what} is not a URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new Error(`${what}: proxy scheme ${url.protocol} is not supported (use http:// or https://)`);
  }
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  const port = Number(url.port || (url.protocol === 'https:' ? 443 : 80));
  const user = decodeURIComponent(url.username);
  const pass = decodeURIComponent(url.password);
  const auth = user || pass ? `Basic ${Buffer.from(`${user}:${pass}`).toString('base64')}` : undefined;
  return {
    protocol: url.protocol,
    host,
    port,
    display: `${url.protocol}//${isIP(host) === 6 ? `[${host}]` : host}:${port}`,
    authorization: () => auth,
  };
}

/** Reads HTTPS_PROXY, HTTP_PROXY and NO_PROXY (and their lower-case forms) from `env`. */
export function proxyFromEnv(env: NodeJS.ProcessEnv): ProxyConfig | undefined {
  const https = envAny(env, 'HTTPS_PROXY', 'https_proxy');
  const http = envAny(env, 'HTTP_PROXY', 'http_proxy');
  if (!https && !http) return undefined;
  return {
    ...(https ? { httpsProxy: parseProxyUrl(https, 'HTTPS_PROXY') } : {}),
    ...(http ? { httpProxy: parseProxyUrl(http, 'HTTP_PROXY') } : {}),
    noProxy: envAny(env, 'NO_PROXY', 'no_proxy'),
  };
}

/**
 * True when `host:port` is to be reached without a proxy, by httpproxy's rules: localhost
 * and loopback IPs always; `*` matches everything; an entry is a CIDR, an IP, or a domain
 * (`example.com` matches it and its subdomains, `.example.com` and `*.example.com` only
 * subdomains), each optionally with `:port`.
 */
export function bypassProxy(noProxy: string, host: string, port: number): boolean {
  const h = host
    .toLowerCase()
    .replace(/^\[(.*)\]$/, '$1')
    .replace(/\.$/, '');
  if (h === 'localhost') return true;
  const family = isIP(h);
  if (family !== 0 && isLoopback(h, family)) return true;
  for (const raw of noProxy.split(',')) {
    const entry = raw.trim().toLowerCase();
    if (entry === '') continue;
    if (entry === '*') return true;
    if (entry.includes('/')) {
      const [net, bits] = entry.split('/');
      const netFamily = isIP(net ?? '');
      if (netFamily === 0 || family !== netFamily) continue;
      const list = new BlockList();
      try {
        list.addSubnet(net ?? '', Number(bits), netFamily === 6 ? 'ipv6' : 'ipv4');
      } catch {
        continue;
      }
      if (list.check(h, family === 6 ? 'ipv6' : 'ipv4')) return true;
      continue;
    }
    const { name, entryPort } = splitEntry(entry);
    if (entryPort !== undefined && entryPort !== port) continue;
    if (isIP(name) !== 0) {
      if (family !== 0 && sameIp(name, h)) return true;
      continue;
    }
    const domain = name.replace(/^\*\./, '.');
    if (domain.startsWith('.')) {
      if (h.endsWith(domain)) return true;
    } else if (h === domain || h.endsWith(`.${domain}`)) {
      return true;
    }
  }
  return false;
}

/** The proxy for a request to `server` (an http(s) URL), or undefined to connect directly. */
export function proxyFor(config: ProxyConfig | undefined, server: URL): ProxyServer | undefined {
  if (!config) return undefined;
  const proxy = server.protocol === 'https:' ? config.httpsProxy : config.httpProxy;
  if (!proxy) return undefined;
  const port = Number(server.port || (server.protocol === 'https:' ? 443 : 80));
  return bypassProxy(config.noProxy, server.hostname, port) ? undefined : proxy;
}

function splitEntry(entry: string): { name: string; entryPort?: number } {
  const bracketed = /^\[([^\]]+)\](?::(\d+))?$/.exec(entry);
  if (bracketed) return { name: bracketed[1] ?? '', ...(bracketed[2] ? { entryPort: Number(bracketed[2]) } : {}) };
  if (isIP(entry) === 6) return { name: entry };
  const m = /^(.*):(\d+)$/.exec(entry);
  return m ? { name: m[1] ?? '', entryPort: Number(m[2]) } : { name: entry };
}

function isLoopback(ip: string, family: number): boolean {
  if (family === 4) return ip.startsWith('127.');
  const list = new BlockList();
  list.addAddress('::1', 'ipv6');
  list.addSubnet('::ffff:127.0.0.0', 104, 'ipv6');
  return list.check(ip, 'ipv6');
}

function sameIp(a: string, b: string): boolean {
  const fa = isIP(a);
  if (fa !== isIP(b)) return false;
  const list = new BlockList();
  list.addAddress(a, fa === 6 ? 'ipv6' : 'ipv4');
  return list.check(b, fa === 6 ? 'ipv6' : 'ipv4');
}
