/**
 * The operator's ValidatingAdmissionPolicy, evaluated by cel-go (test/support/celeval) against
 * admission requests: the creates and repairs the operator makes (built by the very functions
 * it builds them with) pass, and each write it must not make is refused by the rule that says
 * why. test/integration/admission-policy.test.ts checks the same on a real API server.
 */
import { expect } from 'chai';
import type { V1ObjectMeta, V1OwnerReference } from '@kubernetes/client-node';
import { Testing } from 'cdk8s';
import { OperatorAdmissionPolicy } from '../../../infra/admission-policy';
import {
  BUCKET_NAME_LABEL,
  CREDENTIALS_SECRET_LABEL,
  CREDENTIALS_SECRET_TYPE,
  MANAGED_BY_LABEL,
  OWNED_OBJECT_ANNOTATIONS,
  OWNED_OBJECT_LABELS,
  SECRET_IN_USE_FINALIZER,
  type StorageBucket,
} from '../../../operator/api/v1';
import { desiredSecret, desiredService } from '../../../operator/bucket/owned';
import { policyTable } from '../../support/policy-eval';
import { testChart } from '../../support/test-app';

interface Expr {
  readonly name: string;
  readonly expression: string;
}
interface Validation {
  readonly expression: string;
  readonly messageExpression: string;
}
type Obj = { metadata?: V1ObjectMeta } & Record<string, unknown>;

const USER = 'system:serviceaccount:ops:op';
const NS = 'team-a';

const policySpec = (() => {
  const chart = testChart();
  new OperatorAdmissionPolicy(chart, 'p', { operatorNamespace: 'ops', serviceAccountName: 'op' });
  const policy = (Testing.synth(chart) as Array<{ kind: string; spec: { variables: Expr[]; validations: Validation[] } }>).find(
    (o) => o.kind === 'ValidatingAdmissionPolicy',
  );
  if (!policy) throw new Error('no ValidatingAdmissionPolicy rendered');
  return policy.spec;
})();

const bucket = (name = 'logs', uid = 'uid-logs'): StorageBucket =>
  ({ apiVersion: 'storage.avalonhosting.example/v1', kind: 'StorageBucket', metadata: { name, namespace: NS, uid } }) as StorageBucket;
const access = { id: 'bucket-1', endpoint: 'https://logs.storage.example', region: 'us-east-1', providerEndpoint: 'https://storage.example' };
const clone = <T>(x: T): T => JSON.parse(JSON.stringify(x)) as T;

/** The Secret and Service the operator writes for bucket `logs`, as plain objects. */
const ownSecret = (): Obj => clone(desiredSecret(bucket(), access)) as Obj;
const ownService = (): Obj => clone(desiredService(bucket(), access)) as Obj;

/** `obj` with its metadata changed by `f`. */
function withMeta(obj: Obj, f: (m: V1ObjectMeta) => void): Obj {
  const out = clone(obj);
  out.metadata = out.metadata ?? {};
  f(out.metadata);
  return out;
}
const labelled = (obj: Obj, labels: Record<string, string | null>): Obj =>
  withMeta(obj, (m) => {
    const next: Record<string, string> = { ...m.labels };
    for (const [k, v] of Object.entries(labels)) {
      if (v === null) delete next[k];
      else next[k] = v;
    }
    m.labels = next;
  });
const annotated = (obj: Obj, annotations: Record<string, string>): Obj =>
  withMeta(obj, (m) => {
    m.annotations = { ...m.annotations, ...annotations };
  });
const named = (obj: Obj, name: string): Obj =>
  withMeta(obj, (m) => {
    m.name = name;
  });
const owners = (obj: Obj, refs: V1OwnerReference[] | undefined): Obj =>
  withMeta(obj, (m) => {
    m.ownerReferences = refs;
  });
const finalizers = (obj: Obj, f: string[]): Obj =>
  withMeta(obj, (m) => {
    m.finalizers = f;
  });
