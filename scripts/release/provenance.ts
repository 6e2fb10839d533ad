/**
 * The release's provenance: an in-toto v1 Statement with an SLSA Provenance v1 predicate
 * (https://slsa.dev/provenance/v1). Its subjects are everything the release publishes (the image
 * and the manifests artifact by registry digest, the SBOM files by SHA-256); its build definition
 * says what was built (the source repository and commit, the version) from what (the pinned Node
 * runtime, the Debian package list and each .deb, package-lock.json). Pure: the caller reads the
 * clock and the files.
 */

/** in-toto's Statement v1 type. */
export const STATEMENT_TYPE = 'https://in-toto.io/Statement/v1';
/** SLSA Provenance v1's predicate type (cosign's `--type slsaprovenance1`). */
export const SLSA_PROVENANCE_V1 = 'https://slsa.dev/provenance/v1';
/** CycloneDX's predicate type (cosign's `--type cyclonedx`). */
export const CYCLONEDX_PREDICATE = 'https://cyclonedx.org/bom';
/**
 * What kind of build this is: scripts/release-artifacts.ts at this version of its parameters. A
 * verifier that knows the type knows how to read externalParameters.
 */
export const BUILD_TYPE = 'https://bucketoperator.avalonhosting.example/release-artifacts/v1';
/** The builder when none is named (`--builder-id`): a release run by a maintainer with `npm run release:artifacts`. */
export const DEFAULT_BUILDER_ID = 'https://bucketoperator.avalonhosting.example/builders/maintainer';

/** An in-toto ResourceDescriptor, the fields used here. */
export interface ResourceDescriptor {
  readonly name?: string;
  readonly uri?: string;
  readonly digest: Readonly<Record<string, string>>;
}

/** A statement subject: a name and its SHA-256 (hex). */
export interface Subject {
  readonly name: string;
  readonly digest: { readonly sha256: string };
}

/** The parameters a person chose for the release (SLSA's externalParameters for {@link BUILD_TYPE}). */
export interface ExternalParameters {
  readonly source: { readonly repository: string; readonly commit: string; readonly ref?: string };
  readonly version: string;
  /** Where the image and the manifests were pushed (`host[:port][/path]`). */
  readonly registry: string;
}

/** The SLSA Provenance v1 predicate, the fields used here. */
export interface ProvenancePredicate {
  readonly buildDefinition: {
    readonly buildType: string;
    readonly externalParameters: ExternalParameters;
    readonly internalParameters: { readonly worktreeClean: boolean };
    readonly resolvedDependencies: readonly ResourceDescriptor[];
  };
  readonly runDetails: {
    readonly builder: { readonly id: string; readonly version: Readonly<Record<string, string>> };
    readonly metadata: { readonly startedOn: string; readonly finishedOn: string };
  };
}

/** An in-toto Statement v1 with the SLSA predicate. */
export interface ProvenanceStatement {
  readonly _type: typeof STATEMENT_TYPE;
  readonly subject: readonly Subject[];
  readonly predicateType: typeof SLSA_PROVENANCE_V1;
  readonly predicate: ProvenancePredicate;
}

/** What {@link provenanceStatement} is made of. */
export interface ProvenanceInput {
  readonly subjects: readonly Subject[];
  readonly external: ExternalParameters;
  readonly worktreeClean: boolean;
  readonly dependencies: readonly ResourceDescriptor[];
  readonly builderId: string;
  /** Versions of what ran the build (tools, runtime). */
  readonly builderVersion: Readonly<Record<string, string>>;
  /** RFC 3339, whole seconds. */
  readonly startedOn: string;
  readonly finishedOn: string;
}

const HEX64 = /^[0-9a-f]{64}$/;

/** A `sha256:<hex>` digest or a bare hex digest as a subject. Throws on anything else. */
export function subject(name: string, digest: string): Subject {
  const hex = digest.replace(/^sha256:/, '');
  if (!HEX64.test(hex)) throw new Error(`subject ${name}: "${digest}" is not a SHA-256 digest`);
  return { name, digest: { sha256: hex } };
}

/** An RFC 3339 time without fractional seconds (what protobuf-based readers print back unchanged). */
export function wholeSeconds(date: Date): string {
  return date.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/**
 * The statement. Throws on an empty or duplicated subject list (two subjects of one name would
 * leave a verifier unable to say which digest a name stands for).
 */
export function provenanceStatement(input: ProvenanceInput): ProvenanceStatement {
  if (input.subjects.length === 0) throw new Error('provenance needs at least one subject');
  const names = input.subjects.map((s) => s.name);
  const twice = names.filter((n, i) => names.indexOf(n) !== i);
  if (twice.length > 0) throw new Error(`provenance names ${twice.join(', ')} twice`);
  for (const d of input.dependencies) {
    if (!d.uri && !d.name) throw new Error('a resolved dependency needs a uri or a name');
    if (Object.keys(d.digest).length === 0) throw new Error(`resolved dependency ${d.uri ?? d.name} has no digest`);
  }
  return {
    _type: STATEMENT_TYPE,
    subject: [...input.subjects],
    predicateType: SLSA_PROVENANCE_V1,
    predicate: {
      buildDefinition: {
        buildType: BUILD_TYPE,
        externalParameters: input.external,
        internalParameters: { worktreeClean: input.worktreeClean },
        resolvedDependencies: [...input.dependencies],
      },
      runDetails: {
        builder: { id: input.builderId, version: input.builderVersion },
        metadata: { startedOn: input.startedOn, finishedOn: input.finishedOn },
      },
    },
  };
}

/** The source as SLSA writes it: `git+<repository>@<ref>` (the ref when known) with the commit as digest. */
export function sourceDependency(external: ExternalParameters): ResourceDescriptor {
  const { repository, commit, ref } = external.source;
  return { uri: `git+${repository}${ref ? `@${ref}` : ''}`, digest: { gitCommit: commit } };
}

/** An SRI integrity string (`sha512-<base64>`) as an in-toto digest map (`{ sha512: <hex> }`). */
export function integrityDigest(integrity: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const part of integrity.trim().split(/\s+/)) {
    const m = /^(sha1|sha256|sha384|sha512)-(.+)$/.exec(part);
    if (m?.[1] && m[2]) out[m[1]] = Buffer.from(m[2], 'base64').toString('hex');
  }
  if (Object.keys(out).length === 0) throw new Error(`"${integrity}" is not a Subresource Integrity string`);
  return out;
}
