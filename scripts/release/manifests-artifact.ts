/**
 * The rendered manifests (dist/) as an OCI artifact: an image manifest with an artifactType of
 * our own, the empty config, and one uncompressed tar layer per folder (`dist` for the top-level
 * files, `dist/v2`, `dist/monitoring`, ...), each titled with the folder so `oras pull` names it
 * and a reader can take the one it wants. Paths inside a layer are relative to dist/, so
 * unpacking every layer into one directory gives dist/ back.
 *
 * Reproducible: fixed mtimes, sorted entries, no creation time in any annotation, so one dist/
 * and one commit always give the same digest. Pure but for {@link readDist} and {@link writeArtifactLayout}.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, posix, relative } from 'node:path';
import { canonicalJson, cleanPath, layerMembers, MEDIA_TYPES } from '../oci/archive';
import { readTar, writeTar } from '../oci/tar';

/** The artifactType of the manifests artifact. */
export const MANIFESTS_ARTIFACT_TYPE = 'application/vnd.avalonhosting.bucketoperator.manifests.v1';
/** The media type of each of its layers: a plain tar of one folder's files. */
export const MANIFESTS_LAYER_TYPE = 'application/vnd.avalonhosting.bucketoperator.manifests.layer.v1.tar';
/** OCI's empty descriptor: the config of an artifact that needs none. */
export const EMPTY_CONFIG = {
  mediaType: 'application/vnd.oci.empty.v1+json',
  digest: 'sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a',
  size: 2,
} as const;
const EMPTY_CONFIG_BYTES = Buffer.from('{}');
/** The annotation OCI (and oras) read a layer's file name from. */
export const TITLE_ANNOTATION = 'org.opencontainers.image.title';

/** One file of dist/, its path relative to dist/ (`v2/00-crds.yaml`). */
export interface ManifestFile {
  readonly path: string;
  readonly content: Buffer;
}

/** An OCI content descriptor. */
export interface ArtifactDescriptor {
  readonly mediaType: string;
  readonly digest: string;
  readonly size: number;
  readonly annotations?: Readonly<Record<string, string>>;
}

/** The artifact, built. */
export interface ManifestsArtifact {
  /** The image manifest's bytes, exactly as pushed. */
  readonly manifest: Buffer;
  /** Its digest: what the registry reports and what is signed. */
  readonly digest: string;
  /** Every blob (the config and the layers) by digest. */
  readonly blobs: ReadonlyMap<string, Buffer>;
  /** Each layer's title and the files in it. */
  readonly layers: readonly { readonly title: string; readonly digest: string; readonly paths: readonly string[] }[];
}

const sha256 = (data: Buffer) => `sha256:${createHash('sha256').update(data).digest('hex')}`;

/** The layer title a file goes to: `dist` for top-level files, `dist/<first folder>` for the rest. */
export function folderOf(path: string): string {
  const clean = cleanPath(path);
  const slash = clean.indexOf('/');
  return slash < 0 ? 'dist' : `dist/${clean.slice(0, slash)}`;
}

/**
 * Builds the artifact from dist/'s files. `annotations` go on the manifest (version, revision,
 * source); no time goes anywhere, so the digest depends on the content alone. Throws on an empty
 * tree or a path that leaves dist/.
 */
export function manifestsArtifact(files: readonly ManifestFile[], annotations: Readonly<Record<string, string>>): ManifestsArtifact {
  if (files.length === 0) throw new Error('the manifests artifact needs at least one file');
  const byFolder = new Map<string, ManifestFile[]>();
  for (const f of files) {
    const folder = folderOf(f.path);
    byFolder.set(folder, [...(byFolder.get(folder) ?? []), { path: cleanPath(f.path), content: f.content }]);
  }
  const blobs = new Map<string, Buffer>([[EMPTY_CONFIG.digest, EMPTY_CONFIG_BYTES]]);
  const layers = [...byFolder.keys()].sort().map((title) => {
    const folderFiles = byFolder.get(title) ?? [];
    const members = layerMembers(folderFiles.map((f) => ({ type: 'file' as const, path: f.path, mode: 0o644, content: f.content })));
    const tar = writeTar(members, 0);
    const digest = sha256(tar);
    blobs.set(digest, tar);
    return {
      descriptor: { mediaType: MANIFESTS_LAYER_TYPE, digest, size: tar.length, annotations: { [TITLE_ANNOTATION]: title } },
      title,
      paths: folderFiles.map((f) => f.path).sort(),
    };
  });
  const manifest = Buffer.from(
    canonicalJson({
      schemaVersion: 2,
      mediaType: MEDIA_TYPES.manifest,
      artifactType: MANIFESTS_ARTIFACT_TYPE,
      config: EMPTY_CONFIG,
      layers: layers.map((l) => l.descriptor),
      annotations,
    }),
  );
  return { manifest, digest: sha256(manifest), blobs, layers: layers.map((l) => ({ title: l.title, digest: l.descriptor.digest, paths: l.paths })) };
}

