/**
 * A ValidatingAdmissionPolicy that confines what the operator's ServiceAccount may write to
 * Secrets and Services, beyond what RBAC can say. RBAC grants `create` and `patch` on Secrets
 * in every watched namespace, and cannot narrow a verb by label or Secret type: unconfined,
 * that would let a stolen operator token create a `kubernetes.io/service-account-token`
 * Secret for a privileged ServiceAccount (the token controller fills it in), an Argo CD cluster
 * Secret, an external-dns hostname, or rewrite any Secret's data. The policy allows exactly the
 * operator's own writes. An object is the operator's when it carries a controller ownerReference
 * to a StorageBucket of GROUP (any version); the managed-by label alone proves nothing.
 *
 * - Create: only Opaque Secrets and ExternalName Services with exactly one ownerReference, that
 *   controller reference, labelled MANAGED_BY_LABEL=MANAGED_BY_VALUE, carrying no label keys
 *   but OWNED_OBJECT_LABELS (BUCKET_NAME_LABEL, if set, names the controlling StorageBucket),
 *   no annotation keys but OWNED_OBJECT_ANNOTATIONS (none) and no finalizers.
 * - Create or update of an object it controls: a Secret only named `<bucket>-access` and a
 *   Service only named `<bucket>` (operator/bucket/names.ts), `<bucket>` being the name in the
 *   controller reference; a Service's externalName never an IPv4 address in any spelling
 *   (dotted, decimal, hex: a last label that is a number), which as an ExternalName is no
 *   address at all but a CNAME to a name of digits. What the externalName may otherwise be
 *   cannot be pinned here: the operator copies the host of the bucket endpoint the provider
 *   answered with, which any DNS name may be, in-cluster ones included (a provider inside the
 *   cluster); the API server's own validation already makes it a DNS-1123 subdomain, so no
 *   IPv6 literal, port or userinfo gets through, and a metadata host name there would only
 *   redirect the namespace's own workloads, not the operator's requests.
 * - Update of an object it controls (the old object has that controller reference): the repair
 *   of an owned object, so data and spec may change and the operator's own label keys may be
 *   added or set (the managed-by label must be there afterwards: a repair restores one a user
 *   removed), but the type stays Opaque or ExternalName, the controller reference keeps its uid,
 *   other ownerReferences and finalizers stay as they are, and every other label and annotation
 *   key stays exactly as it was. A key a user added to an owned object is the user's: the
 *   operator neither adds, changes nor removes one, its server-side apply leaves fields it does
 *   not own alone, and the policy lets that apply through with the user's key left in place.
 * - Update of any other Secret (the credential Secrets BucketProviderConfigs reference, and a
 *   Secret that merely carries the managed-by label): only add or remove
 *   SECRET_IN_USE_FINALIZER, everything else unchanged, and add it only to Secrets labelled
 *   CREDENTIALS_SECRET_LABEL=CREDENTIALS_SECRET_TYPE (removing it is always allowed, so a Secret
 *   whose label was taken away can be released). No update of any other Service.
 * - Delete nothing (owned objects go with their StorageBucket through garbage collection).
 *
 * A controller reference cannot be checked against a live StorageBucket here; one naming a uid
 * that does not exist makes the garbage collector delete the object it was put on.
 * `matchConditions` restrict the policy to the operator's user, so no other request is evaluated.
 *
 * A second policy (`provenancePolicyName`) is the other way round: it applies to every user but
 * the operator, on StorageBuckets (any version) in the namespaces the operator watches. On an
 * UPDATE nobody else may add or change PROVENANCE_ANNOTATIONS (removing one stays allowed:
 * removing the create target is the documented way to say nothing was created there, and
 * removing the key only makes the operator mint a new one), nor write the status subresource.
 * A CREATE is not restricted: a manifest copied with its annotations is made inert by the uid
 * the operator checks, and backups must restore.
 */
import { ApiObject } from 'cdk8s';
import { Construct } from 'constructs';
import {
  BUCKET_NAME_LABEL,
  CREATE_TARGET_ANNOTATION,
  CREDENTIALS_SECRET_LABEL,
  CREDENTIALS_SECRET_TYPE,
  GROUP,
  IDEMPOTENCY_KEY_ANNOTATION,
  MANAGED_BY_LABEL,
  MANAGED_BY_VALUE,
  OWNED_OBJECT_ANNOTATIONS,
  OWNED_OBJECT_LABELS,
  SECRET_IN_USE_FINALIZER,
  StorageBucketDefinition,
} from '../operator/api/v1';
import { accessSecretName, serviceName } from '../operator/bucket/names';
import { COMMON_LABELS } from './labels';
import { CONVERTED_CRD_NAMES, DEFAULT_WEBHOOK_SECRET } from '../operator/conversion/rbac';

