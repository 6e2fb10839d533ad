/**
 * The OCI archive writer: the tarball parses back into a layout whose index, manifest, config
 * and layers agree on every digest and size, and one spec always gives the same bytes.
 */
import { expect } from 'chai';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { layerMembers, MEDIA_TYPES, normalizeRef, refTag, writeOciArchive, type ImageSpec } from '../../../scripts/oci/archive';
import { readTar } from '../../../scripts/oci/tar';

interface Descriptor {
  mediaType: string;
  digest: string;
  size: number;
  annotations?: Record<string, string>;
  platform?: { architecture: string; os: string };
}
interface Index {
  schemaVersion: number;
  mediaType: string;
  manifests: Descriptor[];
}
interface Manifest {
  schemaVersion: number;
  mediaType: string;
  config: Descriptor;
  layers: Descriptor[];
}
interface Config {
  architecture: string;
  os: string;
  created: string;
  config: Record<string, unknown>;
  rootfs: { type: string; diff_ids: string[] };
  history: { created_by: string }[];
}

const sha256 = (b: Buffer) => `sha256:${createHash('sha256').update(b).digest('hex')}`;

const spec = (): ImageSpec => ({
  ref: 'bucketoperator:0.1.0',
  created: '2026-12-01T00:00:00Z',
  history: ['base', 'app'],
  layers: [
    [
      { type: 'dir', path: '/etc', mode: 0o755 },
      { type: 'file', path: '/etc/passwd', mode: 0o644, content: Buffer.from('root:x:0:0:root:/root:/sbin/nologin\n') },
      { type: 'dir', path: '/tmp', mode: 0o1777 },
      { type: 'symlink', path: '/lib64', target: 'usr/lib64' },
      { type: 'file', path: `/usr/share/${'long-directory-name/'.repeat(12)}file.txt`, mode: 0o644, content: Buffer.from('deep') },
    ],
    [
      { type: 'file', path: '/app/operator/main.js', mode: 0o644, uid: 65532, gid: 65532, content: Buffer.from('console.log(1)\n') },
      { type: 'dir', path: '/home/nonroot', mode: 0o700, uid: 65532, gid: 65532 },
    ],
  ],
  config: { Entrypoint: ['/nodejs/bin/node', 'operator/main.js'], User: '65532:65532', WorkingDir: '/app', Env: ['NODE_ENV=production'] },
});

/** The archive's files by path. */
function unpack(file: string): Map<string, Buffer> {
  const files = new Map<string, Buffer>();
  for (const m of readTar(readFileSync(file))) if (m.type === 'file') files.set(m.path, m.content);
  return files;
}

function blobOf(files: Map<string, Buffer>, digest: string): Buffer {
  const data = files.get(`blobs/sha256/${digest.slice('sha256:'.length)}`);
  if (!data) throw new Error(`no blob ${digest}`);
  return data;
}

