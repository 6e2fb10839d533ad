/** scripts/release/provenance.ts: the in-toto Statement with its SLSA Provenance v1 predicate. */
import { expect } from 'chai';
import {
  BUILD_TYPE,
  integrityDigest,
  provenanceStatement,
  SLSA_PROVENANCE_V1,
  sourceDependency,
  STATEMENT_TYPE,
  subject,
  wholeSeconds,
  type ProvenanceInput,
} from '../../../scripts/release/provenance';

const D = (c: string) => c.repeat(64);

const input: ProvenanceInput = {
  subjects: [subject('127.0.0.1:5000/bucketoperator', `sha256:${D('a')}`), subject('sbom-npm.cdx.json', D('b'))],
  external: {
    source: { repository: 'https://git.example/bucketoperator.git', commit: D('c').slice(0, 40), ref: 'refs/tags/v1.2.3' },
    version: '1.2.3',
    registry: '127.0.0.1:5000',
  },
  worktreeClean: true,
  dependencies: [{ name: 'package-lock.json', digest: { sha256: D('d') } }],
  builderId: 'https://ci.example/release',
  builderVersion: { cosign: 'v2.6.5' },
  startedOn: '2026-12-04T12:00:00Z',
  finishedOn: '2026-12-04T12:01:00Z',
};

describe('release: provenance', () => {
  it('is an in-toto v1 Statement with an SLSA Provenance v1 predicate of our build type', () => {
    const st = provenanceStatement(input);
    expect(st._type).to.equal(STATEMENT_TYPE);
    expect(STATEMENT_TYPE).to.equal('https://in-toto.io/Statement/v1');
    expect(st.predicateType).to.equal(SLSA_PROVENANCE_V1);
    expect(SLSA_PROVENANCE_V1).to.equal('https://slsa.dev/provenance/v1');
    expect(st.subject).to.deep.equal([
      { name: '127.0.0.1:5000/bucketoperator', digest: { sha256: D('a') } },
      { name: 'sbom-npm.cdx.json', digest: { sha256: D('b') } },
    ]);
    expect(st.predicate.buildDefinition).to.deep.equal({
      buildType: BUILD_TYPE,
      externalParameters: input.external,
      internalParameters: { worktreeClean: true },
      resolvedDependencies: input.dependencies,
    });
    expect(st.predicate.runDetails).to.deep.equal({
      builder: { id: 'https://ci.example/release', version: { cosign: 'v2.6.5' } },
      metadata: { startedOn: '2026-12-04T12:00:00Z', finishedOn: '2026-12-04T12:01:00Z' },
    });
  });

  const refusals: Record<string, { change: Partial<ProvenanceInput>; want: RegExp }> = {
    'no subject': { change: { subjects: [] }, want: /at least one subject/ },
    'a subject named twice': { change: { subjects: [subject('x', D('a')), subject('x', D('b'))] }, want: /names x twice/ },
    'a dependency without uri or name': { change: { dependencies: [{ digest: { sha256: D('a') } }] }, want: /uri or a name/ },
    'a dependency without digest': { change: { dependencies: [{ name: 'x', digest: {} }] }, want: /x has no digest/ },
  };
  for (const [name, tc] of Object.entries(refusals))
    it(`refuses ${name}`, () => expect(() => provenanceStatement({ ...input, ...tc.change })).to.throw(tc.want));

  it('takes a subject digest with or without its sha256: prefix, and nothing else', () => {
    expect(subject('n', `sha256:${D('e')}`)).to.deep.equal(subject('n', D('e')));
    expect(() => subject('n', 'sha512:abc')).to.throw(/not a SHA-256/);
  });

  it('writes the source as SLSA does: git+<repository>@<ref>, the commit as digest', () => {
    expect(sourceDependency(input.external)).to.deep.equal({
      uri: 'git+https://git.example/bucketoperator.git@refs/tags/v1.2.3',
      digest: { gitCommit: D('c').slice(0, 40) },
    });
    const untagged = { ...input.external, source: { repository: 'file:///src', commit: 'abc' } };
    expect(sourceDependency(untagged).uri).to.equal('git+file:///src');
  });

  it('turns an SRI string into a hex digest map, and times into whole seconds', () => {
    expect(integrityDigest(`sha512-${Buffer.alloc(64, 1).toString('base64')}`)).to.deep.equal({ sha512: '01'.repeat(64) });
    expect(() => integrityDigest('nope')).to.throw(/Subresource Integrity/);
    expect(wholeSeconds(new Date('2026-12-04T12:00:00.789Z'))).to.equal('2026-12-04T12:00:00Z');
  });
});
