/**
 * Writes an image as an OCI image layout tarball, the archive `ctr images import` (and
 * `docker load`, `skopeo copy oci-archive:`) accept: `oci-layout`, `index.json` and the blobs
 * under `blobs/sha256/`. Nothing but node:crypto and node:zlib, so an image is made without a
 * registry, a daemon or a container tool.
 *
 * Reproducible: every layer entry carries the image's creation time as its mtime, entries are
 * sorted by path (parents first), JSON documents have sorted keys, and gzip writes no timestamp
 * or name, so one spec always gives the same bytes and the same digests (for one zlib; a
 * different zlib may compress differently, which changes the blob digests but never the
 * layers' diff ids).
 */
import { createHash } from 'node:crypto';
import { mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { promisify } from 'node:util';
import { gzip } from 'node:zlib';
import { writeTar, type TarMember } from './tar';

/** One entry of a layer; paths are absolute or relative to the image's root, `/`-separated. */
export type LayerEntry =
  | { type: 'dir'; path: string; mode: number; uid?: number; gid?: number }
  | { type: 'file'; path: string; mode: number; uid?: number; gid?: number; content: Buffer }
  | { type: 'symlink'; path: string; target: string };

/** The runtime part of an image's config (the OCI config's `config` object). */
export interface ImageConfig {
  Entrypoint?: string[];
  Cmd?: string[];
  User?: string;
  Env?: string[];
  WorkingDir?: string;
  ExposedPorts?: Record<string, object>;
  Labels?: Record<string, string>;
}

/** What {@link writeOciArchive} writes. */
export interface ImageSpec {
  /** The image's name, e.g. `bucketoperator:0.1.0`; normalised as Docker and the kubelet do. */
  ref: string;
  /** Layers, bottom first; each is written as one gzip-compressed tar. */
  layers: LayerEntry[][];
  config: ImageConfig;
  /** RFC 3339; also every entry's mtime. @default 1970-01-01T00:00:00Z */
  created?: string;
  /** One line per layer for the config's history (what made it). @default none */
  history?: string[];
  /** @default amd64 */
  architecture?: string;
  /** @default linux */
  os?: string;
}

/** One layer as written. */
export interface WrittenLayer {
  /** Digest of the compressed blob (what the manifest names). */
  readonly digest: string;
  /** Bytes of the compressed blob. */
  readonly size: number;
  /** Digest of the uncompressed tar (the config's `rootfs.diff_ids`). */
  readonly diffId: string;
  /** Bytes of the uncompressed tar. */
  readonly uncompressedSize: number;
}

/** What {@link writeOciArchive} wrote. */
export interface WrittenImage {
  readonly manifestDigest: string;
  readonly configDigest: string;
  readonly layers: readonly WrittenLayer[];
  /** The normalised name in `io.containerd.image.name`, e.g. `docker.io/library/bucketoperator:0.1.0`. */
  readonly name: string;
  /** Bytes of the archive. */
  readonly archiveSize: number;
}

/** Options of {@link writeOciArchive}. */
export interface WriteOptions {
  /**
   * Compressed layers by diff id, read and filled: images that share layers (a base, the Node
   * binary) compress each only once when written with one cache.
   */
  readonly layerCache?: Map<string, Buffer>;
}

/** OCI media types this writer uses. */
export const MEDIA_TYPES = {
  index: 'application/vnd.oci.image.index.v1+json',
  manifest: 'application/vnd.oci.image.manifest.v1+json',
  config: 'application/vnd.oci.image.config.v1+json',
  layerGzip: 'application/vnd.oci.image.layer.v1.tar+gzip',
} as const;

const DEFAULT_CREATED = '1970-01-01T00:00:00Z';

const COMPONENT = '[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*';
/** Docker's reference grammar, less upper-case domains: `[domain[:port]/]path[:tag][@digest]`. */
const REFERENCE = new RegExp(
  `^(?:(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)*)(?::[0-9]+)?/)?${COMPONENT}(?:/${COMPONENT})*(?::[\\w][\\w.-]{0,127})?(?:@sha256:[a-f0-9]{64})?$`,
);

/**
 * The fully qualified form of an image reference, as Docker and the kubelet (CRI) resolve a
 * short one: `bucketoperator:0.1.0` is `docker.io/library/bucketoperator:0.1.0`, a name without
 * a tag gets `latest`. containerd stores images under this form, so a Pod's `image:
 * bucketoperator:0.1.0` finds the imported image only when it is named so.
 */
export function normalizeRef(ref: string): string {
  if (!REFERENCE.test(ref)) throw new Error(`image reference "${ref}" is not valid (expected [registry/]name[:tag][@sha256:digest], lower case)`);
  const slash = ref.indexOf('/');
  const first = slash < 0 ? '' : ref.slice(0, slash);
  const hasDomain = slash >= 0 && (first.includes('.') || first.includes(':') || first === 'localhost');
  let named = hasDomain ? ref : slash < 0 ? `docker.io/library/${ref}` : `docker.io/${ref}`;
  const lastPart = named.slice(named.lastIndexOf('/') + 1);
  if (!lastPart.includes(':') && !named.includes('@')) named = `${named}:latest`;
  return named;
}

/** The tag (or digest) of a normalised reference: what OCI's `org.opencontainers.image.ref.name` holds. */
export function refTag(normalized: string): string {
  const at = normalized.indexOf('@');
  if (at >= 0) return normalized.slice(at + 1);
  const last = normalized.slice(normalized.lastIndexOf('/') + 1);
  return last.slice(last.indexOf(':') + 1);
}

/** JSON with object keys sorted at every level, so equal documents have equal bytes. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v !== null && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v,
  );
}

function sha256(data: Buffer | string): string {
  return `sha256:${createHash('sha256').update(data).digest('hex')}`;
}

/** A layer path without leading `/` or `./` and trailing `/`; throws on `..`, `.` or an empty path. */
export function cleanPath(path: string): string {
  const clean = path.replace(/^(\.?\/)+/, '').replace(/\/+$/, '');
  const parts = clean.split('/');
  if (clean === '' || parts.some((p) => p === '' || p === '.' || p === '..'))
    throw new Error(`layer path "${path}" is not a clean path inside the image`);
  return clean;
}

function compareBytes(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}

/**
 * The tar members of one layer: paths cleaned, a missing parent directory added as root's 0755
 * (as `tar` would create it), sorted bytewise so every parent precedes its children. Throws when
 * two entries name one path.
 */
export function layerMembers(entries: readonly LayerEntry[]): TarMember[] {
  const byPath = new Map<string, TarMember>();
  for (const e of entries) {
    const path = cleanPath(e.path);
    if (byPath.has(path)) throw new Error(`layer names "${path}" twice`);
    const owner = { uid: e.type === 'symlink' ? 0 : (e.uid ?? 0), gid: e.type === 'symlink' ? 0 : (e.gid ?? 0) };
    byPath.set(
      path,
      e.type === 'dir'
        ? { type: 'dir', path, mode: e.mode, ...owner }
        : e.type === 'file'
          ? { type: 'file', path, mode: e.mode, content: e.content, ...owner }
          : { type: 'symlink', path, target: e.target, ...owner },
    );
  }
  for (const path of [...byPath.keys()]) {
    for (let i = path.indexOf('/'); i > 0; i = path.indexOf('/', i + 1)) {
      const parent = path.slice(0, i);
      const known = byPath.get(parent);
      if (!known) byPath.set(parent, { type: 'dir', path: parent, mode: 0o755, uid: 0, gid: 0 });
      else if (known.type !== 'dir') throw new Error(`layer names "${path}" below "${parent}", which is a ${known.type}`);
    }
  }
  return [...byPath.values()].sort((a, b) => compareBytes(a.path, b.path));
}

const gzipAsync = promisify(gzip);

interface Blob {
  readonly digest: string;
  readonly data: Buffer;
}

function blob(data: Buffer | string): Blob {
  const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
  return { digest: sha256(bytes), data: bytes };
}

/**
 * Writes an OCI image layout tarball (oci-layout, index.json with the
 * org.opencontainers.image.ref.name and io.containerd.image.name annotations,
 * blobs/sha256/...) that `ctr images import` accepts; reproducible: same spec, same bytes
 * (fixed mtimes, sorted entries). The file appears whole or not at all (written beside it, then
 * renamed).
 */
export async function writeOciArchive(spec: ImageSpec, outFile: string, options: WriteOptions = {}): Promise<WrittenImage> {
  const created = spec.created ?? DEFAULT_CREATED;
  const createdMs = Date.parse(created);
  if (Number.isNaN(createdMs)) throw new Error(`created "${created}" is not an RFC 3339 time`);
  const mtime = Math.floor(createdMs / 1000);
  const name = normalizeRef(spec.ref);
  const architecture = spec.architecture ?? 'amd64';
  const os = spec.os ?? 'linux';
  if (spec.history && spec.history.length !== spec.layers.length) {
    throw new Error(`history has ${spec.history.length} lines for ${spec.layers.length} layers`);
  }

  const layers = await Promise.all(
    spec.layers.map(async (entries) => {
      const tar = writeTar(layerMembers(entries), mtime);
      const diffId = sha256(tar);
      const known = options.layerCache?.get(diffId);
      // Level 6 (zlib's default): level 9 took three times as long on the Node binary for 0.4% less.
      const compressed = known ?? (await gzipAsync(tar, { level: 6 }));
      options.layerCache?.set(diffId, compressed);
      return { blob: blob(compressed), diffId, uncompressedSize: tar.length };
    }),
  );

  const config = blob(
    canonicalJson({
      created,
      architecture,
      os,
      config: spec.config,
      rootfs: { type: 'layers', diff_ids: layers.map((l) => l.diffId) },
      history: layers.map((_, i) => ({ created, created_by: spec.history?.[i] ?? '' })),
    }),
  );
  const manifest = blob(
    canonicalJson({
      schemaVersion: 2,
      mediaType: MEDIA_TYPES.manifest,
      config: { mediaType: MEDIA_TYPES.config, digest: config.digest, size: config.data.length },
      layers: layers.map((l) => ({ mediaType: MEDIA_TYPES.layerGzip, digest: l.blob.digest, size: l.blob.data.length })),
    }),
  );
  const index = canonicalJson({
    schemaVersion: 2,
    mediaType: MEDIA_TYPES.index,
    manifests: [
      {
        mediaType: MEDIA_TYPES.manifest,
        digest: manifest.digest,
        size: manifest.data.length,
        platform: { architecture, os },
        annotations: { 'io.containerd.image.name': name, 'org.opencontainers.image.ref.name': refTag(name) },
      },
    ],
  });

  const blobs = new Map<string, Buffer>();
  for (const b of [config, manifest, ...layers.map((l) => l.blob)]) blobs.set(b.digest, b.data);
  const file = (path: string, content: Buffer | string): TarMember => ({
    type: 'file',
    path,
    mode: 0o644,
    uid: 0,
    gid: 0,
    content: typeof content === 'string' ? Buffer.from(content, 'utf8') : content,
  });
  const members: TarMember[] = [
    { type: 'dir', path: 'blobs', mode: 0o755, uid: 0, gid: 0 },
    { type: 'dir', path: 'blobs/sha256', mode: 0o755, uid: 0, gid: 0 },
    ...[...blobs.entries()]
      .sort(([a], [b]) => compareBytes(a, b))
      .map(([digest, data]) => file(`blobs/sha256/${digest.slice('sha256:'.length)}`, data)),
    file('index.json', index),
    file('oci-layout', canonicalJson({ imageLayoutVersion: '1.0.0' })),
  ];
  const archive = writeTar(members, mtime);
  mkdirSync(dirname(outFile), { recursive: true });
  // One name per process: two builds of one image may run at once and must not share a file.
  const partial = `${outFile}.${process.pid}.partial`;
  try {
    writeFileSync(partial, archive);
    renameSync(partial, outFile);
  } catch (err) {
    rmSync(partial, { force: true });
    throw err;
  }
  return {
    manifestDigest: manifest.digest,
    configDigest: config.digest,
    layers: layers.map((l) => ({ digest: l.blob.digest, size: l.blob.data.length, diffId: l.diffId, uncompressedSize: l.uncompressedSize })),
    name,
    archiveSize: archive.length,
  };
}
