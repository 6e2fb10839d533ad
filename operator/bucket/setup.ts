/**
 * Wires the bucket controllers into a Manager: informers and their indexes, watch mappings,
 * predicates and reconcilers. The RBAC these need is declared in rbac.ts beside this file.
 *
 * The caches hold only what is ours or what we were pointed at: owned Secrets and Services
 * through a managed-by label selector (Secret data condensed to hashes), credential Secrets
 * through one informer on the credentials label (however many configs there are: one watch),
 * the StorageBucket CRD by name, metadata only (the uninstall guard, crd-guard.ts).
 * No informer lists all Secrets or Services.
 */
import type { V1Secret, V1Service } from '@kubernetes/client-node';
import type { BucketProviderConfig, StorageBucket } from '../api/v1';
import type { ProviderClients } from '../provider-client';
import {
  generationChangedOrAnnotations,
  newControllerManagedBy,
  type ControllerOptions,
  type InformerOptions,
  type Manager,
  type Predicate,
} from '../runtime';
import { ConfigReconciler } from './config-reconciler';
import { connect, CREDENTIALS_SELECTOR, withoutUnlabelledData, type CredentialSecrets } from './connect';
import { CRD, CRD_INFORMER_OPTIONS, crdGuard, STORAGE_BUCKET_CRD_NAME } from './crd-guard';
import { driftScan } from './drift-scanner';
import { registerBucketLifecycleMetrics } from './lifecycle-metrics';
import {
  BUCKETS_BY_CONFIG,
  CONFIGS_BY_SECRET,
  bucketConfigIndex,
  bucketsForConfig,
  bucketsForSecret,
  configForBucket,
  configSecretIndex,
  configsForSecret,
} from './indexes';
import { SECRET, SERVICE } from './kinds';
import { ownVersion, type OwnVersion } from './own-version';
import { MANAGED_BY_SELECTOR, condenseSecretData, type OwnedSecret } from './owned';
import { BucketReconciler } from './reconciler';
import { SecretProtectionReconciler, secretForConfig } from './secret-protection';
import type { EventSink, ObjectWriter, WriteFailures } from './writer';

/** Options of {@link setupBucketControllers}. */
export interface BucketControllersOptions {
  readonly writer: ObjectWriter;
  readonly events: EventSink;
  /** Told about writes that fail while another failure is being reported. @default the manager's */
  readonly writeFailures?: WriteFailures;
  readonly clients: ProviderClients;
  /** This cluster's identity, for the provider buckets' owner tags (see operator.ts). */
  readonly clusterId: string;
  /** @default 8 */
  readonly maxConcurrentReconciles?: number;
  /** Poll interval while Provisioning/Resizing. @default 3000 */
  readonly pollIntervalMs?: number;
  /** Time between bulk drift scans of each provider account. @default 60000 */
  readonly driftIntervalMs?: number;
  /** Per-reconcile deadline. @default 60000 */
  readonly reconcileTimeoutMs?: number;
  /** Runner rate limiter and other controller options. */
  readonly controllerOptions?: ControllerOptions;
  /**
   * The version of StorageBuckets and BucketProviderConfigs read from the API server (the
   * controllers see v1 either way; pass the same to the writer). @default v1
   */
  readonly own?: OwnVersion;
}

/** Controller names, as they appear in metrics and logs. */
export const BUCKET_CONTROLLER = 'storagebucket';
/** Name of the provider-config controller. */
export const CONFIG_CONTROLLER = 'bucketproviderconfig';
/** Name of the controller that protects referenced credential Secrets. */
export const SECRET_PROTECTION_CONTROLLER = 'secretprotection';

/**
 * Owned objects matter when someone else edits or deletes them. Their creation (in the
 * label-selected cache: also their labelling) is our own write (or, after a restart, the
 * initial list, when every bucket is enqueued anyway), so a create event would only cost one
 * more reconcile and provider call per bucket.
 */
const ownedChanged: Predicate = { create: () => false };

