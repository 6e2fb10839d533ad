/**
 * `kubectl bucket trace NAME` and `kubectl bucket why NAME`: read the snapshot, diagnose it,
 * print the tree (text, wide or JSON) or the paragraph. `trace --watch` redraws on every
 * change of the bucket or its config (watched) and of anything else (read every 2 s) until
 * interrupted; off a terminal it prints a new frame only when something other than an age
 * changed, so a pipe gets one frame per change.
 */
import type { Options } from '../args';
import { diagnose, exitCodeOf, whyParagraph } from '../diagnose';
import type { ExitCode } from '../exit-codes';
import { directReads, readBucket, snapshotOf, type Kube } from '../kube';
import { renderTrace, traceJson } from '../render';
import type { Snapshot } from '../snapshot';
import { useColor, type Terminal } from '../terminal';
import { buildTree } from '../trace';
import { ApiError } from '../../operator/runtime/api-errors';
import type { ResourceKind } from '../../operator/runtime/types';

/** How often `--watch` re-reads what it does not watch (Secrets, Service, Events, ages). */
export const WATCH_REFRESH_MS = 2000;

/** One rendering of a snapshot: the text to print and the key that says whether it changed. */
export function frame(
  s: Snapshot,
  opts: Pick<Options, 'output'>,
  term: Pick<Terminal, 'columns'>,
  color: boolean,
): { text: string; key: string; code: ExitCode } {
  const tree = buildTree(s);
  const d = diagnose(s, tree);
  const code = exitCodeOf(d);
  if (opts.output === 'json') {
    const doc = traceJson(s, tree, d, whyParagraph(s, d));
    // The key leaves out what changes by itself: the time and the ages.
    const key = JSON.stringify(doc, (k, v: unknown) => (k === 'age' || k === 'time' ? undefined : v));
    return { text: JSON.stringify(doc, null, 2) + '\n', key, code };
  }
  const text = renderTrace(s, tree, d, { wide: opts.output === 'wide', color, width: term.columns });
  const key = renderTrace({ ...s, now: new Date(0) }, tree, d, { wide: true, color: false });
  return { text, key, code };
}

/** `trace`. */
export async function trace(kube: Kube, opts: Options, term: Terminal, signal: AbortSignal): Promise<ExitCode> {
  const ns = opts.namespace ?? kube.namespace;
  const name = opts.name ?? '';
  const color = useColor(opts.color, term);
  const { bucket, kind } = await readBucket(kube, ns, name);
  const snapshot = await snapshotOf(kube, bucket, directReads(kube));
  const first = frame(snapshot, opts, term, color);
  if (!opts.watch) {
    term.out(first.text);
    return first.code;
  }
  return watchTrace(kube, kind, snapshot, opts, term, color, signal, first);
}

/** Resolves on the first `fire()` after a `wait`, or after `ms`. */
class Trigger {
  private wake?: () => void;
  private pending = false;
  fire(): void {
    this.pending = true;
    this.wake?.();
  }
  wait(ms: number, signal: AbortSignal): Promise<void> {
    if (this.pending || signal.aborted) {
      this.pending = false;
      return Promise.resolve();
    }
    return new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        this.wake = undefined;
        this.pending = false;
        resolve();
      };
      const timer = setTimeout(done, ms);
      signal.addEventListener('abort', done, { once: true });
      this.wake = done;
    });
  }
}

/** Fires `trigger` on every watch event of `kind` `ns/name`, re-watching until `signal`; gives up on a refusal (RBAC). */
async function watchObject(kube: Kube, kind: ResourceKind, ns: string, name: string, trigger: Trigger, signal: AbortSignal): Promise<void> {
  while (!signal.aborted) {
    try {
      for await (const _event of kube.client.watch(kind, {
        namespace: ns,
        fieldSelector: `metadata.name=${name}`,
        signal,
        timeoutSeconds: 300,
        allowWatchBookmarks: false,
      })) {
        trigger.fire();
      }
    } catch (err) {
      if (err instanceof ApiError && (err.status === 401 || err.status === 403 || err.status === 404)) return;
      await new Promise((r) => setTimeout(r, 1000));
    }
  }
}

async function watchTrace(
  kube: Kube,
  bucketKind: ResourceKind,
  snapshot: Snapshot,
  opts: Options,
  term: Terminal,
  color: boolean,
  signal: AbortSignal,
  first: { text: string; key: string; code: ExitCode },
): Promise<ExitCode> {
  const ns = snapshot.bucket.metadata.namespace ?? '';
  const name = snapshot.bucket.metadata.name ?? '';
  const trigger = new Trigger();
  const stop = new AbortController();
  signal.addEventListener('abort', () => stop.abort(), { once: true });
  // The bucket is watched in the version it was read in (served without the webhook); its config
  // in the same version where served. A watch the webhook breaks costs only prompt redraws: the
  // refresh every WATCH_REFRESH_MS reads both again.
  const configKind = kube.served.configs.find((k) => k.version === bucketKind.version) ?? kube.served.configs[0] ?? bucketKind;
  const watches = [
    watchObject(kube, bucketKind, ns, name, trigger, stop.signal),
    watchObject(kube, configKind, ns, snapshot.bucket.spec.providerRef.name, trigger, stop.signal),
  ];
  const redraw = term.isTTY && opts.output !== 'json';
  const show = (f: { text: string }) => {
    if (redraw) term.out(`\x1b[H\x1b[2J${f.text}\nWatching ${ns}/${name}; Ctrl-C to stop.\n`);
    else term.out(opts.output === 'json' ? JSON.stringify(JSON.parse(f.text)) + '\n' : `${f.text}\n`);
  };
  let last = first;
  show(first);
  try {
    while (!signal.aborted) {
      await trigger.wait(WATCH_REFRESH_MS, signal);
      if (signal.aborted) break;
      let next;
      try {
        const { bucket } = await readBucket(kube, ns, name);
        next = frame(await snapshotOf(kube, bucket, directReads(kube)), opts, term, color);
      } catch (err) {
        // The bucket was deleted, or the API server is away for a moment: say so and go on.
        term.err(`${err instanceof Error ? err.message : String(err)}\n`);
        continue;
      }
      if (next.key !== last.key || (redraw && next.text !== last.text)) show(next);
      last = next;
    }
  } finally {
    stop.abort();
    await Promise.all(watches);
  }
  return last.code;
}

/** `why`: the paragraph, or with `-o json` the same document as `trace -o json`. */
export async function why(kube: Kube, opts: Options, term: Terminal): Promise<ExitCode> {
  const { bucket } = await readBucket(kube, opts.namespace ?? kube.namespace, opts.name ?? '');
  const s = await snapshotOf(kube, bucket, directReads(kube));
  const tree = buildTree(s);
  const d = diagnose(s, tree);
  const text = whyParagraph(s, d);
  term.out(opts.output === 'json' ? JSON.stringify(traceJson(s, tree, d, text), null, 2) + '\n' : `${text}\n`);
  return exitCodeOf(d);
}
