/**
 * The identity of the cluster the operator runs in, written to every provider bucket's owner
 * tags so two clusters sharing a provider account never take each other's buckets. By default
 * the uid of the kube-system namespace, which lives as long as the cluster and is the same for
 * every replica (the identity kubeadm, Cilium and Velero use as well); `--cluster-id` replaces
 * it, e.g. for a cluster that takes over from one that is gone for good.
 */
import type { KubeObject, ResourceKind } from '../runtime';

/** The namespace whose uid names the cluster. */
export const CLUSTER_IDENTITY_NAMESPACE = 'kube-system';

const NAMESPACE: ResourceKind = { group: '', version: 'v1', kind: 'Namespace', plural: 'namespaces', namespaced: false };

/** Reads one object; the KubeClient's `get`. */
export interface NamespaceReader {
  get<T extends KubeObject>(kind: ResourceKind, namespace: string, name: string, opts?: { signal?: AbortSignal }): Promise<T>;
}

/** Reads the cluster identity, or explains in one line why it cannot. */
export async function readClusterId(client: NamespaceReader, signal?: AbortSignal): Promise<string> {
  try {
    const ns = await client.get<KubeObject>(NAMESPACE, '', CLUSTER_IDENTITY_NAMESPACE, { signal });
    const uid = ns.metadata?.uid;
    if (!uid) throw new Error('it has no uid');
    return uid;
  } catch (err) {
    const why = err instanceof Error ? err.message : String(err);
    throw new Error(
      `cannot derive the cluster identity from namespace ${CLUSTER_IDENTITY_NAMESPACE} (${why}); grant get on it or pass --cluster-id`,
      {
        cause: err,
      },
    );
  }
}
