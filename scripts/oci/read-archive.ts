/**
 * Reads an OCI image layout tarball back: the index, the manifest, the config and the layers,
 * each checked against the digest and size that name it, and the layers applied in order into a
 * directory (a root filesystem), whiteouts included. The checks `ctr images import` makes, done
 * without containerd, and the way to look into or run an image on a machine without one.
 */
import { createHash } from 'node:crypto';
import { chmodSync, lchownSync, lstatSync, mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import type { ImageConfig } from './archive';
import { MEDIA_TYPES } from './archive';
import { readTar, type ReadMember } from './tar';

/** A content descriptor. */
export interface Descriptor {
  readonly mediaType: string;
  readonly digest: string;
  readonly size: number;
  readonly annotations?: Readonly<Record<string, string>>;
  readonly platform?: { readonly architecture: string; readonly os: string };
}

/** An image read back and checked. */
export interface ReadImage {
  readonly index: { readonly manifests: readonly Descriptor[] };
  readonly manifest: { readonly config: Descriptor; readonly layers: readonly Descriptor[] };
  readonly config: {
    readonly architecture: string;
    readonly os: string;
    readonly config: ImageConfig;
    readonly rootfs: { readonly diff_ids: readonly string[] };
  };
  /** Each layer's members, bottom first. */
  readonly layers: readonly (readonly ReadMember[])[];
}

const sha256 = (b: Buffer) => `sha256:${createHash('sha256').update(b).digest('hex')}`;

/**
 * Parses and checks an archive: one manifest in the index, every blob present with the digest
 * and size its descriptor gives, each layer's uncompressed digest equal to the config's diff id.
 * Throws naming the first thing that does not hold.
 */
export function readOciArchive(archive: Buffer): ReadImage {
  const files = new Map<string, Buffer>();
  for (const m of readTar(archive)) if (m.type === 'file') files.set(m.path, m.content);
  const layout = files.get('oci-layout');
  if (!layout || (JSON.parse(layout.toString()) as { imageLayoutVersion?: string }).imageLayoutVersion !== '1.0.0')
    throw new Error('no oci-layout 1.0.0');
  const blob = (d: Descriptor, kind: string): Buffer => {
    const data = files.get(`blobs/sha256/${d.digest.replace(/^sha256:/, '')}`);
    if (!data) throw new Error(`${kind} ${d.digest} is missing`);
    if (sha256(data) !== d.digest) throw new Error(`${kind} ${d.digest} has digest ${sha256(data)}`);
    if (data.length !== d.size) throw new Error(`${kind} ${d.digest} has ${data.length} bytes, its descriptor says ${d.size}`);
    return data;
  };
  const index = JSON.parse(files.get('index.json')?.toString() ?? 'null') as ReadImage['index'] | null;
  const top = index?.manifests[0];
  if (!index || index.manifests.length !== 1 || !top) throw new Error('index.json must name exactly one manifest');
  if (top.mediaType !== MEDIA_TYPES.manifest) throw new Error(`index.json names a ${top.mediaType}, not an image manifest`);
  const manifest = JSON.parse(blob(top, 'manifest').toString()) as ReadImage['manifest'];
  const config = JSON.parse(blob(manifest.config, 'config').toString()) as ReadImage['config'];
  if (config.rootfs.diff_ids.length !== manifest.layers.length) throw new Error('the config and the manifest count different layers');
  const layers = manifest.layers.map((d, i) => {
    const tar = gunzipSync(blob(d, `layer ${i}`));
    if (sha256(tar) !== config.rootfs.diff_ids[i])
      throw new Error(`layer ${i} unpacks to ${sha256(tar)}, the config says ${config.rootfs.diff_ids[i]}`);
    return readTar(tar);
  });
  return { index, manifest, config, layers };
}

/**
 * Applies layers, bottom first, into `dir` as a container runtime does: a `.wh.<name>` entry
 * removes `<name>` from the layers below, `.wh..wh..opq` empties its directory; owners and modes
 * are set as recorded (owners only when running as root).
 */
export function unpackLayers(layers: readonly (readonly ReadMember[])[], dir: string): void {
  const asRoot = process.getuid?.() === 0;
  for (const layer of layers) {
    const dirModes: [string, number][] = [];
    for (const m of layer) {
      const path = join(dir, m.path);
      const base = m.path.split('/').at(-1) ?? '';
      if (base === '.wh..wh..opq') {
        rmSync(dirname(path), { recursive: true, force: true });
        mkdirSync(dirname(path), { recursive: true });
        continue;
      }
      if (base.startsWith('.wh.')) {
        rmSync(join(dirname(path), base.slice(4)), { recursive: true, force: true });
        continue;
      }
      mkdirSync(dirname(path), { recursive: true });
      const existing = (() => {
        try {
          return lstatSync(path);
        } catch {
          return undefined;
        }
      })();
      if (m.type === 'dir') {
        if (existing && !existing.isDirectory()) rmSync(path, { force: true });
        mkdirSync(path, { recursive: true });
        // Set last: a read-only directory would refuse the entries below it.
        dirModes.push([path, m.mode]);
      } else {
        if (existing) rmSync(path, { recursive: true, force: true });
        if (m.type === 'symlink') symlinkSync(m.target, path);
        else writeFileSync(path, m.content, { mode: m.mode & 0o777 });
      }
      if (asRoot) lchownSync(path, m.uid, m.gid);
      // After the owner: chown clears set-user-id and set-group-id bits.
      if (m.type === 'file') chmodSync(path, m.mode & 0o7777);
    }
    for (const [path, mode] of dirModes.reverse()) chmodSync(path, mode & 0o7777);
  }
}
