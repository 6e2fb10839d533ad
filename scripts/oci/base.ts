/**
 * The image base, made as distroless makes its nodejs images: the files of a few Debian
 * packages (never installed: no maintainer scripts run, no dpkg database but distroless'
 * status.d records, which scanners read), the files their maintainer scripts would have made and
 * a nonroot user, then the Node binary at /nodejs/bin/node. No shell, no package manager.
 *
 * Package files come from `dpkg-deb --fsys-tarfile`, the package's own data archive read entry
 * by entry, rather than from a `dpkg-deb -x` tree: owners, modes and links are then exactly the
 * package's, whatever user or umask builds the image.
 */
import { execFileSync } from 'node:child_process';
import type { ImageConfig, LayerEntry } from './archive';
import { cleanPath } from './archive';
import { readTar } from './tar';

/** distroless' nonroot user and group. */
export const NONROOT_ID = 65532;

/** One package's contribution to the base. */
export interface PackageFiles {
  readonly name: string;
  /** The .deb's control paragraph (`dpkg-deb --field`), recorded under /var/lib/dpkg/status.d/. */
  readonly control: string;
  readonly entries: readonly LayerEntry[];
}

/** The files of one .deb and its control paragraph, read with dpkg-deb. */
export function readDeb(name: string, debPath: string): PackageFiles {
  const run = (args: string[]) => execFileSync('dpkg-deb', args, { maxBuffer: 1 << 30 });
  const entries: LayerEntry[] = [];
  for (const m of readTar(run(['--fsys-tarfile', debPath]))) {
    if (m.path === '' || m.path === '.') continue;
    entries.push(m.type === 'symlink' ? { type: 'symlink', path: m.path, target: m.target } : { ...m });
  }
  return { name, control: run(['--field', debPath]).toString('utf8'), entries };
}

/**
 * Whether a package file belongs in the image: documentation goes, except each package's
 * copyright file (its licence, which distroless keeps too); manuals, lintian overrides and gdb
 * helpers go, as nothing in the image can read them.
 */
export function keepPackagePath(path: string): boolean {
  const p = cleanPath(path);
  if (/^usr\/share\/(man|info|lintian|gdb)(\/|$)/.test(p)) return false;
  const doc = /^usr\/share\/doc\/[^/]+\/(.+)$/.exec(p);
  return !doc || doc[1] === 'copyright';
}

/**
 * The CA bundle update-ca-certificates would write at /etc/ssl/certs/ca-certificates.crt (the
 * ca-certificates package ships the certificates, its maintainer script makes the bundle): every
 * shipped certificate, in name order, each ending in a newline.
 */
export function caBundle(entries: readonly LayerEntry[]): Buffer {
  const certs = entries
    .filter((e): e is Extract<LayerEntry, { type: 'file' }> => e.type === 'file' && /^usr\/share\/ca-certificates\/.+\.crt$/.test(cleanPath(e.path)))
    .sort((a, b) => Buffer.compare(Buffer.from(cleanPath(a.path)), Buffer.from(cleanPath(b.path))));
  if (certs.length === 0)
    throw new Error('the base holds no CA certificates (usr/share/ca-certificates/*.crt): is ca-certificates in the package list?');
  return Buffer.concat(certs.map((c) => (c.content.at(-1) === 0x0a ? c.content : Buffer.concat([c.content, Buffer.from('\n')]))));
}

const text = (s: string) => Buffer.from(s, 'utf8');

/**
 * The files distroless adds beside the packages: users and groups (root, nobody and nonroot
 * 65532), the name service switch (files only: no NIS or systemd modules in the image),
 * nonroot's home and a world-writable /tmp.
 */
export function systemFiles(): LayerEntry[] {
  return [
    {
      type: 'file',
      path: 'etc/passwd',
      mode: 0o644,
      content: text(
        `root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\nnonroot:x:${NONROOT_ID}:${NONROOT_ID}:nonroot:/home/nonroot:/sbin/nologin\n`,
      ),
    },
    { type: 'file', path: 'etc/group', mode: 0o644, content: text(`root:x:0:\nnobody:x:65534:\ntty:x:5:\nstaff:x:50:\nnonroot:x:${NONROOT_ID}:\n`) },
    {
      type: 'file',
      path: 'etc/nsswitch.conf',
      mode: 0o644,
      content: text(
        'passwd: files\ngroup: files\nshadow: files\nhosts: files dns\nnetworks: files\nprotocols: files\nservices: files\nethers: files\nrpc: files\n',
      ),
    },
    { type: 'dir', path: 'home/nonroot', mode: 0o700, uid: NONROOT_ID, gid: NONROOT_ID },
    { type: 'dir', path: 'tmp', mode: 0o1777 },
  ];
}

/**
 * The base layer: the packages' kept files merged (a directory two packages ship is one entry;
 * a file two packages ship differently is an error), distroless' status.d records, the CA
 * bundle, and {@link systemFiles} over all of it.
 */
export function baseLayer(packages: readonly PackageFiles[]): LayerEntry[] {
  const byPath = new Map<string, LayerEntry>();
  const add = (e: LayerEntry, owner: string) => {
    const path = cleanPath(e.path);
    const known = byPath.get(path);
    if (known && !(known.type === 'dir' && e.type === 'dir') && !sameEntry(known, e)) {
      throw new Error(`${owner} ships ${path}, which another package ships differently`);
    }
    byPath.set(path, { ...e, path });
  };
  for (const pkg of packages) {
    for (const e of pkg.entries) if (keepPackagePath(e.path)) add(e, pkg.name);
    add({ type: 'file', path: `var/lib/dpkg/status.d/${pkg.name}`, mode: 0o644, content: text(pkg.control) }, pkg.name);
  }
  byPath.set('etc/ssl/certs/ca-certificates.crt', {
    type: 'file',
    path: 'etc/ssl/certs/ca-certificates.crt',
    mode: 0o644,
    content: caBundle(packages.flatMap((p) => p.entries)),
  });
  for (const e of systemFiles()) byPath.set(cleanPath(e.path), { ...e, path: cleanPath(e.path) });
  return [...byPath.values()];
}

function sameEntry(a: LayerEntry, b: LayerEntry): boolean {
  if (a.type === 'file' && b.type === 'file') return a.mode === b.mode && a.content.equals(b.content);
  if (a.type === 'symlink' && b.type === 'symlink') return a.target === b.target;
  return false;
}

/** The Node layer: the pinned binary at /nodejs/bin/node (the Dockerfile's ENTRYPOINT path) and its licence. */
export function nodeLayer(binary: Buffer, license: Buffer): LayerEntry[] {
  return [
    { type: 'file', path: 'nodejs/bin/node', mode: 0o755, content: binary },
    { type: 'file', path: 'nodejs/LICENSE', mode: 0o644, content: license },
  ];
}

/**
 * The config of distroless' `nodejs<major>-debian<release>:nonroot`, which the Dockerfile's
 * runtime stage starts from: its PATH and CA bundle variable, user, home and entrypoint.
 */
export function distrolessConfig(): ImageConfig {
  return {
    Env: ['PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin', 'SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt'],
    User: String(NONROOT_ID),
    WorkingDir: '/home/nonroot',
    Entrypoint: ['/nodejs/bin/node'],
  };
}

/** The distroless image a base of `nodeMajor` on Debian `release` stands for, as a Dockerfile names it. */
export function distrolessImage(nodeMajor: number, release: number): string {
  return `gcr.io/distroless/nodejs${nodeMajor}-debian${release}:nonroot`;
}
