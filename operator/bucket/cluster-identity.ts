/**
 * The identity of the cluster the operator runs in, written to every provider bucket's owner
 * tags so two clusters sharing a provider account never take each other's buckets. By default
 * the uid of the kube-system namespace, which lives as long as the cluster and is the same for
 * every replica (the identity kubeadm, Cilium and Velero use as well); `--cluster-id` replaces
 * it, e.g. for a cluster that takes over from one that is gone for good.
 */
import { realClock, sleep, type Clock, type KubeObject, type ResourceKind } from '../runtime';

/** The namespace whose uid names the cluster. */
export const CLUSTER_IDENTITY_NAMESPACE = 'kube-system';

const NAMESPACE: ResourceKind = { group: '', version: 'v1', kind: 'Namespace', plural: 'namespaces', namespaced: false };

/** Reads one object; the KubeClient's `get`. */
export interface NamespaceReader {
  get<T extends KubeObject>(kind: ResourceKind, namespace: string, name: string, opts?: { signal?: AbortSignal }): Promise<T>;
}

/** How {@link readClusterId} waits between tries. */
export interface ReadRetry {
  /** Tries in all. @default 8 */
  readonly attempts?: number;
  /** The first wait; it doubles, up to 8 s. @default 500 */
  readonly firstDelayMs?: number;
  /** @default the real clock */
  readonly clock?: Clock;
}

/**
 * Reads the cluster identity, or explains in one line why it cannot. Tries again for about
 * half a minute first: right after `kubectl apply -f dist/` the operator may start before the
 * API server's authorizer has seen its new ClusterRoleBinding.
 */
export async function readClusterId(client: NamespaceReader, signal?: AbortSignal, retry: ReadRetry = {}): Promise<string> {
  const attempts = retry.attempts ?? 8;
  let delay = retry.firstDelayMs ?? 500;
  for (let i = 1; ; i++) {
    try {
      const ns = await client.get<KubeObject>(NAMESPACE, '', CLUSTER_IDENTITY_NAMESPACE, { signal });
      const uid = ns.metadata?.uid;
      if (!uid) throw new Error('it has no uid');
      return uid;
    } catch (err) {
      if (i >= attempts || signal?.aborted) {
        const why = err instanceof Error ? err.message : String(err);
        throw new Error(
          `cannot derive the cluster identity from namespace ${CLUSTER_IDENTITY_NAMESPACE} (${why}); grant get on it or pass --cluster-id`,
          {
            cause: err,
          },
        );
      }
    }
    await sleep(retry.clock ?? realClock, delay, signal);
    delay = Math.min(delay * 2, 8000);
  }
}
