/**
 * Permissions the StorageBucket and BucketProviderConfig controllers use. Pure data kept
 * next to the controllers; infra/ renders it into ClusterRoles or Roles.
 */
import type { PermissionRule } from '../api/policy';
import { GROUP } from '../api/v1/group';

/** RBAC rules of the bucket controllers. */
export const BUCKET_PERMISSIONS: readonly PermissionRule[] = [
  {
    apiGroups: [GROUP],
    resources: ['storagebuckets', 'bucketproviderconfigs'],
    verbs: ['get', 'list', 'watch', 'patch', 'update'],
    scope: 'watched',
    reason: 'watch the custom resources and manage their finalizers and annotations',
  },
  {
    apiGroups: [GROUP],
    resources: ['storagebuckets/status', 'bucketproviderconfigs/status'],
    verbs: ['get', 'patch', 'update'],
    scope: 'watched',
    reason: 'write status through the status subresource only',
  },
  {
    apiGroups: [GROUP],
    resources: ['storagebuckets/finalizers', 'bucketproviderconfigs/finalizers'],
    verbs: ['update'],
    scope: 'watched',
    reason: 'set blockOwnerDeletion on owned objects where OwnerReferencesPermissionEnforcement is on',
  },
  {
    apiGroups: [''],
    resources: ['secrets'],
    verbs: ['get', 'list', 'watch', 'create', 'patch', 'update', 'delete'],
    scope: 'watched',
    reason: 'read provider API keys and manage the owned <bucket>-access Secret',
  },
  {
    apiGroups: [''],
    resources: ['services'],
    verbs: ['get', 'list', 'watch', 'create', 'patch', 'update', 'delete'],
    scope: 'watched',
    reason: 'manage the owned Service fronting each bucket',
  },
];