/**
 * The StorageBucket annotations that say where its provider bucket came from, which only the
 * operator may add or change on an UPDATE (anyone may remove them). A bookkeeping annotation
 * the operator adds for the same purpose belongs here.
 */
export const PROVENANCE_ANNOTATIONS: readonly string[] = [IDEMPOTENCY_KEY_ANNOTATION, CREATE_TARGET_ANNOTATION];

/** Properties of {@link OperatorAdmissionPolicy}. */
export interface OperatorAdmissionPolicyProps {
  /** Namespace of the operator's ServiceAccount. */
  readonly operatorNamespace: string;
  /** Name of the operator's ServiceAccount. */
  readonly serviceAccountName: string;
  /**
   * Name of the ValidatingAdmissionPolicy and of its binding. Both are cluster-scoped, so the
   * default carries the operator namespace: installs in two namespaces (namespace mode) each
   * keep their own.
   * @default 'bucketoperator-least-privilege.<operatorNamespace>'
   */
  readonly name?: string;
  /**
   * The operator serves the CRDs' conversion webhook. Its Secret (in the operator namespace)
   * leaves the policy above for one of its own, which allows only that Secret (type
   * kubernetes.io/tls, no owners, finalizers or foreign labels, never deleted) and, on the two
   * CRDs, only a change of `spec.conversion.webhook.clientConfig.caBundle`.
   * @default off
   */
  readonly conversionWebhook?: { readonly secretName?: string };
  /**
   * The one namespace the operator watches (namespace mode). The provenance policy, which
   * applies to every user but the operator, then covers StorageBuckets there only, so another
   * install's operator, watching other namespaces, can still write its own.
   * @default every namespace
   */
  readonly watchNamespace?: string;
}

// cdk8s-plus-28 knows the v1beta1 API only, whose types lack `variables`; these are the
// admissionregistration.k8s.io/v1 fields this construct writes.
interface Validation {
  readonly expression: string;
  readonly message: string;
  readonly messageExpression: string;
  readonly reason: 'Forbidden';
}
interface NamedExpression {
  readonly name: string;
  readonly expression: string;
}

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** A CEL string literal; JSON's double-quoted form is valid CEL for these plain names. */
const cel = (s: string): string => JSON.stringify(s);

const LABEL = `${MANAGED_BY_LABEL}=${MANAGED_BY_VALUE}`;
const CREDENTIALS = `${CREDENTIALS_SECRET_LABEL}=${CREDENTIALS_SECRET_TYPE}`;

/** A CEL list of string literals. */
const celList = (xs: readonly string[]): string => `[${xs.map(cel).join(', ')}]`;

/** `obj.metadata.<field>`, or `empty` when the field is absent or `obj` is null (a DELETE has no object). */
function meta(obj: 'object' | 'oldObject', field: string, empty: '{}' | '[]'): string {
  return `${obj} != null && has(${obj}.metadata.${field}) ? ${obj}.metadata.${field} : ${empty}`;
}

/** The ownerReferences in `refs` (a variable) that make a StorageBucket of our group the controller. */
function controllerRefs(refs: string): string {
  return (
    `${refs}.filter(r, has(r.controller) && r.controller && r.kind == ${cel(StorageBucketDefinition.kind)} && ` +
    `r.apiVersion.startsWith(${cel(`${GROUP}/`)}))`
  );
}

/** `labels` (a variable) maps `label` to `value`. */
function labelIs(labels: string, label: string, value: string): string {
  return `${cel(label)} in ${labels} && ${labels}[${cel(label)}] == ${cel(value)}`;
}

/** Keys of `now` outside `own` are those of `before`, with the same values. */
function othersKept(now: string, before: string, own: string): string {
  return `${now}.all(k, k in ${own} || (k in ${before} && ${before}[k] == ${now}[k])) && ${before}.all(k, k in ${own} || k in ${now})`;
}

/** `path` (below object/oldObject) is absent on both or equal on both. */
function unchanged(path: string): string {
  return `(has(object.${path}) == has(oldObject.${path}) && (!has(object.${path}) || object.${path} == oldObject.${path}))`;
}

