/**
 * Permissions the StorageBucket and BucketProviderConfig controllers use. Pure data kept
 * next to the controllers; infra/ renders it into ClusterRoles or Roles.
 *
 * Only verbs the code sends are granted. Every write is a PATCH (server-side apply, JSON
 * patches of finalizers, merge patches of metadata and status); nothing PUTs, and nothing
 * deletes: owned Secrets and Services go with their StorageBucket through garbage
 * collection. RBAC cannot narrow a verb by label or Secret type, so the shipped
 * ValidatingAdmissionPolicy (infra/admission-policy.ts) narrows which Secrets and Services
 * those writes may touch.
 */
import type { PermissionRule } from '../api/policy';
import { GROUP } from '../api/v1/group';
import { CLUSTER_IDENTITY_NAMESPACE } from './cluster-identity';
import { STORAGE_BUCKET_CRD_NAME } from './crd-guard';

/**
 * Reading the kube-system namespace's uid: the cluster identity, not needed with
 * `--cluster-id` (infra/ leaves it out then).
 */
export const CLUSTER_IDENTITY_PERMISSION: PermissionRule = {
  apiGroups: [''],
  resources: ['namespaces'],
  verbs: ['get'],
  resourceNames: [CLUSTER_IDENTITY_NAMESPACE],
  scope: 'cluster',
  reason: "read the kube-system namespace's uid once at start: the cluster identity in provider buckets' owner tags (not needed with --cluster-id)",
};

/** RBAC rules of the bucket controllers. */
export const BUCKET_PERMISSIONS: readonly PermissionRule[] = [
  {
    apiGroups: [GROUP],
    resources: ['storagebuckets', 'bucketproviderconfigs'],
    verbs: ['list', 'watch', 'patch'],
    scope: 'watched',
    reason: 'cache the custom resources (list/watch) and patch their finalizers and annotations',
  },
  {
    apiGroups: [GROUP],
    resources: ['storagebuckets/status', 'bucketproviderconfigs/status'],
    verbs: ['patch'],
    scope: 'watched',
    reason: 'write status through the status subresource only, as a merge patch',
  },
  {
    apiGroups: [GROUP],
    resources: ['storagebuckets/finalizers'],
    verbs: ['update'],
    scope: 'watched',
    // The OwnerReferencesPermissionEnforcement admission plugin checks this verb (not a
    // request the operator sends) before it lets an object carry blockOwnerDeletion: true
    // for an owner; owned Secrets and Services do, for their StorageBucket. No object is
    // owned by a BucketProviderConfig, so its finalizers subresource needs nothing.
    reason: 'set blockOwnerDeletion on owned objects where OwnerReferencesPermissionEnforcement is on',
  },
  {
    apiGroups: [''],
    resources: ['secrets'],
    verbs: ['get', 'list', 'watch', 'create', 'patch'],
    scope: 'watched',
    reason: 'read provider API keys, patch their in-use finalizer, and create and patch the owned <bucket>-access Secret',
  },
  {
    apiGroups: [''],
    resources: ['services'],
    verbs: ['get', 'list', 'watch', 'create', 'patch'],
    scope: 'watched',
    reason: 'create and patch the owned ExternalName Service fronting each bucket',
  },
  CLUSTER_IDENTITY_PERMISSION,
  {
    apiGroups: ['apiextensions.k8s.io'],
    resources: ['customresourcedefinitions'],
    // list/watch by name too: the informer selects metadata.name=<the CRD>, which RBAC
    // matches against resourceNames.
    verbs: ['get', 'list', 'watch'],
    resourceNames: [STORAGE_BUCKET_CRD_NAME],
    scope: 'cluster',
    reason: 'see whether the StorageBucket CRD is being deleted: objects deleted with it are released, their provider buckets kept (uninstall guard)',
  },
];