/** Every file under dist/, paths relative to it, in path order. */
export function readDist(dir: string): ManifestFile[] {
  const out: ManifestFile[] = [];
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
      const path = join(d, e.name);
      if (e.isDirectory()) walk(path);
      else if (e.isFile()) out.push({ path: relative(dir, path).split('\\').join('/'), content: readFileSync(path) });
    }
  };
  walk(dir);
  return out;
}

/** Writes the artifact as an OCI layout directory (what `crane push <dir> <ref>` reads). */
export function writeArtifactLayout(artifact: ManifestsArtifact, dir: string, tag: string): void {
  mkdirSync(join(dir, 'blobs', 'sha256'), { recursive: true });
  const blobs = new Map(artifact.blobs);
  blobs.set(artifact.digest, artifact.manifest);
  for (const [digest, data] of blobs) writeFileSync(join(dir, 'blobs', 'sha256', digest.replace(/^sha256:/, '')), data);
  writeFileSync(join(dir, 'oci-layout'), canonicalJson({ imageLayoutVersion: '1.0.0' }));
  writeFileSync(
    join(dir, 'index.json'),
    canonicalJson({
      schemaVersion: 2,
      mediaType: MEDIA_TYPES.index,
      manifests: [
        {
          mediaType: MEDIA_TYPES.manifest,
          artifactType: MANIFESTS_ARTIFACT_TYPE,
          digest: artifact.digest,
          size: artifact.manifest.length,
          annotations: { 'org.opencontainers.image.ref.name': tag },
        },
      ],
    }),
  );
}

/**
 * Reads the artifact back from its manifest and a way to fetch blobs: checks the artifactType,
 * every layer's media type, digest and size, and that no entry leaves dist/ or is named twice.
 * Returns dist/'s files in path order. Throws naming the first thing that does not hold.
 */
export function readManifestsArtifact(manifestBytes: Buffer, blob: (digest: string) => Buffer): ManifestFile[] {
  const manifest = JSON.parse(manifestBytes.toString('utf8')) as { artifactType?: string; layers?: ArtifactDescriptor[] };
  if (manifest.artifactType !== MANIFESTS_ARTIFACT_TYPE)
    throw new Error(`the artifact's type is ${manifest.artifactType ?? '(none)'}, expected ${MANIFESTS_ARTIFACT_TYPE}`);
  const files = new Map<string, Buffer>();
  for (const layer of manifest.layers ?? []) {
    const title = layer.annotations?.[TITLE_ANNOTATION] ?? layer.digest;
    if (layer.mediaType !== MANIFESTS_LAYER_TYPE) throw new Error(`layer ${title} is a ${layer.mediaType}, expected ${MANIFESTS_LAYER_TYPE}`);
    const data = blob(layer.digest);
    if (sha256(data) !== layer.digest || data.length !== layer.size)
      throw new Error(`layer ${title}: the blob is ${sha256(data)} (${data.length} bytes), the manifest says ${layer.digest} (${layer.size} bytes)`);
    for (const m of readTar(data)) {
      if (m.type === 'dir') continue;
      if (m.type !== 'file') throw new Error(`layer ${title} holds a link (${m.path})`);
      if (posix.isAbsolute(m.path)) throw new Error(`layer ${title} names an absolute path (${m.path})`);
      const path = cleanPath(m.path);
      if (files.has(path)) throw new Error(`${path} is in two layers`);
      files.set(path, m.content);
    }
  }
  if (files.size === 0) throw new Error('the artifact holds no files');
  return [...files.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([path, content]) => ({ path, content }));
}

/** The differences between two trees of files, one line each (`changed: v2/00-crds.yaml`); empty when equal. */
export function compareTrees(want: readonly ManifestFile[], got: readonly ManifestFile[]): string[] {
  const wantBy = new Map(want.map((f) => [f.path, f.content]));
  const gotBy = new Map(got.map((f) => [f.path, f.content]));
  const out: string[] = [];
  for (const [path, content] of wantBy) {
    const other = gotBy.get(path);
    if (other === undefined) out.push(`missing: ${path}`);
    else if (!other.equals(content)) out.push(`changed: ${path}`);
  }
  for (const path of gotBy.keys()) if (!wantBy.has(path)) out.push(`added: ${path}`);
  return out.sort();
}
