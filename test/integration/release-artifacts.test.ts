/**
 * Release artifacts an intake review accepts (issue 35, item 5): the real release step
 * (`tsx scripts/release-artifacts.ts`) takes the image `npm run build:oci` built, pushes it and dist/
 * to a registry on loopback (crane registry serve), writes the SBOMs and the provenance, and signs
 * all of it with a throwaway project key (cosign, no transparency log). Then the verify command
 * checks every signature, attestation and provenance subject with the public key alone, and
 * fails on each tampering an attacker could try: a changed SBOM byte, a changed manifest pushed
 * under the release's tag, the image tag moved to another digest, and signatures by another key.
 *
 * Offline: every tool runs with HTTP(S)_PROXY pointing at a closed loopback port, so any request
 * to a host other than the loopback registry (Rekor, Fulcio, Sigstore's TUF repository) fails.
 * cosign v2 does try to refresh Sigstore's TUF trust root before each verification; it warns and
 * goes on, and keyed verification never needs it, which is what these tests show.
 */
import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { signArgs, signBlobArgs } from '../../scripts/release/cosign-commands';
import { compareTrees, manifestsArtifact, readDist, writeArtifactLayout } from '../../scripts/release/manifests-artifact';
import { startRegistry, type LocalRegistry } from '../../scripts/release/registry';
import { byTag, RELEASE_FILES, type ReleaseList } from '../../scripts/release/release-list';
import { releaseTools, runTool, type ReleaseTools } from '../../scripts/release/tools';
import { verifyRelease } from '../../scripts/release/verify';

const run = promisify(execFile);
const REPO = join(__dirname, '..', '..');
const TSX = join(REPO, 'node_modules', '.bin', 'tsx');
const PASSWORD = 'release-test-password';

interface Bom {
  metadata: { component: { purl: string } };
  components: { purl?: string; name: string; components?: { purl?: string }[] }[];
}

