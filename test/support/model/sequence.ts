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

/**
 * One world being driven: actions applied one at a time, quiescent points and the teardown
 * judged, violations and the trace collected. The sequence runner and the exhaustive search
 * (exhaustive.ts, which starts sessions from saved worlds) share it.
 */
export class ModelSession {
  readonly runner: Runner;
  readonly violations: Violation[] = [];
  readonly trace: string[] = [];

  /** `releasedUids`: objects already deleted with a policy that keeps their bucket (a saved world's). */
  constructor(
    readonly world: ModelWorld,
    releasedUids: Iterable<string> = [],
  ) {
    this.runner = new Runner(world);
    for (const uid of releasedUids) this.runner.releasedUids.add(uid);
    world.providers.beforeWrite = (call) => this.violations.push(...checkWrite(world.api, call));
  }

  /** Applies action number `n`; returns its trace line. */
  async act(a: ModelAction, n: number): Promise<string> {
    const line = await applyAction({ world: this.world, runner: this.runner }, a, n);
    this.trace.push(line);
    return line;
  }

  /** Runs the operator until quiet and judges the world; false once anything is broken. */
  async settle(label: string): Promise<boolean> {
    const q = await this.runner.quiesce();
    if (!q.quiet) this.violations.push({ invariant: Invariant.quiescence, detail: `${q.reason} (at ${label})` });
    else this.violations.push(...checkQuiescent(this.world.api.list<StorageBucket>(KINDS.bucket), this.world.providers.all()));
    return this.violations.length === 0;
  }

  /** Deletes everything as a user clearing up would, and judges what is left. */
  async teardown(): Promise<void> {
    const { world, runner, trace } = this;
    trace.push('teardown: operator runs until quiet');
    if (!(await this.settle('before teardown'))) return;
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
    if (!(await this.settle('teardown'))) return;
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
        if (!(await this.settle('teardown'))) return;
      }
    }
    this.violations.push(...checkTeardown(world.api.list<StorageBucket>(KINDS.bucket), world.providers.all(), runner.releasedUids));
  }

  /** What the session found so far. */
  result(): RunResult {
    return { violations: this.violations, trace: this.trace, reconciles: this.world.reconcileCount };
  }
}

/** Runs `actions` and the teardown on a fresh world. */
export async function runSequence(actions: readonly ModelAction[]): Promise<RunResult> {
  const session = new ModelSession(new ModelWorld());
  for (const [i, a] of actions.entries()) {
    await session.act(a, i);
    if (session.violations.length > 0) return session.result();
    if (a.type === 'quiesce' && !(await session.settle(describe(a)))) return session.result();
  }
  await session.teardown();
  return session.result();
}
