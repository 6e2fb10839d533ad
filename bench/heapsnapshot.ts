/**
 * `tsx bench/heapsnapshot.ts FILE.heapsnapshot [--top 30] [--per N]`: what a V8 heap snapshot
 * (ours writes one on SIGUSR2 under `npm run bench -- --profile-dir DIR`) holds, by node type
 * and constructor: count and self size, and with `--per N` the bytes per bucket of N. Self
 * sizes only (no dominator tree): enough to tell cached objects, strings and code apart.
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

interface Snapshot {
  readonly snapshot: { readonly meta: { readonly node_fields: readonly string[]; readonly node_types: readonly [readonly string[]] } };
  readonly nodes: readonly number[];
  readonly strings: readonly string[];
}

/** Self size and count by `type:name` (names of strings and code are folded into their type). */
export function summarize(s: Snapshot): Map<string, { count: number; bytes: number }> {
  const fields = s.snapshot.meta.node_fields;
  const types = s.snapshot.meta.node_types[0];
  const width = fields.length;
  const typeAt = fields.indexOf('type');
  const nameAt = fields.indexOf('name');
  const sizeAt = fields.indexOf('self_size');
  const out = new Map<string, { count: number; bytes: number }>();
  for (let i = 0; i < s.nodes.length; i += width) {
    const type = types[s.nodes[i + typeAt] ?? 0] ?? '?';
    const name = s.strings[s.nodes[i + nameAt] ?? 0] ?? '';
    const key = type === 'object' || type === 'closure' || type === 'native' ? `${type}:${name}` : type;
    const e = out.get(key) ?? { count: 0, bytes: 0 };
    e.count++;
    e.bytes += s.nodes[i + sizeAt] ?? 0;
    out.set(key, e);
  }
  return out;
}

function main(): void {
  const { values, positionals } = parseArgs({ allowPositionals: true, options: { top: { type: 'string', default: '30' }, per: { type: 'string' } } });
  const file = positionals[0];
  if (!file) throw new Error('usage: tsx bench/heapsnapshot.ts FILE.heapsnapshot [--top N] [--per BUCKETS]');
  const s = JSON.parse(readFileSync(file, 'utf8')) as Snapshot;
  const rows = [...summarize(s)].sort((a, b) => b[1].bytes - a[1].bytes);
  const total = rows.reduce((a, [, v]) => a + v.bytes, 0);
  const per = values.per ? Number(values.per) : undefined;
  console.log(`${file}: ${(total / 2 ** 20).toFixed(1)} MiB in ${rows.reduce((a, [, v]) => a + v.count, 0)} nodes`);
  for (const [k, v] of rows.slice(0, Number(values.top))) {
    const perBucket = per ? `  ${(v.bytes / per).toFixed(0).padStart(6)} B/bucket` : '';
    console.log(`  ${(v.bytes / 2 ** 20).toFixed(2).padStart(7)} MiB ${String(v.count).padStart(8)}  ${k}${perBucket}`);
  }
}

main();
