/**
 * Text and JSON renderings of a trace (pure): the root cause line, the tree with Ready,
 * Synced, reason, age and message, and the recent Events. Colour is an argument, decided by
 * the caller (a terminal, `--color`, NO_COLOR), so the same tree renders plain in pipes.
 */
import type { Diagnosis } from './diagnose';
import type { EventFacts, Snapshot } from './snapshot';
import type { Status, TraceNode } from './trace';

/** How to render. */
export interface RenderOptions {
  /** Full messages (`-o wide`) instead of messages cut to `width`. */
  readonly wide: boolean;
  readonly color: boolean;
  /** Terminal width the text-mode message column is cut to. @default 120 */
  readonly width?: number;
}

/** kubectl's human duration (`45s`, `3m12s`, `17m`, `5h3m`, `2d5h`, `40d`) for `ms`. */
export function humanAge(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 120) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 10) return s % 60 === 0 ? `${m}m` : `${m}m${s % 60}s`;
  if (m < 180) return `${m}m`;
  const h = Math.floor(m / 60);
  if (h < 8) return m % 60 === 0 ? `${h}h` : `${h}h${m % 60}m`;
  if (h < 48) return `${h}h`;
  const d = Math.floor(h / 24);
  if (d < 8) return h % 24 === 0 ? `${d}d` : `${d}d${h % 24}h`;
  return `${d}d`;
}

/** Age of an RFC 3339 time at `now`, or `-`. */
export function ageOf(time: string | undefined, now: Date): string {
  if (!time) return '-';
  const t = Date.parse(time);
  return Number.isNaN(t) ? '-' : humanAge(now.getTime() - t);
}

const ANSI = { red: 31, green: 32, yellow: 33, dim: 2, bold: 1 } as const;

function paint(on: boolean, style: keyof typeof ANSI, text: string): string {
  return on ? `\x1b[${ANSI[style]}m${text}\x1b[0m` : text;
}

function statusCell(on: boolean, status: Status, pad: number): string {
  const text = status.padEnd(pad);
  if (status === 'True') return paint(on, 'green', text);
  if (status === 'False') return paint(on, 'red', text);
  return paint(on, 'dim', text);
}

