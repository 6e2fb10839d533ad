/** scripts/release/image-contents.ts: what the image SBOM is read from, and its hold to the pinned package list. */
import { expect } from 'chai';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeOciArchive } from '../../../scripts/oci/archive';
import { checkPackagesPinned, entrypointFiles, parseDpkgRecord, readImageContents } from '../../../scripts/release/image-contents';

const RECORD =
  'Package: libc6\nSource: glibc\nVersion: 2.41-12+deb13u5\nArchitecture: amd64\nMaintainer: x\nDescription: GNU C Library\n more text\n';
const sha = (s: string | Buffer) => createHash('sha256').update(s).digest('hex');

describe('release: the image contents', () => {
  it('reads name, version and architecture from a dpkg record', () => {
    expect(parseDpkgRecord(RECORD)).to.deep.equal({ name: 'libc6', version: '2.41-12+deb13u5', architecture: 'amd64' });
    expect(() => parseDpkgRecord('Package: x\nVersion: 1\n')).to.throw(/no Architecture field/);
  });

  describe('holds the dpkg records to the pinned list', () => {
    const pinned = [
      { name: 'libc6', version: '2.41-12+deb13u5', sha256: '0'.repeat(64) },
      { name: 'tzdata', version: '2026f-0+deb13u1', sha256: '1'.repeat(64) },
    ];
    const records = [
      { name: 'libc6', version: '2.41-12+deb13u5', architecture: 'amd64' },
      { name: 'tzdata', version: '2026f-0+deb13u1', architecture: 'all' },
    ];
    it('accepts the same packages at the same versions', () => expect(() => checkPackagesPinned(records, pinned)).to.not.throw());
    const cases: Record<string, { records: typeof records; want: RegExp }> = {
      'another version in the image': {
        records: [records[0]!, { ...records[1]!, version: '2025a-1' }],
        want: /tzdata is 2025a-1 in the image, 2026f-0\+deb13u1 in the list/,
      },
      'a pinned package the image lacks': { records: [records[0]!], want: /tzdata 2026f-0\+deb13u1 is pinned but the image has no dpkg record/ },
      'a package the list lacks': {
        records: [...records, { name: 'bash', version: '5', architecture: 'amd64' }],
        want: /bash 5 is in the image but not in the list/,
      },
    };
    for (const [name, tc] of Object.entries(cases))
      it(`refuses ${name}`, () => expect(() => checkPackagesPinned(tc.records, pinned)).to.throw(tc.want));
  });

  it('finds the entrypoint program and the script it runs, resolved against WorkingDir', () => {
    expect(entrypointFiles({ Entrypoint: ['/nodejs/bin/node', 'operator/main.js'], WorkingDir: '/app' })).to.deep.equal({
      runtime: '/nodejs/bin/node',
      script: '/app/operator/main.js',
    });
    expect(() => entrypointFiles({ Entrypoint: ['node'] })).to.throw(/expected \[<absolute program>, <script>\]/);
  });

  it('reads an image archive: digest, platform, dpkg records and the entrypoint files with their digests', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'image-contents-'));
    try {
      const node = Buffer.from('#!binary');
      const bundle = Buffer.from('console.log(1)');
      const written = await writeOciArchive(
        {
          ref: 'bucketoperator:1.2.3',
          layers: [
            [{ type: 'file', path: 'var/lib/dpkg/status.d/libc6', mode: 0o644, content: Buffer.from(RECORD) }],
            [{ type: 'file', path: 'nodejs/bin/node', mode: 0o755, content: node }],
            [{ type: 'file', path: 'app/operator/main.js', mode: 0o644, content: bundle }],
          ],
          config: { Entrypoint: ['/nodejs/bin/node', 'operator/main.js'], WorkingDir: '/app' },
        },
        join(dir, 'image.tar'),
      );
      const got = readImageContents(readFileSync(join(dir, 'image.tar')));
      expect(got).to.deep.equal({
        digest: written.manifestDigest,
        name: 'docker.io/library/bucketoperator:1.2.3',
        architecture: 'amd64',
        os: 'linux',
        packages: [{ name: 'libc6', version: '2.41-12+deb13u5', architecture: 'amd64' }],
        runtime: { path: '/nodejs/bin/node', sha256: sha(node) },
        script: { path: '/app/operator/main.js', sha256: sha(bundle) },
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
