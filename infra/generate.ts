/**
 * Produces every generated file of the repository: dist/ (the manifests plus a
 * Kustomization) and imports/ (typed constructs from `cdk8s import` of our own CRDs).
 * The staleness test runs the same function into a temporary directory and compares.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { CHART_IDS, synthDist } from './app';
import { writeMonitoring } from './monitoring-app';

/** Name of the file in imports/ that `cdk8s import` writes for our API group. */
export const IMPORT_PREFIX = 'storage';

/** Directory of the repository root. */
export const REPO_ROOT = resolve(__dirname, '..');

/** Writes dist/ and imports/ below `root` (which need not be the repository). */
export function generate(root: string): { distDir: string; importsDir: string } {
  const distDir = join(root, 'dist');
  const importsDir = join(root, 'imports');
  mkdirSync(distDir, { recursive: true });
  mkdirSync(importsDir, { recursive: true });

  const resources = synthDist({ outdir: distDir });
  const expected = CHART_IDS.map((id) => `${id}.yaml`);
  if (resources.join() !== expected.join()) {
    throw new Error(`dist/ holds unexpected files: ${resources.join(', ')} (expected ${expected.join(', ')})`);
  }
  // Optional and outside the top level: it needs the Prometheus Operator's CRDs.
  writeMonitoring(distDir);

  // The typed constructs cover both versions (StorageBucket for v1, StorageBucketV2 for v2, and
  // so on), from the CRDs as the construct renders them with the conversion webhook on; dist/
  // itself serves v1 only until it turns the webhook on, and v1's classes are the same either way.
  const servedDir = join(root, '.crds-with-v2');
  synthDist({ outdir: servedDir, operator: { conversionWebhook: {} } });
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
      `${IMPORT_PREFIX}:=${join(servedDir, `${CHART_IDS[0]}.yaml`)}`,
    ],
    { cwd: root, stdio: ['ignore', 'ignore', 'inherit'] },
  );
  rmSync(servedDir, { recursive: true, force: true });
  return { distDir, importsDir };
}
