/**
 * Uninstalling BucketOperator, end to end (docs/uninstall.md): dist/ applied, the operator
 * image running under its ServiceAccount token, the mock provider as a real process.
 *
 * These tests delete the CRDs, which every other file needs, so this file runs on a control
 * plane of its own. Each test installs dist/ and starts the operator itself (install()),
 * since an uninstall takes the operator's ServiceAccount, and with it its token, away.
 *
 * What they prove, on the end state of the world (objects, provider buckets):
 * - the CRDs deleted while the operator runs (`kubectl delete -f dist/00-crds.yaml`, or a
 *   GitOps prune that deletes them): every StorageBucket is released with the reason
 *   `crdDeleting` and every provider bucket is kept, whatever its deletionPolicy;
 * - the documented order (keep or delete the buckets, then the operator, then the CRDs)
 *   deprovisions exactly what was deleted and leaves nothing Terminating;
 * - a prune of the whole app that takes the operator away first: nothing is deleted at the
 *   provider, and the operator applied again without its CRDs releases what was left.
 */
import { join } from 'node:path';
import { expect } from 'chai';
import { REPO_ROOT } from '../../infra/generate';
import { RELEASED_ON_CRD_DELETION_METRIC } from '../../operator/bucket/crd-guard';
import { waitForSecretPolicy } from '../support/admission';
import { startControlPlane, type ControlPlane } from '../support/control-plane';
import { eventually } from '../support/eventually';
import { apply, bucketManifest, condition, getJson, kubectlOk, waitForObject, type BucketJson } from '../support/kube';
import { startOperatorProcess, type OperatorProcess } from '../support/operator-process';
import { scrape, sum } from '../support/prometheus';
import { countRequests } from '../support/provider-process';
import { useStack, type Tenant } from '../support/stack';

const DIST = join(REPO_ROOT, 'dist');
const CRDS = join(DIST, '00-crds.yaml');
/** dist/ without its CRDs, in the order the operator is deleted: manager, policy, RBAC, namespace. */
const OPERATOR_FILES = ['04-manager.yaml', '03-admission-policy.yaml', '02-rbac.yaml', '01-namespace.yaml'].map((f) => join(DIST, f));
const SB_CRD = 'storagebuckets.storage.avalonhosting.example';
const BPC_CRD = 'bucketproviderconfigs.storage.avalonhosting.example';
const OPERATOR_NS = 'bucketoperator-system';
const OPERATOR_SA = 'bucketoperator-controller-manager';
const IN_USE = 'storage.avalonhosting.example/in-use';
/** Any DELETE the operator sent the provider. */
const DELETES = /^DELETE /;

const isReady = (b: BucketJson) => condition(b, 'Ready')?.status === 'True' && b.status?.observedGeneration === b.metadata.generation;

