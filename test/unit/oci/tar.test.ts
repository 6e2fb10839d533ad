/**
 * The layer tar writer: what it writes reads back entry for entry (long and non-ASCII paths
 * through pax headers), and GNU tar, which is what most tools unpacking a layer resemble,
 * reads the same entries.
 */
import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, readlinkSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readTar, writeTar, type TarMember } from '../../../scripts/oci/tar';

const long = `usr/share/${'a-rather-long-directory-name/'.repeat(10)}file.txt`;
const members: TarMember[] = [
  { type: 'dir', path: 'etc', mode: 0o755, uid: 0, gid: 0 },
  { type: 'file', path: 'etc/hostname', mode: 0o644, uid: 0, gid: 0, content: Buffer.from('box\n') },
  { type: 'dir', path: 'home/nonroot', mode: 0o700, uid: 65532, gid: 65532 },
  { type: 'file', path: 'nodejs/bin/node', mode: 0o755, uid: 0, gid: 0, content: Buffer.alloc(1500, 7) },
  { type: 'file', path: long, mode: 0o4755, uid: 0, gid: 0, content: Buffer.from('deep') },
  { type: 'file', path: 'usr/share/zoneinfo/Amérique', mode: 0o644, uid: 0, gid: 0, content: Buffer.from('tz') },
  { type: 'symlink', path: 'lib64', target: 'usr/lib64', uid: 0, gid: 0 },
  { type: 'symlink', path: 'far', target: `${'../'.repeat(40)}x`, uid: 0, gid: 0 },
  { type: 'file', path: 'empty', mode: 0o600, uid: 1, gid: 2, content: Buffer.alloc(0) },
];

describe('scripts/oci/tar', () => {
  it('reads back what it wrote: types, paths, modes, owners, targets, contents and mtime', () => {
    const back = readTar(writeTar(members, 1_800_000_000));
    expect(back.map((m) => m.mtime)).to.deep.equal(members.map(() => 1_800_000_000));
    expect(back.map(({ mtime: _mtime, ...m }) => m)).to.deep.equal(members);
  });

  it('is a whole number of 512-byte blocks ending in two zero blocks', () => {
    const tar = writeTar(members, 0);
    expect(tar.length % 512).to.equal(0);
    expect(tar.subarray(-1024).every((b) => b === 0)).to.equal(true);
  });

  it('GNU tar lists and unpacks the same entries', function () {
    const dir = mkdtempSync(join(tmpdir(), 'oci-tar-'));
    try {
      writeFileSync(join(dir, 'layer.tar'), writeTar(members, 0));
      try {
        execFileSync('tar', ['--version'], { stdio: 'ignore' });
      } catch {
        this.skip();
      }
      mkdirSync(join(dir, 'root'));
      execFileSync('tar', ['-xf', join(dir, 'layer.tar'), '-C', join(dir, 'root'), '--no-same-owner']);
      expect(readFileSync(join(dir, 'root', long), 'utf8')).to.equal('deep');
      expect(readFileSync(join(dir, 'root', 'usr/share/zoneinfo/Amérique'), 'utf8')).to.equal('tz');
      expect(readlinkSync(join(dir, 'root', 'far'))).to.equal(`${'../'.repeat(40)}x`);
      expect(statSync(join(dir, 'root', 'nodejs/bin/node')).mode & 0o777).to.equal(0o755);
      const listed = execFileSync('tar', ['-tf', join(dir, 'layer.tar')], { encoding: 'utf8' })
        .trim()
        .split('\n');
      expect(listed).to.deep.equal(members.map((m) => (m.type === 'dir' ? `${m.path}/` : m.path)));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses a header whose checksum does not match', () => {
    const tar = writeTar(members.slice(0, 2), 0);
    tar[0] = (tar[0] ?? 0) ^ 1;
    expect(() => readTar(tar)).to.throw(/checksum/);
  });
});