function cut(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  if (max <= 1) return '';
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

interface Row {
  readonly label: string;
  readonly node: TraceNode;
}

function rows(node: TraceNode, prefix = '', last = true, root = true): Row[] {
  const branch = root ? '' : last ? '└─ ' : '├─ ';
  const label = `${prefix}${branch}${node.kind}/${node.name}${node.note ? ` (${node.note})` : ''}`;
  const childPrefix = root ? '' : `${prefix}${last ? '   ' : '│  '}`;
  return [{ label, node }, ...node.children.flatMap((c, i) => rows(c, childPrefix, i === node.children.length - 1, false))];
}

/** One line naming the root cause, e.g. `Root cause: Secret/provider-key (credentials): SecretNotFound: ...`. */
export function rootCauseLine(d: Diagnosis, opts: RenderOptions): string {
  const c = d.cause;
  const head = d.class === 'ready' ? paint(opts.color, 'green', 'Ready') : paint(opts.color, 'bold', 'Root cause:');
  if (d.class === 'ready') return `${head}: nothing is wrong`;
  const text = `${c.kind}/${c.name}${c.note ? ` (${c.note})` : ''}: ${c.reason}: ${c.message}`;
  const label = d.class === 'terminal' ? ' [terminal]' : d.class === 'paused' ? ' [paused]' : '';
  return `${head} ${opts.wide ? text : cut(text, (opts.width ?? 120) - 12 - label.length)}${paint(opts.color, 'yellow', label)}`;
}

/** The tree as an aligned table: NAME, READY, SYNCED, REASON, AGE, MESSAGE. */
export function renderTree(tree: TraceNode, d: Diagnosis, now: Date, opts: RenderOptions): string {
  const all = rows(tree);
  const nameW = Math.max(4, ...all.map((r) => r.label.length));
  const reasonW = Math.max(6, ...all.map((r) => r.node.reason.length));
  const header = `${'NAME'.padEnd(nameW)}  READY    SYNCED   ${'REASON'.padEnd(reasonW)}  AGE     MESSAGE`;
  const fixed = nameW + 2 + 9 + 9 + reasonW + 2 + 8;
  const lines = all.map(({ label, node }) => {
    const isCause = node === d.cause && d.class !== 'ready';
    const name = isCause ? paint(opts.color, 'bold', label.padEnd(nameW)) : label.padEnd(nameW);
    const reason = isCause ? paint(opts.color, 'red', node.reason.padEnd(reasonW)) : node.reason.padEnd(reasonW);
    const message = opts.wide ? node.message : cut(node.message, Math.max(20, (opts.width ?? 120) - fixed));
    return `${name}  ${statusCell(opts.color, node.ready, 7)}  ${statusCell(opts.color, node.synced, 7)}  ${reason}  ${ageOf(node.createdAt, now).padEnd(6)}  ${message}`.trimEnd();
  });
  return [paint(opts.color, 'dim', header), ...lines].join('\n');
}

/** The most recent Events (at most `max`), oldest first as kubectl lists them. */
export function renderEvents(events: readonly EventFacts[], now: Date, opts: RenderOptions, max = 5): string {
  if (events.length === 0) return 'Events: none';
  const shown = events.slice(0, max).reverse();
  const lines = shown.map((e) => {
    const type = e.type === 'Warning' ? paint(opts.color, 'yellow', e.type.padEnd(7)) : e.type.padEnd(7);
    const count = e.count > 1 ? ` (x${e.count})` : '';
    const head = `  ${ageOf(e.time, now).padEnd(6)}  ${type}  ${e.reason}  ${e.kind}/${e.name}${count}: `;
    return `${head}${opts.wide ? e.note : cut(e.note, Math.max(20, (opts.width ?? 120) - head.length))}`;
  });
  return [`Events (${shown.length} of ${events.length}, newest last):`, ...lines].join('\n');
}

/** The whole text output of `trace`. */
export function renderTrace(s: Snapshot, tree: TraceNode, d: Diagnosis, opts: RenderOptions): string {
  return [rootCauseLine(d, opts), '', renderTree(tree, d, s.now, opts), '', renderEvents(s.events, s.now, opts)].join('\n') + '\n';
}

/** A node as JSON, with its age at the snapshot's time. */
interface NodeJson extends Omit<TraceNode, 'children'> {
  readonly age: string;
  readonly rootCause: boolean;
  readonly children: NodeJson[];
}

function nodeJson(n: TraceNode, d: Diagnosis, now: Date): NodeJson {
  const { children, ...rest } = n;
  return {
    ...rest,
    age: ageOf(n.createdAt, now),
    rootCause: n === d.cause && d.class !== 'ready',
    children: children.map((c) => nodeJson(c, d, now)),
  };
}

/** The JSON document of `trace -o json` and `why -o json`. */
export function traceJson(s: Snapshot, tree: TraceNode, d: Diagnosis, why: string): Record<string, unknown> {
  return {
    kind: 'BucketTrace',
    namespace: s.bucket.metadata.namespace,
    name: s.bucket.metadata.name,
    time: s.now.toISOString(),
    class: d.class,
    rootCause: { kind: d.cause.kind, name: d.cause.name, role: d.cause.role, reason: d.cause.reason, message: d.cause.message },
    fix: d.fix,
    advice: d.advice,
    why,
    tree: nodeJson(tree, d, s.now),
    events: s.events,
  };
}

/** One bucket of a list (`trace -A`): its snapshot, tree and diagnosis. */
export interface Judged {
  readonly s: Snapshot;
  readonly tree: TraceNode;
  readonly d: Diagnosis;
}

/** The root cause in a list's last column: `-` when Ready, else the object, its reason and message. */
function causeCell(j: Judged): string {
  if (j.d.class === 'ready') return '-';
  const c = j.d.cause;
  const label = j.d.class === 'terminal' ? ' [terminal]' : j.d.class === 'paused' ? ' [paused]' : '';
  return `${c.kind}/${c.name}${c.note ? ` (${c.note})` : ''}: ${c.reason}${c.message ? `: ${c.message}` : ''}${label}`;
}

/**
 * `trace -A`: one line per StorageBucket (NAMESPACE, NAME, READY, SYNCED, REASON, AGE and the
 * root cause), sorted by namespace and name; the root cause is cut to the width unless wide.
 */
export function renderList(items: readonly Judged[], now: Date, opts: RenderOptions): string {
  const sorted = [...items].sort(
    (a, b) => (a.s.bucket.metadata.namespace ?? '').localeCompare(b.s.bucket.metadata.namespace ?? '') || a.tree.name.localeCompare(b.tree.name),
  );
  const nsW = Math.max(9, ...sorted.map((j) => (j.s.bucket.metadata.namespace ?? '').length));
  const nameW = Math.max(4, ...sorted.map((j) => j.tree.name.length));
  const reasonW = Math.max(6, ...sorted.map((j) => j.tree.reason.length));
  const header = `${'NAMESPACE'.padEnd(nsW)}  ${'NAME'.padEnd(nameW)}  READY    SYNCED   ${'REASON'.padEnd(reasonW)}  AGE     ROOT CAUSE`;
  const fixed = nsW + 2 + nameW + 2 + 9 + 9 + reasonW + 2 + 8;
  const lines = sorted.map((j) => {
    const cause = causeCell(j);
    const shown = opts.wide ? cause : cut(cause, Math.max(20, (opts.width ?? 120) - fixed));
    const reason = j.d.class === 'ready' ? j.tree.reason.padEnd(reasonW) : paint(opts.color, 'red', j.tree.reason.padEnd(reasonW));
    return `${(j.s.bucket.metadata.namespace ?? '').padEnd(nsW)}  ${j.tree.name.padEnd(nameW)}  ${statusCell(opts.color, j.tree.ready, 7)}  ${statusCell(opts.color, j.tree.synced, 7)}  ${reason}  ${ageOf(j.tree.createdAt, now).padEnd(6)}  ${shown}`.trimEnd();
  });
  return [paint(opts.color, 'dim', header), ...lines].join('\n') + '\n';
}
