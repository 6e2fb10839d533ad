/**
 * Names the operator writes onto objects: finalizers, annotations and labels. Kept with the
 * API because users read and write them too.
 */
import { GROUP } from './group';

/** Finalizer that keeps a StorageBucket until its provider bucket is cleaned up. */
export const BUCKET_FINALIZER = `${GROUP}/bucket-cleanup`;

/** Finalizer that keeps a BucketProviderConfig while StorageBuckets still use it. */
export const CONFIG_IN_USE_FINALIZER = `${GROUP}/in-use`;

/**
 * Finalizer on credential Secrets while a BucketProviderConfig references them (the same name
 * as the config's). The shipped ValidatingAdmissionPolicy lets the operator add this finalizer
 * only to Secrets labelled {@link CREDENTIALS_SECRET_LABEL}, and remove it from any Secret.
 */
export const SECRET_IN_USE_FINALIZER = CONFIG_IN_USE_FINALIZER;

/**
 * Label a Secret must carry before the operator reads it as provider credentials (as Argo
 * CD's `argocd.argoproj.io/secret-type`): being allowed to create a BucketProviderConfig must
 * not be enough to have any Secret of the namespace sent as a bearer token. The operator's
 * only credentials informer selects on it, so unlabelled Secrets are never cached.
 */
export const CREDENTIALS_SECRET_LABEL = `${GROUP}/secret-type`;

/** Value of {@link CREDENTIALS_SECRET_LABEL}. */
export const CREDENTIALS_SECRET_TYPE = 'provider-credentials';

/** Set to "true" to stop all provider calls for a StorageBucket. */
export const PAUSED_ANNOTATION = `${GROUP}/paused`;

/** Names an existing provider bucket id to adopt instead of creating a new bucket. */
export const ADOPT_ANNOTATION = `${GROUP}/adopt-id`;

/**
 * The idempotency key of the next (or last) provider create. Kept in an annotation, written
 * together with the finalizer before any create, because annotations survive backup and
 * restore where status does not.
 */
export const IDEMPOTENCY_KEY_ANNOTATION = `${GROUP}/idempotency-key`;

/**
 * Where a create with the current idempotency key is sent: `<object uid> <provider account>
 * <provider endpoint>`, written in the same write as the key, before the create (as
 * Crossplane's `external-create-pending`). If the create's answer is lost and the config then
 * points elsewhere, the bucket may exist where it was sent: the operator reports
 * ProviderChanged rather than create a second one. Remove it to confirm nothing was created
 * there. A copied manifest carries another uid, so the copy ignores it.
 */
export const CREATE_TARGET_ANNOTATION = `${GROUP}/create-target`;

/**
 * Set to a new value (e.g. the current time) to ask for a reconcile now, as Flux's
 * `reconcile.fluxcd.io/requestedAt`; the handled value is echoed into
 * `status.lastHandledReconcileAt`.
 */
export const RECONCILE_REQUESTED_ANNOTATION = `${GROUP}/reconcile-requested-at`;

/**
 * Written on a v1 StorageBucket by the conversion from v2 (operator/api/convert) when its v2
 * form holds what v1 cannot: a `spec.forProvider.size` not written `<sizeGB>G` (e.g. `1500Mi`,
 * served as `sizeGB: 2`). Reading the object as v2 gives that size back and drops the
 * annotation. After an edit of `sizeGB` through v1 the value no longer rounds up to it: v2
 * then shows `<sizeGB>G`, and the old value as an ordinary annotation until someone removes it.
 */
export const V2_SIZE_ANNOTATION = `${GROUP}/v2-size`;

/** Label on owned objects naming the StorageBucket they belong to. */
export const BUCKET_NAME_LABEL = `${GROUP}/bucket`;

/**
 * Label the operator puts on every object it creates (the `<bucket>-access` Secret and the
 * bucket's Service). Its informers for those kinds select on it. The shipped
 * ValidatingAdmissionPolicy lets the operator create only objects that carry it, and requires it
 * on every object the operator changes; what makes an object the operator's, though, is a
 * controller ownerReference to a StorageBucket, not this label.
 */
export const MANAGED_BY_LABEL = `${GROUP}/managed-by`;

/** Value of {@link MANAGED_BY_LABEL}. */
export const MANAGED_BY_VALUE = 'bucketoperator';

/**
 * Every label key the operator writes on the objects it owns, and the only ones the shipped
 * ValidatingAdmissionPolicy lets it create them with or change on them. Any other key on an owned
 * object is the user's: the operator's writes leave it as it is.
 */
export const OWNED_OBJECT_LABELS: readonly string[] = [BUCKET_NAME_LABEL, MANAGED_BY_LABEL];

/** Every annotation key the operator writes on the objects it owns: none (see {@link OWNED_OBJECT_LABELS}). */
export const OWNED_OBJECT_ANNOTATIONS: readonly string[] = [];

/**
 * A cluster identity given by hand (`--cluster-id`, the construct's `clusterId`): it becomes a
 * provider tag value, so a bounded plain string.
 */
export const CLUSTER_ID_PATTERN = /^[A-Za-z0-9][-A-Za-z0-9_.]{0,62}$/;
