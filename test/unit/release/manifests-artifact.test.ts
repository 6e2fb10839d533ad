/** scripts/release/manifests-artifact.ts: dist/ as an OCI artifact, one layer per folder, read back and checked. */
import { expect } from 'chai';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeTar } from '../../../scripts/oci/tar';
import {
  compareTrees,
  EMPTY_CONFIG,
  folderOf,
  MANIFESTS_ARTIFACT_TYPE,
  MANIFESTS_LAYER_TYPE,
  manifestsArtifact,
  readDist,
  readManifestsArtifact,
  TITLE_ANNOTATION,
  writeArtifactLayout,
  type ManifestFile,
} from '../../../scripts/release/manifests-artifact';

const REPO = join(__dirname, '..', '..', '..');
const file = (path: string, text: string): ManifestFile => ({ path, content: Buffer.from(text) });
const FILES = [file('00-crds.yaml', 'crds'), file('Kustomization', 'k'), file('v2/00-crds.yaml', 'v2 crds'), file('monitoring/grafana/x.json', '{}')];
const ANNOTATIONS = { 'org.opencontainers.image.version': '1.2.3' };

const sha256 = (b: Buffer) => `sha256:${createHash('sha256').update(b).digest('hex')}`;

describe('release: the manifests artifact', () => {
  it('has our artifactType, the empty config and one titled tar layer per folder', () => {
    const a = manifestsArtifact(FILES, ANNOTATIONS);
    const m = JSON.parse(a.manifest.toString()) as Record<string, unknown> & { layers: { mediaType: string; annotations: Record<string, string> }[] };
    expect(m['artifactType']).to.equal(MANIFESTS_ARTIFACT_TYPE);
    expect(m['mediaType']).to.equal('application/vnd.oci.image.manifest.v1+json');
    expect(m['config']).to.deep.equal(EMPTY_CONFIG);
    expect(sha256(a.blobs.get(EMPTY_CONFIG.digest) ?? Buffer.alloc(0))).to.equal(EMPTY_CONFIG.digest);
    expect(m['annotations']).to.deep.equal(ANNOTATIONS);
    expect(m.layers.map((l) => [l.mediaType, l.annotations[TITLE_ANNOTATION]])).to.deep.equal([
      [MANIFESTS_LAYER_TYPE, 'dist'],
      [MANIFESTS_LAYER_TYPE, 'dist/monitoring'],
      [MANIFESTS_LAYER_TYPE, 'dist/v2'],
    ]);
    expect(a.layers.map((l) => l.paths)).to.deep.equal([['00-crds.yaml', 'Kustomization'], ['monitoring/grafana/x.json'], ['v2/00-crds.yaml']]);
    expect(a.digest).to.equal(sha256(a.manifest));
  });

  it('is reproducible: the same files give the same digest whatever their order; a changed byte changes it', () => {
    const a = manifestsArtifact(FILES, ANNOTATIONS);
    expect(manifestsArtifact([...FILES].reverse(), ANNOTATIONS).digest).to.equal(a.digest);
    expect(manifestsArtifact([...FILES.slice(1), file('00-crds.yaml', 'crdS')], ANNOTATIONS).digest).to.not.equal(a.digest);
  });

  it('reads back to the same files, paths relative to dist/', () => {
    const a = manifestsArtifact(FILES, ANNOTATIONS);
    const back = readManifestsArtifact(a.manifest, (d) => a.blobs.get(d) ?? Buffer.alloc(0));
    expect(compareTrees(FILES, back)).to.deep.equal([]);
    expect(back.map((f) => f.path)).to.deep.equal(['00-crds.yaml', 'Kustomization', 'monitoring/grafana/x.json', 'v2/00-crds.yaml']);
  });

  describe('refuses to read', () => {
    const a = manifestsArtifact(FILES, ANNOTATIONS);
    const manifest = JSON.parse(a.manifest.toString()) as { artifactType: string; layers: { mediaType: string; digest: string; size: number }[] };
    const evil = writeTar([{ type: 'file', path: 'v2/../../etc/x', mode: 0o644, uid: 0, gid: 0, content: Buffer.from('x') }], 0);
    const cases: Record<string, { manifest: unknown; blob?: (d: string) => Buffer; want: RegExp }> = {
      'another artifact type': { manifest: { ...manifest, artifactType: 'application/x' }, want: /type is application\/x/ },
      'a layer of another media type': {
        manifest: {
          ...manifest,
          layers: manifest.layers.map((l, i) => (i === 0 ? { ...l, mediaType: 'application/vnd.oci.image.layer.v1.tar+gzip' } : l)),
        },
        want: /layer dist is a application\/vnd\.oci\.image\.layer/,
      },
      'a blob that is not the one named': {
        manifest,
        blob: (d) => (d === manifest.layers[1]?.digest ? Buffer.from('tampered') : (a.blobs.get(d) ?? Buffer.alloc(0))),
        want: /layer dist\/monitoring: the blob is sha256:/,
      },
      'a path that leaves dist/': {
        manifest: { ...manifest, layers: [{ mediaType: MANIFESTS_LAYER_TYPE, digest: sha256(evil), size: evil.length }] },
        blob: () => evil,
        want: /not a clean path/,
      },
      'a file in two layers': {
        manifest: { ...manifest, layers: [manifest.layers[0], manifest.layers[0]] },
        want: /00-crds\.yaml is in two layers/,
      },
    };
    for (const [name, tc] of Object.entries(cases)) {
      it(name, () =>
        expect(() => readManifestsArtifact(Buffer.from(JSON.stringify(tc.manifest)), tc.blob ?? ((d) => a.blobs.get(d) ?? Buffer.alloc(0)))).to.throw(
          tc.want,
        ),
      );
    }
  });

  it('names every difference between two trees', () => {
    expect(compareTrees(FILES, [file('00-crds.yaml', 'other'), file('Kustomization', 'k'), file('new.yaml', 'n')])).to.deep.equal([
      'added: new.yaml',
      'changed: 00-crds.yaml',
      'missing: monitoring/grafana/x.json',
      'missing: v2/00-crds.yaml',
    ]);
  });

  it('puts top-level files in the dist layer and the rest in their first folder', () => {
    expect(folderOf('04-manager.yaml')).to.equal('dist');
    expect(folderOf('v2-stored/Kustomization')).to.equal('dist/v2-stored');
    expect(folderOf('monitoring/prometheus/rules.yaml')).to.equal('dist/monitoring');
  });

  it("writes an OCI layout of this repository's dist/ whose index names the manifest", () => {
    const files = readDist(join(REPO, 'dist'));
    expect(files.map((f) => f.path)).to.include.members(['00-crds.yaml', 'v2/04-manager.yaml', 'v2-stored/05-storage-migration.yaml']);
    const a = manifestsArtifact(files, ANNOTATIONS);
    const dir = mkdtempSync(join(tmpdir(), 'manifests-layout-'));
    try {
      writeArtifactLayout(a, dir, '1.2.3');
      const index = JSON.parse(readFileSync(join(dir, 'index.json'), 'utf8')) as { manifests: { digest: string; artifactType: string }[] };
      expect(index.manifests).to.have.length(1);
      expect(index.manifests[0]).to.include({ digest: a.digest, artifactType: MANIFESTS_ARTIFACT_TYPE });
      const stored = readFileSync(join(dir, 'blobs', 'sha256', a.digest.slice('sha256:'.length)));
      expect(sha256(stored)).to.equal(a.digest);
      for (const [digest] of a.blobs) expect(sha256(readFileSync(join(dir, 'blobs', 'sha256', digest.slice(7))))).to.equal(digest);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