/**
 * A CEL expression of the name `nameOf` gives the bucket `bucket` (a CEL expression) its
 * object: the naming rule of operator/bucket/names.ts, read off the function itself so the
 * policy cannot drift from it.
 */
function celNameOf(nameOf: (bucketName: string) => string, bucket: string): string {
  const mark = '\u0000';
  const parts = nameOf(mark).split(mark);
  if (parts.length !== 2) throw new Error(`OperatorAdmissionPolicy: ${nameOf.name} must use the bucket name once`);
  const [before = '', after = ''] = parts;
  return [before && cel(before), bucket, after && cel(after)].filter((p) => p !== '').join(' + ');
}

/** `<resource> <namespace>/<name>` of the request, for messages. */
const TARGET = `request.resource.resource + " " + request.namespace + "/" + request.name`;

function rule(expression: string, message: string, messageExpression: string): Validation {
  return { expression, message, messageExpression, reason: 'Forbidden' };
}

/** The operator's confinement, as a ValidatingAdmissionPolicy and its binding. */
export class OperatorAdmissionPolicy extends Construct {
  /** Name of the policy and of its binding. */
  public readonly name: string;
  /** The user name the policy applies to. */
  public readonly username: string;
  /** Name of the conversion webhook's policy and binding, when `conversionWebhook` is on. */
  public readonly conversionWebhookPolicyName?: string;
  /** Name of the policy and binding that keep provenance annotations and status to the operator. */
  public readonly provenancePolicyName: string;