const withData = (obj: Obj, data: Record<string, string>): Obj => ({ ...clone(obj), data });
const withSpec = (obj: Obj, spec: Record<string, unknown>): Obj => ({ ...clone(obj), spec: { ...(obj['spec'] as object), ...spec } });
const controllerRef = (over: Partial<V1OwnerReference> = {}): V1OwnerReference => ({
  apiVersion: 'storage.avalonhosting.example/v1',
  kind: 'StorageBucket',
  name: 'logs',
  uid: 'uid-logs',
  controller: true,
  blockOwnerDeletion: true,
  ...over,
});
const b64 = (s: string) => Buffer.from(s, 'utf8').toString('base64');

/** A credential Secret a BucketProviderConfig references: not the operator's. */
const credentials = (): Obj => ({
  apiVersion: 'v1',
  kind: 'Secret',
  metadata: { name: 'provider-key', namespace: NS, labels: { [CREDENTIALS_SECRET_LABEL]: CREDENTIALS_SECRET_TYPE } },
  type: 'Opaque',
  data: { apiKey: b64('k') },
});

interface Case {
  readonly operation: 'CREATE' | 'UPDATE' | 'DELETE';
  readonly object: Obj | null;
  readonly oldObject?: Obj | null;
  /** 'allowed', or the message of the first rule that refuses. */
  readonly want: 'allowed' | RegExp;
}

const resourceOf = (c: Case): string => ((c.object ?? c.oldObject)?.['kind'] === 'Service' ? 'services' : 'secrets');

const secretWithUserEdits = (): Obj =>
  withData(annotated(labelled(ownSecret(), { [MANAGED_BY_LABEL]: null, team: 'a' }), { note: 'mine' }), { bucketId: b64('tampered') });

