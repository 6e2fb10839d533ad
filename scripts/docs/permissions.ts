/**
 * The operator's RBAC as docs/security.md shows it, from the rules each part of the operator
 * declares next to its code (operator/bucket/rbac.ts, operator/runtime/rbac.ts,
 * operator/conversion/rbac.ts): the same rules infra/rbac.ts renders into Roles.
 */
import type { PermissionRule } from '../../operator/api/policy';
import { BUCKET_PERMISSIONS } from '../../operator/bucket/rbac';
import { conversionPermissions } from '../../operator/conversion/rbac';
import { RUNTIME_PERMISSIONS } from '../../operator/runtime/rbac';
import { table } from './markdown';

const SCOPE: Readonly<Record<PermissionRule['scope'], string>> = {
  watched: 'watched namespaces (cluster-wide in cluster mode)',
  own: "the operator's namespace",
  cluster: 'cluster-scoped, by name',
};

function rows(rules: readonly PermissionRule[]): string[][] {
  return rules.map((r) => [
    r.resources.map((res) => `\`${r.apiGroups[0] ? `${r.apiGroups[0]}/` : ''}${res}\``).join(', ') +
      (r.resourceNames ? ` (only ${r.resourceNames.map((n) => `\`${n}\``).join(', ')})` : ''),
    r.verbs.join(', '),
    SCOPE[r.scope],
    r.reason,
  ]);
}

/** Every rule the operator gets, then those the conversion webhook adds when it is on. */
export function permissionsTable(): string {
  const headers = ['resource', 'verbs', 'where', 'why'];
  return [
    '_Rendered by `npm run docs` from `operator/bucket/rbac.ts`, `operator/runtime/rbac.ts` and `operator/conversion/rbac.ts`; do not edit._',
    '',
    table(headers, rows([...BUCKET_PERMISSIONS, ...RUNTIME_PERMISSIONS])),
    '',
    'With `conversionWebhook: {}` (the operator keeps the certificates) it adds:',
    '',
    table(headers, rows(conversionPermissions())),
    '',
    'With `conversionWebhook: { certManager: {} }` (cert-manager keeps them) it adds only:',
    '',
    table(headers, rows(conversionPermissions(undefined, 'external'))),
  ].join('\n');
}
