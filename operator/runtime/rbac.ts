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
    verbs: ['get', 'create', 'update'],
    scope: 'own',
    // Read, then create or replace (PUT) with the resourceVersion read: the optimistic lock
    // that makes two replicas unable to both win.
    reason: 'leader election Lease: read, create, replace under optimistic concurrency',
  },
  {
    apiGroups: ['events.k8s.io'],
    resources: ['events'],
    verbs: ['create', 'patch'],
    scope: 'watched',
    reason: 'record Events about reconciled objects and patch the series count of repeats',
  },
];