describe('release artifacts: SBOMs, signatures and provenance, verified offline', function () {
  this.timeout(600_000);
  let tools: ReleaseTools;
  let registry: LocalRegistry;
  let work: string;
  let out: string;
  let env: NodeJS.ProcessEnv;
  let list: ReleaseList;
  const key = (name: string) => join(work, `${name}.key`);
  const pub = (name: string) => join(work, `${name}.pub`);
  const artifact = (role: 'image' | 'manifests') => {
    const a = list.artifacts.find((x) => x.role === role);
    if (!a) throw new Error(`release.json lists no ${role}`);
    return a;
  };
  const verify = (dir: string, publicKey = pub('project')) =>
    verifyRelease({ repo: REPO, dir, key: publicKey, tools, env, dist: join(REPO, 'dist') });
  const expectProblems = (problems: readonly string[], wants: RegExp[]) => {
    for (const want of wants)
      expect(
        problems.some((p) => want.test(p)),
        `${want} in:\n${problems.join('\n')}`,
      ).to.equal(true);
  };

  before(async () => {
    tools = releaseTools(REPO);
    work = mkdtempSync(join(tmpdir(), 'release-artifacts-'));
    out = join(work, 'release');
    // A proxy nobody listens on: Go sends every request but loopback ones through it, so any
    // attempt to reach a Sigstore service fails instead of quietly succeeding.
    env = {
      ...process.env,
      COSIGN_PASSWORD: PASSWORD,
      HTTPS_PROXY: 'http://127.0.0.1:9',
      HTTP_PROXY: 'http://127.0.0.1:9',
      NO_PROXY: '',
      TUF_ROOT: join(work, 'tuf'),
      DOCKER_CONFIG: join(work, 'docker'),
    };
    // The image is built (or found in its cache) first, with the machine's own network settings:
    // a cold build fetches .debs from Debian's mirror, which is no part of the release step.
    const oci = await run('npm', ['run', '--silent', 'build:oci'], { cwd: REPO, maxBuffer: 64 << 20 });
    const archive = oci.stdout.trim().split('\n').at(-1) ?? '';
    expect(archive).to.match(/\.tar$/);
    registry = await startRegistry(tools.crane);
    for (const name of ['project', 'intruder']) {
      await runTool(tools.cosign, ['generate-key-pair', '--output-key-prefix', join(work, name)], { env });
    }
    await run(
      TSX,
      [
        'scripts/release-artifacts.ts',
        '--out',
        out,
        '--key',
        key('project'),
        '--registry',
        registry.host,
        '--source',
        `file://${REPO}`,
        '--allow-dirty',
        '--image-archive',
        archive,
      ],
      { cwd: REPO, env, maxBuffer: 64 << 20 },
    );
    list = JSON.parse(readFileSync(join(out, RELEASE_FILES.list), 'utf8')) as ReleaseList;
  });

  after(async () => {
    await registry?.stop();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('writes both SBOMs with purls, the provenance naming everything published, and a signature for each file', () => {
    const npm = JSON.parse(readFileSync(join(out, RELEASE_FILES.npmSbom), 'utf8')) as Bom;
    expect(npm.components.map((c) => c.purl)).to.include.members([
      'pkg:npm/yaml@2.9.1',
      'pkg:npm/pino@10.4.0',
      'pkg:npm/%40sinclair/typebox@0.34.52',
    ]);
    const image = JSON.parse(readFileSync(join(out, RELEASE_FILES.imageSbom), 'utf8')) as Bom;
    expect(image.metadata.component.purl).to.equal(
      `pkg:oci/bucketoperator@${encodeURIComponent(artifact('image').digest)}?arch=amd64&tag=${list.version}`,
    );
    const purls = image.components.map((c) => c.purl ?? '');
    expect(purls.filter((p) => p.startsWith('pkg:deb/debian/libc6@'))).to.have.length(1);
    expect(purls).to.include('pkg:generic/node@26.12.1');
    const app = image.components.find((c) => c.name === 'bucketoperator');
    expect(app?.components?.map((c) => c.purl)).to.include('pkg:npm/pino@10.4.0');

    const provenance = JSON.parse(readFileSync(join(out, RELEASE_FILES.provenance), 'utf8')) as { subject: { name: string }[] };
    expect(provenance.subject.map((s) => s.name)).to.deep.equal([
      `${registry.host}/bucketoperator`,
      `${registry.host}/bucketoperator-manifests`,
      RELEASE_FILES.npmSbom,
      RELEASE_FILES.imageSbom,
    ]);
    expect(list.files.map((f) => f.signature)).to.deep.equal([
      `${RELEASE_FILES.npmSbom}.sig`,
      `${RELEASE_FILES.imageSbom}.sig`,
      `${RELEASE_FILES.provenance}.sig`,
    ]);
  });

  it('verifies with the public key alone (the verify command), and unpacks the manifests, equal to dist/', async () => {
    const extracted = join(work, 'extracted');
    const { stdout } = await run(
      TSX,
      ['scripts/release-artifacts.ts', 'verify', out, '--key', pub('project'), '--version', list.version, '--dist', 'dist', '--extract', extracted],
      { cwd: REPO, env },
    );
    expect(stdout).to.match(/^VERIFIED: /m);
    expect(stdout).to.include(`image: ${byTag(artifact('image'))} -> ${artifact('image').digest}`);
    expect(compareTrees(readDist(join(REPO, 'dist')), readDist(extracted))).to.deep.equal([]);
  });

  it("docs/operate/verify-a-release.md's by-hand commands verify the release as written", async () => {
    const doc = readFileSync(join(REPO, 'docs', 'operate', 'verify-a-release.md'), 'utf8');
    const section = doc.slice(doc.indexOf('## Verify by hand with cosign'), doc.indexOf('## Copying a release'));
    const blocks = [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1] ?? '');
    // The first block names the registry and version; the test sets them instead.
    expect(blocks[0]).to.match(/^IMAGE=<registry>\/bucketoperator$/m);
    const dir = join(work, 'by-hand');
    cpSync(out, dir, { recursive: true });
    cpSync(pub('project'), join(dir, 'cosign.pub'));
    const script = [
      'set -euo pipefail',
      `IMAGE=${artifact('image').repository}`,
      `MANIFESTS=${artifact('manifests').repository}`,
      `VERSION=${list.version}`,
      ...blocks.slice(1),
    ].join('\n');
    const path = `${join(tools.cosign, '..')}:${join(tools.crane, '..')}:${process.env['PATH'] ?? ''}`;
    const { stdout } = await run('bash', ['-c', script], { cwd: dir, env: { ...env, PATH: path }, maxBuffer: 64 << 20 });
    expect(stdout).to.include('tags match');
    expect(stdout).to.include('same SBOM');
    expect(compareTrees(readDist(join(REPO, 'dist')), readDist(join(dir, 'manifests')))).to.deep.equal([]);
  });

  it('fails when one byte of an SBOM changed', async () => {
    const dir = join(work, 'changed-sbom');
    cpSync(out, dir, { recursive: true });
    const path = join(dir, RELEASE_FILES.imageSbom);
    const bytes = readFileSync(path);
    const at = bytes.indexOf('pkg:deb/debian/libc6@') + 'pkg:deb/debian/libc6@'.length;
    bytes.writeUInt8(bytes.readUInt8(at) ^ 1, at);
    writeFileSync(path, bytes);
    const { problems } = await verify(dir);
    expectProblems(problems, [
      /^sbom-image\.cdx\.json: the signature does not verify with the key/,
      /^sbom-image\.cdx\.json: its sha256 is [0-9a-f]{64}, the provenance names [0-9a-f]{64}$/,
      // The attestation on the image holds the signed SBOM, which is no longer this file.
      /bucketoperator:\S+: the cyclonedx attestation holds no statement about sha256:[0-9a-f]{64} whose predicate is sbom-image\.cdx\.json's/,
    ]);
  });

  it('fails when every signature is checked against another key (the verify command exits 1)', async () => {
    const cli = await run(TSX, ['scripts/release-artifacts.ts', 'verify', out, '--key', pub('intruder')], { cwd: REPO, env }).then(
      () => ({ code: 0, stdout: '' }),
      (err: { code: number; stdout: string }) => err,
    );
    expect(cli.code).to.equal(1);
    expect(cli.stdout).to.match(/^NOT VERIFIED: \d+ problem\(s\)$/m);
    const problems = cli.stdout
      .split('\n')
      .filter((l) => l.startsWith('  - '))
      .map((l) => l.slice(4));
    expectProblems(problems, [
      /^provenance\.intoto\.json: the signature does not verify with the key/,
      /^sbom-npm\.cdx\.json: the signature does not verify/,
      /^sbom-image\.cdx\.json: the signature does not verify/,
      /bucketoperator:\S+: the signature of sha256:\S+ does not verify/,
      /bucketoperator-manifests:\S+: the signature of sha256:\S+ does not verify/,
      /bucketoperator:\S+: the cyclonedx attestation does not verify/,
      /bucketoperator:\S+: the slsaprovenance1 attestation does not verify/,
      /bucketoperator-manifests:\S+: the slsaprovenance1 attestation does not verify/,
    ]);
  });

  it('fails when the provenance is changed and signed again with another key', async () => {
    const dir = join(work, 'forged-provenance');
    cpSync(out, dir, { recursive: true });
    // The intruder names their own SBOM digest and signs the statement with their key.
    const path = join(dir, RELEASE_FILES.provenance);
    const forged = readFileSync(path, 'utf8').replace(
      /"sha256": "[0-9a-f]{64}"(\s*}\s*}\s*\]\s*,\s*"predicateType")/,
      `"sha256": "${'0'.repeat(64)}"$1`,
    );
    expect(forged).to.not.equal(readFileSync(path, 'utf8'));
    writeFileSync(path, forged);
    await runTool(tools.cosign, signBlobArgs(key('intruder'), path, `${path}.sig`), { env });
    const { problems } = await verify(dir);
    expectProblems(problems, [
      /^provenance\.intoto\.json: the signature does not verify with the key/,
      /^sbom-image\.cdx\.json: its sha256 is \S+, the provenance names 0{64}$/,
    ]);
  });

  it('fails when a changed manifest is pushed under the release tag, even signed by another key', async () => {
    const manifests = artifact('manifests');
    const files = readDist(join(REPO, 'dist')).map((f) =>
      f.path === 'v2/04-manager.yaml' ? { ...f, content: Buffer.from(f.content.toString('utf8').replace(/replicas: \d+/, 'replicas: 9')) } : f,
    );
    const tampered = manifestsArtifact(files, { 'org.opencontainers.image.version': list.version });
    const layout = join(work, 'tampered-manifests');
    writeArtifactLayout(tampered, layout, manifests.tag);
    await runTool(tools.crane, ['push', layout, byTag(manifests)], { env });
    try {
      await runTool(tools.cosign, signArgs(key('intruder'), `${manifests.repository}@${tampered.digest}`), { env });
      const { problems } = await verify(out);
      expectProblems(problems, [
        new RegExp(`bucketoperator-manifests:${list.version}: resolves to ${tampered.digest}, the provenance names ${manifests.digest}$`),
        /bucketoperator-manifests:\S+: the signature of sha256:\S+ does not verify with the key/,
        /bucketoperator-manifests:\S+: the slsaprovenance1 attestation does not verify/,
        /^the manifests artifact differs from the local dist\/: changed: v2\/04-manager\.yaml$/,
      ]);
    } finally {
      await runTool(tools.crane, ['tag', `${manifests.repository}@${manifests.digest}`, manifests.tag], { env });
    }
    expect((await runTool(tools.crane, ['digest', byTag(manifests)], { env })).stdout.trim()).to.equal(manifests.digest);
  });

  it('fails when the image tag is moved to another digest, even one signed by another key', async () => {
    const image = artifact('image');
    // The same image with one label more: other bytes, so another digest, under the same tag.
    const { stdout } = await runTool(tools.crane, ['mutate', byTag(image), '--label', 'tampered=true', '--tag', byTag(image)], { env });
    const moved = stdout.trim().split('@').at(-1) ?? '';
    expect(moved)
      .to.match(/^sha256:[0-9a-f]{64}$/)
      .and.not.equal(image.digest);
    try {
      await runTool(tools.cosign, signArgs(key('intruder'), `${image.repository}@${moved}`), { env });
      const { problems } = await verify(out);
      expectProblems(problems, [
        new RegExp(`bucketoperator:${list.version}: resolves to ${moved}, the provenance names ${image.digest}$`),
        new RegExp(`bucketoperator:${list.version}: the signature of ${moved} does not verify with the key`),
        /bucketoperator:\S+: the cyclonedx attestation does not verify/,
        /bucketoperator:\S+: the slsaprovenance1 attestation does not verify/,
      ]);
    } finally {
      await runTool(tools.crane, ['tag', `${image.repository}@${image.digest}`, image.tag], { env });
    }
    expect((await runTool(tools.crane, ['digest', byTag(image)], { env })).stdout.trim()).to.equal(image.digest);
  });

  it('verifies a copy pushed to another repository (a mirror) by its own reference', async () => {
    const image = artifact('image');
    const mirror = `${registry.host}/mirror/team/bucketoperator:${list.version}`;
    await runTool(tools.crane, ['copy', `${image.repository}@${image.digest}`, mirror], { env });
    // cosign keeps signatures in the image's repository: a mirror copies them too (cosign copy).
    await runTool(
      tools.cosign,
      ['copy', '--force', `${image.repository}@${image.digest}`, `${registry.host}/mirror/team/bucketoperator@${image.digest}`],
      { env },
    );
    const result = await verifyRelease({ repo: REPO, dir: out, key: pub('project'), tools, env, refs: { image: mirror } });
    expect(result.problems).to.deep.equal([]);
    expect(result.checked.find((c) => c.role === 'image')).to.deep.equal({ role: 'image', ref: mirror, digest: image.digest });
  });
});
