/**
 * The ValidatingAdmissionPolicy in dist/ on a real control plane, with requests made as the
 * operator's ServiceAccount (a TokenRequest token, so RBAC and admission see the operator's
 * user) through the operator's own REST client: every write the operator must not make is
 * refused with a message naming the rule, the writes it does make pass, and other users are
 * not affected.
 */
import { expect } from 'chai';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { V1Secret, V1Service } from '@kubernetes/client-node';
import { loadKubeconfig } from '../../operator/runtime/kubeconfig';
import { synthDist } from '../../infra/app';
import { CREDENTIALS_SECRET_LABEL, CREDENTIALS_SECRET_TYPE, MANAGED_BY_LABEL, MANAGED_BY_VALUE } from '../../operator/api/v1';
import { SECRET, SERVICE } from '../../operator/bucket/kinds';
import { SECRET_IN_USE_FINALIZER } from '../../operator/bucket/secret-protection';
import { applyObject } from '../../operator/runtime/apply';
import { ApiError } from '../../operator/runtime/api-errors';
import { KubeClient } from '../../operator/runtime/client';
import { addFinalizer, removeFinalizer } from '../../operator/runtime/finalizers';
import { waitForSecretPolicy } from '../support/admission';
import { type ControlPlane } from '../support/control-plane';
import { applyDist } from '../support/dist';
import { kubectlOk } from '../support/kube';
import { freshNamespace, sharedControlPlane } from './setup';
import { eventually } from '../support/eventually';

const OPERATOR_NS = 'bucketoperator-system';
const OPERATOR_SA = 'bucketoperator-controller-manager';
const OPERATOR_USER = `system:serviceaccount:${OPERATOR_NS}:${OPERATOR_SA}`;
const POLICY = `bucketoperator-least-privilege.${OPERATOR_NS}`;
const MANAGED = { [MANAGED_BY_LABEL]: MANAGED_BY_VALUE };
const CREDENTIALS = { [CREDENTIALS_SECRET_LABEL]: CREDENTIALS_SECRET_TYPE };

const b64 = (s: string) => Buffer.from(s, 'utf8').toString('base64');

function clientFor(kubeconfigPath: string): KubeClient {
  return new KubeClient({ restConfig: loadKubeconfig(kubeconfigPath) });
}

/** The error a request was refused with; fails when it was allowed. */
async function refusal(request: Promise<unknown>): Promise<ApiError> {
  try {
    await request;
  } catch (err) {
    if (err instanceof ApiError) return err;
    throw err;
  }
  throw new Error('the request was allowed');
}

/** Asserts a 403 from the policy `policy` whose message matches `why`. */
async function refusedByPolicy(request: Promise<unknown>, why: RegExp, policy = POLICY): Promise<void> {
  const err = await refusal(request);
  expect(err.status, err.message).to.equal(403);
  expect(err.message).to.include(`ValidatingAdmissionPolicy '${policy}'`);
  expect(err.message, err.message).to.match(why);
}

function secret(ns: string, name: string, extra: Partial<V1Secret> & { labels?: Record<string, string> } = {}): V1Secret {
  const { labels, ...rest } = extra;
  return { metadata: { name, namespace: ns, labels }, data: { key: b64('value') }, ...rest };
}

/** A Service of `type`, labelled as the operator's unless `labels` is null. */
function service(ns: string, name: string, type: string, labels: Record<string, string> | null = MANAGED): V1Service {
  const spec: V1Service['spec'] =
    type === 'ExternalName' ? { type, externalName: 'bucket.storage.example' } : { type, ports: [{ name: 'https', port: 443, protocol: 'TCP' }] };
  return { metadata: { name, namespace: ns, labels: labels ?? undefined }, spec };
}

async function canI(cp: ControlPlane, verb: string, resource: string, ns: string, user = OPERATOR_USER): Promise<string> {
  return (await cp.kubectl(['auth', 'can-i', verb, resource, `--as=${user}`, '-n', ns])).stdout.trim();
}

