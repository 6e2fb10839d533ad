import { expect } from 'chai';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generate, REPO_ROOT } from '../../../infra/generate';

function readTree(dir: string, prefix = ''): Record<string, string> {
  const out: Record<string, string> = {};
  for (const e of readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
    if (e.isDirectory()) Object.assign(out, readTree(join(dir, e.name), `${prefix}${e.name}/`));
    else out[`${prefix}${e.name}`] = readFileSync(join(dir, e.name), 'utf8');
  }
  return out;
}

describe('generated files', function () {
  this.timeout(60_000);
  let tmp = '';
  let fresh: { distDir: string; importsDir: string };

  before(() => {
    tmp = mkdtempSync(join(tmpdir(), 'bucketoperator-stale-'));
    fresh = generate(tmp);
  });
  after(() => rmSync(tmp, { recursive: true, force: true }));

  for (const dir of ['dist', 'imports'] as const) {
    it(`${dir}/ matches a fresh \`npm run synth\``, () => {
      const committed = readTree(join(REPO_ROOT, dir));
      const regenerated = readTree(dir === 'dist' ? fresh.distDir : fresh.importsDir);
      expect(Object.keys(committed), `files in ${dir}/; run npm run synth`).to.deep.equal(Object.keys(regenerated));
      for (const [name, text] of Object.entries(regenerated)) {
        expect(committed[name] === text, `${dir}/${name} is stale; run npm run synth`).to.equal(true);
      }
    });
  }
});
