/**
 * One seed of the real-control-plane model check: fresh namespaces `ns1`/`ns2` (each with the
 * two credential Secrets and the config `default`), the model generator's actions for the seed
 * applied through {@link E2eRun}, the invariants judged at every `quiesce` and before the
 * teardown, then a teardown as the in-process sequence does it (unpause and delete every
 * StorageBucket; if some stay, point the configs at each endpoint and account in turn), and the
 * teardown invariant. The first broken invariant ends the run; the namespaces are deleted
 * either way.
 */
import type { StorageBucket } from '../../../operator/api/v1';
import { PAUSED_ANNOTATION } from '../../../operator/api/v1';
import { PROVIDER_CONFIG, SECRET, STORAGE_BUCKET } from '../../../operator/bucket/kinds';
import type { KubeObject } from '../../../operator/runtime/types';
import { isNotFound } from '../../../operator/runtime/api-errors';
import { describe, randomActions, type ModelAction } from '../model/actions';
import { checkQuiescent, checkTeardown, Invariant, type Violation } from '../model/invariants';
import { Prng } from '../model/prng';
import { CONFIG_NAME, CREDENTIALS, NAMESPACES, type CredentialName } from '../model/world';
import { credentialsSecretManifest, freshNamespace } from '../kube';
import { E2eRun } from './adapter';
import { listObjects, quiesce, snapshot } from './observe';
import type { E2eStack } from './stack';
import { loggedWrites } from './operator-log';
import { checkInterval } from './writes';

/** What one seed found. */
export interface E2eResult {
  readonly seed: number;
  readonly actions: readonly ModelAction[];
  readonly violations: readonly Violation[];
  /** One line per action as applied, then the teardown; the first lines map the namespaces. */
  readonly trace: readonly string[];
  readonly ms: number;
  /** Set when the run itself failed (an API or provider call threw): no verdict on the invariants. */
  readonly error?: string;
}

const NAMESPACE_KIND = { group: '', version: 'v1', kind: 'Namespace', plural: 'namespaces', namespaced: false } as const;

/** Fresh namespaces with the model's Secrets and config (pointing at the first provider with cred-alpha). */
async function setUp(stack: E2eStack, seed: number): Promise<Record<string, string>> {
  const nsMap: Record<string, string> = {};
  const first = stack.providers[0];
  if (!first) throw new Error('no providers');
  for (const model of NAMESPACES) {
    const ns = await freshNamespace(stack.cp, `me2e-s${seed}-${model}`);
    nsMap[model] = ns;
    for (const name of Object.keys(CREDENTIALS) as CredentialName[]) {
      await stack.admin.create(SECRET, credentialsSecretManifest(ns, name, stack.keys[name]) as unknown as KubeObject);
    }
    await stack.admin.create(PROVIDER_CONFIG, {
      apiVersion: 'storage.avalonhosting.example/v1',
      kind: 'BucketProviderConfig',
      metadata: { name: CONFIG_NAME, namespace: ns },
      spec: { endpoint: first.url, insecure: true, secretRef: { name: 'cred-alpha', key: 'apiKey' } },
    } as KubeObject);
  }
  return nsMap;
}

/** Runs `actions` (or the generator's `length` actions for `seed`) on `stack`. */
export async function runSeed(stack: E2eStack, seed: number, length: number, given?: readonly ModelAction[]): Promise<E2eResult> {
  const start = Date.now();
  const actions = given ?? randomActions(new Prng(seed), length);
  await Promise.all(stack.providers.map((p) => p.setFaults({})));
  const run = new E2eRun(stack, await setUp(stack, seed));
  const trace: string[] = [`namespaces: ${NAMESPACES.map((m) => `${m} = ${run.ns(m)}`).join(', ')}`];
  const violations: Violation[] = [];
  let error: string | undefined;
  const result = (): E2eResult => ({ seed, actions, violations, trace, ms: Date.now() - start, ...(error === undefined ? {} : { error }) });

  let logOffset = stack.operator.logs().length;
  const settle = async (label: string): Promise<boolean> => {
    const q = await quiesce(stack, run.namespaces);
    const log = stack.operator.logs();
    const logged = loggedWrites(log.slice(logOffset)).filter((w) => run.namespaces.includes(w.namespace));
    logOffset = log.length;
    await run.noteReleased();
    if (!q.quiet) {
      violations.push({ invariant: Invariant.quiescence, detail: `${q.reason ?? ''} (at ${label})` });
      return false;
    }
    const now = await snapshot(stack, run.namespaces);
    violations.push(...checkInterval(run.baseline, now, run.touched, logged), ...checkQuiescent(now.objects, now.buckets));
    run.baseline = { objects: [...now.objects], buckets: [...now.buckets] };
    run.touched.clear();
    trace.push(`  quiet after ${q.ms} ms: ${now.objects.length} StorageBuckets, ${run.scoped(now.buckets).length} provider buckets of this run`);
    return violations.length === 0;
  };

  try {
    for (const [i, a] of actions.entries()) {
      trace.push(await run.apply(a, i));
      if (a.type === 'quiesce' && !(await settle(describe(a)))) return result();
    }
    trace.push('teardown: operator runs until quiet');
    if (!(await settle('before teardown'))) return result();
    trace.push('teardown: user unpauses and deletes every StorageBucket');
    await Promise.all(stack.providers.map((p) => p.setFaults({})));
    for (const b of await listObjects(stack, run.namespaces)) {
      const ns = b.metadata.namespace ?? '';
      const name = b.metadata.name ?? '';
      if (b.metadata.annotations?.[PAUSED_ANNOTATION] !== undefined) {
        await stack.admin.patch(STORAGE_BUCKET, ns, name, { metadata: { annotations: { [PAUSED_ANNOTATION]: null } } }, 'merge');
      }
      const live = await stack.admin.get<StorageBucket>(STORAGE_BUCKET, ns, name).catch((err: unknown) => {
        if (isNotFound(err)) return undefined;
        throw err;
      });
      if (live) await run.deleteObject(live);
    }
    if (!(await settle('teardown'))) return result();
    for (const [index, p] of stack.providers.entries()) {
      for (const secret of Object.keys(CREDENTIALS) as CredentialName[]) {
        if ((await listObjects(stack, run.namespaces)).length === 0) break;
        trace.push(`teardown: user points every config at endpoint ${index} (${p.url}) with ${secret} to free what is stuck`);
        for (const ns of run.namespaces) {
          await stack.admin.patch(
            PROVIDER_CONFIG,
            ns,
            CONFIG_NAME,
            { spec: { endpoint: p.url, insecure: true, secretRef: { name: secret, key: 'apiKey' } } },
            'merge',
          );
        }
        if (!(await settle('teardown'))) return result();
      }
    }
    const left = await snapshot(stack, run.namespaces);
    violations.push(...checkTeardown(left.objects, run.scoped(left.buckets), run.releasedUids));
    return result();
  } catch (err) {
    error = err instanceof Error ? (err.stack ?? err.message) : String(err);
    return result();
  } finally {
    for (const ns of run.namespaces) {
      await stack.admin.delete(NAMESPACE_KIND, '', ns).catch(() => undefined);
    }
  }
}
