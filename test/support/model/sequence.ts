/**
 * Runs one list of actions against a fresh world and judges it: provider writes as they are
 * made, the world at every quiescent point, and, after the list, a teardown that deletes
 * every StorageBucket with the configs as they are, then (for objects still there) points the
 * configs at each endpoint and account in turn, as a user clearing up would. The first
 * broken invariant ends the run.
 */
import type { BucketProviderConfig, StorageBucket } from '../../../operator/api/v1';
import { PAUSED_ANNOTATION } from '../../../operator/api/v1';
import { applyAction, describe, type ModelAction } from './actions';
import { checkQuiescent, checkTeardown, checkWrite, Invariant, type Violation } from './invariants';
import { Runner } from './runner';
import { CONFIG_NAME, CREDENTIALS, ENDPOINTS, KINDS, ModelWorld, NAMESPACES, type CredentialName } from './world';

/** What one run found. */
export interface RunResult {
  /** Empty when every invariant held. */
  readonly violations: readonly Violation[];
  /** What happened, one line per action (bucket numbers resolved), then the teardown. */
  readonly trace: readonly string[];
  /** Reconciles run. */
  readonly reconciles: number;
}

/** Runs `actions` and the teardown on a fresh world. */
export async function runSequence(actions: readonly ModelAction[]): Promise<RunResult> {
  const world = new ModelWorld();
  const runner = new Runner(world);
  const env = { world, runner };
  const violations: Violation[] = [];
  const trace: string[] = [];
  world.providers.beforeWrite = (call) => violations.push(...checkWrite(world.api, call));
  const result = () => ({ violations, trace, reconciles: world.reconcileCount });

  const settle = async (label: string): Promise<boolean> => {
    const q = await runner.quiesce();
    if (!q.quiet) violations.push({ invariant: Invariant.quiescence, detail: `${q.reason} (at ${label})` });
    else violations.push(...checkQuiescent(world.api.list<StorageBucket>(KINDS.bucket), world.providers.all()));
    return violations.length === 0;
  };

  for (const [i, a] of actions.entries()) {
    trace.push(await applyAction(env, a, i));
    if (violations.length > 0) return result();
    if (a.type === 'quiesce' && !(await settle(describe(a)))) return result();
  }

  trace.push('teardown: operator runs until quiet');
  if (!(await settle('before teardown'))) return result();
  // Paused objects wait for a person by design: one deleting everything unpauses first.
  trace.push('teardown: user unpauses and deletes every StorageBucket');
  for (const b of world.api.list<StorageBucket>(KINDS.bucket)) {
    const k = { namespace: b.metadata.namespace ?? '', name: b.metadata.name ?? '' };
    world.api.userUpdate<StorageBucket>(KINDS.bucket, k, (live) => {
      const annotations = { ...live.metadata.annotations };
      delete annotations[PAUSED_ANNOTATION];
      return { ...live, metadata: { ...live.metadata, annotations } };
    });
    world.api.userDelete(KINDS.bucket, k);
  }
  if (!(await settle('teardown'))) return result();
  for (const endpoint of ENDPOINTS) {
    for (const secret of Object.keys(CREDENTIALS) as CredentialName[]) {
      if (world.api.list(KINDS.bucket).length === 0) break;
      trace.push(`teardown: user points every config at ${endpoint} with ${secret} to free what is stuck`);
      for (const namespace of NAMESPACES) {
        world.api.userUpdate<BucketProviderConfig>(KINDS.config, { namespace, name: CONFIG_NAME }, (c) => ({
          ...c,
          spec: { ...c.spec, endpoint, secretRef: { ...c.spec.secretRef, name: secret } },
        }));
      }
      if (!(await settle('teardown'))) return result();
    }
  }
  violations.push(...checkTeardown(world.api.list<StorageBucket>(KINDS.bucket), world.providers.all(), runner.releasedUids));
  return result();
}
