/** Reads the Prometheus text exposition format, for tests and benchmarks that scrape the operator. */

/** One sample: metric name, labels and value. */
export interface Sample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

/** Parses the Prometheus text exposition format (comments skipped). */
export function parsePrometheus(text: string): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line);
    if (!m) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[l[1] ?? ''] = l[2] ?? '';
    out.push({ name: m[1] ?? '', labels, value: Number(m[3]) });
  }
  return out;
}

/** Sum of the samples of `name` whose labels include `match`. */
export function sum(samples: readonly Sample[], name: string, match: Record<string, string | RegExp> = {}): number {
  return samples
    .filter(
      (s) => s.name === name && Object.entries(match).every(([k, v]) => (typeof v === 'string' ? s.labels[k] === v : v.test(s.labels[k] ?? ''))),
    )
    .reduce((a, s) => a + s.value, 0);
}

/** Fetches and parses a /metrics endpoint. */
export async function scrape(url: string): Promise<Sample[]> {
  const res = await fetch(url);
  return parsePrometheus(await res.text());
}
