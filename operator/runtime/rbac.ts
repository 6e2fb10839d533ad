/**
 * Permissions the generic runtime needs whatever the controllers: leader election and events.
 * Pure data; infra/ renders it into Roles.
 */
import type { PermissionRule } from '../api/policy';

/** RBAC rules of the manager itself. */
export const RUNTIME_PERMISSIONS: readonly PermissionRule[] = [
  {
    apiGroups: ['coordination.k8s.io'],
    resources: ['leases'],
    verbs: ['get', 'create', 'update', 'patch'],
    scope: 'own',
    reason: 'leader election Lease',
  },
  {
    apiGroups: ['events.k8s.io'],
    resources: ['events'],
    verbs: ['create', 'patch', 'update'],
    scope: 'watched',
    reason: 'record and aggregate Events about reconciled objects',
  },
];