describe('admission policy confining the operator (real control plane)', function () {
  this.timeout(120_000);
  let cp: ControlPlane;
  let ns: string;
  let op: KubeClient;
  let admin: KubeClient;
  /** The credential Secret a BucketProviderConfig would reference: not the operator's. */
  const creds = 'provider-credentials';
  /** A Secret a config could name that did not opt in as credentials. */
  const notOptedIn = 'not-credentials';

  before(async () => {
    cp = await sharedControlPlane();
    await applyDist(cp);
    ns = await freshNamespace(cp, 'admission');
    op = clientFor(await cp.serviceAccountKubeconfig(OPERATOR_NS, OPERATOR_SA));
    admin = new KubeClient({ restConfig: cp.restConfig() });
    await admin.create(SECRET, secret(ns, creds, { labels: CREDENTIALS, data: { apiKey: b64('k') } }));
    await admin.create(SECRET, secret(ns, notOptedIn, { data: { apiKey: b64('k') } }));
    await admin.create(SERVICE, service(ns, 'foreign', 'ClusterIP', null));
    await admin.create(SERVICE, service(ns, 'foreign-externalname', 'ExternalName', null));
  });

  after(() => {
    op?.close();
    admin?.close();
  });

  describe('refuses the operator', () => {
    it('a service-account-token Secret in kube-system, although RBAC allows creating Secrets there', async () => {
      expect(await canI(cp, 'create', 'secrets', 'kube-system')).to.equal('yes');
      const token = (labels?: Record<string, string>): V1Secret => ({
        metadata: {
          generateName: 'stolen-',
          namespace: 'kube-system',
          labels,
          annotations: { 'kubernetes.io/service-account.name': 'namespace-controller' },
        },
        type: 'kubernetes.io/service-account-token',
      });
      await refusedByPolicy(op.create(SECRET, token()), /may not create secrets kube-system\/\S*: it lacks the label/);
      await refusedByPolicy(op.create(SECRET, token(MANAGED)), /its type is kubernetes\.io\/service-account-token, only Opaque is allowed/);
    });

    it('an unlabelled Opaque Secret', async () => {
      await refusedByPolicy(
        op.create(SECRET, secret(ns, 'unlabelled', { type: 'Opaque' })),
        new RegExp(`may not create secrets ${ns}/unlabelled: it lacks the label ${MANAGED_BY_LABEL}=${MANAGED_BY_VALUE}`),
      );
    });

    it('a labelled Secret of another type than Opaque', async () => {
      await refusedByPolicy(
        op.create(SECRET, secret(ns, 'custom', { labels: MANAGED, type: 'example.com/custom' })),
        /its type is example\.com\/custom, only Opaque is allowed/,
      );
    });

    for (const type of ['ClusterIP', 'NodePort', 'LoadBalancer']) {
      it(`a labelled Service of type ${type}`, async () => {
        await refusedByPolicy(
          op.create(SERVICE, service(ns, `svc-${type.toLowerCase()}`, type)),
          new RegExp(`its type is ${type}, only ExternalName is allowed`),
        );
      });
    }

    it('turning its own ExternalName Service into another type', async () => {
      await op.create(SERVICE, service(ns, 'own-retype', 'ExternalName'));
      const toClusterIp = { spec: { type: 'ClusterIP', externalName: null, ports: [{ name: 'https', port: 443, protocol: 'TCP' }] } };
      await refusedByPolicy(op.patch(SERVICE, ns, 'own-retype', toClusterIp, 'merge'), /its type is ClusterIP, only ExternalName is allowed/);
    });

    const credsChanges: Record<string, { patch: unknown; why: RegExp }> = {
      'patching the data of a Secret it does not manage': {
        patch: { data: { apiKey: b64('stolen') } },
        why: /may not change data, stringData, type or immutable of secrets .*: it lacks the label/,
      },
      'writing its stringData': { patch: { stringData: { apiKey: 'stolen' } }, why: /may not change data, stringData/ },
      'making it immutable': { patch: { immutable: true }, why: /may not change data, stringData, type or immutable/ },
      'adding a label to it': { patch: { metadata: { labels: { team: 'a' } } }, why: /may not change labels, annotations or ownerReferences/ },
      'taking it over with the managed-by label': {
        patch: { metadata: { labels: MANAGED } },
        why: /may not change labels, annotations or ownerReferences/,
      },
      'adding an annotation to it': {
        patch: { metadata: { annotations: { a: 'b' } } },
        why: /may not change labels, annotations or ownerReferences/,
      },
      'adding an unrelated finalizer to it': {
        patch: { metadata: { finalizers: ['example.com/other'] } },
        why: /may not change finalizers other than storage\.avalonhosting\.example\/in-use/,
      },
      'adding the in-use finalizer together with a data change': {
        patch: { metadata: { finalizers: [SECRET_IN_USE_FINALIZER] }, data: { apiKey: b64('stolen') } },
        why: /may not change data/,
      },
    };
    for (const [name, { patch, why }] of Object.entries(credsChanges)) {
      it(name, async () => {
        await refusedByPolicy(op.patch(SECRET, ns, creds, patch, 'merge'), why);
      });
    }

    it('adding the in-use finalizer to a Secret without the credentials label', async () => {
      const read = await admin.get<V1Secret>(SECRET, ns, notOptedIn);
      await refusedByPolicy(
        addFinalizer(op, SECRET, read, SECRET_IN_USE_FINALIZER),
        new RegExp(
          `may not add the finalizer ${SECRET_IN_USE_FINALIZER} to secrets ${ns}/${notOptedIn}: it lacks the label ${CREDENTIALS_SECRET_LABEL}=${CREDENTIALS_SECRET_TYPE}`,
        ),
      );
    });

    it('opting a Secret in as credentials by labelling it', async () => {
      await refusedByPolicy(
        op.patch(SECRET, ns, notOptedIn, { metadata: { labels: CREDENTIALS } }, 'merge'),
        /may not change labels, annotations or ownerReferences/,
      );
    });

    it('changing a Service it does not manage, even to label it', async () => {
      await refusedByPolicy(
        op.patch(SERVICE, ns, 'foreign', { metadata: { annotations: { a: 'b' } } }, 'merge'),
        new RegExp(`may not update services ${ns}/foreign: it lacks the label`),
      );
      await refusedByPolicy(
        op.patch(SERVICE, ns, 'foreign-externalname', { metadata: { labels: MANAGED } }, 'merge'),
        new RegExp(`may not update services ${ns}/foreign-externalname: it lacks the label`),
      );
    });

    it('removing the managed-by label from its own Secret', async () => {
      await op.create(SECRET, secret(ns, 'own-relabel', { labels: MANAGED }));
      await refusedByPolicy(
        op.patch(SECRET, ns, 'own-relabel', { metadata: { labels: { [MANAGED_BY_LABEL]: null } } }, 'merge'),
        /the change removes the label/,
      );
    });

    it('deleting a Secret or a Service (RBAC grants no delete)', async () => {
      await op.create(SECRET, secret(ns, 'own-delete', { labels: MANAGED }));
      await op.create(SERVICE, service(ns, 'own-delete', 'ExternalName'));
      for (const kind of [SECRET, SERVICE]) {
        const err = await refusal(op.delete(kind, ns, 'own-delete'));
        expect(err.status, err.message).to.equal(403);
      }
    });

    describe('where RBAC would allow it', () => {
      before(async () => {
        await kubectlOk(cp, ['create', 'role', 'delete-anyway', '-n', ns, '--verb=delete', '--resource=secrets,services']);
        await kubectlOk(cp, [
          'create',
          'rolebinding',
          'delete-anyway',
          '-n',
          ns,
          '--role=delete-anyway',
          `--serviceaccount=${OPERATOR_NS}:${OPERATOR_SA}`,
        ]);
        await eventually(async () => (await canI(cp, 'delete', 'secrets', ns)) === 'yes', {
          description: 'RBAC to allow the operator to delete Secrets',
          timeoutMs: 30_000,
          intervalMs: 200,
        });
      });
      after(() => kubectlOk(cp, ['delete', 'rolebinding,role', 'delete-anyway', '-n', ns]));

      it('deleting its own Secret, a credential Secret or a Service', async () => {
        await refusedByPolicy(op.delete(SECRET, ns, 'own-delete'), new RegExp(`may not delete secrets ${ns}/own-delete: .*garbage-collected`));
        await refusedByPolicy(op.delete(SECRET, ns, creds), /may not delete secrets/);
        await refusedByPolicy(op.delete(SERVICE, ns, 'own-delete'), /may not delete services/);
        expect(await admin.get(SECRET, ns, creds)).to.have.nested.property('metadata.name', creds);
      });
    });
  });

  describe('allows the operator', () => {
    it('to create and change labelled Opaque Secrets, by POST, PATCH and server-side apply', async () => {
      await op.create(SECRET, secret(ns, 'alpha-access', { labels: MANAGED, type: 'Opaque' }));
      // Without a type the API server defaults it to Opaque before admission.
      await op.create(SECRET, secret(ns, 'beta-access', { labels: MANAGED }));
      await op.patch(SECRET, ns, 'alpha-access', { data: { key: b64('rotated') } }, 'merge');
      await applyObject(
        op,
        SECRET,
        { apiVersion: 'v1', kind: 'Secret', ...secret(ns, 'gamma-access', { labels: MANAGED, type: 'Opaque' }) },
        { fieldManager: 'bucketoperator' },
      );
      const stored = await admin.get<V1Secret>(SECRET, ns, 'alpha-access');
      expect(stored.data?.['key']).to.equal(b64('rotated'));
      expect((await admin.get<V1Secret>(SECRET, ns, 'gamma-access')).type).to.equal('Opaque');
    });

    it('to create and change labelled ExternalName Services', async () => {
      await op.create(SERVICE, service(ns, 'alpha', 'ExternalName'));
      await op.patch(SERVICE, ns, 'alpha', { spec: { externalName: 'moved.storage.example' } }, 'merge');
      const stored = await admin.get<V1Service>(SERVICE, ns, 'alpha');
      expect(stored.spec?.externalName).to.equal('moved.storage.example');
    });

    it('to add and remove its in-use finalizer on a credential Secret, next to others', async () => {
      await admin.patch(SECRET, ns, creds, { metadata: { finalizers: ['example.com/keep'] } }, 'merge');
      const read = await admin.get<V1Secret>(SECRET, ns, creds);
      // The same helpers, and so the same JSON patches, as the operator's secret protection.
      const protectedSecret = await addFinalizer(op, SECRET, read, SECRET_IN_USE_FINALIZER);
      expect(protectedSecret.metadata?.finalizers).to.deep.equal(['example.com/keep', SECRET_IN_USE_FINALIZER]);
      const released = await removeFinalizer(op, SECRET, protectedSecret, SECRET_IN_USE_FINALIZER);
      expect(released.metadata?.finalizers).to.deep.equal(['example.com/keep']);
      expect(released.data).to.deep.equal(read.data);
      await admin.patch(SECRET, ns, creds, { metadata: { finalizers: null } }, 'merge');
    });

    it('to remove its in-use finalizer from a Secret whose credentials label was taken away', async () => {
      const read = await admin.get<V1Secret>(SECRET, ns, notOptedIn);
      // As before the label was removed: protected while it was credentials (added by the admin here).
      const held = await admin.patch<V1Secret>(SECRET, ns, notOptedIn, { metadata: { finalizers: [SECRET_IN_USE_FINALIZER] } }, 'merge');
      const released = await removeFinalizer(op, SECRET, held, SECRET_IN_USE_FINALIZER);
      expect(released.metadata?.finalizers ?? []).to.deep.equal([]);
      expect(released.data).to.deep.equal(read.data);
    });
  });

  describe('leaves other users alone', () => {
    it('the admin writes and deletes any Secret and Service', async () => {
      await admin.create(SECRET, secret(ns, 'admin-custom', { type: 'example.com/custom' }));
      await admin.patch(SECRET, ns, creds, { data: { apiKey: b64('rotated-by-admin') }, metadata: { labels: { team: 'a' } } }, 'merge');
      await admin.create(SERVICE, service(ns, 'admin-lb', 'LoadBalancer'));
      await admin.delete(SECRET, ns, 'admin-custom');
      await admin.delete(SERVICE, ns, 'admin-lb');
      expect((await admin.get<V1Secret>(SECRET, ns, creds)).data?.['apiKey']).to.equal(b64('rotated-by-admin'));
    });

    it('another ServiceAccount holding the same RBAC', async () => {
      await kubectlOk(cp, ['create', 'serviceaccount', 'lookalike', '-n', ns]);
      await kubectlOk(cp, [
        'create',
        'rolebinding',
        'lookalike',
        '-n',
        ns,
        '--clusterrole=bucketoperator-manager',
        `--serviceaccount=${ns}:lookalike`,
      ]);
      const user = `system:serviceaccount:${ns}:lookalike`;
      await eventually(async () => (await canI(cp, 'create', 'secrets', ns, user)) === 'yes', {
        description: 'RBAC to allow the lookalike ServiceAccount to create Secrets',
        timeoutMs: 30_000,
        intervalMs: 200,
      });
      const lookalike = clientFor(await cp.serviceAccountKubeconfig(ns, 'lookalike'));
      try {
        await lookalike.create(SECRET, secret(ns, 'lookalike', { type: 'example.com/custom' }));
      } finally {
        lookalike.close();
      }
    });
  });

  describe('in namespace mode', () => {
    const operatorNs = 'bucketoperator-admission-nsmode';
    const user = `system:serviceaccount:${operatorNs}:${OPERATOR_SA}`;
    const policy = `bucketoperator-least-privilege.${operatorNs}`;
    let tmp: string;
    let watched: string;
    let nsOp: KubeClient;

    before(async () => {
      watched = await freshNamespace(cp, 'admission-watched');
      tmp = mkdtempSync(join(tmpdir(), 'bucketoperator-admission-'));
      synthDist({ outdir: tmp, operator: { namespace: operatorNs, mode: 'namespace', watchNamespace: watched } });
      for (const f of ['01-namespace.yaml', '02-rbac.yaml', '03-admission-policy.yaml', '04-manager.yaml']) {
        await kubectlOk(cp, ['apply', '-f', '-'], readFileSync(join(tmp, f), 'utf8'));
      }
      await waitForSecretPolicy(cp, user, watched);
      nsOp = clientFor(await cp.serviceAccountKubeconfig(operatorNs, OPERATOR_SA));
    });

    after(async () => {
      nsOp?.close();
      // Cluster-scoped, so it would outlive the namespace.
      await kubectlOk(cp, ['delete', '-f', join(tmp, '03-admission-policy.yaml')]);
      rmSync(tmp, { recursive: true, force: true });
    });

    it("confines that install's ServiceAccount in the watched namespace", async () => {
      await refusedByPolicy(nsOp.create(SECRET, secret(watched, 'unlabelled')), /it lacks the label/, policy);
      await nsOp.create(SECRET, secret(watched, 'labelled', { labels: MANAGED }));
    });

    it('leaves other namespaces to RBAC, which refuses first', async () => {
      const err = await refusal(nsOp.create(SECRET, secret(ns, 'elsewhere', { labels: MANAGED })));
      expect(err.status).to.equal(403);
      expect(err.message).to.not.include('ValidatingAdmissionPolicy');
    });
  });
});