describe('uninstall (a control plane of its own: the CRDs are deleted)', function () {
  this.timeout(300_000);
  let started: Promise<ControlPlane> | undefined;
  const controlPlane = () => (started ??= startControlPlane());
  // No operator from the stack: each test starts its own (install()), with a fresh token.
  const stack = useStack(controlPlane, { name: 'uninstall', operator: false, waitForCleanup: false });
  let operator: OperatorProcess | undefined;

  afterEach(async () => {
    await operator?.kill('SIGTERM');
    operator = undefined;
  });
  after(async function () {
    this.timeout(60_000);
    const cp = await started?.catch(() => undefined);
    await cp?.stop();
  });

  /** Applies `files` (or all of dist/, CRDs first) and starts the operator under a fresh token of its ServiceAccount. */
  const install = async (files?: readonly string[]): Promise<OperatorProcess> => {
    const { cp } = stack;
    if (!files) {
      await kubectlOk(cp, ['apply', '-f', CRDS]);
      await kubectlOk(cp, ['wait', '--for=condition=Established', '--timeout=60s', `crd/${SB_CRD}`, `crd/${BPC_CRD}`]);
    }
    await kubectlOk(cp, ['apply', ...(files ?? [DIST]).flatMap((f) => ['-f', f])]);
    await waitForSecretPolicy(cp, `system:serviceaccount:${OPERATOR_NS}:${OPERATOR_SA}`, 'default');
    const kubeconfig = await cp.serviceAccountKubeconfig(OPERATOR_NS, OPERATOR_SA);
    operator = await startOperatorProcess({ kubeconfig, logFile: join(stack.dir, 'operator.log'), driftInterval: '2s' });
    return operator;
  };

  /** Creates the buckets (name -> spec) in the tenant and returns their provider ids once all are Ready. */
  const readyBuckets = async (t: Tenant, specs: Record<string, Record<string, unknown>>): Promise<Record<string, string>> => {
    await apply(stack.cp, { apiVersion: 'v1', kind: 'List', items: Object.entries(specs).map(([name, spec]) => bucketManifest(t.ns, name, spec)) });
    const ids: Record<string, string> = {};
    for (const name of Object.keys(specs)) {
      const b = await waitForObject<BucketJson>(stack.cp, 'sbucket', name, t.ns, isReady, `StorageBucket ${t.ns}/${name} to be Ready`, 90_000);
      ids[name] = b.status?.id ?? '';
    }
    return ids;
  };

  /** The ids of the tenant's buckets at its provider, sorted. */
  const atProvider = async (t: Tenant) => (await t.provider.buckets(t.ns)).map((b) => b.id).sort();

  const crdExists = async (name: string) => (await stack.cp.kubectl(['get', 'crd', name, '-o', 'name'])).code === 0;

  /** Waits until both CRDs are gone: no object of either kind holds them any more. */
  const crdsGone = () =>
    eventually(async () => !(await crdExists(SB_CRD)) && !(await crdExists(BPC_CRD)), {
      description: 'both CRDs to be gone (no finalizer left holding their objects)',
      timeoutMs: 90_000,
      intervalMs: 500,
    });

  /** Waits until the tenant's credential Secret no longer carries the operator's in-use finalizer. */
  const secretReleased = (t: Tenant) =>
    eventually(
      async () => {
        const s = await getJson<{ metadata: { finalizers?: string[] } }>(stack.cp, 'secret', 'provider-key', t.ns);
        return s !== undefined && !(s.metadata.finalizers ?? []).includes(IN_USE);
      },
      { description: `the in-use finalizer to leave Secret ${t.ns}/provider-key`, timeoutMs: 60_000, intervalMs: 500 },
    );

  it('deleting the CRDs while the operator runs releases every StorageBucket, with its reason, and keeps every provider bucket', async () => {
    const op = await install();
    const t = await stack.tenant({ ownProvider: {} });
    const ids = await readyBuckets(t, { alpha: {}, beta: {}, gamma: { deletionPolicy: 'Delete' }, kept: { deletionPolicy: 'Orphan' } });

    // What `kubectl delete -f dist/00-crds.yaml` does, and a GitOps prune that deletes the CRDs:
    // the API server deletes every object of the kinds, and our finalizers hold them.
    await kubectlOk(stack.cp, ['delete', '-f', CRDS, '--wait=false']);
    await crdsGone();

    // Released, not deprovisioned: on the code before the guard the three Delete-policy buckets went.
    expect(await atProvider(t), 'provider buckets').to.deep.equal(Object.values(ids).sort());
    expect(countRequests(await t.provider.stats(), DELETES), 'DELETEs at the provider').to.equal(0);
    // The objects are gone, so the reason is in the log (one info line each) and the counter.
    const released = op
      .logs()
      .split('\n')
      .filter((line) => line.includes('"msg":"released finalizer"') && line.includes('"why":"crdDeleting"'));
    expect(released, 'log lines releasing a finalizer for crdDeleting').to.have.length(4);
    expect(sum(await scrape(op.metricsUrl), RELEASED_ON_CRD_DELETION_METRIC)).to.equal(4);
    // The config went with its CRD, so the credential Secret is left free to delete.
    await secretReleased(t);
  });

  it('the documented order (keep or delete the buckets, then the operator, then the CRDs) leaves nothing behind', async () => {
    const op = await install();
    const t = await stack.tenant({ ownProvider: {} });
    const ids = await readyBuckets(t, { keep: {}, drop: {} });
    const { cp } = stack;

    // 1. Keep or delete: Orphan on what stays, then every StorageBucket and config deleted, waited for.
    await kubectlOk(cp, ['patch', 'storagebucket', 'keep', '-n', t.ns, '--type=merge', '-p', '{"spec":{"deletionPolicy":"Orphan"}}']);
    await kubectlOk(cp, ['delete', 'storagebuckets', '--all', '--all-namespaces', '--timeout=90s']);
    await kubectlOk(cp, ['delete', 'bucketproviderconfigs', '--all', '--all-namespaces', '--timeout=90s']);
    await secretReleased(t);
    expect(await atProvider(t), 'after step 1').to.deep.equal([ids['keep']]);

    // 2. The operator: its Pod stops with the Deployment; then its namespace, RBAC and policy.
    await op.kill('SIGTERM');
    await kubectlOk(cp, ['delete', ...OPERATOR_FILES.flatMap((f) => ['-f', f]), '--timeout=120s']);

    // 3. The CRDs: no finalizer holds them, so kubectl returns once they are gone.
    await kubectlOk(cp, ['delete', '-f', CRDS, '--timeout=60s']);
    expect(await crdExists(SB_CRD)).to.equal(false);
    expect(await crdExists(BPC_CRD)).to.equal(false);
    expect(await atProvider(t), 'after step 3').to.deep.equal([ids['keep']]);
  });

  it('a prune of the whole app that takes the operator first deletes nothing at the provider; the operator applied again alone releases the rest', async () => {
    const op = await install();
    const t = await stack.tenant({ ownProvider: {} });
    const ids = await readyBuckets(t, { one: {}, two: {}, three: {} });
    const { cp } = stack;

    // A prune in reverse sync-wave order: the operator's Pod goes first, then everything else.
    await op.kill('SIGTERM');
    await kubectlOk(cp, ['delete', '-f', DIST, '--wait=false']);
    await eventually(async () => (await cp.kubectl(['get', 'namespace', OPERATOR_NS, '-o', 'name'])).code !== 0, {
      description: `namespace ${OPERATOR_NS} to be gone`,
      timeoutMs: 90_000,
      intervalMs: 500,
    });
    // Nobody is left to release the objects: the CRDs wait, Terminating, and the buckets are there.
    expect(await crdExists(SB_CRD), 'StorageBucket CRD held by its objects').to.equal(true);
    const held = await kubectlOk(cp, ['get', 'storagebuckets', '-n', t.ns, '-o', 'jsonpath={.items[*].metadata.name}']);
    expect(held.split(' ').sort()).to.deep.equal(['one', 'three', 'two']);

    // The way out (docs/uninstall.md): the operator applied again without its CRDs sees them
    // being deleted, releases every object and keeps every bucket; on the code before the guard
    // it deprovisioned all three here.
    const again = await install(OPERATOR_FILES.slice().reverse());
    await crdsGone();
    await secretReleased(t);
    expect(await atProvider(t), 'provider buckets').to.deep.equal(Object.values(ids).sort());
    expect(countRequests(await t.provider.stats(), DELETES), 'DELETEs at the provider').to.equal(0);
    expect(sum(await scrape(again.metricsUrl), RELEASED_ON_CRD_DELETION_METRIC)).to.equal(3);

    // Then the operator goes again, for good.
    await again.kill('SIGTERM');
    await kubectlOk(cp, ['delete', ...OPERATOR_FILES.flatMap((f) => ['-f', f]), '--timeout=120s']);
  });
});
