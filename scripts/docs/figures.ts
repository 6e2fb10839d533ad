/**
 * Figures the README and docs quote, read from the JSON that `npm run bench` wrote into
 * bench/results/. Which runs are the current ones is chosen here, by file name; every number
 * comes from the file, so a new run is quoted by changing a name and running `npm run docs`.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { table } from './markdown';

/** The runs quoted, each the latest of its kind (bench/README.md gives their commands). */
export const CURRENT_RUNS = {
  /** Ours (on the image's Node) and the controller-runtime peer at 1,000 and 3,000 buckets. */
  thousands: 'bench-2026-12-04T23-57-48-334Z.json',
  /** Ours and the peer at 10,000 buckets, one pair. */
  tenThousand: 'bench-2026-12-04T23-57-48-334Z.json',
  /** 1,000 tenants with 10 buckets each, then the noisy neighbour. */
  tenants: 'bench-2026-12-05T01-04-50-239Z.json',
} as const;

type Value = number | string;

interface Run {
  readonly started: string;
  readonly machine: string;
  readonly rows: readonly { scenario: string; n: number; subject?: string; figures: Readonly<Record<string, Value>> }[];
  readonly medians?: readonly { scenario: string; n: number; rounds: number; figures: readonly { figure: string; ours: Value }[] }[];
}

/** A run's figures, read by scenario, size and figure name. */
export interface RunFigures {
  readonly file: string;
  /** `YYYY-MM-DD` of the run's start. */
  readonly date: string;
  readonly machine: string;
  /** Rounds of the run (1 when it had none): its figures are medians over them when more than 1. */
  readonly rounds: number;
  /** Ours' figure: the median over the rounds when the run had rounds, else its one value. */
  get(scenario: string, n: number, figure: string): number;
}

/** The run `file` in `<root>/bench/results`. */
export function loadRun(root: string, file: string): RunFigures {
  const run = JSON.parse(readFileSync(join(root, 'bench', 'results', file), 'utf8')) as Run;
  return {
    file,
    date: run.started.slice(0, 10),
    machine: run.machine,
    rounds: Math.max(1, ...(run.medians ?? []).map((m) => m.rounds)),
    get(scenario, n, figure) {
      const median = run.medians?.find((m) => m.scenario === scenario && m.n === n)?.figures.find((f) => f.figure === figure)?.ours;
      const row = run.rows.find((r) => r.scenario === scenario && r.n === n && (r.subject === undefined || r.subject === 'ours'));
      const value = median ?? row?.figures[figure];
      if (typeof value !== 'number') throw new Error(`bench/results/${file}: no figure "${figure}" of ${scenario} ${n}`);
      return value;
    },
  };
}

/**
 * The runs quoted, each file once (one run may hold several sizes), with its date and, for
 * runs with rounds, that its figures are medians.
 */
function sources(...runs: RunFigures[]): string {
  const seen = new Map<string, RunFigures>();
  for (const run of runs) seen.set(run.file, run);
  return [...seen.values()]
    .map((run) => `\`bench/results/${run.file}\` (${run.date}${run.rounds > 1 ? `, medians of ${run.rounds} rounds` : ''})`)
    .join(', ');
}

const fmt = (n: number, digits = 1) => n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: 0 });

