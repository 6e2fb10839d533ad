/**
 * Reading an archive back: every digest and size checked (a flipped byte is caught), layers
 * applied in order with whiteouts, and the command a root filesystem run starts with.
 */
import { expect } from 'chai';
import { lstatSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeOciArchive, type ImageSpec } from '../../../scripts/oci/archive';
import { readOciArchive, unpackLayers } from '../../../scripts/oci/read-archive';
import { rootfsCommand } from '../../../scripts/oci/run-rootfs';

const spec: ImageSpec = {
  ref: 'example:1',
  layers: [
    [
      { type: 'file', path: '/etc/motd', mode: 0o644, content: Buffer.from('old') },
      { type: 'file', path: '/gone/file', mode: 0o644, content: Buffer.from('x') },
      { type: 'file', path: '/opaque/old', mode: 0o644, content: Buffer.from('x') },
    ],
    [
      { type: 'file', path: '/etc/motd', mode: 0o600, content: Buffer.from('new') },
      { type: 'file', path: '/.wh.gone', mode: 0o644, content: Buffer.alloc(0) },
      { type: 'file', path: '/opaque/.wh..wh..opq', mode: 0o644, content: Buffer.alloc(0) },
      { type: 'file', path: '/opaque/new', mode: 0o644, content: Buffer.from('y') },
      { type: 'symlink', path: '/link', target: 'etc/motd' },
      { type: 'dir', path: '/ro', mode: 0o555 },
      { type: 'file', path: '/ro/inside', mode: 0o644, content: Buffer.from('z') },
    ],
  ],
  config: { Entrypoint: ['/bin/app'], Cmd: ['--serve'], User: '65532:65532', WorkingDir: '/app' },
};

describe('scripts/oci/read-archive', () => {
  let dir: string;
  let archive: Buffer;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'oci-read-'));
    await writeOciArchive(spec, join(dir, 'image.tar'));
    archive = readFileSync(join(dir, 'image.tar'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('reads back the config and the layers', () => {
    const image = readOciArchive(archive);
    expect(image.config.config).to.deep.equal(spec.config);
    expect(image.config).to.include({ architecture: 'amd64', os: 'linux' });
    expect(image.layers).to.have.length(2);
  });

  it('catches a changed byte in a blob', () => {
    const tampered = Buffer.from(archive);
    const at = tampered.indexOf('"architecture":"amd64"');
    expect(at).to.be.greaterThan(0);
    tampered.write('"architecture":"arm64"', at);
    expect(() => readOciArchive(tampered)).to.throw(/^config sha256:\S+ has digest sha256:/);
  });

  it('applies layers in order: later files win, whiteouts remove, opaque directories empty', () => {
    const root = join(dir, 'root');
    unpackLayers(readOciArchive(archive).layers, root);
    expect(readFileSync(join(root, 'etc/motd'), 'utf8')).to.equal('new');
    expect(lstatSync(join(root, 'etc/motd')).mode & 0o777).to.equal(0o600);
    expect(readdirSync(root).sort()).to.deep.equal(['etc', 'link', 'opaque', 'ro']);
    expect(readdirSync(join(root, 'opaque'))).to.deep.equal(['new']);
    expect(readlinkSync(join(root, 'link'))).to.equal('etc/motd');
    expect(lstatSync(join(root, 'ro')).mode & 0o777).to.equal(0o555);
    expect(readFileSync(join(root, 'ro/inside'), 'utf8')).to.equal('z');
  });

  it('runs the entrypoint as the image says: user, working directory, CMD or the arguments given', () => {
    const base = ['unshare', '--root=/r', '--wd=/app', '--setuid=65532', '--setgid=65532', '--'];
    expect(rootfsCommand('/r', spec.config, undefined, false)).to.deep.equal([...base, '/bin/app', '--serve']);
    expect(rootfsCommand('/r', spec.config, ['--help'], false)).to.deep.equal([...base, '/bin/app', '--help']);
    expect(rootfsCommand('/r', spec.config, ['/bin/sh'], true)).to.deep.equal([...base, '/bin/sh']);
    expect(() => rootfsCommand('/r', {}, undefined, false)).to.throw(/nothing to run/);
  });

  it('refuses an archive without an image layout', () => {
    expect(() => readOciArchive(Buffer.alloc(1024))).to.throw(/oci-layout/);
  });
});