/** A bucket's config never changes (providerRef is immutable): only creates and deletes move the count. */
const membershipChanged: Predicate = { update: () => false };

/** Window in which bucket creates and deletes are folded into one bucketCount write. */
const CONFIG_COUNT_DELAY_MS = 1000;

/** Updates that change finalizers or start deletion; creates and deletes always pass. */
const finalizersOrDeletionChanged: Predicate = {
  update: (a, b) =>
    (a.metadata?.finalizers ?? []).join() !== (b.metadata?.finalizers ?? []).join() ||
    (a.metadata?.deletionTimestamp == null && b.metadata?.deletionTimestamp != null),
};

/** Registers the StorageBucket and BucketProviderConfig controllers on `mgr`. */
export function setupBucketControllers(mgr: Manager, opts: BucketControllersOptions): void {
  const informerOptions: InformerOptions = mgr.namespace ? { namespace: mgr.namespace } : {};
  // The controllers below ask for the same options, so they share these informers.
  const ownedSecretOptions: InformerOptions = { ...informerOptions, labelSelector: MANAGED_BY_SELECTOR, transform: condenseSecretData };
  const ownedServiceOptions: InformerOptions = { ...informerOptions, labelSelector: MANAGED_BY_SELECTOR };
  // Our own kinds are read in the wire version and converted to v1 as they enter the cache.
  const own = opts.own ?? ownVersion();
  const STORAGE_BUCKET = own.storageBucket;
  const PROVIDER_CONFIG = own.providerConfig;
  const bucketOptions: InformerOptions = { ...informerOptions, ...(own.version === 'v1' ? {} : { transform: own.decoder(STORAGE_BUCKET) }) };
  const configOptions: InformerOptions = { ...informerOptions, ...(own.version === 'v1' ? {} : { transform: own.decoder(PROVIDER_CONFIG) }) };
  const buckets = mgr.informers.informerFor<StorageBucket>(STORAGE_BUCKET, bucketOptions).cache;
  const configs = mgr.informers.informerFor<BucketProviderConfig>(PROVIDER_CONFIG, configOptions).cache;
  const ownedSecrets = mgr.informers.informerFor<OwnedSecret>(SECRET, ownedSecretOptions).cache;
  const services = mgr.informers.informerFor<V1Service>(SERVICE, ownedServiceOptions).cache;
  buckets.addIndex(BUCKETS_BY_CONFIG, bucketConfigIndex);
  configs.addIndex(CONFIGS_BY_SECRET, configSecretIndex);
  const lifecycleMetrics = registerBucketLifecycleMetrics(mgr, mgr.informers.informerFor<StorageBucket>(STORAGE_BUCKET, bucketOptions));
  // Credential Secrets opt in by label, so one watch holds them all. A config naming a Secret
  // without the label finds it missing from the cache and asks the API once, which tells "not
  // found" from "not labelled"; adding the label is an add event here, mapped to its configs
  // and buckets through CONFIGS_BY_SECRET.
  const credentialOptions: InformerOptions = { ...informerOptions, labelSelector: CREDENTIALS_SELECTOR };
  const credentials = mgr.informers.informerFor<V1Secret>(SECRET, credentialOptions);
  const secrets: CredentialSecrets = {
    cache: credentials.cache,
    waitForSync: (signal) => credentials.waitForSync(signal),
    lookup: async (key) => withoutUnlabelledData(await opts.writer.get<V1Secret>(SECRET, key)),
  };
  // Objects the API server deletes along with their CRD are released, never deprovisioned (cleanup.ts).
  const crd = crdGuard({
    cache: mgr.informers.informerFor(CRD, CRD_INFORMER_OPTIONS).cache,
    read: () => opts.writer.get(CRD, { namespace: '', name: STORAGE_BUCKET_CRD_NAME }),
    registry: mgr.metrics.registry,
  });

  // Spec changes, deletion, finalizers and our annotations (pause, adopt) matter; our own
  // status writes do not, since polling is driven by requeueAfter.
  const bucketPredicates = [generationChangedOrAnnotations()];
  const runner: ControllerOptions = {
    maxConcurrentReconciles: opts.maxConcurrentReconciles ?? 8,
    reconcileTimeoutMs: opts.reconcileTimeoutMs ?? 60_000,
    ...opts.controllerOptions,
  };

  const drift = driftScan(mgr, {
    buckets,
    configs,
    secrets,
    clients: opts.clients,
    clusterId: opts.clusterId,
    intervalMs: opts.driftIntervalMs,
    events: opts.events,
  });
  newControllerManagedBy(mgr, BUCKET_CONTROLLER)
    .for<StorageBucket>(STORAGE_BUCKET, { predicates: bucketPredicates, informerOptions: bucketOptions })
    .owns(SECRET, { predicates: [ownedChanged], informerOptions: ownedSecretOptions })
    .owns(SERVICE, { predicates: [ownedChanged], informerOptions: ownedServiceOptions })
    .watches<BucketProviderConfig>(PROVIDER_CONFIG, bucketsForConfig(buckets), {
      predicates: [generationChangedOrAnnotations()],
      informerOptions: configOptions,
    })
    .watches<V1Secret>(SECRET, bucketsForSecret(configs, buckets), { informerOptions: credentialOptions })
    .watchesChannel(drift.channel)
    .withOptions(runner)
    .complete(
      new BucketReconciler({
        driftMetrics: lifecycleMetrics,
        buckets,
        clusterId: opts.clusterId,
        ownedSecrets,
        services,
        crd,
        ownerApiVersion: `${STORAGE_BUCKET.group}/${STORAGE_BUCKET.version}`,
        connect: (bucket, signal) => connect({ configs, secrets, clients: opts.clients }, bucket, signal),
        writer: opts.writer,
        events: opts.events,
        writeFailures: opts.writeFailures ?? mgr.writeFailures,
        watchedNamespace: mgr.namespace,
        pollIntervalMs: opts.pollIntervalMs,
        driftIntervalMs: opts.driftIntervalMs,
        driftReports: drift.reports,
      }),
    );

  newControllerManagedBy(mgr, CONFIG_CONTROLLER)
    .for<BucketProviderConfig>(PROVIDER_CONFIG, { predicates: [generationChangedOrAnnotations()], informerOptions: configOptions })
    // Only membership matters (providerRef is immutable, so creates and deletes), and a burst of
    // creates or deletes is counted once per second rather than written once per bucket.
    .watches<StorageBucket>(STORAGE_BUCKET, configForBucket, {
      predicates: [membershipChanged],
      delayMs: CONFIG_COUNT_DELAY_MS,
      informerOptions: bucketOptions,
    })
    .watches<V1Secret>(SECRET, configsForSecret(configs), { informerOptions: credentialOptions })
    // A drift scan whose outcome for a config changed: the DriftScanned condition follows.
    .watchesChannel(drift.configChannel)
    .withOptions({ ...runner, maxConcurrentReconciles: 2 })
    .complete(
      new ConfigReconciler({
        configs,
        buckets,
        secrets,
        writer: opts.writer,
        allowLinkLocalEndpoints: opts.clients.allowLinkLocalEndpoints,
        scanStates: drift.states,
      }),
    );

  // Secrets only matter here when their finalizers or deletion change, or when they enter or
  // leave the label-selected cache (an add or delete event: labelled, or the label removed);
  // data edits do not.
  newControllerManagedBy(mgr, SECRET_PROTECTION_CONTROLLER)
    .for<V1Secret>(SECRET, { predicates: [finalizersOrDeletionChanged], informerOptions: credentialOptions })
    .watches<BucketProviderConfig>(PROVIDER_CONFIG, secretForConfig, { informerOptions: configOptions })
    .withOptions({ ...runner, maxConcurrentReconciles: 2 })
    .complete(new SecretProtectionReconciler({ secrets, configs, writer: opts.writer }));
}