const cases: Record<string, Case> = {
  // The operator's own writes.
  'the create of the access Secret': { operation: 'CREATE', object: ownSecret(), want: 'allowed' },
  'the create of the Service': { operation: 'CREATE', object: ownService(), want: 'allowed' },
  'a repair of the access Secret that lost the managed-by label and had its data changed, leaving a user label and annotation': {
    operation: 'UPDATE',
    oldObject: secretWithUserEdits(),
    // What the operator's server-side apply makes of it: its fields restored, the user's kept.
    object: annotated(labelled(ownSecret(), { team: 'a' }), { note: 'mine' }),
    want: 'allowed',
  },
  'a repair of the Service that lost the managed-by label and had its externalName changed, leaving an external-dns annotation a user added': {
    operation: 'UPDATE',
    oldObject: withSpec(
      annotated(labelled(ownService(), { [MANAGED_BY_LABEL]: null }), { 'external-dns.alpha.kubernetes.io/hostname': 'x.example' }),
      {
        externalName: 'evil.example',
      },
    ),
    object: annotated(ownService(), { 'external-dns.alpha.kubernetes.io/hostname': 'x.example' }),
    want: 'allowed',
  },
  'a repair of the bucket label a user changed': {
    operation: 'UPDATE',
    oldObject: labelled(ownSecret(), { [BUCKET_NAME_LABEL]: 'other' }),
    object: ownSecret(),
    want: 'allowed',
  },
  'a repair of a controller reference whose blockOwnerDeletion a user cleared': {
    operation: 'UPDATE',
    oldObject: owners(ownSecret(), [controllerRef({ blockOwnerDeletion: false })]),
    object: ownSecret(),
    want: 'allowed',
  },
  'an update of an owned Secret that keeps a second, non-controller ownerReference a user added': {
    operation: 'UPDATE',
    oldObject: owners(ownSecret(), [controllerRef(), { apiVersion: 'v1', kind: 'ConfigMap', name: 'cm', uid: 'uid-cm' }]),
    object: withData(owners(ownSecret(), [controllerRef(), { apiVersion: 'v1', kind: 'ConfigMap', name: 'cm', uid: 'uid-cm' }]), {
      bucketId: b64('new'),
    }),
    want: 'allowed',
  },
  'adding its in-use finalizer to a labelled credential Secret': {
    operation: 'UPDATE',
    oldObject: credentials(),
    object: finalizers(credentials(), [SECRET_IN_USE_FINALIZER]),
    want: 'allowed',
  },
  'removing its in-use finalizer from a Secret whose credentials label was taken away': {
    operation: 'UPDATE',
    oldObject: finalizers(labelled(credentials(), { [CREDENTIALS_SECRET_LABEL]: null }), [SECRET_IN_USE_FINALIZER, 'example.com/keep']),
    object: finalizers(labelled(credentials(), { [CREDENTIALS_SECRET_LABEL]: null }), ['example.com/keep']),
    want: 'allowed',
  },

  // Creates.
  'the create of an Argo CD cluster Secret': {
    operation: 'CREATE',
    object: labelled(ownSecret(), { 'argocd.argoproj.io/secret-type': 'cluster' }),
    want: /may not create secrets team-a\/logs-access: it carries labels that are not the operator's: argocd\.argoproj\.io\/secret-type$/,
  },
  'the create of an ExternalName Service with an external-dns annotation': {
    operation: 'CREATE',
    object: annotated(ownService(), { 'external-dns.alpha.kubernetes.io/hostname': 'shop.example.com' }),
    want: /may not create services team-a\/logs: it carries annotations that are not the operator's: external-dns\.alpha\.kubernetes\.io\/hostname$/,
  },
  'a create without an ownerReference': {
    operation: 'CREATE',
    object: owners(ownSecret(), undefined),
    want: /may not create secrets team-a\/logs-access: it needs exactly one ownerReference, a controller reference to a StorageBucket of storage\.avalonhosting\.example$/,
  },
  'a create whose ownerReference is not a controller reference': {
    operation: 'CREATE',
    object: owners(ownSecret(), [controllerRef({ controller: false })]),
    want: /it needs exactly one ownerReference/,
  },
  'a create controlled by a StorageBucket of another group': {
    operation: 'CREATE',
    object: owners(ownSecret(), [controllerRef({ apiVersion: 'storage.evil.example/v1' })]),
    want: /it needs exactly one ownerReference/,
  },
  'a create controlled by another kind of our group': {
    operation: 'CREATE',
    object: owners(ownSecret(), [controllerRef({ kind: 'BucketProviderConfig' })]),
    want: /it needs exactly one ownerReference/,
  },
  'a create with a second ownerReference': {
    operation: 'CREATE',
    object: owners(ownSecret(), [controllerRef(), { apiVersion: 'v1', kind: 'ConfigMap', name: 'cm', uid: 'uid-cm' }]),
    want: /it needs exactly one ownerReference/,
  },
  'a create without the managed-by label': {
    operation: 'CREATE',
    object: labelled(ownSecret(), { [MANAGED_BY_LABEL]: null }),
    want: /may not create secrets team-a\/logs-access: it lacks the label storage\.avalonhosting\.example\/managed-by=bucketoperator$/,
  },
  'a create whose bucket label names another StorageBucket': {
    operation: 'CREATE',
    object: labelled(ownSecret(), { [BUCKET_NAME_LABEL]: 'other' }),
    want: /its label storage\.avalonhosting\.example\/bucket does not name the StorageBucket that controls it$/,
  },
  'a create with a finalizer': { operation: 'CREATE', object: finalizers(ownSecret(), ['example.com/hold']), want: /it carries finalizers$/ },
  'a create of a service-account-token Secret': {
    operation: 'CREATE',
    object: { ...ownSecret(), type: 'kubernetes.io/service-account-token' },
    want: /its type is kubernetes\.io\/service-account-token, only Opaque is allowed$/,
  },
  'a create of a ClusterIP Service': {
    operation: 'CREATE',
    object: withSpec(ownService(), { type: 'ClusterIP', externalName: undefined }),
    want: /its type is ClusterIP, only ExternalName is allowed$/,
  },

  // Names: `<bucket>-access` and `<bucket>` (operator/bucket/names.ts), after the controller reference.
  'the create of a Secret controlled by bucket logs but named otherwise': {
    operation: 'CREATE',
    object: named(ownSecret(), 'argocd-cluster'),
    want: /may not write secrets team-a\/argocd-cluster: its name must be logs-access, after the StorageBucket that controls it$/,
  },
  'the create of a Secret named after another bucket than the one that controls it': {
    operation: 'CREATE',
    object: named(ownSecret(), 'other-access'),
    want: /its name must be logs-access/,
  },
  'the create of a Secret by generateName': {
    operation: 'CREATE',
    // The API server has generated the name by the time admission sees the object.
    object: withMeta(named(ownSecret(), 'logs-access-x7k2p'), (m) => {
      m.generateName = 'logs-access-';
    }),
    want: /its name must be logs-access/,
  },
  'the create of a Service named like the access Secret': {
    operation: 'CREATE',
    object: named(ownService(), 'logs-access'),
    want: /may not write services team-a\/logs-access: its name must be logs, after the StorageBucket that controls it$/,
  },
  'the create of a Service named after no bucket': {
    operation: 'CREATE',
    object: named(ownService(), 'kubernetes'),
    want: /its name must be logs,/,
  },
  'the create of a Secret named for bucket other and controlled by it': {
    operation: 'CREATE',
    object: owners(labelled(named(ownSecret(), 'other-access'), { [BUCKET_NAME_LABEL]: 'other' }), [
      controllerRef({ name: 'other', uid: 'uid-other' }),
    ]),
    want: 'allowed',
  },
  'a change of a Secret it controls whose name is not <bucket>-access': {
    operation: 'UPDATE',
    oldObject: named(ownSecret(), 'argocd-cluster'),
    object: withData(named(ownSecret(), 'argocd-cluster'), { server: b64('https://evil.example') }),
    want: /its name must be logs-access/,
  },

  // The externalName: a host name, never an IPv4 address in any spelling.
  'the create of a Service pointing at the metadata address': {
    operation: 'CREATE',
    object: withSpec(ownService(), { externalName: '169.254.169.254' }),
    want: /may not write services team-a\/logs: its externalName 169\.254\.169\.254 is an IP address, not a host name$/,
  },
  'the create of a Service pointing at an address written as one decimal number': {
    operation: 'CREATE',
    object: withSpec(ownService(), { externalName: '2852039166' }),
    want: /its externalName 2852039166 is an IP address/,
  },
  'the create of a Service pointing at an address in hex': {
    operation: 'CREATE',
    object: withSpec(ownService(), { externalName: '0xa9fea9fe' }),
    want: /its externalName 0xa9fea9fe is an IP address/,
  },
  'the create of a Service pointing at a private address, with a trailing dot': {
    operation: 'CREATE',
    object: withSpec(ownService(), { externalName: '10.0.0.1.' }),
    want: /is an IP address/,
  },
  'turning its own Service towards an IP address': {
    operation: 'UPDATE',
    oldObject: ownService(),
    object: withSpec(ownService(), { externalName: '127.0.0.1' }),
    want: /its externalName 127\.0\.0\.1 is an IP address/,
  },
  'the create of a Service pointing at a host whose labels hold digits': {
    operation: 'CREATE',
    object: withSpec(ownService(), { externalName: 'b-1.10.eu-west-1.storage.example' }),
    want: 'allowed',
  },
  'the create of a Service pointing at an in-cluster provider': {
    operation: 'CREATE',
    object: withSpec(ownService(), { externalName: 'logs.minio.storage.svc.cluster.local' }),
    want: 'allowed',
  },

  // Updates of objects it controls.
  'adding the Argo CD cluster label to its own Secret': {
    operation: 'UPDATE',
    oldObject: ownSecret(),
    object: labelled(ownSecret(), { 'argocd.argoproj.io/secret-type': 'cluster' }),
    want: /may not update secrets team-a\/logs-access: the change adds, changes or removes a label other than/,
  },
  'changing a label a user put on its own Secret': {
    operation: 'UPDATE',
    oldObject: labelled(ownSecret(), { team: 'a' }),
    object: labelled(ownSecret(), { team: 'b' }),
    want: /a label other than/,
  },
  'removing a label a user put on its own Secret': {
    operation: 'UPDATE',
    oldObject: labelled(ownSecret(), { team: 'a' }),
    object: ownSecret(),
    want: /a label other than/,
  },
  'adding an external-dns annotation to its own Service': {
    operation: 'UPDATE',
    oldObject: ownService(),
    object: annotated(ownService(), { 'external-dns.alpha.kubernetes.io/hostname': 'shop.example.com' }),
    want: /may not update services team-a\/logs: the change adds, changes or removes an annotation$/,
  },
  'removing the managed-by label from its own Secret': {
    operation: 'UPDATE',
    oldObject: ownSecret(),
    object: labelled(ownSecret(), { [MANAGED_BY_LABEL]: null }),
    want: /the change removes the label storage\.avalonhosting\.example\/managed-by=bucketoperator$/,
  },
  'handing its own Secret to another StorageBucket': {
    operation: 'UPDATE',
    oldObject: ownSecret(),
    object: owners(ownSecret(), [controllerRef({ uid: 'uid-other' })]),
    want: /the change replaces its controlling StorageBucket or changes its other ownerReferences$/,
  },
  'adding a finalizer to its own Secret': {
    operation: 'UPDATE',
    oldObject: ownSecret(),
    object: finalizers(ownSecret(), ['example.com/hold']),
    want: /the change adds or removes finalizers$/,
  },
  'turning its own Service into a ClusterIP one': {
    operation: 'UPDATE',
    oldObject: ownService(),
    object: withSpec(ownService(), { type: 'ClusterIP', externalName: undefined }),
    want: /its type is ClusterIP, only ExternalName is allowed$/,
  },

  // Updates of objects it does not control.
  'changing the data of a Secret labelled as its own but not controlled by a StorageBucket': {
    operation: 'UPDATE',
    oldObject: owners(ownSecret(), undefined),
    object: withData(owners(ownSecret(), undefined), { bucketId: b64('x') }),
    want: /may not change data, stringData, type or immutable of secrets team-a\/logs-access: it is not controlled by a StorageBucket/,
  },
  'taking a Secret over by adding a controller reference': {
    operation: 'UPDATE',
    oldObject: credentials(),
    object: owners(credentials(), [controllerRef()]),
    want: /may not change labels, annotations or ownerReferences of secrets team-a\/provider-key/,
  },
  'changing the data of a credential Secret': {
    operation: 'UPDATE',
    oldObject: credentials(),
    object: withData(credentials(), { apiKey: b64('stolen') }),
    want: /may not change data/,
  },
  'adding the in-use finalizer to a Secret that did not opt in as credentials': {
    operation: 'UPDATE',
    oldObject: labelled(credentials(), { [CREDENTIALS_SECRET_LABEL]: null }),
    object: finalizers(labelled(credentials(), { [CREDENTIALS_SECRET_LABEL]: null }), [SECRET_IN_USE_FINALIZER]),
    want: /may not add the finalizer storage\.avalonhosting\.example\/in-use to secrets team-a\/provider-key/,
  },
  'labelling a Service it does not control': {
    operation: 'UPDATE',
    oldObject: owners(labelled(ownService(), { [MANAGED_BY_LABEL]: null }), undefined),
    object: owners(ownService(), undefined),
    want: /may not update services team-a\/logs: it is not controlled by a StorageBucket of storage\.avalonhosting\.example$/,
  },
  'deleting its own Secret': {
    operation: 'DELETE',
    object: null,
    oldObject: ownSecret(),
    want: /may not delete secrets team-a\/logs-access: the Secrets and Services it owns are garbage-collected/,
  },
};

