/**
 * `tsx bench/cpuprofile.ts FILE.cpuprofile [--top 25]`: where a V8 CPU profile (node
 * --cpu-prof, as `npm run bench -- --profile-dir DIR` writes for ours) spent its time: self time
 * by function and by file or package, and total (inclusive) time of the operator's own
 * functions. Figures for bench/README.md, read without DevTools.
 *
 * `--from-us A --to-us B` keeps only the samples taken in that window of the monotonic clock
 * (CLOCK_MONOTONIC in microseconds, the clock of V8's profile timestamps and of Node's
 * `process.hrtime`): the bench prints each delete phase's window that way
 * (`delete window monotonic us`), so one phase of a whole-run profile can be read alone.
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

interface Node {
  readonly id: number;
  readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number };
  readonly children?: readonly number[];
}
interface Profile {
  readonly nodes: readonly Node[];
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
  readonly startTime: number;
  readonly endTime: number;
}

/** The package or file a script URL belongs to: `pino`, `operator/runtime/informer.js`, `(node)`. */
export function owner(url: string): string {
  if (!url) return '(native or idle)';
  if (url.startsWith('node:')) return '(node internals)';
  const nm = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (nm?.[1]) return nm[1];
  const op = /\/(operator\/.*)$/.exec(url);
  return op?.[1] ?? url;
}

function main(): void {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: { top: { type: 'string', default: '25' }, 'from-us': { type: 'string' }, 'to-us': { type: 'string' } },
  });
  const file = positionals[0];
  if (!file) throw new Error('usage: tsx bench/cpuprofile.ts FILE.cpuprofile [--top N] [--from-us A --to-us B]');
  const top = Number(values.top);
  const p = JSON.parse(readFileSync(file, 'utf8')) as Profile;
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const from = values['from-us'] === undefined ? -Infinity : Number(values['from-us']);
  const to = values['to-us'] === undefined ? Infinity : Number(values['to-us']);
  const self = new Map<number, number>();
  let at = p.startTime;
  p.samples.forEach((id, i) => {
    const delta = p.timeDeltas[i] ?? 0;
    at += delta;
    if (at >= from && at <= to) self.set(id, (self.get(id) ?? 0) + delta);
  });
  const total = [...self.values()].reduce((a, b) => a + b, 0);
  const fn = new Map<string, number>();
  const pkg = new Map<string, number>();
  const inclusive = new Map<string, number>();
  for (const [id, us] of self) {
    const n = byId.get(id);
    if (!n) continue;
    const name = `${n.callFrame.functionName || '(anonymous)'} ${owner(n.callFrame.url)}:${n.callFrame.lineNumber + 1}`;
    fn.set(name, (fn.get(name) ?? 0) + us);
    const o = n.callFrame.functionName === '(garbage collector)' ? '(garbage collector)' : owner(n.callFrame.url);
    pkg.set(o, (pkg.get(o) ?? 0) + us);
    // Inclusive time of operator functions: each sample counts once per distinct frame above it.
    const seen = new Set<string>();
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const f = byId.get(cur);
      if (!f || !f.callFrame.url.includes('/operator/')) continue;
      const k = `${f.callFrame.functionName || '(anonymous)'} ${owner(f.callFrame.url)}:${f.callFrame.lineNumber + 1}`;
      if (seen.has(k)) continue;
      seen.add(k);
      inclusive.set(k, (inclusive.get(k) ?? 0) + us);
    }
  }
  const print = (title: string, m: Map<string, number>) => {
    console.log(`\n${title}`);
    for (const [k, us] of [...m].sort((a, b) => b[1] - a[1]).slice(0, top))
      console.log(`  ${(us / 1e6).toFixed(2).padStart(8)} s ${((us / total) * 100).toFixed(1).padStart(5)}%  ${k}`);
  };
  const span = (Math.min(to, p.endTime) - Math.max(from, p.startTime)) / 1e6;
  console.log(`${file}: ${(total / 1e6).toFixed(1)} s sampled over ${span.toFixed(1)} s`);
  print('self time by package or file', pkg);
  print('self time by function', fn);
  print("inclusive time of the operator's functions", inclusive);
}

main();
