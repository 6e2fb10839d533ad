import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const REPO = resolve(__dirname, '..', '..', '..');
const SCRIPT = join(REPO, 'scripts', 'chmod-bin.mjs');

const cases: Record<string, { bin: string | Record<string, string>; files: string[] }> = {
  'a bin map (this package: kubectl-bucket -> lib/cli/main.js)': { bin: { 'kubectl-bucket': 'lib/cli/main.js' }, files: ['lib/cli/main.js'] },
  'a single bin': { bin: 'lib/tool.js', files: ['lib/tool.js'] },
};

describe('kubectl bucket: the execute bit of the compiled bin', () => {
  for (const [name, { bin, files }] of Object.entries(cases)) {
    it(`scripts/chmod-bin.mjs makes every bin executable, as npm install does: ${name}`, () => {
      const dir = mkdtempSync(join(tmpdir(), 'chmod-bin-'));
      try {
        writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'x', bin }));
        for (const f of files) {
          mkdirSync(join(dir, f, '..'), { recursive: true });
          // As a build may write it.
          writeFileSync(join(dir, f), '#!/usr/bin/env node\n', { mode: 0o644 });
        }
        execFileSync(process.execPath, [SCRIPT, dir]);
        expect(files.map((f) => (statSync(join(dir, f)).mode & 0o777).toString(8))).to.deep.equal(files.map(() => '755'));
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
  }

  it('npm run build:lib runs it after the build and the plugin bundle, so a checkout runs `npx kubectl-bucket` as an installed package does', () => {
    const pkg = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { scripts: Record<string, string>; bin: Record<string, string> };
    expect(pkg.scripts['build:lib']).to.match(/tsc -p tsconfig\.lib\.json && tsx scripts\/bundle-plugin\.ts && node scripts\/chmod-bin\.mjs$/);
    expect(pkg.bin).to.deep.equal({ 'kubectl-bucket': 'lib/cli/main.js' });
  });
});
