/** scripts/release/verdict.ts: the verify command's decision, one table of what was found against what must be found. */
import { expect } from 'chai';
import { BUILD_TYPE, CYCLONEDX_PREDICATE, provenanceStatement, SLSA_PROVENANCE_V1, subject } from '../../../scripts/release/provenance';
import { ATTESTATIONS, RELEASE_FILES } from '../../../scripts/release/release-list';
import { judge, provenanceSubjects, subjectForRepository, type Evidence, type RefEvidence } from '../../../scripts/release/verdict';

const D = (c: string) => c.repeat(64);
const IMAGE = '127.0.0.1:5000/bucketoperator';
const MANIFESTS = '127.0.0.1:5000/bucketoperator-manifests';
const SBOM = { bomFormat: 'CycloneDX', components: [{ name: 'pino' }] };

const statement = provenanceStatement({
  subjects: [subject(IMAGE, D('a')), subject(MANIFESTS, D('b')), subject(RELEASE_FILES.npmSbom, D('c')), subject(RELEASE_FILES.imageSbom, D('d'))],
  external: { source: { repository: 'file:///src', commit: 'abc' }, version: '1.2.3', registry: '127.0.0.1:5000' },
  worktreeClean: true,
  dependencies: [{ name: 'package-lock.json', digest: { sha256: D('e') } }],
  builderId: 'https://ci.example',
  builderVersion: {},
  startedOn: '2026-12-04T12:00:00Z',
  finishedOn: '2026-12-04T12:00:00Z',
});

/** What cosign verify-attestation hands back: a statement about the digest, with the predicate. */
const attested = (digest: string, predicateType: string, predicate: unknown) => ({
  _type: 'https://in-toto.io/Statement/v1',
  subject: [{ name: 'x', digest: { sha256: digest } }],
  predicateType,
  predicate,
});

function ref(role: 'image' | 'manifests', repository: string, digest: string): RefEvidence {
  return {
    role,
    ref: `${repository}:1.2.3`,
    digest: `sha256:${digest}`,
    signature: true,
    attestations: ATTESTATIONS.filter((a) => a.role === role).map((spec) => ({
      spec,
      statements: [attested(digest, spec.predicateType, spec.predicateType === CYCLONEDX_PREDICATE ? SBOM : statement.predicate)],
    })),
  };
}

const good: Evidence = {
  provenance: { statement, signature: true },
  files: [
    { name: RELEASE_FILES.npmSbom, sha256: D('c'), signature: true },
    { name: RELEASE_FILES.imageSbom, sha256: D('d'), signature: true },
  ],
  predicates: { [RELEASE_FILES.imageSbom]: SBOM },
  refs: [ref('image', IMAGE, D('a')), ref('manifests', MANIFESTS, D('b'))],
};

type Change = (e: Evidence) => Evidence;
const withRef =
  (role: 'image' | 'manifests', change: (r: RefEvidence) => RefEvidence): Change =>
  (e) => ({
    ...e,
    refs: e.refs.map((r) => (r.role === role ? change(r) : r)),
  });

