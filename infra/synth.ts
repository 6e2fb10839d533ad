/**
 * `npm run synth`: regenerates dist/ and imports/ in place. Generates into a fresh temporary
 * directory first and then replaces the committed folders, so files of removed charts vanish.
 */
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generate, REPO_ROOT } from './generate';

const tmp = mkdtempSync(join(tmpdir(), 'bucketoperator-synth-'));
try {
  const { distDir, importsDir } = generate(tmp);
  for (const [from, to] of [
    [distDir, 'dist'],
    [importsDir, 'imports'],
  ] as const) {
    rmSync(join(REPO_ROOT, to), { recursive: true, force: true });
    cpSync(from, join(REPO_ROOT, to), { recursive: true });
  }
  console.log('wrote dist/ and imports/');
} finally {
  rmSync(tmp, { recursive: true, force: true });
}
