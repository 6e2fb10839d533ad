/**
 * What a model-e2e run reads of the real world: the StorageBuckets of its namespaces, every
 * provider bucket (the admin list of both providers, every account), and quiescence, defined
 * as: the operator's workqueues are empty and no worker is busy, and for {@link QUIET_MS}
 * neither the providers' write counters (POST, PATCH, DELETE outside /admin) nor the
 * StorageBuckets' resourceVersions moved. Reads from the drift scan (a list every drift
 * interval) do not count as movement.
 */
import type { StorageBucket } from '../../../operator/api/v1';
import { STORAGE_BUCKET } from '../../../operator/bucket/kinds';
import type { PlacedBucket } from '../model/provider';
import { scrape, sum } from '../prometheus';
import type { E2eStack } from './stack';

/** How long nothing may move for the world to count as quiet. */
export const QUIET_MS = 3000;
/** Longest wait for quiet before the run reports the quiescence invariant broken. */
export const QUIESCE_TIMEOUT_MS = 90_000;

/** The world at one moment. */
export interface Snapshot {
  readonly objects: readonly StorageBucket[];
  /** Every provider bucket at every endpoint; `endpoint` is the provider's URL. */
  readonly buckets: readonly PlacedBucket[];
}

/** The StorageBuckets of `namespaces`. */
export async function listObjects(stack: E2eStack, namespaces: readonly string[]): Promise<StorageBucket[]> {
  const { items } = await stack.admin.list<StorageBucket>(STORAGE_BUCKET);
  return items.filter((o) => namespaces.includes(o.metadata.namespace ?? ''));
}

/** Every bucket at every provider. */
export async function listBuckets(stack: E2eStack): Promise<PlacedBucket[]> {
  const per = await Promise.all(
    stack.providers.map(async (p) => (await p.buckets()).map((bucket) => ({ endpoint: p.url, account: bucket.account ?? '?', bucket }))),
  );
  return per.flat();
}

/** Objects and buckets now. */
export async function snapshot(stack: E2eStack, namespaces: readonly string[]): Promise<Snapshot> {
  const [objects, buckets] = await Promise.all([listObjects(stack, namespaces), listBuckets(stack)]);
  return { objects, buckets };
}

const WRITE = /^(POST|PATCH|PUT|DELETE) (?!\/admin)/;

/** A string that changes whenever something the quiescence definition watches moves. */
async function fingerprint(stack: E2eStack, namespaces: readonly string[]): Promise<{ busy: number; print: string }> {
  const [samples, stats, objects] = await Promise.all([
    scrape(stack.operator.metricsUrl),
    Promise.all(stack.providers.map((p) => p.stats())),
    listObjects(stack, namespaces),
  ]);
  const busy = sum(samples, 'workqueue_depth') + sum(samples, 'controller_runtime_active_workers');
  const writes = stats.map((s) =>
    Object.entries(s.requests)
      .filter(([k]) => WRITE.test(k))
      .reduce((n, [, v]) => n + v, 0),
  );
  const versions = objects.map((o) => `${o.metadata.namespace ?? ''}/${o.metadata.name ?? ''}@${o.metadata.resourceVersion ?? ''}`).sort();
  return { busy, print: `${writes.join(',')}|${versions.join(',')}` };
}

/** Outcome of {@link quiesce}. */
export interface Quiet {
  readonly quiet: boolean;
  readonly ms: number;
  /** What still moved when it timed out. */
  readonly reason?: string;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Waits (at most `timeoutMs`) until the world has been quiet for {@link QUIET_MS}. */
export async function quiesce(stack: E2eStack, namespaces: readonly string[], timeoutMs = QUIESCE_TIMEOUT_MS): Promise<Quiet> {
  const start = Date.now();
  let last = '';
  let since = Date.now();
  let reason = '';
  while (Date.now() - start < timeoutMs) {
    let f: { busy: number; print: string };
    try {
      f = await fingerprint(stack, namespaces);
    } catch (err) {
      // The operator may be between processes (a restart): not quiet yet.
      reason = `metrics unreadable: ${err instanceof Error ? err.message : String(err)}`;
      last = '';
      await sleep(300);
      continue;
    }
    if (f.busy > 0 || f.print !== last) {
      reason = f.busy > 0 ? `workqueue depth + active workers = ${f.busy}` : 'provider writes or StorageBucket resourceVersions moved';
      last = f.print;
      since = Date.now();
    } else if (Date.now() - since >= QUIET_MS) {
      return { quiet: true, ms: Date.now() - start };
    }
    await sleep(300);
  }
  return { quiet: false, ms: Date.now() - start, reason: `not quiet after ${timeoutMs} ms: ${reason}` };
}
