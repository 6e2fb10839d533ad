/**
 * Finds the API server configuration in controller-runtime's order (`config.GetConfig`):
 *
 * 1. the `--kubeconfig` flag;
 * 2. `$KUBECONFIG`: every path of the list, merged as kubectl merges them (`loadKubeconfigs`);
 * 3. the in-cluster ServiceAccount, when KUBERNETES_SERVICE_HOST/PORT are set;
 * 4. `~/.kube/config`, when it exists.
 *
 * As in controller-runtime, an in-cluster config that cannot be loaded (no mounted token)
 * falls through to `~/.kube/config`; its error is reported when nothing else is found.
 *
 * HTTPS_PROXY/HTTP_PROXY/NO_PROXY of `env` apply to whichever config is found (`proxy.ts`).
 */
import { existsSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { inClusterConfig, inClusterEnv } from './in-cluster';
import { loadKubeconfig, loadKubeconfigs } from './kubeconfig';
import { proxyFromEnv } from './proxy';
import type { RestConfig } from './rest-config';

/** Inputs of `loadRestConfig`; main.ts passes the flag, `process.env` and `os.homedir()`. */
export interface LoadRestConfigOptions {
  /** The `--kubeconfig` flag. */
  readonly kubeconfig?: string;
  /**
   * Use this kubeconfig context instead of `current-context` (kubectl's `--context`). With a
   * context the in-cluster ServiceAccount is never used: it has no contexts.
   */
  readonly context?: string;
  /** KUBECONFIG, KUBERNETES_SERVICE_HOST/PORT, the proxy variables; also what exec plugins inherit. */
  readonly env: NodeJS.ProcessEnv;
  /** Home directory for `~/.kube/config`; skipped when empty. */
  readonly homeDir?: string;
  /** @default the kubelet's mount, see `SERVICE_ACCOUNT_DIR` */
  readonly serviceAccountDir?: string;
}

/** Loads the first configuration found; throws a one-line error naming what was tried. */
export function loadRestConfig(opts: LoadRestConfigOptions): RestConfig {
  const config = findRestConfig(opts);
  const proxy = proxyFromEnv(opts.env);
  return proxy ? { ...config, proxy } : config;
}

function findRestConfig(opts: LoadRestConfigOptions): RestConfig {
  const { env } = opts;
  const kc = opts.context === undefined ? { env } : { env, context: opts.context };
  if (opts.kubeconfig) return loadKubeconfig(opts.kubeconfig, kc);
  const fromEnv = (env['KUBECONFIG'] ?? '').split(delimiter).filter((p) => p !== '');
  if (fromEnv.length > 0) return loadKubeconfigs(fromEnv, kc);
  let inClusterError: string | undefined;
  if (inClusterEnv(env) && opts.context === undefined) {
    try {
      return inClusterConfig({ env, ...(opts.serviceAccountDir ? { serviceAccountDir: opts.serviceAccountDir } : {}) });
    } catch (err) {
      inClusterError = err instanceof Error ? err.message : String(err);
    }
  }
  const home = opts.homeDir ? join(opts.homeDir, '.kube', 'config') : undefined;
  if (home && existsSync(home)) return loadKubeconfig(home, kc);
  throw new Error(
    inClusterError
      ? `no kubeconfig found and ${inClusterError}`
      : `no kubeconfig found: pass --kubeconfig, set KUBECONFIG, run in a cluster, or create ${home ?? '~/.kube/config'}`,
  );
}