  constructor(scope: Construct, id: string, props: OperatorAdmissionPolicyProps) {
    super(scope, id);
    // Both end up inside a CEL string literal: the checks also keep quotes out of it.
    if (!DNS_LABEL.test(props.operatorNamespace) || props.operatorNamespace.length > 63) {
      throw new Error(`OperatorAdmissionPolicy: props.operatorNamespace must be a DNS label, got '${props.operatorNamespace}'`);
    }
    if (!DNS_SUBDOMAIN.test(props.serviceAccountName) || props.serviceAccountName.length > 253) {
      throw new Error(`OperatorAdmissionPolicy: props.serviceAccountName must be a DNS subdomain, got '${props.serviceAccountName}'`);
    }
    this.name = props.name ?? `bucketoperator-least-privilege.${props.operatorNamespace}`;
    if (!DNS_SUBDOMAIN.test(this.name) || this.name.length > 253) {
      throw new Error(`OperatorAdmissionPolicy: props.name must be a DNS subdomain, got '${this.name}'`);
    }
    this.username = `system:serviceaccount:${props.operatorNamespace}:${props.serviceAccountName}`;

    const secretName = props.conversionWebhook ? (props.conversionWebhook.secretName ?? DEFAULT_WEBHOOK_SECRET) : undefined;
    if (secretName !== undefined && (!DNS_SUBDOMAIN.test(secretName) || secretName.length > 253)) {
      throw new Error(`OperatorAdmissionPolicy: props.conversionWebhook.secretName must be a DNS subdomain, got '${secretName}'`);
    }
    const webhookSecret =
      secretName === undefined
        ? undefined
        : `request.resource.resource == "secrets" && request.namespace == ${cel(props.operatorNamespace)} && request.name == ${cel(secretName)}`;
    this.conversionWebhookPolicyName = secretName === undefined ? undefined : `bucketoperator-conversion-webhook.${props.operatorNamespace}`;
    if (props.watchNamespace !== undefined && (!DNS_LABEL.test(props.watchNamespace) || props.watchNamespace.length > 63)) {
      throw new Error(`OperatorAdmissionPolicy: props.watchNamespace must be a DNS label, got '${props.watchNamespace}'`);
    }
    this.provenancePolicyName = provenancePolicyName(props.operatorNamespace);

    const OWN_LABELS = celList(OWNED_OBJECT_LABELS);
    const OWN_ANNOTATIONS = celList(OWNED_OBJECT_ANNOTATIONS);
    const variables: NamedExpression[] = [
      { name: 'secret', expression: 'request.resource.resource == "secrets"' },
      { name: 'newLabels', expression: meta('object', 'labels', '{}') },
      { name: 'oldLabels', expression: meta('oldObject', 'labels', '{}') },
      { name: 'newAnnotations', expression: meta('object', 'annotations', '{}') },
      { name: 'oldAnnotations', expression: meta('oldObject', 'annotations', '{}') },
      { name: 'newRefs', expression: meta('object', 'ownerReferences', '[]') },
      { name: 'oldRefs', expression: meta('oldObject', 'ownerReferences', '[]') },
      { name: 'newFinalizers', expression: meta('object', 'finalizers', '[]') },
      { name: 'oldFinalizers', expression: meta('oldObject', 'finalizers', '[]') },
      // The API server allows at most one controller reference, so these hold zero or one.
      { name: 'controller', expression: controllerRefs('variables.newRefs') },
      { name: 'oldController', expression: controllerRefs('variables.oldRefs') },
      { name: 'managed', expression: labelIs('variables.newLabels', MANAGED_BY_LABEL, MANAGED_BY_VALUE) },
      // An update of an object a StorageBucket controls: the repair of an owned object.
      { name: 'ownUpdate', expression: 'request.operation == "UPDATE" && size(variables.oldController) == 1' },
      { name: 'ownWrite', expression: 'request.operation == "CREATE" || variables.ownUpdate' },
      // Any other Secret: a credential Secret a config references, or one merely labelled as ours.
      { name: 'foreignSecretUpdate', expression: 'request.operation == "UPDATE" && variables.secret && !variables.ownUpdate' },
      { name: 'foreignLabels', expression: `variables.newLabels.filter(k, !(k in ${OWN_LABELS}))` },
      { name: 'foreignAnnotations', expression: `variables.newAnnotations.filter(k, !(k in ${OWN_ANNOTATIONS}))` },
      // The Secret's owner opted it in as provider credentials (labels cannot change here).
      { name: 'credentials', expression: labelIs('variables.newLabels', CREDENTIALS_SECRET_LABEL, CREDENTIALS_SECRET_TYPE) },
      // The name the operator gives the object for the StorageBucket that controls it.
      {
        name: 'ownName',
        expression:
          'size(variables.controller) != 1 ? "" : variables.secret ? ' +
          `${celNameOf(accessSecretName, 'variables.controller[0].name')} : ${celNameOf(serviceName, 'variables.controller[0].name')}`,
      },
    ];

    // "the bucket operator may not <verb> <resource> <namespace>/<name>: <why>", so an admin
    // reading the refusal (or the operator's log) sees what was refused and by which rule. The
    // API server prefixes the policy's name, which carries the operator namespace. The first
    // rule that fails is the one reported, so the coarse ones come first.
    const refusal = (verb: string, why: string) => `"the bucket operator may not ${verb} " + ${TARGET} + ": ${why}"`;
    const unmanaged = `it lacks the label ${LABEL}`;
    const uncontrolled = `it is not controlled by a StorageBucket of ${GROUP}`;
    const ownerRule = `exactly one ownerReference, a controller reference to a StorageBucket of ${GROUP}`;
    const ownLabels = OWNED_OBJECT_LABELS.join(', ');
    const validations: Validation[] = [
      rule(
        'request.operation != "DELETE"',
        'the bucket operator may not delete Secrets or Services; the ones it owns are garbage-collected with their StorageBucket',
        refusal('delete', 'the Secrets and Services it owns are garbage-collected with their StorageBucket'),
      ),
      rule(
        'request.operation != "CREATE" || variables.managed',
        `the bucket operator may create only Secrets and Services labelled ${LABEL}`,
        refusal('create', unmanaged),
      ),
      rule(
        '!variables.ownWrite || !variables.secret || object.type == "Opaque"',
        'the bucket operator may write only Secrets of type Opaque',
        `${refusal('write', 'its type is ')} + object.type + ", only Opaque is allowed"`,
      ),
      rule(
        '!variables.ownWrite || variables.secret || (has(object.spec.type) && object.spec.type == "ExternalName")',
        'the bucket operator may write only Services of type ExternalName',
        `${refusal('write', 'its type is ')} + object.spec.type + ", only ExternalName is allowed"`,
      ),
      rule(
        'request.operation != "CREATE" || (size(variables.controller) == 1 && size(variables.newRefs) == 1)',
        `the bucket operator may create only Secrets and Services with ${ownerRule}`,
        refusal('create', `it needs ${ownerRule}`),
      ),
      rule(
        'request.operation != "CREATE" || size(variables.foreignLabels) == 0',
        `the bucket operator may create Secrets and Services with no labels but ${ownLabels}`,
        `${refusal('create', "it carries labels that are not the operator's: ")} + variables.foreignLabels.join(", ")`,
      ),
      rule(
        'request.operation != "CREATE" || size(variables.foreignAnnotations) == 0',
        'the bucket operator may create Secrets and Services with no annotations',
        `${refusal('create', "it carries annotations that are not the operator's: ")} + variables.foreignAnnotations.join(", ")`,
      ),
      rule(
        'request.operation != "CREATE" || size(variables.newFinalizers) == 0',
        'the bucket operator may create Secrets and Services with no finalizers',
        refusal('create', 'it carries finalizers'),
      ),
      rule(
        `!variables.ownWrite || !(${cel(BUCKET_NAME_LABEL)} in variables.newLabels) || ` +
          `(size(variables.controller) == 1 && variables.newLabels[${cel(BUCKET_NAME_LABEL)}] == variables.controller[0].name)`,
        `the bucket operator may set the label ${BUCKET_NAME_LABEL} only to the name of the StorageBucket that controls the object`,
        refusal('write', `its label ${BUCKET_NAME_LABEL} does not name the StorageBucket that controls it`),
      ),
      // The object's own name, not request.name: a create by generateName has none in the request.
      rule(
        '!variables.ownWrite || size(variables.controller) != 1 || object.metadata.name == variables.ownName',
        `the bucket operator may name a Secret only ${accessSecretName('<bucket>')} and a Service only ${serviceName('<bucket>')}, <bucket> being the StorageBucket that controls it`,
        `${refusal('write', 'its name must be ')} + variables.ownName + ", after the StorageBucket that controls it"`,
      ),
      // An IPv4 address in any spelling ends in a number (WHATWG's "ends in a number" test):
      // dotted, decimal (2852039166) or hex (0xa9fea9fe). DNS-1123 allows each of them.
      rule(
        '!variables.ownWrite || variables.secret || !has(object.spec.externalName) || ' +
          `!object.spec.externalName.matches(${cel('(^|[.])([0-9]+|0x[0-9a-f]*)[.]?$')})`,
        'the bucket operator may not point an ExternalName Service at an IP address',
        `${refusal('write', 'its externalName ')} + object.spec.externalName + " is an IP address, not a host name"`,
      ),
      rule(
        'request.operation != "UPDATE" || variables.secret || variables.ownUpdate',
        `the bucket operator may change only Services controlled by a StorageBucket of ${GROUP}`,
        refusal('update', uncontrolled),
      ),
      rule(
        '!variables.ownUpdate || variables.managed',
        `the bucket operator may not remove the label ${LABEL} from an object it controls`,
        refusal('update', `the change removes the label ${LABEL}`),
      ),
      rule(
        '!variables.ownUpdate || (size(variables.controller) == 1 && variables.controller[0].uid == variables.oldController[0].uid && ' +
          'variables.newRefs.filter(r, r.uid != variables.oldController[0].uid) == variables.oldRefs.filter(r, r.uid != variables.oldController[0].uid))',
        'the bucket operator may not change the controller or the other ownerReferences of an object it controls',
        refusal('update', 'the change replaces its controlling StorageBucket or changes its other ownerReferences'),
      ),
      rule(
        `!variables.ownUpdate || (${othersKept('variables.newLabels', 'variables.oldLabels', OWN_LABELS)})`,
        `the bucket operator may add, change or remove no labels but ${ownLabels} on an object it controls`,
        refusal('update', `the change adds, changes or removes a label other than ${ownLabels}`),
      ),
      rule(
        `!variables.ownUpdate || (${othersKept('variables.newAnnotations', 'variables.oldAnnotations', OWN_ANNOTATIONS)})`,
        'the bucket operator may add, change or remove no annotations on an object it controls',
        refusal('update', 'the change adds, changes or removes an annotation'),
      ),
      rule(
        '!variables.ownUpdate || variables.newFinalizers == variables.oldFinalizers',
        'the bucket operator may not change the finalizers of an object it controls',
        refusal('update', 'the change adds or removes finalizers'),
      ),
      rule(
        `!variables.foreignSecretUpdate || (${unchanged('data')} && ${unchanged('stringData')} && ${unchanged('type')} && ${unchanged('immutable')})`,
        `the bucket operator may not change data, stringData, type or immutable of a Secret it does not control`,
        refusal('change data, stringData, type or immutable of', uncontrolled),
      ),
      rule(
        `!variables.foreignSecretUpdate || (${unchanged('metadata.labels')} && ${unchanged('metadata.annotations')} && ${unchanged('metadata.ownerReferences')})`,
        `the bucket operator may not change labels, annotations or ownerReferences of a Secret it does not control`,
        refusal('change labels, annotations or ownerReferences of', uncontrolled),
      ),
      rule(
        `!variables.foreignSecretUpdate || (` +
          `variables.newFinalizers.all(f, f == ${cel(SECRET_IN_USE_FINALIZER)} || f in variables.oldFinalizers) && ` +
          `variables.oldFinalizers.all(f, f == ${cel(SECRET_IN_USE_FINALIZER)} || f in variables.newFinalizers))`,
        `the bucket operator may add or remove only the finalizer ${SECRET_IN_USE_FINALIZER} on a Secret it does not control`,
        refusal(`change finalizers other than ${SECRET_IN_USE_FINALIZER} on`, uncontrolled),
      ),
      rule(
        `!variables.foreignSecretUpdate || variables.credentials || ` +
          `!(${cel(SECRET_IN_USE_FINALIZER)} in variables.newFinalizers) || ${cel(SECRET_IN_USE_FINALIZER)} in variables.oldFinalizers`,
        `the bucket operator may add the finalizer ${SECRET_IN_USE_FINALIZER} only to Secrets labelled ${CREDENTIALS}`,
        refusal(`add the finalizer ${SECRET_IN_USE_FINALIZER} to`, `it lacks the label ${CREDENTIALS}`),
      ),
    ];

    new ApiObject(this, 'policy', {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingAdmissionPolicy',
      metadata: { name: this.name, labels: { ...COMMON_LABELS } },
      spec: {
        // An expression that cannot be evaluated refuses the write rather than waving it through.
        failurePolicy: 'Fail',
        matchConstraints: {
          resourceRules: [
            {
              apiGroups: [''],
              apiVersions: ['v1'],
              resources: ['secrets', 'services'],
              operations: ['CREATE', 'UPDATE', 'DELETE'],
              // The server's default is '*'; stated, so that re-applying dist/ changes nothing
              // (kubectl replaces the whole list whenever an item differs from the live one).
              scope: 'Namespaced',
            },
          ],
        },
        // Evaluated before anything else: requests of every other user skip the policy.
        matchConditions: [
          { name: 'is-bucket-operator', expression: `request.userInfo.username == ${cel(this.username)}` },
          // The webhook Secret has a policy of its own (below).
          ...(webhookSecret ? [{ name: 'not-webhook-secret', expression: `!(${webhookSecret})` }] : []),
        ],
        variables,
        validations,
      },
    });
    denyBinding(this, 'binding', this.name);
    if (webhookSecret !== undefined && this.conversionWebhookPolicyName !== undefined) {
      this.conversionWebhookPolicy(this.conversionWebhookPolicyName, webhookSecret, props.operatorNamespace);
    }
    this.provenancePolicy(this.provenancePolicyName, props.watchNamespace);
  }

