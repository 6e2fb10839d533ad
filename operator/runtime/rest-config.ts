/**
 * How the runtime reaches an API server: its URL, how its certificate is checked, and what
 * each request authenticates with. Loaded from a kubeconfig file (`kubeconfig.ts`) or the
 * Pod's ServiceAccount (`in-cluster.ts`), in controller-runtime's order (`load-config.ts`).
 *
 * This replaces client-node's `KubeConfig`: importing that package costs about 70 MiB of
 * RSS (its generated models load at import), more than the rest of the operator together.
 */
import type { ProxyConfig } from './proxy';

/** TLS settings of the connection to the API server. */
export interface TlsConfig {
  /** PEM bundle of the CAs that sign the server certificate; Node's roots when unset. */
  readonly ca?: Buffer;
  /** Static client certificate (PEM); an exec plugin's certificate overrides it. */
  readonly cert?: Buffer;
  /** Key of `cert` (PEM). */
  readonly key?: Buffer;
  /** Accept any server certificate (kubeconfig `insecure-skip-tls-verify`). */
  readonly insecureSkipVerify?: boolean;
  /** SNI and the name the server certificate must carry, when not the URL's host. */
  readonly serverName?: string;
}

/** What one request authenticates with, besides the static TLS client certificate. */
export interface Credentials {
  /** Sent as `Authorization: Bearer <token>`. */
  readonly token?: string;
  /** A client certificate pair (PEM) that replaces `TlsConfig.cert`/`key` for this request. */
  readonly cert?: string;
  readonly key?: string;
}

/**
 * Supplies credentials per request, so rotated tokens (projected ServiceAccount tokens, exec
 * plugins) are picked up without a restart. Errors are one line and never contain secrets.
 */
export interface CredentialSource {
  get(): Promise<Credentials>;
  /** Drops a cached credential after the server rejected it (401), so the next get renews it. */
  invalidate?(): void;
}

/** Everything a `KubeClient` needs to talk to one API server. */
export interface RestConfig {
  /** Base URL, e.g. `https://10.0.0.1:443`; a path prefix is kept. */
  readonly server: string;
  readonly tls: TlsConfig;
  /** Per-request credentials; none for client-certificate-only or anonymous access. */
  readonly credentials?: CredentialSource;
  /** The kubeconfig context's namespace, or the Pod's namespace in a cluster. */
  readonly namespace?: string;
  /** HTTP(S) proxy settings from the environment (`proxyFromEnv`); none means direct. */
  readonly proxy?: ProxyConfig;
  /** Where the config came from (a file path, or `in-cluster`), for logs. Never secret. */
  readonly source: string;
  /** The kubeconfig context it was loaded from (none in a cluster), for messages. */
  readonly context?: string;
}

/** A fixed bearer token (kubeconfig `token`). */
export function staticToken(token: string): CredentialSource {
  const creds: Credentials = { token };
  return { get: async () => creds };
}

/** Collapses whitespace so an error built from file content or config stays on one line. */
export function oneLineText(text: string, max = 200): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max)}...` : flat;
}

/** `code` of a Node system error (ENOENT, EACCES, ...), else its message on one line. */
export function errorDetail(err: unknown): string {
  if (err instanceof Error) return (err as NodeJS.ErrnoException).code ?? oneLineText(err.message);
  return oneLineText(String(err));
}
