/**
 * `npm run docs`: rewrites every generated block of README.md, docs/ and bench/README.md
 * (between `<!-- generated:NAME -->` and `<!-- /generated:NAME -->`) from the code and files
 * that define it: flags, condition reasons, metrics, annotations and labels, Events, RBAC,
 * test counts and benchmark figures. `npm run docs -- --check` writes nothing and exits 1
 * naming the stale files; test/unit/docs/generated.test.ts does the same in `npm test`.
 */
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { eventsTable } from './docs/events';
import { headlineFigures, resourceFigures } from './docs/figures';
import { flagsTable } from './docs/flags';
import { blockNames, fillBlocks } from './docs/markdown';
import { metricsTable } from './docs/metrics';
import { installLabelsTable, namesTable } from './docs/names';
import { permissionsTable } from './docs/permissions';
import { bucketReasonsTable, configReasonsTable } from './docs/reasons';
import { testCounts } from './docs/tests';

/** The repository this script lives in. */
export const REPO_ROOT = resolve(__dirname, '..');

/** Every generated block, by name. */
export function generatedBlocks(root: string): Record<string, string> {
  return {
    flags: flagsTable(root),
    'bucket-reasons': bucketReasonsTable(),
    'config-reasons': configReasonsTable(),
    metrics: metricsTable(root),
    'well-known-names': namesTable(root),
    'install-labels': installLabelsTable(),
    events: eventsTable(),
    permissions: permissionsTable(),
    'test-counts': testCounts(root),
    'headline-figures': headlineFigures(root),
    'resource-figures': resourceFigures(root),
  };
}

function markdownUnder(dir: string): string[] {
  return readdirSync(dir)
    .sort()
    .flatMap((f) => {
      const p = join(dir, f);
      if (statSync(p).isDirectory()) return markdownUnder(p);
      return p.endsWith('.md') ? [p] : [];
    });
}

/** The documents that may hold generated blocks, relative to `root`. */
export function documents(root: string): string[] {
  return ['README.md', join('bench', 'README.md'), ...markdownUnder(join(root, 'docs')).map((f) => relative(root, f))];
}

/** One document as committed and as it should be. */
export interface Rendered {
  readonly file: string;
  readonly current: string;
  readonly fresh: string;
}

/** Every document with its blocks rendered afresh; throws when a block is in no document. */
export function renderDocuments(root: string, blocks: Readonly<Record<string, string>> = generatedBlocks(root)): Rendered[] {
  const rendered = documents(root).map((file) => {
    const current = readFileSync(join(root, file), 'utf8');
    return { file, current, fresh: fillBlocks(current, blocks, file) };
  });
  const used = new Set(rendered.flatMap((r) => blockNames(r.current)));
  const unused = Object.keys(blocks).filter((b) => !used.has(b));
  if (unused.length > 0) throw new Error(`generated blocks no document holds: ${unused.join(', ')}`);
  return rendered;
}

if (require.main === module) {
  const check = process.argv.includes('--check');
  const stale = renderDocuments(REPO_ROOT).filter((r) => r.current !== r.fresh);
  if (check) {
    for (const r of stale) console.error(`${r.file} is stale: run npm run docs`);
    process.exitCode = stale.length > 0 ? 1 : 0;
  } else {
    for (const r of stale) writeFileSync(join(REPO_ROOT, r.file), r.fresh);
    console.log(stale.length > 0 ? `wrote ${stale.map((r) => r.file).join(', ')}` : 'every generated block is current');
  }
}
