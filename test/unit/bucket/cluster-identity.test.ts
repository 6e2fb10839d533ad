import { expect } from 'chai';
import { readClusterId, type NamespaceReader } from '../../../operator/bucket/cluster-identity';
import { ApiError, type KubeObject } from '../../../operator/runtime';

/** A reader that refuses `refusals` times (as before RBAC has caught up), then answers `uid`. */
function reader(refusals: number, uid: string | undefined): NamespaceReader & { calls: number } {
  const r = {
    calls: 0,
    async get<T extends KubeObject>(): Promise<T> {
      r.calls++;
      if (r.calls <= refusals) throw new ApiError(403, 'Forbidden', 'namespaces "kube-system" is forbidden');
      return { metadata: { name: 'kube-system', ...(uid ? { uid } : {}) } } as T;
    },
  };
  return r;
}

describe('readClusterId', () => {
  it('is the uid of kube-system', async () => {
    expect(await readClusterId(reader(0, 'u-1'), undefined, { firstDelayMs: 0 })).to.equal('u-1');
  });

  it('tries again while the new ClusterRoleBinding is not yet in force', async () => {
    const r = reader(3, 'u-1');
    expect(await readClusterId(r, undefined, { firstDelayMs: 0 })).to.equal('u-1');
    expect(r.calls).to.equal(4);
  });

  it('gives up with a message that says what to do', async () => {
    const r = reader(100, 'u-1');
    const err = await readClusterId(r, undefined, { firstDelayMs: 0, attempts: 3 }).catch((e: Error) => e);
    expect(r.calls).to.equal(3);
    expect((err as Error).message).to.equal(
      'cannot derive the cluster identity from namespace kube-system (namespaces "kube-system" is forbidden); grant get on it or pass --cluster-id',
    );
  });

  it('a namespace without a uid is an error too', async () => {
    const err = await readClusterId(reader(0, undefined), undefined, { firstDelayMs: 0, attempts: 1 }).catch((e: Error) => e);
    expect((err as Error).message).to.include('(it has no uid)');
  });
});
