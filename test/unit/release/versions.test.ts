/**
 * One version everywhere: package.json's, which every other place follows (scripts/release.ts
 * writes or renders each of them). A place that disagrees is named with what it holds.
 */
import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { VERSION } from '../../../infra/version';
import { compareVersions, disagreements, parseChangelog, REPO_ROOT, VERSION_PLACES } from '../../../scripts/release';

const packageVersion = (JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string }).version;

describe('release: one version everywhere', () => {
  it('package.json, its lockfile, infra VERSION, the images in dist/ and examples/ci/dist/, the CHANGELOG and the example pipeline agree', () => {
    expect(disagreements(REPO_ROOT, packageVersion), `places that do not say ${packageVersion}`).to.deep.equal([]);
  });

  it('the constructs default to the image tagged with the package version', () => {
    expect(VERSION).to.equal(packageVersion);
  });

  it('every place is checked, and the rendered ones hold images', () => {
    // A place that matched nothing is reported by disagreements() as "no version found".
    expect(VERSION_PLACES.flatMap((p) => p.paths)).to.include.members([
      'package.json',
      'package-lock.json',
      'infra/version.ts',
      'CHANGELOG.md',
      'examples/ci/package.json',
      'examples/ci/README.md',
      'dist',
      'examples/ci/dist',
    ]);
  });

  it('the CHANGELOG has an Unreleased section on top, then one section per version, newest first, each after the first with upgrade notes', () => {
    const { sections } = parseChangelog(readFileSync(join(REPO_ROOT, 'CHANGELOG.md'), 'utf8'));
    expect(sections[0]?.title).to.equal('Unreleased');
    const versions = sections.slice(1);
    expect(
      versions.filter((s) => s.version === undefined).map((s) => s.title),
      'sections that are not a version',
    ).to.deep.equal([]);
    const numbers = versions.map((s) => s.version ?? '');
    expect(numbers, 'newest first, each once').to.deep.equal([...new Set(numbers)].sort((a, b) => compareVersions(b, a)));
    for (const s of versions.slice(0, -1)) expect(s.body.split('\n'), `${s.title}: upgrade notes`).to.include('### Upgrade notes');
  });
});
