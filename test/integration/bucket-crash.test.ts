/**
 * Crash safety: the operator is SIGKILLed at arbitrary points while 20 buckets are created and
 * again while they are deleted, the provider drops the connection after committing some
 * creates, and the API server restarts mid-way. Afterwards there is exactly one provider bucket per StorageBucket, and none once
 * they are deleted.
 */
import { expect } from 'chai';
import { eventually } from '../support/eventually';
import { apply, bucketManifest, condition, kubectlOk, type BucketJson } from '../support/kube';
import { useStack, type Tenant } from '../support/stack';
import { sharedControlPlane } from './setup';

const COUNT = 20;

/** Deterministic pseudo-random delays, so a failing run can be replayed. */
function mulberry32(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe('crash safety (operator killed mid-flight, provider drops committed creates, API server restarts)', function () {
  this.timeout(300_000);
  const stack = useStack(sharedControlPlane, {
    name: 'crash',
    provider: { activationDelayMs: 300 },
    // One Pod name throughout: a SIGKILL and restart is a container restart in the same Pod,
    // which takes its own Lease back at once instead of waiting for it to expire.
    operator: { pollInterval: '300ms', podName: 'bucketoperator-crash-test', flags: { 'leader-election-id': 'crash-test' } },
  });

  /** Kills the operator after a pseudo-random delay drawn from `random`, and starts it again. */
  const crashAfterRandomDelay = async (random: () => number) => {
    await new Promise((r) => setTimeout(r, 200 + Math.floor(random() * 1200)));
    await stack.restartOperator('SIGKILL');
  };
  const listBuckets = async (t: Tenant) =>
    (JSON.parse(await kubectlOk(stack.cp, ['get', 'sbucket', '-n', t.ns, '-o', 'json'])) as { items: BucketJson[] }).items;
  const createAll = (t: Tenant) =>
    apply(stack.cp, {
      apiVersion: 'v1',
      kind: 'List',
      items: Array.from({ length: COUNT }, (_, i) => bucketManifest(t.ns, `b${i}`, { sizeGB: 1 + i })),
    });
  const allReady = (t: Tenant) =>
    eventually(async () => (await listBuckets(t)).filter((b) => condition(b, 'Ready')?.status === 'True').length === COUNT, {
      description: `all ${COUNT} buckets to be Ready`,
      timeoutMs: 180_000,
      intervalMs: 500,
    });

  it('creates exactly one provider bucket per StorageBucket', async () => {
    const random = mulberry32(20261129);
    const t = await stack.tenant({ ownProvider: { activationDelayMs: 300, faults: { dropAfterCommitOnCreate: 0.5, seed: 7 } } });
    await createAll(t);
    for (let i = 0; i < 6; i++) await crashAfterRandomDelay(random);
    // An API server outage in the middle of it must only delay the work.
    await stack.cp.restartApiServer();
    await t.provider.setFaults({});
    await allReady(t);

    const dropped = (await t.provider.stats()).requests['POST /buckets dropped'] ?? 0;
    expect(dropped, 'the provider dropped some committed creates').to.be.greaterThan(0);
    const atProvider = await t.provider.buckets(t.ns);
    for (const b of await listBuckets(t)) {
      const mine = atProvider.filter((x) => x.tags['kubernetes-name'] === b.metadata.name);
      expect(
        mine.map((x) => x.id),
        b.metadata.name,
      ).to.deep.equal([b.status?.id]);
    }
    expect(atProvider).to.have.length(COUNT);
  });

  it('leaves no provider bucket behind after deletion, even when killed while deleting', async () => {
    const random = mulberry32(20261130);
    const t = await stack.tenant({ ownProvider: { activationDelayMs: 300 } });
    await createAll(t);
    await allReady(t);
    expect(await t.provider.buckets(t.ns)).to.have.length(COUNT);
    await kubectlOk(stack.cp, ['delete', 'sbucket', '--all', '-n', t.ns, '--wait=false']);
    for (let i = 0; i < 3; i++) await crashAfterRandomDelay(random);
    await eventually(async () => (await listBuckets(t)).length === 0, {
      description: 'every StorageBucket to be gone',
      timeoutMs: 120_000,
      intervalMs: 500,
    });
    expect(await t.provider.buckets(t.ns)).to.deep.equal([]);
  });
});
