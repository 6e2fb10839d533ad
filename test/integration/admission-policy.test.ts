/**
 * The ValidatingAdmissionPolicy in dist/ on a real control plane, with requests made as the
 * operator's ServiceAccount (a TokenRequest token, so RBAC and admission see the operator's
 * user) through the operator's own REST client: every write the operator must not make is
 * refused with a message naming the rule, the writes it does make pass (creates and repairs of
 * objects a StorageBucket controls, built by the operator's own desiredSecret/desiredService),
 * and other users are not affected. test/unit/infra/admission-policy.test.ts evaluates the same
 * rules with cel-go against a longer table.
 *
 * The provenance policy is checked the other way round: a namespace editor (a ServiceAccount
 * bound to the `edit` ClusterRole) may not add or change the annotations that record which
 * provider bucket the operator created, nor write a StorageBucket's status, while the operator
 * may (test/unit/infra/provenance-policy.test.ts has the longer table). Last, the CRD half of the
 * endpoint hardening: a BucketProviderConfig whose endpoint carries `user:pass@` is refused.
 */
import { expect } from 'chai';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { V1Secret, V1Service } from '@kubernetes/client-node';
import { loadKubeconfig } from '../../operator/runtime/kubeconfig';
import { synthDist } from '../../infra/app';
import {
  BUCKET_NAME_LABEL,
  CREATE_TARGET_ANNOTATION,
  CREDENTIALS_SECRET_LABEL,
  CREDENTIALS_SECRET_TYPE,
  ENDPOINT_USERINFO_RULE,
  IDEMPOTENCY_KEY_ANNOTATION,
  MANAGED_BY_LABEL,
  MANAGED_BY_VALUE,
  PAUSED_ANNOTATION,
  type StorageBucket,
} from '../../operator/api/v1';
import { provenancePolicyName } from '../../infra/admission-policy';
import { SECRET, SERVICE, STORAGE_BUCKET } from '../../operator/bucket/kinds';
import { desiredSecret, desiredService, ownerRef } from '../../operator/bucket/owned';
import { OPERATOR_NAME } from '../../operator/operator';
import { SECRET_IN_USE_FINALIZER } from '../../operator/bucket/secret-protection';
import { applyObject } from '../../operator/runtime/apply';
import { ApiError } from '../../operator/runtime/api-errors';
import { KubeClient } from '../../operator/runtime/client';
import { addFinalizer, removeFinalizer } from '../../operator/runtime/finalizers';
import { waitForSecretPolicy } from '../support/admission';
import { type ControlPlane } from '../support/control-plane';
import { applyDist } from '../support/dist';
import { apply, bucketManifest, kubectlOk } from '../support/kube';
import { freshNamespace, sharedControlPlane } from './setup';
import { eventually } from '../support/eventually';

const OPERATOR_NS = 'bucketoperator-system';
const OPERATOR_SA = 'bucketoperator-controller-manager';
const OPERATOR_USER = `system:serviceaccount:${OPERATOR_NS}:${OPERATOR_SA}`;
const POLICY = `bucketoperator-least-privilege.${OPERATOR_NS}`;
const PROVENANCE_POLICY = provenancePolicyName(OPERATOR_NS);
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

/**
 * A StorageBucket `name` in `ns` that owns the objects the operator is made to write here
 * (paused: no operator runs in this file, and none should act on it if one did). The policy
 * lets the operator name them only `<name>-access` (Secret) and `<name>` (Service).
 */
async function ownerBucket(
  cp: ControlPlane,
  admin: KubeClient,
  ns: string,
  name = 'owner',
  annotations: Record<string, string> = {},
): Promise<StorageBucket> {
  await apply(cp, bucketManifest(ns, name, {}, { [PAUSED_ANNOTATION]: 'true', ...annotations }));
  return admin.get<StorageBucket>(STORAGE_BUCKET, ns, name);
}

