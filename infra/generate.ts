/**
 * Produces every generated file of the repository: dist/ (the manifests plus a
 * Kustomization) and imports/ (typed constructs from `cdk8s import` of our own CRDs).
 * The staleness test runs the same function into a temporary directory and compares.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { CHART_IDS, STORAGE_MIGRATION_ID, synthDist } from './app';
import type { BucketOperatorProps } from './operator';
import { writeMonitoring } from './monitoring-app';

/** Name of the file in imports/ that `cdk8s import` writes for our API group. */
export const IMPORT_PREFIX = 'storage';

/** Directory of the repository root. */
export const REPO_ROOT = resolve(__dirname, '..');

/**
 * The renderings beside dist/'s default, each in a folder of dist/ that `kubectl apply -f dist/`
 * does not read (it does not recurse): the steps of serving and then storing v2, in order, for
 * users who apply YAML rather than the construct. Each is a whole install, so a GitOps
 * Application moves from one folder to the next and prunes what the next one lacks.
 */
export const DIST_VARIANTS: ReadonlyArray<{ readonly dir: string; readonly files: readonly string[]; readonly operator: BucketOperatorProps }> = [
  // Step 1: v2 served through the operator's webhook, v1 still stored (back: dist/, see docs/v2.md).
  { dir: 'v2', files: CHART_IDS, operator: { conversionWebhook: {} } },
  // Step 2: v2 stored and the stored objects migrated to it.
  { dir: 'v2-stored', files: [...CHART_IDS, STORAGE_MIGRATION_ID], operator: { conversionWebhook: { storageVersion: 'v2' } } },
  // The way back from step 2: v1 stored again and migrated to; then dist/v2, then dist/.
  {
    dir: 'v2-back-to-v1',
    files: [...CHART_IDS, STORAGE_MIGRATION_ID],
    operator: { conversionWebhook: { storageVersion: 'v1', migrateStorage: true } },
  },
];

/** Writes dist/ and imports/ below `root` (which need not be the repository). */
export function generate(root: string): { distDir: string; importsDir: string } {
  const distDir = join(root, 'dist');
  const importsDir = join(root, 'imports');
  mkdirSync(distDir, { recursive: true });
  mkdirSync(importsDir, { recursive: true });

  const render = (dir: string, files: readonly string[], operator?: BucketOperatorProps) => {
    const resources = synthDist({ outdir: dir, ...(operator ? { operator } : {}) });
    const expected = files.map((id) => `${id}.yaml`);
    if (resources.join() !== expected.join()) {
      throw new Error(`${dir} holds unexpected files: ${resources.join(', ')} (expected ${expected.join(', ')})`);
    }
  };
  render(distDir, CHART_IDS);
  for (const v of DIST_VARIANTS) render(join(distDir, v.dir), v.files, v.operator);
  // Optional and outside the top level: it needs the Prometheus Operator's CRDs.
  writeMonitoring(distDir);

  // The typed constructs cover both versions (StorageBucket for v1, StorageBucketV2 for v2, and
  // so on), from the CRDs that serve both (dist/v2/); v1's classes are the same either way.
  const cli = join(REPO_ROOT, 'node_modules', '.bin', 'cdk8s');
  execFileSync(
    cli,
    [
      'import',
      '--no-check-upgrade',
      '--language',
      'typescript',
      '--output',
      importsDir,
      `${IMPORT_PREFIX}:=${join(distDir, 'v2', `${CHART_IDS[0]}.yaml`)}`,
    ],
    { cwd: root, stdio: ['ignore', 'ignore', 'inherit'] },
  );
  return { distDir, importsDir };
}
