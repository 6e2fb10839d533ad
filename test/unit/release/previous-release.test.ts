/** Whether this checkout's node_modules can build an earlier release (test/support/previous-release.ts). */
import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO } from '../../support/image';
import { missingFromCheckout, PREVIOUS_RELEASE, RELEASE_PATHS, releaseFixture, type Lockfile } from '../../support/previous-release';

const lock = (packages: Lockfile['packages']): Lockfile => ({ packages });

describe("previous release: building it on this checkout's node_modules", () => {
  const checkout = lock({
    '': { version: '0.2.0' },
    'node_modules/a': { version: '1.0.0', integrity: 'sha512-a' },
    'node_modules/b': { version: '2.0.0', integrity: 'sha512-b' },
    'node_modules/new': { version: '1.0.0', integrity: 'sha512-n' },
  });
  const cases: Record<string, { release: Lockfile; want: string[] }> = {
    'a release locking a subset at the same versions needs nothing more': {
      release: lock({ '': { version: '0.1.0' }, 'node_modules/a': { version: '1.0.0', integrity: 'sha512-a' } }),
      want: [],
    },
    'another version is missing': {
      release: lock({ 'node_modules/a': { version: '0.9.0', integrity: 'sha512-old' } }),
      want: ['a@0.9.0'],
    },
    'the same version with another integrity is missing': {
      release: lock({ 'node_modules/b': { version: '2.0.0', integrity: 'sha512-other' } }),
      want: ['b@2.0.0'],
    },
    'a package the checkout does not lock is missing, a link is not': {
      release: lock({ 'node_modules/gone': { version: '3.0.0' }, 'node_modules/linked': { link: true } }),
      want: ['gone@3.0.0'],
    },
  };
  for (const [name, tc] of Object.entries(cases)) {
    it(name, () => expect(missingFromCheckout(tc.release, checkout)).to.deep.equal(tc.want));
  }
});

describe('previous release: its files kept for clones without its commit', () => {
  it('test/fixtures/releases holds exactly the files of the commit (where the clone has it)', function () {
    try {
      execFileSync('git', ['-C', REPO, 'cat-file', '-e', `${PREVIOUS_RELEASE.commit}^{commit}`], { stdio: 'ignore' });
    } catch {
      this.skip(); // A shallow clone: the fixture is what stands in for the commit.
    }
    const dir = mkdtempSync(join(tmpdir(), 'bucketoperator-release-fixture-'));
    try {
      const fromGit = join(dir, 'git');
      const fromFixture = join(dir, 'fixture');
      mkdirSync(fromGit);
      mkdirSync(fromFixture);
      execFileSync('bash', [
        '-o',
        'pipefail',
        '-c',
        `git -C '${REPO}' archive --format=tar '${PREVIOUS_RELEASE.commit}' -- ${RELEASE_PATHS.join(' ')} | tar -x -C '${fromGit}'`,
      ]);
      execFileSync('tar', ['-xzf', releaseFixture(PREVIOUS_RELEASE), '-C', fromFixture]);
      // diff exits non-zero, and names the files, on any difference.
      execFileSync('diff', ['-r', fromGit, fromFixture], { encoding: 'utf8' });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
