/**
 * What the operator image holds, read from its OCI archive (what `npm run build:oci` writes):
 * the manifest digest, the Debian packages its dpkg records name (distroless' status.d files),
 * the Node binary and the operator bundle with their SHA-256. The image SBOM is made from this,
 * after {@link checkPackagesPinned} holds the records to scripts/image-packages.txt, so the SBOM
 * says what is in the image and the list's .deb digests stand behind each package.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join, posix } from 'node:path';
import type { PinnedPackage } from '../oci/packages';
import { readOciArchive } from '../oci/read-archive';
import { readTar, type ReadMember } from '../oci/tar';

/** One dpkg record of the image. */
export interface DpkgRecord {
  readonly name: string;
  readonly version: string;
  readonly architecture: string;
}

/** A file of the image and its SHA-256 (hex). */
export interface ImageFile {
  /** Absolute, in the image. */
  readonly path: string;
  readonly sha256: string;
}

/** What the release reads from the image. */
export interface ImageContents {
  /** `sha256:<hex>` of the image manifest: the digest a registry will report. */
  readonly digest: string;
  /** The name the archive gives it (`io.containerd.image.name`), e.g. `docker.io/library/bucketoperator:0.2.0`. */
  readonly name: string;
  readonly architecture: string;
  readonly os: string;
  readonly packages: readonly DpkgRecord[];
  /** The entrypoint's program (the Node binary). */
  readonly runtime: ImageFile;
  /** The script the entrypoint runs (the operator bundle), resolved against WorkingDir. */
  readonly script: ImageFile;
}

/**
 * The two files an entrypoint `[program, script, ...]` runs, as absolute paths: the script is
 * resolved against the working directory, as the runtime resolves it. Throws when the entrypoint
 * is not of that form.
 */
export function entrypointFiles(config: { readonly Entrypoint?: readonly string[]; readonly WorkingDir?: string }): {
  runtime: string;
  script: string;
} {
  const [runtime, script] = config.Entrypoint ?? [];
  if (!runtime?.startsWith('/') || !script)
    throw new Error(`the image's entrypoint is ${JSON.stringify(config.Entrypoint ?? [])}, expected [<absolute program>, <script>]`);
  return { runtime, script: posix.resolve(config.WorkingDir ?? '/', script) };
}

/** Reads `Package`, `Version` and `Architecture` of one control paragraph. */
export function parseDpkgRecord(text: string): DpkgRecord {
  const field = (name: string): string => {
    const m = new RegExp(`^${name}:[ \\t]*(.*)$`, 'm').exec(text);
    const value = m?.[1]?.trim();
    if (!value) throw new Error(`dpkg record has no ${name} field:\n${text.slice(0, 200)}`);
    return value;
  };
  return { name: field('Package'), version: field('Version'), architecture: field('Architecture') };
}

/**
 * Throws naming every difference between the image's dpkg records and the pinned list: a package
 * missing on either side or at another version. The SBOM takes each .deb's digest from the list,
 * which is only right when the two agree.
 */
export function checkPackagesPinned(records: readonly DpkgRecord[], pinned: readonly PinnedPackage[]): void {
  const problems: string[] = [];
  const inImage = new Map(records.map((r) => [r.name, r]));
  for (const p of pinned) {
    const r = inImage.get(p.name);
    if (!r) problems.push(`${p.name} ${p.version} is pinned but the image has no dpkg record of it`);
    else if (r.version !== p.version) problems.push(`${p.name} is ${r.version} in the image, ${p.version} in the list`);
  }
  const names = new Set(pinned.map((p) => p.name));
  for (const r of records) if (!names.has(r.name)) problems.push(`${r.name} ${r.version} is in the image but not in the list`);
  if (problems.length > 0)
    throw new Error(`the image and scripts/image-packages.txt disagree (rebuild with npm run build:oci):\n  ${problems.join('\n  ')}`);
}

const STATUS_D = 'var/lib/dpkg/status.d/';

/**
 * Reads an image archive, checked as `ctr images import` checks it (every digest and size): its
 * digest, platform, dpkg records, and the entrypoint's program and script with their digests
 * (the top layer that holds a file wins). Throws when one of those files is missing.
 */
export function readImageContents(archive: Buffer): ImageContents {
  const image = readOciArchive(archive);
  const top = image.index.manifests[0];
  if (!top) throw new Error('the image archive names no manifest');
  const files = new Map<string, ReadMember>();
  for (const layer of image.layers) for (const m of layer) files.set(m.path, m);
  const packages: DpkgRecord[] = [];
  for (const [path, m] of files) if (path.startsWith(STATUS_D) && m.type === 'file') packages.push(parseDpkgRecord(m.content.toString('utf8')));
  const file = (path: string): ImageFile => {
    const m = files.get(path.replace(/^\/+/, ''));
    if (m?.type !== 'file') throw new Error(`the image holds no file ${path}`);
    return { path, sha256: createHash('sha256').update(m.content).digest('hex') };
  };
  const entry = entrypointFiles(image.config.config);
  return {
    digest: top.digest,
    name: top.annotations?.['io.containerd.image.name'] ?? '',
    architecture: image.config.architecture,
    os: image.config.os,
    packages: packages.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)),
    runtime: file(entry.runtime),
    script: file(entry.script),
  };
}

/** Unpacks an image archive (an OCI layout in a tar) into `dir`, the layout directory `crane push` reads. */
export function unpackLayout(archive: Buffer, dir: string): void {
  for (const m of readTar(archive)) {
    const path = join(dir, m.path);
    if (m.type === 'dir') mkdirSync(path, { recursive: true });
    else if (m.type === 'file') {
      mkdirSync(dirname(path), { recursive: true });
      writeFileSync(path, m.content);
    } else throw new Error(`the image archive holds a link (${m.path}); an OCI layout holds none`);
  }
}