describe('scripts/oci/archive: writeOciArchive', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'oci-archive-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('writes a layout whose index, manifest, config and layers agree on every digest and size', async () => {
    const out = join(dir, 'image.tar');
    const written = await writeOciArchive(spec(), out);
    const files = unpack(out);
    expect(JSON.parse(files.get('oci-layout')?.toString() ?? '')).to.deep.equal({ imageLayoutVersion: '1.0.0' });

    const index = JSON.parse(files.get('index.json')?.toString() ?? '') as Index;
    expect(index.mediaType).to.equal(MEDIA_TYPES.index);
    expect(index.manifests).to.have.length(1);
    const [top] = index.manifests as [Descriptor];
    expect(top.annotations).to.deep.equal({
      'io.containerd.image.name': 'docker.io/library/bucketoperator:0.1.0',
      'org.opencontainers.image.ref.name': '0.1.0',
    });
    expect(top.platform).to.deep.equal({ architecture: 'amd64', os: 'linux' });
    expect(top.digest).to.equal(written.manifestDigest);

    const manifestBytes = blobOf(files, top.digest);
    expect(sha256(manifestBytes)).to.equal(top.digest);
    expect(manifestBytes.length).to.equal(top.size);
    const manifest = JSON.parse(manifestBytes.toString()) as Manifest;
    expect(manifest.mediaType).to.equal(MEDIA_TYPES.manifest);
    expect(manifest.config.digest).to.equal(written.configDigest);

    const configBytes = blobOf(files, manifest.config.digest);
    expect(sha256(configBytes)).to.equal(manifest.config.digest);
    expect(configBytes.length).to.equal(manifest.config.size);
    const config = JSON.parse(configBytes.toString()) as Config;
    expect(config.config).to.deep.equal(spec().config);
    expect(config.history.map((h) => h.created_by)).to.deep.equal(['base', 'app']);
    expect(manifest.layers).to.have.length(2);

    manifest.layers.forEach((layer, i) => {
      expect(layer.mediaType).to.equal(MEDIA_TYPES.layerGzip);
      const data = blobOf(files, layer.digest);
      expect(sha256(data), `layer ${i} digest`).to.equal(layer.digest);
      expect(data.length, `layer ${i} size`).to.equal(layer.size);
      expect(sha256(gunzipSync(data)), `layer ${i} diff id`).to.equal(config.rootfs.diff_ids[i]);
    });
    // Every blob the archive holds is named by the manifest: nothing dangling, nothing missing.
    const blobs = [...files.keys()].filter((p) => p.startsWith('blobs/')).sort();
    const named = [top.digest, manifest.config.digest, ...manifest.layers.map((l) => l.digest)].map((d) => `blobs/sha256/${d.slice(7)}`).sort();
    expect(blobs).to.deep.equal(named);
  });

  it('layers hold the entries with their modes, owners, link targets and long paths', async () => {
    const out = join(dir, 'entries.tar');
    await writeOciArchive(spec(), out);
    const files = unpack(out);
    const manifest = JSON.parse(
      blobOf(files, (JSON.parse(files.get('index.json')?.toString() ?? '') as Index).manifests[0]?.digest ?? '').toString(),
    ) as Manifest;
    const [base, app] = manifest.layers.map((l) => readTar(gunzipSync(blobOf(files, l.digest))));
    const byPath = new Map((base ?? []).map((m) => [m.path, m]));
    expect(byPath.get('tmp')).to.include({ type: 'dir', mode: 0o1777 });
    expect(byPath.get('lib64')).to.include({ type: 'symlink', target: 'usr/lib64' });
    const deep = `usr/share/${'long-directory-name/'.repeat(12)}file.txt`;
    expect(byPath.get(deep)).to.include({ type: 'file', mode: 0o644 });
    // Parents the spec left out are there, so every tool unpacks the layer the same way.
    expect(byPath.get('usr')).to.include({ type: 'dir', mode: 0o755, uid: 0 });
    expect((base ?? []).map((m) => m.path)).to.deep.equal([...(base ?? []).map((m) => m.path)].sort());
    expect((base ?? []).every((m) => m.mtime === Date.parse('2026-12-01T00:00:00Z') / 1000)).to.equal(true);
    const main = (app ?? []).find((m) => m.path === 'app/operator/main.js');
    expect(main).to.include({ uid: 65532, gid: 65532 });
    expect(main?.type === 'file' ? main.content.toString() : '').to.equal('console.log(1)\n');
  });

  it('is reproducible: one spec, the same bytes, whatever the entry order', async () => {
    const a = join(dir, 'a.tar');
    const b = join(dir, 'b.tar');
    const first = await writeOciArchive(spec(), a);
    const shuffled = spec();
    shuffled.layers = shuffled.layers.map((l) => [...l].reverse());
    const second = await writeOciArchive(shuffled, b);
    expect(second).to.deep.equal(first);
    expect(readFileSync(b).equals(readFileSync(a))).to.equal(true);
  });

  it('a changed file changes the layer, the config and the manifest digest', async () => {
    const changed = spec();
    changed.layers[1] = [{ type: 'file', path: '/app/operator/main.js', mode: 0o644, content: Buffer.from('console.log(2)\n') }];
    const before = await writeOciArchive(spec(), join(dir, 'before.tar'));
    const after = await writeOciArchive(changed, join(dir, 'after.tar'));
    expect(after.layers[0]).to.deep.equal(before.layers[0]);
    expect(after.layers[1]?.diffId).to.not.equal(before.layers[1]?.diffId);
    expect(after.manifestDigest).to.not.equal(before.manifestDigest);
  });

  const invalid: Record<string, ImageSpec> = {
    'a path that leaves the root': { ...spec(), layers: [[{ type: 'file', path: '/etc/../../x', mode: 0o644, content: Buffer.alloc(0) }]] },
    'one path twice in a layer': {
      ...spec(),
      layers: [
        [
          { type: 'dir', path: '/etc', mode: 0o755 },
          { type: 'dir', path: 'etc/', mode: 0o700 },
        ],
      ],
    },
    'an entry below a file': {
      ...spec(),
      layers: [
        [
          { type: 'file', path: '/a', mode: 0o644, content: Buffer.alloc(0) },
          { type: 'file', path: '/a/b', mode: 0o644, content: Buffer.alloc(0) },
        ],
      ],
    },
    'a reference with upper case': { ...spec(), ref: 'BucketOperator:0.1.0' },
    'history of the wrong length': { ...spec(), history: ['one'] },
  };
  for (const [name, bad] of Object.entries(invalid)) {
    it(`refuses ${name}`, async () => {
      const out = join(dir, 'refused.tar');
      let error: unknown;
      await writeOciArchive(bad, out).catch((e: unknown) => (error = e));
      expect(error).to.be.instanceOf(Error);
    });
  }
});

describe('scripts/oci/archive: references and layer members', () => {
  const refs: Record<string, { ref: string; want: string; tag: string }> = {
    'short name with tag': { ref: 'bucketoperator:0.1.0', want: 'docker.io/library/bucketoperator:0.1.0', tag: '0.1.0' },
    'no tag means latest': { ref: 'bucketoperator', want: 'docker.io/library/bucketoperator:latest', tag: 'latest' },
    'organisation on Docker Hub': { ref: 'acme/bucketoperator:1', want: 'docker.io/acme/bucketoperator:1', tag: '1' },
    'registry with port': { ref: 'localhost:5000/bucketoperator:1', want: 'localhost:5000/bucketoperator:1', tag: '1' },
    'registry domain': { ref: 'ghcr.io/acme/op:2.0', want: 'ghcr.io/acme/op:2.0', tag: '2.0' },
  };
  for (const [name, tc] of Object.entries(refs)) {
    it(name, () => {
      expect(normalizeRef(tc.ref)).to.equal(tc.want);
      expect(refTag(normalizeRef(tc.ref))).to.equal(tc.tag);
    });
  }

  it('layer members come sorted, parents first, with missing parents added', () => {
    const members = layerMembers([
      { type: 'file', path: 'a/b/c', mode: 0o600, content: Buffer.from('x') },
      { type: 'file', path: 'a.b', mode: 0o644, content: Buffer.from('y') },
    ]);
    expect(members.map((m) => `${m.type}:${m.path}`)).to.deep.equal(['dir:a', 'file:a.b', 'dir:a/b', 'file:a/b/c']);
  });
});