describe('release: the verdict', () => {
  it('passes a release where everything verifies and matches', () => {
    expect(judge(good)).to.deep.equal([]);
    expect(judge(good, { version: '1.2.3' })).to.deep.equal([]);
  });

  const cases: Record<string, { change: Change; want: RegExp[] }> = {
    'a changed SBOM byte: its digest is not the provenance subject and its signature fails': {
      change: (e) => ({
        ...e,
        files: e.files.map((f) => (f.name === RELEASE_FILES.imageSbom ? { ...f, sha256: D('9'), signature: { error: 'invalid signature' } } : f)),
      }),
      want: [/^sbom-image\.cdx\.json: the signature does not verify/, /^sbom-image\.cdx\.json: its sha256 is 9+, the provenance names d+$/],
    },
    'a missing SBOM': {
      change: (e) => ({
        ...e,
        files: e.files.map((f) => (f.name === RELEASE_FILES.npmSbom ? { name: f.name, signature: { error: 'missing' } } : f)),
      }),
      want: [/^sbom-npm\.cdx\.json: missing$/, /^provenance\.intoto\.json: names sbom-npm\.cdx\.json, which was not checked$/],
    },
    'a provenance signed by another key': {
      change: (e) => ({ ...e, provenance: { ...e.provenance, signature: { error: 'invalid signature when validating ASN.1 encoded signature' } } }),
      want: [/^provenance\.intoto\.json: the signature does not verify with the key/],
    },
    'a provenance that is not ours': {
      change: (e) => ({
        ...e,
        provenance: { ...e.provenance, statement: { ...statement, predicate: { buildDefinition: { buildType: 'https://other' } } } },
      }),
      want: [
        /^provenance\.intoto\.json: not this project's provenance: its buildType is https:\/\/other/,
        // The attestations hold the signed predicate, which is no longer the file's.
        /bucketoperator:1\.2\.3: the slsaprovenance1 attestation holds no statement/,
        /bucketoperator-manifests:1\.2\.3: the slsaprovenance1 attestation holds no statement/,
      ],
    },
    'an image tag moved to another digest (a re-tag), which carries no signature of ours': {
      change: withRef('image', (r) => ({
        ...r,
        digest: `sha256:${D('f')}`,
        signature: { error: 'no signatures found' },
        attestations: r.attestations.map((a) => ({ ...a, statements: { error: 'no matching attestations' } })),
      })),
      want: [
        /:1\.2\.3: resolves to sha256:f+, the provenance names sha256:a+$/,
        /the signature of sha256:f+ does not verify/,
        /the cyclonedx attestation does not verify/,
        /the slsaprovenance1 attestation does not verify/,
      ],
    },
    'a manifests artifact changed and re-signed with another key': {
      change: withRef('manifests', (r) => ({ ...r, digest: `sha256:${D('7')}`, signature: { error: 'invalid signature' } })),
      want: [
        /bucketoperator-manifests:1\.2\.3: resolves to sha256:7+, the provenance names sha256:b+$/,
        /bucketoperator-manifests:1\.2\.3: the signature of/,
        /bucketoperator-manifests:1\.2\.3: the slsaprovenance1 attestation holds no statement about sha256:7+/,
      ],
    },
    'an attestation whose SBOM is not the release file': {
      change: withRef('image', (r) => ({
        ...r,
        attestations: r.attestations.map((a) =>
          a.spec.type === 'cyclonedx' ? { ...a, statements: [attested(D('a'), CYCLONEDX_PREDICATE, { other: true })] } : a,
        ),
      })),
      want: [/the cyclonedx attestation holds no statement about sha256:a+ whose predicate is sbom-image\.cdx\.json's/],
    },
    'an attestation about another digest (one moved from an older release)': {
      change: withRef('manifests', (r) => ({
        ...r,
        attestations: r.attestations.map((a) => ({ ...a, statements: [attested(D('0'), SLSA_PROVENANCE_V1, statement.predicate)] })),
      })),
      want: [/bucketoperator-manifests:1\.2\.3: the slsaprovenance1 attestation holds no statement about sha256:b+/],
    },
    'a tag that does not resolve': {
      change: withRef('image', (r) => ({ ...r, digest: { error: 'MANIFEST_UNKNOWN' } })),
      want: [/bucketoperator:1\.2\.3: does not resolve \(MANIFEST_UNKNOWN\)/, /names 127\.0\.0\.1:5000\/bucketoperator, which was not checked/],
    },
    'a manifests artifact that differs from the local dist/': {
      change: (e) => ({ ...e, manifestDifferences: ['changed: v2/04-manager.yaml'] }),
      want: [/^the manifests artifact differs from the local dist\/: changed: v2\/04-manager\.yaml$/],
    },
  };
  for (const [name, tc] of Object.entries(cases)) {
    it(`fails: ${name}`, () => {
      const problems = judge(tc.change(good));
      for (const want of tc.want)
        expect(
          problems.some((p) => want.test(p)),
          `${want} in:\n${problems.join('\n')}`,
        ).to.equal(true);
      expect(problems).to.have.length(tc.want.length);
    });
  }

  it('fails a release of another version than the one asked for', () => {
    expect(judge(good, { version: '9.9.9' })).to.deep.equal(['provenance.intoto.json: the release is version 1.2.3, expected 9.9.9']);
  });

  it('finds a copied artifact by its repository name when the registry differs', () => {
    const subjects = provenanceSubjects(statement);
    expect(subjectForRepository(subjects, 'mirror.example/team/bucketoperator', 'image')).to.deep.equal([IMAGE, D('a')]);
    expect(subjectForRepository(subjects, IMAGE, 'image')).to.deep.equal([IMAGE, D('a')]);
    // Two subjects that could be the image: no guess.
    const twice = provenanceSubjects({ ...statement, subject: [...statement.subject, subject('other.example/bucketoperator', D('1'))] });
    expect(subjectForRepository(twice, 'mirror.example/team/bucketoperator', 'image')).to.equal(undefined);
    const mirrored = withRef('image', (r) => ({ ...r, ref: 'mirror.example/team/bucketoperator:1.2.3' }))(good);
    expect(judge(mirrored)).to.deep.equal([]);
  });

  it('reads only statements of this build type', () => {
    expect(() => provenanceSubjects({ ...statement, _type: 'x' })).to.throw(/_type is x/);
    expect(() => provenanceSubjects({ ...statement, subject: [] })).to.throw(/no subject/);
    expect(provenanceSubjects(statement).size).to.equal(4);
    expect(BUILD_TYPE).to.match(/^https:\/\//);
  });
});
