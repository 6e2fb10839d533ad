/**
 * The Pod's own ServiceAccount as a `RestConfig`, as client-go's `rest.InClusterConfig`:
 * `KUBERNETES_SERVICE_HOST`/`_PORT`, and the token and CA the kubelet mounts. The token is a
 * projected, expiring token that the kubelet rewrites, so it is re-read as it changes.
 */
import { readFileSync } from 'node:fs';
import { isIPv6 } from 'node:net';
import { join } from 'node:path';
import { checkCertificateBundle } from './pem';
import { errorDetail, type RestConfig } from './rest-config';
import { TokenFileSource } from './token-file';

/** Where the kubelet mounts the ServiceAccount token, CA and namespace. */
export const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

/** Options of `inClusterConfig`. */
export interface InClusterOptions {
  /** Read for KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT. */
  readonly env: NodeJS.ProcessEnv;
  /** @default SERVICE_ACCOUNT_DIR */
  readonly serviceAccountDir?: string;
}

/** True when the environment names the cluster's API Service, i.e. the process runs in a Pod. */
export function inClusterEnv(env: NodeJS.ProcessEnv): boolean {
  return Boolean(env['KUBERNETES_SERVICE_HOST'] && env['KUBERNETES_SERVICE_PORT']);
}

/** Builds the in-cluster config; throws (one line) when not in a Pod or the mount is missing. */
export function inClusterConfig(opts: InClusterOptions): RestConfig {
  const host = opts.env['KUBERNETES_SERVICE_HOST'];
  const port = opts.env['KUBERNETES_SERVICE_PORT'];
  if (!host || !port) throw new Error('not running in a cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set');
  const dir = opts.serviceAccountDir ?? SERVICE_ACCOUNT_DIR;
  const read = (file: string): Buffer => {
    const path = join(dir, file);
    try {
      return readFileSync(path);
    } catch (err) {
      throw new Error(`in-cluster config: cannot read ${path}: ${errorDetail(err)}`, { cause: err });
    }
  };
  // Read once now so a Pod without a mounted token fails at startup, not at the first request.
  read('token');
  const ca = read('ca.crt');
  checkCertificateBundle(ca, `in-cluster config: ${join(dir, 'ca.crt')}`);
  let namespace: string | undefined;
  try {
    namespace = readFileSync(join(dir, 'namespace'), 'utf8').trim() || undefined;
  } catch {
    // Optional: only informational.
  }
  return {
    server: `https://${isIPv6(host) ? `[${host}]` : host}:${port}`,
    tls: { ca },
    credentials: new TokenFileSource(join(dir, 'token')),
    ...(namespace ? { namespace } : {}),
    source: 'in-cluster',
  };
}
