/**
 * Permissions the conversion webhook uses, when it is on: its one Secret in the operator's
 * namespace and the caBundle of exactly the CRDs it converts for. Pure data kept next to the
 * webhook; infra/ renders it into a Role and a ClusterRole narrowed by name.
 *
 * RBAC cannot narrow `create` by name (the name is not known when it authorizes a create), so
 * the Secret create is granted in the operator's namespace alone and the admission policy
 * (infra/admission-policy.ts) allows only the webhook Secret to be made; it also allows only
 * the caBundle of those CRDs to change, since `patch` on a CRD could otherwise rewrite its
 * schema or point its conversion at another server.
 */
import type { PermissionRule } from '../api/policy';
import { ALL_DEFINITIONS } from '../api/v1';

/** Names of the CRDs the webhook converts for, as the keeper patches them. */
export const CONVERTED_CRD_NAMES: readonly string[] = ALL_DEFINITIONS.map((d) => `${d.plural}.${d.group}`);

/** The webhook's Service name when `--conversion-webhook-service` is not given. */
export const DEFAULT_WEBHOOK_SERVICE = 'bucketoperator-webhook';

/** The webhook's Secret name when `--conversion-webhook-secret` is not given. */
export const DEFAULT_WEBHOOK_SECRET = 'bucketoperator-webhook-cert';

/**
 * Who keeps the webhook's certificates: the operator (its Secret and the CRDs' caBundle), or
 * another tool such as cert-manager, which writes the Secret and injects the caBundle while
 * the operator only reads the Secret.
 */
export type CertificateKeeperKind = 'operator' | 'external';

/** The values of `--conversion-webhook-certificates`. */
export const CERTIFICATE_KEEPERS: readonly CertificateKeeperKind[] = ['operator', 'external'];

/** RBAC rules of the conversion webhook, for the Secret `secretName`. */
export function conversionPermissions(
  secretName: string = DEFAULT_WEBHOOK_SECRET,
  certificates: CertificateKeeperKind = 'operator',
): PermissionRule[] {
  if (certificates === 'external') {
    return [
      {
        apiGroups: [''],
        resources: ['secrets'],
        verbs: ['get', 'list', 'watch'],
        resourceNames: [secretName],
        scope: 'own',
        reason: 'read and watch the webhook Secret another tool keeps (every replica serves its certificate)',
      },
    ];
  }
  return [
    {
      apiGroups: [''],
      resources: ['secrets'],
      verbs: ['get', 'list', 'watch', 'update'],
      resourceNames: [secretName],
      scope: 'own',
      // list/watch by name: every replica's informer selects metadata.name=<secret>.
      reason: 'read and watch the webhook Secret (every replica serves its certificate); the leader replaces it on rotation',
    },
    {
      apiGroups: [''],
      resources: ['secrets'],
      verbs: ['create'],
      scope: 'own',
      reason: 'create the webhook Secret on first start (the admission policy allows no other Secret)',
    },
    {
      apiGroups: ['apiextensions.k8s.io'],
      resources: ['customresourcedefinitions'],
      verbs: ['get', 'patch'],
      resourceNames: [...CONVERTED_CRD_NAMES],
      scope: 'cluster',
      reason: "read the two CRDs' conversion and patch their caBundle (the admission policy allows no other change)",
    },
  ];
}
