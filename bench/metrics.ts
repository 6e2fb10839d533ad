/** Reads /proc figures of a process for the benchmark tables. */
import { readFileSync } from 'node:fs';

/** CPU seconds (user + system) a process has used so far. */
export function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Fields after the parenthesised command name; utime and stime are the 12th and 13th there.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticks = Number(fields[11]) + Number(fields[12]);
  return ticks / 100;
}

/** The named `kB` fields of `/proc/<pid>/status` in one read, in MiB (0 for a field not there). */
function statusMiB<F extends string>(pid: number, fields: readonly F[]): Record<F, number> {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const out = {} as Record<F, number>;
  for (const f of fields) out[f] = Number(new RegExp(`^${f}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? 0) / 1024;
  return out;
}

/** Peak resident set size of a process, in MiB. */
export function peakRssMiB(pid: number): number {
  return statusMiB(pid, ['VmHWM']).VmHWM;
}

/** Current resident set size of a process, in MiB. */
export function rssMiB(pid: number): number {
  return statusMiB(pid, ['VmRSS']).VmRSS;
}

/**
 * Resident memory of a process in MiB, read at one moment: the whole, the peak, and the whole
 * by kind: anonymous (heap, stacks), file-backed (the binary and libraries) and shared.
 */
export function rssParts(pid: number): { rss: number; peak: number; anon: number; file: number; shmem: number } {
  const s = statusMiB(pid, ['VmRSS', 'VmHWM', 'RssAnon', 'RssFile', 'RssShmem']);
  return { rss: s.VmRSS, peak: s.VmHWM, anon: s.RssAnon, file: s.RssFile, shmem: s.RssShmem };
}
