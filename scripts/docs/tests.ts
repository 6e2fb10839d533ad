/** The README's count of tests, taken from the tree rather than typed. */
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

/** The `*.test.ts` files under `dir`. */
export function testFiles(dir: string): string[] {
  return readdirSync(dir)
    .sort()
    .flatMap((f) => {
      const p = join(dir, f);
      if (statSync(p).isDirectory()) return testFiles(p);
      return p.endsWith('.test.ts') ? [p] : [];
    });
}

/** One sentence: how many test files each layer has. */
export function testCounts(root: string): string {
  const unit = testFiles(join(root, 'test', 'unit')).length;
  const integration = testFiles(join(root, 'test', 'integration')).length;
  return `The tests: ${unit} files of unit tests in \`test/unit/\` (no network) and ${integration} files of integration tests in \`test/integration/\` (a real control plane).`;
}