/** The README's table of headline figures. */
export function headlineFigures(root: string): string {
  const r = loadRun(root, CURRENT_RUNS.thousands);
  const t = loadRun(root, CURRENT_RUNS.tenThousand);
  const m = loadRun(root, CURRENT_RUNS.tenants);
  const both = (label: string, figure: string, unit: string, digits = 1): string[] => [
    label,
    `${fmt(r.get('bulk create', 1000, figure), digits)}${unit}`,
    `${fmt(t.get('bulk create', 10000, figure), digits)}${unit}`,
  ];
  const rows = [
    both('all Ready after a bulk create', 'all Ready s', ' s'),
    both('operator peak RSS while converging', 'converge peak RSS MiB', ' MiB', 0),
    both('API writes per bucket to converge', 'api writes/bucket', '', 2),
    both('provider calls per bucket to converge', 'provider calls/bucket', '', 2),
    both('restart: a bucket created into the backlog is Ready after', 'restart new bucket Ready s', ' s'),
    both('delete all: API writes per bucket', 'delete api writes/bucket', '', 2),
  ];
  const tenants = [
    `${fmt(m.get('tenants', 10000, 'tenants'), 0)} tenants with ${fmt(m.get('tenants', 10000, 'buckets per tenant'), 0)} buckets each`,
    `(each its own Secret, provider account and config): all Ready after ${fmt(m.get('tenants', 10000, 'all Ready s'))} s,`,
    `peak RSS ${fmt(m.get('tenants', 10000, 'converge peak RSS MiB'), 0)} MiB, ${fmt(m.get('tenants', 10000, 'Lease renewals missed'), 0)} missed Lease renewals;`,
    `with another tenant's ${fmt(m.get('noisy neighbour', 5000, 'noisy buckets'), 0)} new buckets queued, a quiet tenant's new bucket`,
    `was Ready after ${fmt(m.get('noisy neighbour', 5000, 'quiet new bucket Ready s (median)'), 2)} s (median of 5).`,
  ].join(' ');
  return [
    table(['', '1,000 buckets', '10,000 buckets'], rows),
    '',
    tenants,
    '',
    `_Rendered by \`npm run docs\` from ${sources(r, t, m)}; machine: ${m.machine}._`,
  ].join('\n');
}

/** The manager container's resources in `<root>/dist/04-manager.yaml`. */
function managerResources(root: string): { requests: Record<string, string>; limits: Record<string, string>; nodeOptions: string } {
  for (const doc of parseAllDocuments(readFileSync(join(root, 'dist', '04-manager.yaml'), 'utf8'))) {
    const obj = doc.toJS() as {
      kind?: string;
      spec?: {
        template?: {
          spec?: {
            containers?: {
              name?: string;
              resources?: { requests: Record<string, string>; limits: Record<string, string> };
              env?: { name: string; value?: string }[];
            }[];
          };
        };
      };
    } | null;
    const c = obj?.kind === 'Deployment' ? obj.spec?.template?.spec?.containers?.find((x) => x.name === 'manager') : undefined;
    if (c?.resources) return { ...c.resources, nodeOptions: c.env?.find((e) => e.name === 'NODE_OPTIONS')?.value ?? '' };
  }
  throw new Error('dist/04-manager.yaml has no manager container with resources: run npm run synth');
}

/** What to give the operator per 1,000 buckets, from the same runs and the Deployment's settings. */
export function resourceFigures(root: string): string {
  const r = loadRun(root, CURRENT_RUNS.thousands);
  const t = loadRun(root, CURRENT_RUNS.tenThousand);
  const m = loadRun(root, CURRENT_RUNS.tenants);
  const at = (n: number, figure: string) => (n === 10000 ? t : r).get('bulk create', n, figure);
  const sizes = [1000, 3000, 10000];
  const perThousand = (figure: string) => (at(10000, figure) - at(1000, figure)) / 9;
  const res = managerResources(root);
  const rows = [
    ['idle (no buckets)', `${fmt(at(1000, 'idle RSS MiB (0 buckets)'), 0)} MiB`, '', '', ''],
    ...[
      { label: 'peak RSS while converging', figure: 'converge peak RSS MiB', unit: ' MiB', digits: 0 },
      { label: 'RSS once all are Ready', figure: 'steady RSS MiB', unit: ' MiB', digits: 0 },
      { label: 'CPU to converge them all', figure: 'converge CPU s', unit: ' CPU-s', digits: 1 },
    ].map(({ label, figure, unit, digits }) => [
      label,
      ...sizes.map((n) => `${fmt(at(n, figure), digits)}${unit}`),
      `${fmt(perThousand(figure), 1)}${unit}`,
    ]),
  ];
  return [
    table(['operator', '1,000 buckets', '3,000 buckets', '10,000 buckets', 'per 1,000 more'], rows),
    '',
    `1,000 tenants with their own accounts and 10 buckets each peaked at ${fmt(m.get('tenants', 10000, 'converge peak RSS MiB'), 0)} MiB.`,
    `The Deployment asks for ${res.requests['cpu'] ?? '?'} CPU and ${res.requests['memory'] ?? '?'} and is limited to`,
    `${res.limits['cpu'] ?? '?'} CPU and ${res.limits['memory'] ?? '?'}, with \`NODE_OPTIONS=${res.nodeOptions}\`.`,
    '',
    `_Rendered by \`npm run docs\` from ${sources(r, t, m)} and \`dist/04-manager.yaml\`._`,
  ].join('\n');
}
