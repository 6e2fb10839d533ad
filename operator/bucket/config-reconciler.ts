/**
 * BucketProviderConfig reconciler: reports whether the config's Secret is usable, counts the
 * StorageBuckets using it, and holds an in-use finalizer so the config cannot disappear while
 * buckets still need it to deprovision.
 */
import type { BucketProviderConfig, BucketProviderConfigStatus, StorageBucket } from '../api/v1';
import { CONFIG_IN_USE_FINALIZER } from '../api/v1';
import {
  conditionsEqual,
  done,
  setCondition,
  type Action,
  type Cache,
  type Condition,
  type ReconcileContext,
  type Reconciler,
  type Request,
} from '../runtime';
import { endpointProblem, resolveCredentials, type CredentialSecrets } from './connect';
import { scanCondition, type ScanStates } from './drift-scan-state';
import { BUCKETS_BY_CONFIG } from './indexes';
import { PROVIDER_CONFIG } from './kinds';
import { ConditionType, Reason } from './reasons';
import type { ObjectWriter } from './writer';

/** Reason of a config that cannot be deleted yet. */
export const IN_USE_REASON = 'InUse';

/** Dependencies of {@link ConfigReconciler}. */
export interface ConfigReconcilerDeps {
  readonly configs: Cache<BucketProviderConfig>;
  readonly buckets: Cache<StorageBucket>;
  /** Credential Secrets: the label-selected cache, and one GET on a miss. */
  readonly secrets: CredentialSecrets;
  readonly writer: ObjectWriter;
  /** `--allow-link-local-endpoints`, so Ready says what connect() will say. @default false */
  readonly allowLinkLocalEndpoints?: boolean;
  /** The drift scanner's latest outcome per config, reported as the DriftScanned condition. */
  readonly scanStates?: ScanStates;
  /** @default () => new Date() */
  readonly now?: () => Date;
}

/** Reconciles BucketProviderConfigs. */
export class ConfigReconciler implements Reconciler {
  private readonly now: () => Date;

  constructor(private readonly d: ConfigReconcilerDeps) {
    this.now = d.now ?? (() => new Date());
  }

  async reconcile(req: Request, ctx: ReconcileContext): Promise<Action> {
    const config = this.d.configs.get(req);
    if (!config) return done();
    const users = this.d.buckets.byIndex(BUCKETS_BY_CONFIG, `${req.namespace}/${req.name}`);
    const hasFinalizer = (config.metadata.finalizers ?? []).includes(CONFIG_IN_USE_FINALIZER);
    // A conflict (stale cache) is thrown to the runner, whose backoff retries it: never a fixed
    // fast requeue that a stuck cache would turn into a loop.
    if (config.metadata.deletionTimestamp) {
      if (!hasFinalizer) return done();
      if (users.length === 0) {
        // The cache may lag a bucket created just now; the API server has the last word.
        if (!(await this.d.writer.configHasUsers(req))) {
          await this.d.writer.removeFinalizer(PROVIDER_CONFIG, config, CONFIG_IN_USE_FINALIZER);
          return done();
        }
        // The bucket's arrival in the cache maps back to this config and brings it here again.
        await this.writeStatus(config, 1, {
          status: 'False',
          reason: IN_USE_REASON,
          message: 'deletion waits for a StorageBucket using this config (not yet in the operator cache)',
        });
        return done();
      }
      await this.writeStatus(config, users.length, {
        status: 'False',
        reason: IN_USE_REASON,
        message: `deletion waits for ${users.length} StorageBucket(s) using this config`,
      });
      // Each bucket's deletion is mapped back to this config, so no polling is needed.
      return done();
    }
    if (!hasFinalizer) {
      await this.d.writer.addFinalizer(PROVIDER_CONFIG, config, CONFIG_IN_USE_FINALIZER);
      return done();
    }
    await this.writeStatus(config, users.length, await this.secretReadiness(config, ctx.signal));
    return done();
  }

  private async secretReadiness(
    config: BucketProviderConfig,
    signal: AbortSignal,
  ): Promise<{ status: 'True' | 'False'; reason: string; message: string }> {
    // An endpoint the operator refuses is reported first: it needs the config edited, whatever
    // the Secret holds.
    const problem = endpointProblem(config.spec, { allowLinkLocal: this.d.allowLinkLocalEndpoints ?? false });
    if (problem) return { status: 'False', reason: Reason.InvalidProviderConfig, message: problem };
    // Not found and not labelled read differently: only the second needs the label command.
    const credentials = await resolveCredentials(this.d.secrets, config, signal);
    if (!credentials.ok) return { status: 'False', reason: credentials.reason, message: credentials.message };
    return { status: 'True', reason: Reason.Available, message: '' };
  }

  private async writeStatus(
    config: BucketProviderConfig,
    bucketCount: number,
    ready: { status: 'True' | 'False'; reason: string; message: string },
  ): Promise<void> {
    const prev = config.status ?? {};
    const generation = config.metadata.generation;
    let conditions = setCondition(
      prev.conditions as Condition[] | undefined,
      { type: ConditionType.Ready, ...ready, observedGeneration: generation },
      this.now(),
    );
    const scan = this.d.scanStates?.get(`${config.metadata.namespace ?? ''}/${config.metadata.name ?? ''}`);
    if (scan) conditions = setCondition(conditions, scanCondition(scan, generation), this.now());
    const next: BucketProviderConfigStatus = { bucketCount, conditions, ...(generation !== undefined ? { observedGeneration: generation } : {}) };
    const same =
      prev.bucketCount === next.bucketCount &&
      prev.observedGeneration === next.observedGeneration &&
      conditionsEqual(prev.conditions as Condition[] | undefined, conditions);
    if (same) return;
    await this.d.writer.patchStatus(PROVIDER_CONFIG, config, { ...next });
  }
}
