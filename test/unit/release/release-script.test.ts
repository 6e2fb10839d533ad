/** scripts/release.ts's pure parts: the CHANGELOG's sections, the upgrade notes, the version places. */
import { expect } from 'chai';
import {
  compareVersions,
  cutRelease,
  imageTag,
  newestVersion,
  operatorImages,
  parseChangelog,
  renderChangelog,
  upgradeNotes,
  VERSION_PLACES,
} from '../../../scripts/release';

const CHANGELOG = `# Changelog

## Unreleased

### Upgrade notes

- Re-apply \`dist/\`:

  \`\`\`sh
  kubectl apply -f dist/00-crds.yaml
  kubectl apply -f dist/
  \`\`\`

### Fixed

- A fix; a code block's heading-like line stays in it:

\`\`\`sh
## not a heading
\`\`\`

## 0.1.0 - 2026-12-03

The first version.
`;

describe('release script', () => {
  describe('compareVersions', () => {
    const cases: Record<string, { a: string; b: string; want: number }> = {
      'patch older': { a: '0.1.0', b: '0.1.1', want: -1 },
      'minor by number, not text': { a: '0.10.0', b: '0.9.0', want: 1 },
      equal: { a: '1.2.3', b: '1.2.3', want: 0 },
    };
    for (const [name, tc] of Object.entries(cases)) it(name, () => expect(Math.sign(compareVersions(tc.a, tc.b))).to.equal(tc.want));
    it('refuses what is not X.Y.Z', () => expect(() => compareVersions('v1', '1.0.0')).to.throw(/X\.Y\.Z/));
  });

  describe('the CHANGELOG', () => {
    it('splits at ## headings outside code blocks and renders back unchanged', () => {
      const c = parseChangelog(CHANGELOG);
      expect(c.sections.map((s) => [s.title, s.version, s.date])).to.deep.equal([
        ['Unreleased', undefined, undefined],
        ['0.1.0 - 2026-12-03', '0.1.0', '2026-12-03'],
      ]);
      expect(newestVersion(c)).to.equal('0.1.0');
      expect(renderChangelog(c)).to.equal(CHANGELOG);
    });

    it('releases Unreleased as a dated version under a new empty Unreleased', () => {
      const out = parseChangelog(cutRelease(CHANGELOG, '0.2.0', '2026-12-04'));
      expect(out.sections.map((s) => s.title)).to.deep.equal(['Unreleased', '0.2.0 - 2026-12-04', '0.1.0 - 2026-12-03']);
      expect(out.sections[0]?.body).to.equal('');
      expect(out.sections[1]?.body).to.equal(parseChangelog(CHANGELOG).sections[0]?.body);
    });

    const refusals: Record<string, { text: string; version: string; date: string; want: RegExp }> = {
      'a version not newer than the newest': { text: CHANGELOG, version: '0.1.0', date: '2026-12-04', want: /not newer than 0\.1\.0/ },
      'an empty Unreleased section': { text: '# C\n\n## Unreleased\n\n## 0.1.0\n\nx\n', version: '0.2.0', date: '2026-12-04', want: /empty/ },
      'no upgrade notes': { text: '# C\n\n## Unreleased\n\n### Fixed\n\n- x\n', version: '0.2.0', date: '2026-12-04', want: /Upgrade notes/ },
      'no Unreleased section': { text: '# C\n\n## 0.1.0\n\nx\n', version: '0.2.0', date: '2026-12-04', want: /no "## Unreleased"/ },
      'a date in another form': { text: CHANGELOG, version: '0.2.0', date: '4 Dec 2026', want: /YYYY-MM-DD/ },
    };
    for (const [name, tc] of Object.entries(refusals)) {
      it(`refuses ${name}`, () => expect(() => cutRelease(tc.text, tc.version, tc.date)).to.throw(tc.want));
    }

    it("reads a version's upgrade notes and their shell blocks, unindented", () => {
      const notes = upgradeNotes(cutRelease(CHANGELOG, '0.2.0', '2026-12-04'), '0.2.0');
      expect(notes.shellBlocks).to.deep.equal(['kubectl apply -f dist/00-crds.yaml\nkubectl apply -f dist/']);
      expect(notes.text).not.to.include('A fix');
      expect(() => upgradeNotes(CHANGELOG, '0.1.0')).to.throw(/no "### Upgrade notes"/);
      expect(() => upgradeNotes(CHANGELOG, '9.9.9')).to.throw(/no section for 9\.9\.9/);
    });
  });

  describe('images', () => {
    const yaml = [
      'kind: Deployment',
      'spec: { template: { spec: { containers: [{ image: "ghcr.io/o/bucketoperator:1.2.3" }, { image: "busybox:1" }], initContainers: [{ image: bucketoperator:1.2.3 }] } } }',
      '---',
      'kind: Pod',
      'spec: { containers: [{ image: "registry:5000/team/bucketoperator@sha256:abc" }, { image: "my-bucketoperator:9" }] }',
    ].join('\n');
    it("finds every operator image, whatever the registry, and only the operator's", () => {
      expect(operatorImages(yaml)).to.deep.equal([
        'ghcr.io/o/bucketoperator:1.2.3',
        'bucketoperator:1.2.3',
        'registry:5000/team/bucketoperator@sha256:abc',
      ]);
    });
    const tags: Record<string, { ref: string; want: string }> = {
      'a tag': { ref: 'bucketoperator:1.2.3', want: '1.2.3' },
      'a registry port is not a tag': { ref: 'registry:5000/bucketoperator', want: '' },
      'a digest only': { ref: 'registry:5000/bucketoperator@sha256:abc', want: '' },
    };
    for (const [name, tc] of Object.entries(tags)) it(`imageTag: ${name}`, () => expect(imageTag(tc.ref)).to.equal(tc.want));
  });

  describe('version places', () => {
    const samples: Record<string, string> = {
      'package.json': '{\n  "name": "bucketoperator",\n  "version": "0.1.0",\n  "dependencies": {\n    "x": { "version": "9" }\n  }\n}\n',
      'package-lock.json':
        '{\n  "name": "bucketoperator",\n  "version": "0.1.0",\n  "packages": {\n    "": {\n      "name": "bucketoperator",\n      "version": "0.1.0"\n    },\n    "node_modules/x": {\n      "version": "0.1.0"\n    }\n  }\n}\n',
      'infra/version.ts': "/** doc */\nexport const VERSION = '0.1.0';\n",
      'examples/ci/package.json': '{\n  "dependencies": {\n    "bucketoperator": "0.1.0",\n    "cdk8s": "2.70.106"\n  }\n}\n',
      'examples/ci/README.md': 'vendor/bucketoperator-0.1.0.tgz and IMAGE=ghcr.io/o/bucketoperator:0.1.0, not bucketoperator-x\n',
    };
    for (const place of VERSION_PLACES.filter((p) => p.write)) {
      const file = place.paths[0] ?? '';
      it(`${file}: writes the version where it is read, and nothing else`, () => {
        const before = samples[file];
        if (before === undefined) throw new Error(`no sample for ${file}`);
        expect(place.read(before).every((v) => v === '0.1.0')).to.equal(true);
        const after = place.write?.(before, '0.2.0') ?? '';
        expect(place.read(after)).to.have.length.greaterThan(0);
        expect(place.read(after).every((v) => v === '0.2.0')).to.equal(true);
        expect(after.replaceAll('0.2.0', '0.1.0')).to.equal(before);
      });
    }
    it("the lockfile keeps its packages' versions", () => {
      const lock = VERSION_PLACES.find((p) => p.paths.includes('package-lock.json'));
      const out = lock?.write?.(samples['package-lock.json'] ?? '', '0.2.0') ?? '';
      expect((JSON.parse(out) as { packages: Record<string, { version: string }> }).packages['node_modules/x']?.version).to.equal('0.1.0');
    });
  });
});