describe('OperatorAdmissionPolicy evaluated by cel-go', () => {
  policyTable(
    () => policySpec,
    Object.entries(cases).map(([name, c]) => {
      const target = c.object ?? c.oldObject;
      const request = {
        operation: c.operation,
        resource: { group: '', version: 'v1', resource: resourceOf(c) },
        namespace: target?.metadata?.namespace,
        name: target?.metadata?.name,
        userInfo: { username: USER },
      };
      return [name, { request, object: c.object, oldObject: c.oldObject ?? null, want: c.want }] as const;
    }),
  );

  it('is given the names the operator gives its objects', () => {
    expect(ownSecret().metadata?.name).to.equal('logs-access');
    expect(ownService().metadata?.name).to.equal('logs');
  });

  it('is given exactly the label and annotation keys the operator writes on its objects', () => {
    for (const obj of [ownSecret(), ownService()]) {
      expect(Object.keys(obj.metadata?.labels ?? {}).sort()).to.deep.equal([...OWNED_OBJECT_LABELS].sort());
      expect(Object.keys(obj.metadata?.annotations ?? {})).to.deep.equal([...OWNED_OBJECT_ANNOTATIONS]);
      expect(obj.metadata?.ownerReferences).to.deep.equal([controllerRef()]);
      expect(obj.metadata?.finalizers).to.equal(undefined);
    }
  });
});