  /**
   * Everyone but the operator: no adding or changing of provenance annotations on a
   * StorageBucket, and no status writes. A separate policy because the one above evaluates the
   * operator's requests only (its matchConditions), and this one everyone else's.
   */
  private provenancePolicy(name: string, watchNamespace: string | undefined): void {
    const target = `request.resource.resource + " " + request.namespace + "/" + request.name`;
    const guarded = PROVENANCE_ANNOTATIONS.join(', ');
    const variables: NamedExpression[] = [
      // The API server leaves subResource out of a request of the object itself.
      { name: 'status', expression: 'has(request.subResource) && request.subResource == "status"' },
      { name: 'newAnnotations', expression: meta('object', 'annotations', '{}') },
      { name: 'oldAnnotations', expression: meta('oldObject', 'annotations', '{}') },
      // Keys present after the update with a value they did not have before: added or changed.
      {
        name: 'set',
        expression:
          `${celList(PROVENANCE_ANNOTATIONS)}.filter(k, k in variables.newAnnotations && ` +
          '!(k in variables.oldAnnotations && variables.oldAnnotations[k] == variables.newAnnotations[k]))',
      },
    ];
    const validations: Validation[] = [
      // status.id and status.idempotencyKey are the operator's record of the provider bucket it
      // created (what its deletion trusts); a status written by anyone else could claim a bucket.
      rule(
        '!variables.status',
        'only the bucket operator may write the status of a StorageBucket: status.id and status.idempotencyKey are its record of what it created',
        `"only the bucket operator may write the status of " + ${target} + ": status.id and status.idempotencyKey are its record of what it created"`,
      ),
      rule(
        'variables.status || size(variables.set) == 0',
        `only the bucket operator may add or change the annotations ${guarded} of a StorageBucket; removing them is allowed`,
        `"only the bucket operator may add or change " + variables.set.join(", ") + " on " + ${target} + ": the operator records there which provider bucket it created; removing the annotation is allowed"`,
      ),
    ];
    new ApiObject(this, 'provenance-policy', {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingAdmissionPolicy',
      metadata: { name, labels: { ...COMMON_LABELS } },
      spec: {
        failurePolicy: 'Fail',
        matchConstraints: {
          resourceRules: [
            {
              apiGroups: [GROUP],
              // Every served version: the annotations and status mean the same in each.
              apiVersions: ['*'],
              resources: [StorageBucketDefinition.plural, `${StorageBucketDefinition.plural}/status`],
              operations: ['UPDATE'],
              scope: 'Namespaced',
            },
          ],
          // In namespace mode, another install's operator may write buckets elsewhere.
          ...(watchNamespace === undefined
            ? {}
            : { namespaceSelector: { matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'In', values: [watchNamespace] }] } }),
        },
        matchConditions: [{ name: 'not-bucket-operator', expression: `request.userInfo.username != ${cel(this.username)}` }],
        variables,
        validations,
      },
    });
    denyBinding(this, 'provenance-binding', name);
  }

  /** The conversion webhook's Secret and the CRDs' caBundle: the only writes allowed there. */
  private conversionWebhookPolicy(name: string, webhookSecret: string, operatorNamespace: string): void {
    // A cluster-scoped request (a CRD) has no namespace to name: reading it fails the message
    // expression, and the API server falls back to the plain message.
    const target = `request.resource.resource + " " + (variables.secret ? request.namespace + "/" + request.name : request.name)`;
    const refusal = (verb: string, why: string) => `"the bucket operator may not ${verb} " + ${target} + ": ${why}"`;
    const crds = celList(CONVERTED_CRD_NAMES);
    const variables: NamedExpression[] = [
      { name: 'secret', expression: 'request.resource.resource == "secrets"' },
      { name: 'labels', expression: meta('object', 'labels', '{}') },
      { name: 'annotations', expression: meta('object', 'annotations', '{}') },
      { name: 'oldLabels', expression: meta('oldObject', 'labels', '{}') },
      { name: 'oldAnnotations', expression: meta('oldObject', 'annotations', '{}') },
      { name: 'refs', expression: meta('object', 'ownerReferences', '[]') },
      { name: 'finalizers', expression: meta('object', 'finalizers', '[]') },
    ];
    const crdOnly = (expression: string) => `variables.secret || (${expression})`;
    const validations: Validation[] = [
      rule(
        'request.operation != "DELETE"',
        'the bucket operator may not delete its webhook Secret or a CustomResourceDefinition',
        refusal('delete', 'it deletes neither its webhook Secret nor a CustomResourceDefinition'),
      ),
      rule(
        crdOnly(`request.operation == "UPDATE" && request.name in ${crds}`),
        `the bucket operator may change only the CustomResourceDefinitions ${CONVERTED_CRD_NAMES.join(', ')}, and create none`,
        refusal('create or change', `it changes only ${CONVERTED_CRD_NAMES.join(', ')}`),
      ),
      rule(
        crdOnly(
          'request.operation != "UPDATE" || ' +
            [
              'object.spec.group == oldObject.spec.group',
              'object.spec.names == oldObject.spec.names',
              'object.spec.scope == oldObject.spec.scope',
              'object.spec.versions == oldObject.spec.versions',
              same('spec.preserveUnknownFields'),
              same('spec.conversion.strategy'),
              same('spec.conversion.webhook.conversionReviewVersions'),
              same('spec.conversion.webhook.clientConfig.url'),
              same('spec.conversion.webhook.clientConfig.service'),
              same('metadata.labels'),
              same('metadata.annotations'),
              same('metadata.finalizers'),
              same('metadata.ownerReferences'),
            ].join(' && '),
        ),
        'the bucket operator may change nothing of a CustomResourceDefinition but spec.conversion.webhook.clientConfig.caBundle',
        refusal('change', 'only spec.conversion.webhook.clientConfig.caBundle may change'),
      ),
      // Another install's webhook (a Service in another namespace) is not this operator's: its CA
      // there would break that install's conversions. The URL form is left to the keeper's own
      // check (it matches the URL's host against its certificate).
      rule(
        crdOnly(
          `request.operation != "UPDATE" || !(${present('object', 'spec.conversion.webhook.clientConfig.service')}) || ` +
            `object.spec.conversion.webhook.clientConfig.service.namespace == ${cel(operatorNamespace)}`,
        ),
        `the bucket operator may change only CustomResourceDefinitions whose conversion webhook is a Service in ${operatorNamespace}`,
        refusal('change', `its conversion webhook is not a Service in ${operatorNamespace}`),
      ),
      rule(
        '!variables.secret || request.operation == "DELETE" || object.type == "kubernetes.io/tls"',
        'the bucket operator may write its webhook Secret only as type kubernetes.io/tls',
        `${refusal('write', 'its type is ')} + object.type + ", only kubernetes.io/tls is allowed"`,
      ),
      rule(
        '!variables.secret || (size(variables.refs) == 0 && size(variables.finalizers) == 0)',
        'the bucket operator may give its webhook Secret no ownerReferences and no finalizers',
        refusal('write', 'its webhook Secret takes no ownerReferences and no finalizers'),
      ),
      // A replacement keeps what other tools put on the Secret (operator/conversion/kube-store.ts):
      // their labels and annotations pass unchanged; the operator adds only its own label.
      rule(
        `!variables.secret || request.operation == "DELETE" || (${othersKept('variables.labels', 'variables.oldLabels', celList([MANAGED_BY_LABEL]))} && variables.annotations == variables.oldAnnotations)`,
        `the bucket operator may label its webhook Secret only ${LABEL} and annotate it not at all, keeping what others put there`,
        refusal('write', `its webhook Secret carries only the label ${LABEL} and what others put there`),
      ),
    ];
    new ApiObject(this, 'conversion-webhook-policy', {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingAdmissionPolicy',
      metadata: { name, labels: { ...COMMON_LABELS } },
      spec: {
        failurePolicy: 'Fail',
        matchConstraints: {
          resourceRules: [
            { apiGroups: [''], apiVersions: ['v1'], resources: ['secrets'], operations: ['CREATE', 'UPDATE', 'DELETE'], scope: 'Namespaced' },
            {
              apiGroups: ['apiextensions.k8s.io'],
              apiVersions: ['v1'],
              resources: ['customresourcedefinitions'],
              operations: ['CREATE', 'UPDATE', 'DELETE'],
              scope: 'Cluster',
            },
          ],
        },
        matchConditions: [
          { name: 'is-bucket-operator', expression: `request.userInfo.username == ${cel(this.username)}` },
          // Every other Secret is the main policy's.
          { name: 'webhook-secret-or-crd', expression: `request.resource.resource != "secrets" || (${webhookSecret})` },
        ],
        variables,
        validations,
      },
    });
    denyBinding(this, 'conversion-webhook-binding', name);
  }
}

/** Whether `path` (dotted, below object/oldObject) is set on `obj`, each step guarded. */
function present(obj: 'object' | 'oldObject', path: string): string {
  const parts = path.split('.');
  return parts.map((_, i) => `has(${obj}.${parts.slice(0, i + 1).join('.')})`).join(' && ');
}

/** `path` is absent on both objects or present on both with equal values. */
function same(path: string): string {
  return `((${present('object', path)}) == (${present('oldObject', path)}) && (!(${present('object', path)}) || object.${path} == oldObject.${path}))`;
}

/**
 * Name of the provenance policy and binding of the install in `operatorNamespace` (cluster-
 * scoped, so it carries the namespace like the others).
 */
export function provenancePolicyName(operatorNamespace: string): string {
  return `bucketoperator-provenance.${operatorNamespace}`;
}

/** The binding that enforces policy `name` everywhere it matches, refusing what it denies. */
function denyBinding(scope: Construct, id: string, name: string): void {
  new ApiObject(scope, id, {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicyBinding',
    metadata: { name, labels: { ...COMMON_LABELS } },
    spec: { policyName: name, validationActions: ['Deny'] },
  });
}