/** `obj` as the operator makes its objects: controlled by `bucket`, with the operator's labels. */
function ownedBy<T extends V1Secret | V1Service>(bucket: StorageBucket, obj: T): T {
  const labels = { ...obj.metadata?.labels, ...MANAGED, [BUCKET_NAME_LABEL]: bucket.metadata.name ?? '' };
  return { ...obj, metadata: { ...obj.metadata, labels, ownerReferences: [ownerRef(bucket)] } };
}

const ACCESS = { id: 'bucket-1', endpoint: 'https://owner.storage.example', region: 'us-east-1', providerEndpoint: 'https://storage.example' };

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
  /** Controls the objects the operator creates here. */
  let bucket: StorageBucket;
  /** `obj` controlled by `bucket`, labelled as the operator labels its objects. */
  const owned = <T extends V1Secret | V1Service>(obj: T): T => ownedBy(bucket, obj);
  /** The Secret `<name>-access` controlled by a (new) StorageBucket `name`, as the operator names it. */
  const ownSecret = async (name: string, extra: Parameters<typeof secret>[2] = {}): Promise<V1Secret> =>
    ownedBy(await ownerBucket(cp, admin, ns, name), secret(ns, `${name}-access`, extra));
  /** The ExternalName Service `<name>` controlled by a (new) StorageBucket `name`. */
  const ownService = async (name: string): Promise<V1Service> => ownedBy(await ownerBucket(cp, admin, ns, name), service(ns, name, 'ExternalName'));
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
    bucket = await ownerBucket(cp, admin, ns);
    // The operator's own objects, for the delete tests.
    await admin.create(SECRET, owned(secret(ns, 'own-delete')));
    await admin.create(SERVICE, owned(service(ns, 'own-delete', 'ExternalName')));
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
      await op.create(SERVICE, await ownService('retype'));
      const toClusterIp = { spec: { type: 'ClusterIP', externalName: null, ports: [{ name: 'https', port: 443, protocol: 'TCP' }] } };
      await refusedByPolicy(op.patch(SERVICE, ns, 'retype', toClusterIp, 'merge'), /its type is ClusterIP, only ExternalName is allowed/);
    });

    it('a Secret or Service not named after the StorageBucket that controls it', async () => {
      // Everything else as the operator writes it: only the name is wrong.
      await refusedByPolicy(
        op.create(SECRET, owned(secret(ns, 'stolen'))),
        new RegExp(`may not write secrets ${ns}/stolen: its name must be owner-access, after the StorageBucket that controls it`),
      );
      await refusedByPolicy(
        op.create(SERVICE, owned(service(ns, 'kubernetes', 'ExternalName'))),
        new RegExp(`may not write services ${ns}/kubernetes: its name must be owner, after the StorageBucket that controls it`),
      );
      // A generated name is judged as the API server generated it.
      const generated: V1Secret = { ...secret(ns, 'unused'), metadata: { namespace: ns, generateName: 'owner-access-' } };
      await refusedByPolicy(op.create(SECRET, owned(generated)), /its name must be owner-access/);
    });

    it('an ExternalName Service pointing at an IP address, in any spelling', async () => {
      const svc = await ownService('ip-target');
      for (const externalName of ['169.254.169.254', '2852039166', '0xa9fea9fe']) {
        await refusedByPolicy(
          op.create(SERVICE, { ...svc, spec: { ...svc.spec, externalName } }),
          new RegExp(`its externalName ${externalName.replace(/\./g, '\\.')} is an IP address, not a host name`),
        );
      }
    });

    const credsChanges: Record<string, { patch: unknown; why: RegExp }> = {
      'patching the data of a Secret it does not manage': {
        patch: { data: { apiKey: b64('stolen') } },
        why: /may not change data, stringData, type or immutable of secrets .*: it is not controlled by a StorageBucket/,
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
        new RegExp(`may not update services ${ns}/foreign: it is not controlled by a StorageBucket`),
      );
      await refusedByPolicy(
        op.patch(SERVICE, ns, 'foreign-externalname', { metadata: { labels: MANAGED } }, 'merge'),
        new RegExp(`may not update services ${ns}/foreign-externalname: it is not controlled by a StorageBucket`),
      );
    });

    it('removing the managed-by label from its own Secret', async () => {
      await op.create(SECRET, await ownSecret('relabel'));
      await refusedByPolicy(
        op.patch(SECRET, ns, 'relabel-access', { metadata: { labels: { [MANAGED_BY_LABEL]: null } } }, 'merge'),
        /the change removes the label/,
      );
    });

    it('the create of an Argo CD cluster Secret, although it is Opaque and labelled as its own', async () => {
      const argo = owned(secret(ns, 'argo-cluster', { type: 'Opaque', labels: { 'argocd.argoproj.io/secret-type': 'cluster' } }));
      await refusedByPolicy(
        op.create(SECRET, argo),
        new RegExp(`may not create secrets ${ns}/argo-cluster: it carries labels that are not the operator's: argocd\\.argoproj\\.io/secret-type`),
      );
    });

    it('the create of an ExternalName Service with an external-dns annotation', async () => {
      const svc = owned(service(ns, 'dns-hijack', 'ExternalName'));
      svc.metadata = { ...svc.metadata, annotations: { 'external-dns.alpha.kubernetes.io/hostname': 'shop.example.com' } };
      await refusedByPolicy(
        op.create(SERVICE, svc),
        new RegExp(`may not create services ${ns}/dns-hijack: it carries annotations that are not the operator's: external-dns`),
      );
    });

    it('the create of a labelled Opaque Secret without an ownerReference', async () => {
      await refusedByPolicy(
        op.create(SECRET, secret(ns, 'unowned', { labels: MANAGED, type: 'Opaque' })),
        new RegExp(`may not create secrets ${ns}/unowned: it needs exactly one ownerReference, a controller reference to a StorageBucket`),
      );
    });

    it('adding a label of its own choosing to a Secret it controls', async () => {
      await op.create(SECRET, await ownSecret('argo'));
      await refusedByPolicy(
        op.patch(SECRET, ns, 'argo-access', { metadata: { labels: { 'argocd.argoproj.io/secret-type': 'cluster' } } }, 'merge'),
        /the change adds, changes or removes a label other than/,
      );
    });

    it('changing the data of a Secret labelled as its own that no StorageBucket controls', async () => {
      await admin.create(SECRET, secret(ns, 'lookalike-access', { labels: MANAGED }));
      await refusedByPolicy(
        op.patch(SECRET, ns, 'lookalike-access', { data: { key: b64('x') } }, 'merge'),
        /may not change data, stringData, type or immutable of secrets .*: it is not controlled by a StorageBucket/,
      );
    });

    it('deleting a Secret or a Service (RBAC grants no delete)', async () => {
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
    it('to create and change Opaque Secrets a StorageBucket controls, by POST, PATCH and server-side apply', async () => {
      await op.create(SECRET, await ownSecret('alpha', { type: 'Opaque' }));
      // Without a type the API server defaults it to Opaque before admission.
      await op.create(SECRET, await ownSecret('beta'));
      await op.patch(SECRET, ns, 'alpha-access', { data: { key: b64('rotated') } }, 'merge');
      await applyObject(
        op,
        SECRET,
        { apiVersion: 'v1', kind: 'Secret', ...(await ownSecret('gamma', { type: 'Opaque' })) },
        { fieldManager: OPERATOR_NAME },
      );
      const stored = await admin.get<V1Secret>(SECRET, ns, 'alpha-access');
      expect(stored.data?.['key']).to.equal(b64('rotated'));
      expect((await admin.get<V1Secret>(SECRET, ns, 'gamma-access')).type).to.equal('Opaque');
    });

    it('to create and change ExternalName Services a StorageBucket controls', async () => {
      await op.create(SERVICE, await ownService('alpha'));
      await op.patch(SERVICE, ns, 'alpha', { spec: { externalName: 'moved.storage.example' } }, 'merge');
      const stored = await admin.get<V1Service>(SERVICE, ns, 'alpha');
      expect(stored.spec?.externalName).to.equal('moved.storage.example');
    });

    it('to repair its Secret and Service after a user removed the managed-by label, changed data and spec and added keys of their own', async () => {
      const desiredS = desiredSecret(bucket, ACCESS);
      const desiredSvc = desiredService(bucket, ACCESS);
      await op.create(SECRET, desiredS);
      await op.create(SERVICE, desiredSvc);
      const dns = { 'external-dns.alpha.kubernetes.io/hostname': 'shop.example.com' };
      await admin.patch(
        SECRET,
        ns,
        'owner-access',
        { metadata: { labels: { [MANAGED_BY_LABEL]: null, team: 'a' }, annotations: { note: 'mine' } }, data: { bucketId: b64('tampered') } },
        'merge',
      );
      await admin.patch(
        SERVICE,
        ns,
        'owner',
        { metadata: { labels: { [MANAGED_BY_LABEL]: null }, annotations: dns }, spec: { externalName: 'evil.example' } },
        'merge',
      );
      // The operator's repair: its server-side apply of the desired objects (owned-sync.ts).
      await applyObject(op, SECRET, desiredS, { fieldManager: OPERATOR_NAME });
      await applyObject(op, SERVICE, desiredSvc, { fieldManager: OPERATOR_NAME });
      const s = await admin.get<V1Secret>(SECRET, ns, 'owner-access');
      expect(s.metadata?.labels).to.deep.equal({ ...desiredS.metadata?.labels, team: 'a' });
      expect(s.metadata?.annotations).to.deep.equal({ note: 'mine' });
      expect(s.data).to.deep.equal(desiredS.data);
      const svc = await admin.get<V1Service>(SERVICE, ns, 'owner');
      expect(svc.metadata?.labels).to.deep.equal(desiredSvc.metadata?.labels);
      expect(svc.metadata?.annotations).to.deep.equal(dns);
      expect(svc.spec?.externalName).to.equal(desiredSvc.spec?.externalName);
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

  describe('keeps the provenance of StorageBuckets to the operator', () => {
    const KEY = IDEMPOTENCY_KEY_ANNOTATION;
    const TARGET = CREATE_TARGET_ANNOTATION;
    /**
     * A namespace editor: a ServiceAccount of the namespace bound to `edit` and to the
     * `bucketoperator-editor` ClusterRole dist/ aggregates into it (this control plane runs no
     * aggregation controller, so the binding gives it what aggregation would).
     */
    let editor: KubeClient;
    const editorUser = () => `system:serviceaccount:${ns}:editor`;
    /** A bucket the operator created a provider bucket for: its key, its create target and its status. */
    const provenanced = async (name: string): Promise<StorageBucket> => {
      const b = await ownerBucket(cp, admin, ns, name, { [KEY]: `key-${name}`, [TARGET]: `uid-${name} account https://storage.example` });
      return op
        .patchStatus<StorageBucket>(STORAGE_BUCKET, ns, name, { status: { id: `id-${name}`, idempotencyKey: `key-${name}` } }, 'merge')
        .then(() => b);
    };
    const annotationsOf = async (name: string) => (await admin.get<StorageBucket>(STORAGE_BUCKET, ns, name)).metadata.annotations ?? {};
    const annotate = (client: KubeClient, name: string, annotations: Record<string, string | null>) =>
      client.patch(STORAGE_BUCKET, ns, name, { metadata: { annotations } }, 'merge');

    before(async () => {
      await kubectlOk(cp, ['create', 'serviceaccount', 'editor', '-n', ns]);
      for (const role of ['edit', 'bucketoperator-editor']) {
        await kubectlOk(cp, ['create', 'rolebinding', `editor-${role}`, '-n', ns, `--clusterrole=${role}`, `--serviceaccount=${ns}:editor`]);
      }
      await eventually(async () => (await canI(cp, 'patch', 'storagebuckets.storage.avalonhosting.example', ns, editorUser())) === 'yes', {
        description: 'RBAC to allow a namespace editor to patch StorageBuckets',
        timeoutMs: 30_000,
        intervalMs: 200,
      });
      editor = clientFor(await cp.serviceAccountKubeconfig(ns, 'editor'));
    });
    after(() => editor?.close());

    it("refuses a namespace editor a change of the idempotency key, with the annotation's name and the rule", async () => {
      await provenanced('prov-key');
      await refusedByPolicy(
        annotate(editor, 'prov-key', { [KEY]: 'key-of-another-object' }),
        new RegExp(
          `only the bucket operator may add or change storage\\.avalonhosting\\.example/idempotency-key on storagebuckets ${ns}/prov-key: ` +
            'the operator records there which provider bucket it created; removing the annotation is allowed',
        ),
        PROVENANCE_POLICY,
      );
      expect((await annotationsOf('prov-key'))[KEY]).to.equal('key-prov-key');
    });

    it('refuses a namespace editor adding a key or a create target copied from another object', async () => {
      await ownerBucket(cp, admin, ns, 'prov-bare');
      await refusedByPolicy(
        annotate(editor, 'prov-bare', { [KEY]: 'key-prov-key' }),
        /may add or change storage\.avalonhosting\.example\/idempotency-key on/,
        PROVENANCE_POLICY,
      );
      await refusedByPolicy(
        annotate(editor, 'prov-bare', { [TARGET]: 'uid-prov-key account https://storage.example' }),
        /may add or change storage\.avalonhosting\.example\/create-target on/,
        PROVENANCE_POLICY,
      );
    });

    it('lets a namespace editor remove the key and the create target, and change other annotations beside them', async () => {
      await provenanced('prov-remove');
      await annotate(editor, 'prov-remove', { 'example.com/note': 'mine' });
      await annotate(editor, 'prov-remove', { [TARGET]: null });
      expect(await annotationsOf('prov-remove')).to.not.have.property(TARGET);
      await annotate(editor, 'prov-remove', { [KEY]: null });
      const left = await annotationsOf('prov-remove');
      expect(left).to.not.have.property(KEY);
      expect(left['example.com/note']).to.equal('mine');
    });

    it('lets a namespace editor create a StorageBucket that carries copied provenance annotations (the operator checks the uid)', async () => {
      await editor.create(
        STORAGE_BUCKET,
        bucketManifest(ns, 'prov-copy', {}, { [PAUSED_ANNOTATION]: 'true', [KEY]: 'key-prov-key' }) as unknown as StorageBucket,
      );
      expect((await annotationsOf('prov-copy'))[KEY]).to.equal('key-prov-key');
    });

    it("refuses status writes by anyone but the operator, a namespace editor's and the cluster admin's alike", async () => {
      await provenanced('prov-status');
      const forged = { status: { id: 'id-of-another-object', idempotencyKey: 'key-prov-key' } };
      // `edit` grants only get on status, so RBAC refuses the editor first; the policy is what
      // refuses a user whose role is broader: the admin here.
      const err = await refusal(editor.patchStatus(STORAGE_BUCKET, ns, 'prov-status', forged, 'merge'));
      expect(err.status, err.message).to.equal(403);
      await refusedByPolicy(
        admin.patchStatus(STORAGE_BUCKET, ns, 'prov-status', forged, 'merge'),
        new RegExp(
          `only the bucket operator may write the status of storagebuckets ${ns}/prov-status: status\\.id and status\\.idempotencyKey are its record of what it created`,
        ),
        PROVENANCE_POLICY,
      );
      await refusedByPolicy(
        annotate(admin, 'prov-status', { [KEY]: 'key-of-another-object' }),
        /may add or change storage\.avalonhosting\.example\/idempotency-key on/,
        PROVENANCE_POLICY,
      );
      expect((await admin.get<StorageBucket>(STORAGE_BUCKET, ns, 'prov-status')).status?.id).to.equal('id-prov-status');
    });

    it("refuses a namespace editor's status write where RBAC would allow it", async () => {
      await provenanced('prov-status-rbac');
      await kubectlOk(cp, [
        'create',
        'role',
        'status-writer',
        '-n',
        ns,
        '--verb=patch,update',
        '--resource=storagebuckets.storage.avalonhosting.example/status',
      ]);
      await kubectlOk(cp, ['create', 'rolebinding', 'status-writer', '-n', ns, '--role=status-writer', `--serviceaccount=${ns}:editor`]);
      await eventually(
        async () =>
          (
            await cp.kubectl([
              'auth',
              'can-i',
              'patch',
              'storagebuckets.storage.avalonhosting.example',
              '--subresource=status',
              `--as=${editorUser()}`,
              '-n',
              ns,
            ])
          ).stdout.trim() === 'yes',
        { description: 'RBAC to allow the editor to patch StorageBucket status', timeoutMs: 30_000, intervalMs: 200 },
      );
      await refusedByPolicy(
        editor.patchStatus(STORAGE_BUCKET, ns, 'prov-status-rbac', { status: { id: 'id-of-another-object' } }, 'merge'),
        new RegExp(`only the bucket operator may write the status of storagebuckets ${ns}/prov-status-rbac`),
        PROVENANCE_POLICY,
      );
    });

    it("lets the operator's token set the key and the create target and write the status", async () => {
      await provenanced('prov-operator');
      await annotate(op, 'prov-operator', { [KEY]: 'key-minted-anew', [TARGET]: 'uid-prov-operator account https://elsewhere.example' });
      await op.patchStatus(STORAGE_BUCKET, ns, 'prov-operator', { status: { idempotencyKey: 'key-minted-anew' } }, 'merge');
      const live = await admin.get<StorageBucket>(STORAGE_BUCKET, ns, 'prov-operator');
      expect(live.metadata.annotations?.[KEY]).to.equal('key-minted-anew');
      expect(live.metadata.annotations?.[TARGET]).to.equal('uid-prov-operator account https://elsewhere.example');
      expect(live.status?.idempotencyKey).to.equal('key-minted-anew');
    });
  });

  describe('BucketProviderConfig endpoint with credentials (the CRD, as any user writes it)', () => {
    it('is refused with the rule that says why, and never stored', async () => {
      const config = (endpoint: string) => ({
        apiVersion: 'storage.avalonhosting.example/v1',
        kind: 'BucketProviderConfig',
        metadata: { name: 'with-userinfo', namespace: ns },
        spec: { endpoint, secretRef: { name: creds } },
      });
      const res = await cp.kubectl(['apply', '-f', '-'], { input: JSON.stringify(config('https://admin:hunter2@storage.example.com')) });
      expect(res.code, res.stdout).to.not.equal(0);
      expect(res.stderr).to.include(ENDPOINT_USERINFO_RULE.message);
      expect((await cp.kubectl(['get', 'bpc', 'with-userinfo', '-n', ns])).code).to.not.equal(0);
      // An @ in the path is no userinfo.
      await kubectlOk(cp, ['apply', '-f', '-'], JSON.stringify(config('https://storage.example.com/team@a')));
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
    let watchedBucket: StorageBucket;

    before(async () => {
      watched = await freshNamespace(cp, 'admission-watched');
      tmp = mkdtempSync(join(tmpdir(), 'bucketoperator-admission-'));
      synthDist({ outdir: tmp, operator: { namespace: operatorNs, mode: 'namespace', watchNamespace: watched } });
      for (const f of ['01-namespace.yaml', '02-rbac.yaml', '03-admission-policy.yaml', '04-manager.yaml']) {
        await kubectlOk(cp, ['apply', '-f', '-'], readFileSync(join(tmp, f), 'utf8'));
      }
      await waitForSecretPolicy(cp, user, watched);
      watchedBucket = await ownerBucket(cp, admin, watched);
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
      await nsOp.create(SECRET, ownedBy(watchedBucket, secret(watched, 'owner-access')));
    });

    it('leaves other namespaces to RBAC, which refuses first', async () => {
      const err = await refusal(nsOp.create(SECRET, secret(ns, 'elsewhere', { labels: MANAGED })));
      expect(err.status).to.equal(403);
      expect(err.message).to.not.include('ValidatingAdmissionPolicy');
    });
  });
});
