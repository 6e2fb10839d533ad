/**
 * Reads a kubeconfig file into a `RestConfig`: the current context's cluster (server,
 * certificate-authority(-data), insecure-skip-tls-verify, tls-server-name) and user
 * (client-certificate(-data)/client-key(-data), token, tokenFile, exec). Relative paths are
 * relative to the file, as kubectl resolves them.
 *
 * Several files (`KUBECONFIG=a:b`) merge as kubectl merges them: the first file to define a
 * cluster, user or context name wins, `current-context` comes from the first file that sets
 * it, relative paths resolve against the file that holds the entry, missing files are skipped.
 *
 * Not supported, with an error rather than a silent fallback: auth-provider (gone from
 * client-go; exec plugins replace it), username/password (basic auth left Kubernetes in
 * 1.19), impersonation (`as`) and proxy-url. Errors are one line and never quote a secret:
 * they name the file, the entry and the field.
 */
import { existsSync, readFileSync } from 'node:fs';
import { delimiter, dirname, isAbsolute, resolve, sep } from 'node:path';
import type * as Yaml from 'yaml';
import { checkCertificateBundle, decodeBase64Field } from './pem';
import { EXEC_API_VERSIONS, ExecCredentialSource, type ExecApiVersion, type ExecClusterInfo } from './exec-credential';
import { errorDetail, oneLineText, staticToken, type CredentialSource, type RestConfig, type TlsConfig } from './rest-config';
import { TokenFileSource } from './token-file';

/** Options of `loadKubeconfig`. */
export interface KubeconfigOptions {
  /** Use this context instead of `current-context`. */
  readonly context?: string;
  /** Environment an exec plugin inherits. @default {} */
  readonly env?: NodeJS.ProcessEnv;
}

type Dict = Record<string, unknown>;

function isRecord(value: unknown): value is Dict {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Field access that reports where a value has the wrong type. */
class Reader {
  constructor(readonly where: string) {}

  fail(message: string): never {
    throw new Error(`${this.where}: ${message}`);
  }

  str(obj: Dict, key: string): string | undefined {
    const v = obj[key];
    if (v === undefined || v === null || v === '') return undefined;
    if (typeof v !== 'string') this.fail(`${key} must be a string`);
    return v;
  }

  bool(obj: Dict, key: string): boolean {
    const v = obj[key];
    if (v === undefined || v === null) return false;
    if (typeof v !== 'boolean') this.fail(`${key} must be true or false`);
    return v;
  }

  /** The `name`d entry of a kubeconfig list (`clusters`, `users`, `contexts`), its body under `field`. */
  named(doc: Dict, list: string, field: string, name: string): Dict {
    const items = doc[list] ?? [];
    if (!Array.isArray(items)) this.fail(`${list} must be a list`);
    const entry: unknown = items.find((i: unknown) => isRecord(i) && i.name === name);
    if (!isRecord(entry)) this.fail(`no ${list.replace(/s$/, '')} named "${oneLineText(name, 80)}"`);
    const body = entry[field] ?? {};
    if (!isRecord(body)) this.fail(`${list.replace(/s$/, '')} "${name}": ${field} must be a mapping`);
    return body;
  }
}

function readPem(r: Reader, base: string, obj: Dict, fileKey: string, dataKey: string, certificate = false): Buffer | undefined {
  const data = r.str(obj, dataKey);
  const file = r.str(obj, fileKey);
  let bytes: Buffer;
  let what: string;
  if (data !== undefined) {
    what = dataKey;
    try {
      bytes = decodeBase64Field(data, dataKey);
    } catch (err) {
      return r.fail((err as Error).message);
    }
  } else {
    if (file === undefined) return undefined;
    const path = isAbsolute(file) ? file : resolve(base, file);
    what = `${fileKey} ${path}`;
    try {
      bytes = readFileSync(path);
    } catch (err) {
      return r.fail(`cannot read ${fileKey} ${path}: ${errorDetail(err)}`);
    }
  }
  // A broken CA is reported here, with its field, not later as a TLS error naming nothing.
  if (certificate) {
    try {
      checkCertificateBundle(bytes, what);
    } catch (err) {
      r.fail((err as Error).message);
    }
  }
  return bytes;
}

function parseDocument(path: string): Dict {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new Error(`cannot read kubeconfig ${path}: ${errorDetail(err)}`, { cause: err });
  }
  // Required here, not imported: in a Pod no kubeconfig is read, and the YAML parser costs
  // about 2 MiB of RSS that the in-cluster operator then never pays.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { parse } = require('yaml') as typeof Yaml;
  let doc: unknown;
  try {
    doc = parse(text);
  } catch (err) {
    // The YAML library's message quotes the offending lines, which may hold a token.
    const e = err as { code?: unknown; linePos?: Array<{ line: number }> };
    const line = e.linePos?.[0]?.line;
    throw new Error(`kubeconfig ${path} is not valid YAML (${String(e.code ?? 'parse error')}${line ? ` at line ${line}` : ''})`);
  }
  if (!isRecord(doc)) throw new Error(`kubeconfig ${path} is not a kubeconfig (expected a mapping with clusters, users and contexts)`);
  return doc;
}

