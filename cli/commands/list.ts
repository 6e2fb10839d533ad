/**
 * `trace -A` and `why -A`: every StorageBucket of every namespace, each judged exactly as
 * `trace NAME` judges one (the same snapshot, tree and diagnosis), read with a few lists over
 * all namespaces instead of a round of GETs per bucket (cli/kube.ts `clusterReads`). The exit
 * code is the worst of the buckets', so a script can ask "is everything Ready?" with one call.
 */
import type { StorageBucket } from '../../operator/api/v1';
import type { Options } from '../args';
import { allAsV1 } from '../as-v1';
import { diagnose, exitCodeOf, whyParagraph } from '../diagnose';
import { ExitCode } from '../exit-codes';
import { apiFailure, clusterReads, listServed, snapshotOf, type Kube } from '../kube';
import { renderList, traceJson, type Judged } from '../render';
import { useColor, type Terminal } from '../terminal';
import { buildTree } from '../trace';

/** Buckets whose remaining reads (a config or Secret no list held) are in flight at once. */
export const LIST_CONCURRENCY = 8;

/** `f` over `items` with at most `limit` calls in flight; results in the order of `items`. */
export async function mapLimit<T, R>(items: readonly T[], limit: number, f: (item: T) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await f(items[i] as T);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}

/** The worst of `codes` for a script: stalled before not Ready before OK. */
export function worstCode(codes: readonly ExitCode[]): ExitCode {
  const rank: readonly ExitCode[] = [ExitCode.STALLED, ExitCode.NOT_READY];
  return rank.find((c) => codes.includes(c)) ?? ExitCode.OK;
}

/** Every StorageBucket of every namespace, judged. */
export async function judgeAll(kube: Kube, now: () => Date = () => new Date()): Promise<Judged[]> {
  let buckets: StorageBucket[];
  try {
    buckets = await allAsV1<StorageBucket>((await listServed(kube, kube.served.buckets)).items);
  } catch (err) {
    throw apiFailure(err, kube.server);
  }
  const reads = await clusterReads(kube).catch((err: unknown) => {
    throw apiFailure(err, kube.server);
  });
  const key = (b: StorageBucket) => `${b.metadata.namespace ?? ''}/${b.metadata.name ?? ''}`;
  buckets.sort((a, b) => key(a).localeCompare(key(b)));
  const snapshots = await mapLimit(buckets, LIST_CONCURRENCY, (b) => snapshotOf(kube, b, reads, now));
  return snapshots.map((s) => {
    const tree = buildTree(s);
    return { s, tree, d: diagnose(s, tree) };
  });
}

/** `trace -A` (the table, or with `-o json` a list of trace documents) and `why -A` (one paragraph a line). */
export async function listAll(kube: Kube, opts: Options, term: Terminal, now: () => Date = () => new Date()): Promise<ExitCode> {
  const at = now();
  const judged = await judgeAll(kube, () => at);
  if (opts.output === 'json') {
    const items = judged.map((j) => traceJson(j.s, j.tree, j.d, whyParagraph(j.s, j.d)));
    term.out(JSON.stringify({ kind: 'BucketTraceList', items }, null, 2) + '\n');
  } else if (judged.length === 0) {
    term.err('No StorageBuckets found in any namespace.\n');
  } else if (opts.command === 'why') {
    term.out(judged.map((j) => whyParagraph(j.s, j.d)).join('\n') + '\n');
  } else {
    term.out(renderList(judged, at, { wide: opts.output === 'wide', color: useColor(opts.color, term), width: term.columns }));
  }
  return worstCode(judged.map((j) => exitCodeOf(j.d)));
}
