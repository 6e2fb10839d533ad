/**
 * `tsx bench/resident.ts PID [--top 25]`: which parts of a process's own executable are resident,
 * by ELF section and by symbol. An operator's file-backed RSS is mostly pages of the node
 * binary; this says which ones (V8's optimising compiler, OpenSSL, ICU data, node's bundled
 * JavaScript sources), so an idle-RSS figure can be read against an empty Node's. `npm run
 * bench -- --scenarios idle --idle-resident` prints it for ours while idle.
 *
 * Reads /proc/PID/maps and /proc/PID/pagemap (root, or the process's owner with
 * CAP_SYS_ADMIN, for the present bits), and runs binutils' `readelf` and `nm`.
 */
import { execFileSync } from 'node:child_process';
import { closeSync, openSync, readFileSync, readSync, readlinkSync } from 'node:fs';
import { parseArgs } from 'node:util';

const PAGE = 4096;

/** One line of /proc/PID/maps that maps a file. */
export interface FileMapping {
  readonly start: number;
  readonly end: number;
  readonly perms: string;
  readonly offset: number;
  readonly path: string;
}

/** The mappings of `path` in the text of /proc/PID/maps. */
export function mappingsOf(maps: string, path: string): FileMapping[] {
  const out: FileMapping[] = [];
  for (const line of maps.split('\n')) {
    const m = /^([0-9a-f]+)-([0-9a-f]+) (\S+) ([0-9a-f]+) \S+ \d+\s+(.*)$/.exec(line);
    if (!m || m[5] !== path) continue;
    out.push({ start: parseInt(m[1] ?? '', 16), end: parseInt(m[2] ?? '', 16), perms: m[3] ?? '', offset: parseInt(m[4] ?? '', 16), path });
  }
  return out;
}

/** An ELF section: where it sits in the file and in memory. */
export interface Section {
  readonly name: string;
  readonly addr: number;
  readonly offset: number;
  readonly size: number;
}

/** The sections in `readelf -SW` output. */
export function parseSections(readelf: string): Section[] {
  const out: Section[] = [];
  for (const line of readelf.split('\n')) {
    const m = /^\s*\[\s*\d+\]\s+(\S+)\s+\S+\s+([0-9a-f]+)\s+([0-9a-f]+)\s+([0-9a-f]+)/.exec(line);
    if (m) out.push({ name: m[1] ?? '', addr: parseInt(m[2] ?? '', 16), offset: parseInt(m[3] ?? '', 16), size: parseInt(m[4] ?? '', 16) });
  }
  return out;
}

/** A sized symbol from `nm -S`. */
export interface SizedSymbol {
  readonly addr: number;
  readonly size: number;
  readonly name: string;
}

/** The sized symbols in `nm -S --defined-only` output, by address. */
export function parseSymbols(nm: string): SizedSymbol[] {
  const out: SizedSymbol[] = [];
  for (const line of nm.split('\n')) {
    const p = line.trim().split(/\s+/);
    if (p.length === 4) out.push({ addr: parseInt(p[0] ?? '', 16), size: parseInt(p[1] ?? '', 16), name: p[3] ?? '' });
  }
  return out.sort((a, b) => a.addr - b.addr);
}

/** KiB resident by section and by (section, symbol); `(unnamed)` where no sized symbol covers a page. */
export interface Attribution {
  readonly bySection: Map<string, number>;
  readonly bySymbol: Map<string, number>;
}

/** Attributes each resident page (a file offset) to its section and to the symbol at its start. */
export function attribute(offsets: readonly number[], sections: readonly Section[], symbols: readonly SizedSymbol[]): Attribution {
  const bySection = new Map<string, number>();
  const bySymbol = new Map<string, number>();
  const add = (m: Map<string, number>, k: string) => m.set(k, (m.get(k) ?? 0) + PAGE / 1024);
  for (const off of offsets) {
    const sec = sections.find((s) => s.size > 0 && s.offset <= off && off < s.offset + s.size);
    if (!sec) {
      add(bySection, '(no section)');
      continue;
    }
    add(bySection, sec.name);
    const va = off - sec.offset + sec.addr;
    // The last symbol starting at or before the page, if it reaches it.
    let lo = 0;
    let hi = symbols.length - 1;
    let at = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if ((symbols[mid]?.addr ?? Infinity) <= va) {
        at = mid;
        lo = mid + 1;
      } else hi = mid - 1;
    }
    const sym = symbols[at];
    const name = sym && va < sym.addr + Math.max(sym.size, 1) ? sym.name : '(unnamed)';
    add(bySymbol, `${sec.name} ${name}`);
  }
  return { bySection, bySymbol };
}

/** File offsets of the pages of `path` that process `pid` has resident. */
export function residentOffsets(pid: number, path: string): number[] {
  const maps = mappingsOf(readFileSync(`/proc/${pid}/maps`, 'utf8'), path);
  const fd = openSync(`/proc/${pid}/pagemap`, 'r');
  const out: number[] = [];
  try {
    for (const m of maps) {
      const pages = (m.end - m.start) / PAGE;
      const buf = Buffer.alloc(pages * 8);
      readSync(fd, buf, 0, buf.length, (m.start / PAGE) * 8);
      for (let i = 0; i < pages; i++) {
        // Bit 63: page present in RAM.
        if (buf.readBigUInt64LE(i * 8) >> 63n === 1n) out.push(m.offset + i * PAGE);
      }
    }
  } finally {
    closeSync(fd);
  }
  return out;
}

/** `nm -S --defined-only` of `exe`, or nothing when it has no symbols (pages then count as unnamed). */
function symbolTable(exe: string): string {
  try {
    return execFileSync('nm', ['-S', '--defined-only', exe], { encoding: 'utf8', maxBuffer: 512 * 1024 * 1024, stdio: ['ignore', 'pipe', 'ignore'] });
  } catch {
    return '';
  }
}

/** The report for `pid`'s executable: its resident MiB, then the top sections and symbols. */
export function residentReport(pid: number, top = 25): string {
  const exe = readlinkSync(`/proc/${pid}/exe`);
  const offsets = residentOffsets(pid, exe);
  const readelf = execFileSync('readelf', ['-SW', exe], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  const { bySection, bySymbol } = attribute(offsets, parseSections(readelf), parseSymbols(symbolTable(exe)));
  const rows = (m: Map<string, number>, n: number) =>
    [...m.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)
      .map(([k, kib]) => `  ${String(kib).padStart(7)} KiB  ${k}`);
  return [
    `${exe}: ${((offsets.length * PAGE) / 1024 / 1024).toFixed(1)} MiB resident (pid ${pid})`,
    'by section',
    ...rows(bySection, 10),
    'by symbol',
    ...rows(bySymbol, top),
  ].join('\n');
}

function main(): void {
  const { values, positionals } = parseArgs({ allowPositionals: true, options: { top: { type: 'string', default: '25' } } });
  const pid = Number(positionals[0] ?? process.pid);
  console.log(residentReport(pid, Number(values.top)));
}

if (require.main === module) main();