/** Loads `path` (synchronously: it runs once at startup, before anything else is going on). */
export function loadKubeconfig(path: string, opts: KubeconfigOptions = {}): RestConfig {
  return loadKubeconfigs([path], opts);
}

/** Where a merged entry came from: relative paths in it resolve against `base`. */
interface Origin {
  readonly path: string;
  readonly base: string;
}

/**
 * Loads and merges `paths` in kubectl's order (see the module comment); missing files are
 * skipped, and at least one must exist.
 */
export function loadKubeconfigs(paths: readonly string[], opts: KubeconfigOptions = {}): RestConfig {
  const existing = [...new Set(paths.filter((p) => p !== ''))].filter((p) => paths.length === 1 || existsSync(p));
  if (existing.length === 0) throw new Error(`none of the kubeconfig files exist: ${paths.join(delimiter)}`);
  const origins = new Map<unknown, Origin>();
  const merged: Dict = { clusters: [], users: [], contexts: [] };
  for (const path of existing) {
    const doc = parseDocument(path);
    const r = new Reader(`kubeconfig ${path}`);
    merged['current-context'] ??= r.str(doc, 'current-context');
    for (const list of ['clusters', 'users', 'contexts'] as const) {
      const items = doc[list] ?? [];
      if (!Array.isArray(items)) r.fail(`${list} must be a list`);
      const into = merged[list] as unknown[];
      for (const item of items as unknown[]) {
        if (!isRecord(item) || typeof item.name !== 'string') continue;
        if (into.some((x) => isRecord(x) && x.name === item.name)) continue;
        into.push(item);
        origins.set(item, { path, base: dirname(path) });
      }
    }
  }
  const where = existing.length === 1 ? (existing[0] ?? '') : existing.join(delimiter);
  const originOf = (list: string, name: string): Origin => {
    const entry = (merged[list] as unknown[]).find((i) => isRecord(i) && i.name === name);
    return origins.get(entry) ?? { path: where, base: dirname(existing[0] ?? '.') };
  };
  const doc = merged;
  const top = new Reader(`kubeconfig ${where}`);
  const contextName = opts.context ?? top.str(doc, 'current-context') ?? top.fail('current-context is not set');
  const context = top.named(doc, 'contexts', 'context', contextName);
  const ctx = new Reader(`kubeconfig ${originOf('contexts', contextName).path}: context "${contextName}"`);
  const clusterName = ctx.str(context, 'cluster') ?? ctx.fail('names no cluster');
  const userName = ctx.str(context, 'user');

  const cluster = top.named(doc, 'clusters', 'cluster', clusterName);
  const clusterOrigin = originOf('clusters', clusterName);
  const clusterBase = clusterOrigin.base;
  const cr = new Reader(`kubeconfig ${clusterOrigin.path}: cluster "${clusterName}"`);
  const server = cr.str(cluster, 'server') ?? cr.fail('server is not set');
  let url: URL;
  try {
    url = new URL(server);
  } catch {
    return cr.fail('server is not a URL');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') cr.fail(`server must be an https:// URL, not ${url.protocol}`);
  if (cr.str(cluster, 'proxy-url') !== undefined) cr.fail('proxy-url is not supported');
  const insecure = cr.bool(cluster, 'insecure-skip-tls-verify');
  const ca = readPem(cr, clusterBase, cluster, 'certificate-authority', 'certificate-authority-data', true);
  // kubectl refuses the same combination: a CA that would be ignored is a mistake.
  if (insecure && ca) cr.fail('insecure-skip-tls-verify cannot be combined with a certificate authority');
  const serverName = cr.str(cluster, 'tls-server-name');

  let tls: TlsConfig = {
    ...(ca ? { ca } : {}),
    ...(insecure ? { insecureSkipVerify: true } : {}),
    ...(serverName ? { serverName } : {}),
  };
  let credentials: CredentialSource | undefined;
  if (userName !== undefined) {
    const user = top.named(doc, 'users', 'user', userName);
    const userOrigin = originOf('users', userName);
    const ur = new Reader(`kubeconfig ${userOrigin.path}: user "${userName}"`);
    const loaded = userAuth(ur, userOrigin.base, user, { cluster, server, insecure, serverName, ca, env: opts.env ?? {} });
    tls = { ...tls, ...loaded.tls };
    credentials = loaded.credentials;
  }
  const namespace = ctx.str(context, 'namespace');
  return { server, tls, ...(credentials ? { credentials } : {}), ...(namespace ? { namespace } : {}), source: where, context: contextName };
}

interface ClusterFacts {
  readonly cluster: Dict;
  readonly server: string;
  readonly insecure: boolean;
  readonly serverName?: string;
  readonly ca?: Buffer;
  readonly env: NodeJS.ProcessEnv;
}

function userAuth(r: Reader, base: string, user: Dict, facts: ClusterFacts): { tls: TlsConfig; credentials?: CredentialSource } {
  const provider = user['auth-provider'];
  if (provider !== undefined && provider !== null) {
    const name = isRecord(provider) && typeof provider.name === 'string' ? ` "${oneLineText(provider.name, 40)}"` : '';
    r.fail(`auth-provider${name} is not supported; use an exec credential plugin (client.authentication.k8s.io/v1) instead, e.g. kubelogin for OIDC`);
  }
  if (r.str(user, 'username') !== undefined || r.str(user, 'password') !== undefined) {
    r.fail('username/password (basic auth) is not supported; use a token, a client certificate or an exec plugin');
  }
  if (r.str(user, 'as') !== undefined || user['as-groups'] !== undefined || user['as-user-extra'] !== undefined) {
    r.fail('impersonation (as, as-groups, as-user-extra) is not supported');
  }

  const cert = readPem(r, base, user, 'client-certificate', 'client-certificate-data');
  const key = readPem(r, base, user, 'client-key', 'client-key-data');
  if ((cert === undefined) !== (key === undefined)) r.fail(cert ? 'client-certificate has no client-key' : 'client-key has no client-certificate');
  const tls: TlsConfig = cert && key ? { cert, key } : {};

  const token = r.str(user, 'token');
  const tokenFile = r.str(user, 'tokenFile');
  const exec = user.exec;
  const hasExec = exec !== undefined && exec !== null;
  if (hasExec && (token !== undefined || tokenFile !== undefined)) r.fail('sets both exec and token/tokenFile; keep one');

  let credentials: CredentialSource | undefined;
  if (hasExec) {
    credentials = execSource(r, base, exec, facts);
  } else if (tokenFile !== undefined) {
    // As client-go: a token file wins over an inline token, and is re-read as it rotates.
    const file = isAbsolute(tokenFile) ? tokenFile : resolve(base, tokenFile);
    try {
      readFileSync(file);
    } catch (err) {
      r.fail(`cannot read tokenFile ${file}: ${errorDetail(err)}`);
    }
    credentials = new TokenFileSource(file);
  } else if (token !== undefined) {
    credentials = staticToken(token);
  }
  return credentials ? { tls, credentials } : { tls };
}

function execSource(r: Reader, base: string, exec: unknown, facts: ClusterFacts): CredentialSource {
  if (!isRecord(exec)) return r.fail('exec must be a mapping');
  const er = new Reader(`${r.where}: exec`);
  const apiVersion = er.str(exec, 'apiVersion') ?? er.fail('apiVersion is not set');
  if (!(EXEC_API_VERSIONS as readonly string[]).includes(apiVersion)) {
    er.fail(`apiVersion "${oneLineText(apiVersion, 80)}" is not supported (use ${EXEC_API_VERSIONS.join(' or ')})`);
  }
  const command = er.str(exec, 'command') ?? er.fail('command is not set');
  const args = exec.args ?? [];
  if (!Array.isArray(args) || !args.every((a) => typeof a === 'string')) er.fail('args must be a list of strings');
  const envList = exec.env ?? [];
  if (!Array.isArray(envList)) er.fail('env must be a list of {name, value}');
  const env: Record<string, string> = {};
  for (const item of envList as unknown[]) {
    if (!isRecord(item) || typeof item.name !== 'string' || typeof item.value !== 'string') return er.fail('env must be a list of {name, value}');
    env[item.name] = item.value;
  }
  // The operator has no terminal: a plugin that must prompt cannot work here.
  if (exec.interactiveMode === 'Always') er.fail('interactiveMode Always needs a terminal, which the operator does not have');
  const installHint = er.str(exec, 'installHint');
  // As client-go: a command with a path separator is relative to the kubeconfig; a bare name is looked up on PATH.
  const resolved = !isAbsolute(command) && command.includes(sep) ? resolve(base, command) : command;
  return new ExecCredentialSource(
    {
      apiVersion: apiVersion as ExecApiVersion,
      command: resolved,
      args: args as string[],
      env,
      ...(installHint ? { installHint } : {}),
      ...(exec.provideClusterInfo === true ? { cluster: clusterInfo(facts) } : {}),
    },
    { env: facts.env },
  );
}

function clusterInfo(f: ClusterFacts): ExecClusterInfo {
  const extensions = f.cluster.extensions;
  const ext = Array.isArray(extensions)
    ? (extensions as unknown[]).find((e) => isRecord(e) && e.name === 'client.authentication.k8s.io/exec')
    : undefined;
  return {
    server: f.server,
    ...(f.serverName ? { 'tls-server-name': f.serverName } : {}),
    ...(f.insecure ? { 'insecure-skip-tls-verify': true } : {}),
    ...(f.ca ? { 'certificate-authority-data': f.ca.toString('base64') } : {}),
    ...(isRecord(ext) && ext.extension !== undefined ? { config: ext.extension } : {}),
  };
}
