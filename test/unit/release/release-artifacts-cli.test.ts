/**
 * The small pure parts around the release step: the artifact list, the cosign command lines (and
 * docs/operate/verify-a-release.md showing exactly those), the tools' pin file, the registry's
 * port line and the attestations in cosign's output.
 */
import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  attestArgs,
  PLACEHOLDERS,
  signArgs,
  signBlobArgs,
  verifyArgs,
  verifyAttestationArgs,
  verifyBlobArgs,
  verifyCommandLines,
} from '../../../scripts/release/cosign-commands';
import { servingPort } from '../../../scripts/release/registry';
import {
  ATTESTATIONS,
  byDigest,
  byTag,
  RELEASE_FILES,
  releaseList,
  repositoryFor,
  repositoryOf,
  signatureFile,
} from '../../../scripts/release/release-list';
import { parseEnvFile, pinnedToolVersions } from '../../../scripts/release/tools';
import { attestationStatements } from '../../../scripts/release/verify';

const REPO = join(__dirname, '..', '..', '..');
const DOC = readFileSync(join(REPO, 'docs', 'operate', 'verify-a-release.md'), 'utf8');

describe('release: the artifact list and the commands around it', () => {
  it('lists what was published, with a signature file beside each file and every attestation', () => {
    const list = releaseList(
      '1.2.3',
      'abc',
      [{ role: 'image', repository: 'r/bucketoperator', tag: '1.2.3', digest: 'sha256:00' }],
      [{ name: 'a.json', sha256: '11' }],
    );
    expect(list).to.deep.equal({
      version: '1.2.3',
      commit: 'abc',
      artifacts: [{ role: 'image', repository: 'r/bucketoperator', tag: '1.2.3', digest: 'sha256:00' }],
      files: [{ name: 'a.json', sha256: '11', signature: 'a.json.sig' }],
      attestations: ATTESTATIONS,
    });
    expect(ATTESTATIONS.map((a) => `${a.role} ${a.type} ${a.predicateFrom}`)).to.deep.equal([
      `image cyclonedx ${RELEASE_FILES.imageSbom}`,
      `image slsaprovenance1 ${RELEASE_FILES.provenance}`,
      `manifests slsaprovenance1 ${RELEASE_FILES.provenance}`,
    ]);
  });

  const refs: Record<string, { got: string; want: string }> = {
    'a repository under a registry with a port': { got: repositoryFor('127.0.0.1:5000', 'image'), want: '127.0.0.1:5000/bucketoperator' },
    'a repository under a path': { got: repositoryFor('ghcr.example/team/', 'manifests'), want: 'ghcr.example/team/bucketoperator-manifests' },
    'a tag reference': { got: byTag({ repository: 'h:1/r', tag: '1.2.3' }), want: 'h:1/r:1.2.3' },
    'a digest reference': { got: byDigest({ repository: 'h:1/r', digest: 'sha256:ab' }), want: 'h:1/r@sha256:ab' },
    'the repository of a tag reference (the port is no tag)': {
      got: repositoryOf('127.0.0.1:5000/bucketoperator:1.2.3'),
      want: '127.0.0.1:5000/bucketoperator',
    },
    'the repository of a digest reference': { got: repositoryOf('h:1/r@sha256:ab'), want: 'h:1/r' },
    'the repository of a bare name with a port': { got: repositoryOf('h:1/r'), want: 'h:1/r' },
    'a signature file': { got: signatureFile('x.json'), want: 'x.json.sig' },
  };
  for (const [name, tc] of Object.entries(refs)) it(name, () => expect(tc.got).to.equal(tc.want));
  it('refuses a registry given as a URL', () => expect(() => repositoryFor('https://r.example', 'image')).to.throw(/without a scheme/));

  it('signs with the key and never with the transparency log; verifies with the public key and without it', () => {
    for (const args of [signArgs('k', 'r@d'), attestArgs('k', 'r@d', 'cyclonedx', 'p.json'), signBlobArgs('k', 'f', 'f.sig')]) {
      expect(args).to.include('--tlog-upload=false');
      expect(args.slice(args.indexOf('--key'), args.indexOf('--key') + 2)).to.deep.equal(['--key', 'k']);
    }
    for (const args of [verifyArgs('p', 'r@d'), verifyAttestationArgs('p', 'r@d', 'slsaprovenance1'), verifyBlobArgs('p', 'f', 'f.sig')]) {
      expect(args).to.include('--insecure-ignore-tlog=true');
      expect(args.slice(args.indexOf('--key'), args.indexOf('--key') + 2)).to.deep.equal(['--key', 'p']);
    }
  });

  it('docs/operate/verify-a-release.md shows every cosign command the verify command runs', () => {
    const lines = verifyCommandLines([RELEASE_FILES.provenance, RELEASE_FILES.npmSbom, RELEASE_FILES.imageSbom]);
    expect(lines).to.have.length(8);
    for (const line of lines) expect(DOC, line).to.include(line);
    expect(DOC).to.include(PLACEHOLDERS.key);
  });

  it('reads the pinned tool versions from scripts/release/tools.env', () => {
    expect(parseEnvFile('# c\nA=1\n\nB="two"\n')).to.deep.equal({ A: '1', B: 'two' });
    expect(() => parseEnvFile('not a line')).to.throw(/KEY=value/);
    const v = pinnedToolVersions(REPO);
    expect(v.cosign).to.match(/^v2\.\d+\.\d+$/);
    expect(v.crane).to.match(/^v0\.\d+\.\d+$/);
  });

  it("finds the port in crane registry serve's log line", () => {
    expect(servingPort('2026/12/04 20:00:00 serving on port 43123\n')).to.equal(43123);
    expect(servingPort('2026/12/04 20:00:00 storing blobs in /tmp/x\n')).to.equal(undefined);
  });

  it("decodes the statements of cosign verify-attestation's output, one DSSE envelope a line", () => {
    const st = { _type: 'https://in-toto.io/Statement/v1', predicateType: 'p' };
    const line = JSON.stringify({
      payloadType: 'application/vnd.in-toto+json',
      payload: Buffer.from(JSON.stringify(st)).toString('base64'),
      signatures: [],
    });
    expect(attestationStatements(`${line}\n${line}\n`)).to.deep.equal([st, st]);
    expect(attestationStatements('Verification for x --\n')).to.deep.equal([]);
  });
});
