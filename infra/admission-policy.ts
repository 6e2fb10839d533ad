/**
 * A ValidatingAdmissionPolicy that confines what the operator's ServiceAccount may write to
 * Secrets and Services, beyond what RBAC can say. RBAC grants `create` and `patch` on Secrets
 * in every watched namespace, and cannot narrow a verb by label or Secret type: unconfined,
 * that would let a stolen operator token create a `kubernetes.io/service-account-token`
 * Secret for a privileged ServiceAccount (the token controller fills it in), or rewrite any
 * Secret's data. The policy allows exactly the operator's own writes:
 *
 * - create or change only Secrets and Services labelled MANAGED_BY_LABEL=MANAGED_BY_VALUE,
 *   Secrets only of type Opaque, Services only of type ExternalName, never dropping the label;
 * - on any other Secret (the credential Secrets BucketProviderConfigs reference) only add or
 *   remove SECRET_IN_USE_FINALIZER, everything else unchanged, and add it only to Secrets
 *   labelled CREDENTIALS_SECRET_LABEL=CREDENTIALS_SECRET_TYPE (removing it is always allowed,
 *   so a Secret whose label was taken away can be released); no other Service at all;
 * - delete nothing (owned objects go with their StorageBucket through garbage collection).
 *
 * `matchConditions` restrict it to the operator's user, so no other request is evaluated.
 */
import { ApiObject } from 'cdk8s';
import { Construct } from 'constructs';
import { CREDENTIALS_SECRET_LABEL, CREDENTIALS_SECRET_TYPE, MANAGED_BY_LABEL, MANAGED_BY_VALUE, SECRET_IN_USE_FINALIZER } from '../operator/api/v1';
import { COMMON_LABELS } from './labels';

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

/**
 * True when `obj` (object or oldObject) carries `label` with `value` (by default the managed-by
 * label); false when it is null.
 */
function labelled(obj: 'object' | 'oldObject', label = MANAGED_BY_LABEL, value = MANAGED_BY_VALUE): string {
  return (
    `${obj} != null && has(${obj}.metadata.labels) && ${cel(label)} in ${obj}.metadata.labels && ` +
    `${obj}.metadata.labels[${cel(label)}] == ${cel(value)}`
  );
}

/** `path` (below object/oldObject) is absent on both or equal on both. */
function unchanged(path: string): string {
  return `(has(object.${path}) == has(oldObject.${path}) && (!has(object.${path}) || object.${path} == oldObject.${path}))`;
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

    const variables: NamedExpression[] = [
      { name: 'secret', expression: 'request.resource.resource == "secrets"' },
      { name: 'managed', expression: labelled('object') },
      { name: 'wasManaged', expression: labelled('oldObject') },
      // A Secret the operator does not manage: a credential Secret a config references.
      { name: 'foreignSecretUpdate', expression: 'request.operation == "UPDATE" && variables.secret && !variables.wasManaged' },
      { name: 'oldFinalizers', expression: 'has(oldObject.metadata.finalizers) ? oldObject.metadata.finalizers : []' },
      { name: 'newFinalizers', expression: 'has(object.metadata.finalizers) ? object.metadata.finalizers : []' },
      // The Secret's owner opted it in as provider credentials (labels cannot change here).
      { name: 'credentials', expression: labelled('object', CREDENTIALS_SECRET_LABEL, CREDENTIALS_SECRET_TYPE) },
    ];

    // "the bucket operator may not <verb> <resource> <namespace>/<name>: <why>", so an admin
    // reading the refusal (or the operator's log) sees what was refused and by which rule. The
    // API server prefixes the policy's name, which carries the operator namespace.
    const refusal = (verb: string, why: string) => `"the bucket operator may not ${verb} " + ${TARGET} + ": ${why}"`;
    const unmanaged = `it lacks the label ${LABEL}`;
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
        'request.operation != "UPDATE" || !variables.wasManaged || variables.managed',
        `the bucket operator may not remove the label ${LABEL} from an object it manages`,
        refusal('update', `the change removes the label ${LABEL}`),
      ),
      rule(
        '!variables.secret || !variables.managed || object.type == "Opaque"',
        'the bucket operator may write only Secrets of type Opaque',
        `${refusal('write', 'its type is ')} + object.type + ", only Opaque is allowed"`,
      ),
      rule(
        'variables.secret || !variables.managed || (has(object.spec.type) && object.spec.type == "ExternalName")',
        'the bucket operator may write only Services of type ExternalName',
        `${refusal('write', 'its type is ')} + object.spec.type + ", only ExternalName is allowed"`,
      ),
      rule(
        'request.operation != "UPDATE" || variables.secret || variables.wasManaged',
        `the bucket operator may change only Services labelled ${LABEL}`,
        refusal('update', unmanaged),
      ),
      rule(
        `!variables.foreignSecretUpdate || (${unchanged('data')} && ${unchanged('stringData')} && ${unchanged('type')} && ${unchanged('immutable')})`,
        `the bucket operator may not change data, stringData, type or immutable of a Secret without the label ${LABEL}`,
        refusal('change data, stringData, type or immutable of', unmanaged),
      ),
      rule(
        `!variables.foreignSecretUpdate || (${unchanged('metadata.labels')} && ${unchanged('metadata.annotations')} && ${unchanged('metadata.ownerReferences')})`,
        `the bucket operator may not change labels, annotations or ownerReferences of a Secret without the label ${LABEL}`,
        refusal('change labels, annotations or ownerReferences of', unmanaged),
      ),
      rule(
        `!variables.foreignSecretUpdate || (` +
          `variables.newFinalizers.all(f, f == ${cel(SECRET_IN_USE_FINALIZER)} || f in variables.oldFinalizers) && ` +
          `variables.oldFinalizers.all(f, f == ${cel(SECRET_IN_USE_FINALIZER)} || f in variables.newFinalizers))`,
        `the bucket operator may add or remove only the finalizer ${SECRET_IN_USE_FINALIZER} on a Secret without the label ${LABEL}`,
        refusal(`change finalizers other than ${SECRET_IN_USE_FINALIZER} on`, unmanaged),
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
        matchConditions: [{ name: 'is-bucket-operator', expression: `request.userInfo.username == ${cel(this.username)}` }],
        variables,
        validations,
      },
    });
    new ApiObject(this, 'binding', {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingAdmissionPolicyBinding',
      metadata: { name: this.name, labels: { ...COMMON_LABELS } },
      spec: { policyName: this.name, validationActions: ['Deny'] },
    });
  }
}
