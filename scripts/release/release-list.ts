/**
 * What a release publishes, as one list (release.json in the output directory): the registry
 * artifacts by repository, tag and digest, the files with their SHA-256, the detached signature
 * of each file, and the attestations attached to each registry artifact. The verify command reads
 * only the registry references from it, and trusts none of it: every digest it accepts must be one
 * the signed provenance names, and which files and attestations must be there is its own code's
 * word ({@link RELEASE_FILES}, {@link ATTESTATIONS}).
 */
import type { AttestationType } from './cosign-commands';
import { CYCLONEDX_PREDICATE, SLSA_PROVENANCE_V1 } from './provenance';

/** The files a release writes. */
export const RELEASE_FILES = {
  npmSbom: 'sbom-npm.cdx.json',
  imageSbom: 'sbom-image.cdx.json',
  provenance: 'provenance.intoto.json',
  list: 'release.json',
} as const;

/** A file's detached signature, beside it. */
export function signatureFile(file: string): string {
  return `${file}.sig`;
}

/** The registry artifacts of a release. */
export type ArtifactRole = 'image' | 'manifests';

/** The repository name (last path component) of each role. */
export const REPOSITORY_NAMES: Readonly<Record<ArtifactRole, string>> = { image: 'bucketoperator', manifests: 'bucketoperator-manifests' };

/** One pushed artifact. */
export interface PublishedArtifact {
  readonly role: ArtifactRole;
  /** `host[:port]/path/name`, no tag. */
  readonly repository: string;
  readonly tag: string;
  /** `sha256:<hex>`. */
  readonly digest: string;
}

/** An attestation attached to a registry artifact: its cosign type, predicate type and where its predicate comes from. */
export interface AttestationSpec {
  readonly role: ArtifactRole;
  readonly type: AttestationType;
  readonly predicateType: string;
  /** A release file whose whole JSON is the predicate, or the provenance file, whose `predicate` it is. */
  readonly predicateFrom: string;
}

/** The attestations every release attaches. */
export const ATTESTATIONS: readonly AttestationSpec[] = [
  { role: 'image', type: 'cyclonedx', predicateType: CYCLONEDX_PREDICATE, predicateFrom: RELEASE_FILES.imageSbom },
  { role: 'image', type: 'slsaprovenance1', predicateType: SLSA_PROVENANCE_V1, predicateFrom: RELEASE_FILES.provenance },
  { role: 'manifests', type: 'slsaprovenance1', predicateType: SLSA_PROVENANCE_V1, predicateFrom: RELEASE_FILES.provenance },
];

/** release.json. */
export interface ReleaseList {
  readonly version: string;
  readonly commit: string;
  readonly artifacts: readonly PublishedArtifact[];
  /** Every signed file (the SBOMs and the provenance), its SHA-256 and its signature file. */
  readonly files: readonly { readonly name: string; readonly sha256: string; readonly signature: string }[];
  readonly attestations: readonly AttestationSpec[];
}

/** `registry` (`host[:port][/path]`) and a role's repository name, joined. */
export function repositoryFor(registry: string, role: ArtifactRole): string {
  const base = registry.replace(/\/+$/, '');
  if (base === '' || /^[a-z]+:\/\//i.test(base)) throw new Error(`--registry must be host[:port][/path] without a scheme, got "${registry}"`);
  return `${base}/${REPOSITORY_NAMES[role]}`;
}

/** The list, from what was published. */
export function releaseList(
  version: string,
  commit: string,
  artifacts: readonly PublishedArtifact[],
  files: readonly { readonly name: string; readonly sha256: string }[],
): ReleaseList {
  return {
    version,
    commit,
    artifacts: [...artifacts],
    files: files.map((f) => ({ ...f, signature: signatureFile(f.name) })),
    attestations: ATTESTATIONS,
  };
}

/** `repository@digest`. */
export function byDigest(a: { readonly repository: string; readonly digest: string }): string {
  return `${a.repository}@${a.digest}`;
}

/** `repository:tag`. */
export function byTag(a: { readonly repository: string; readonly tag: string }): string {
  return `${a.repository}:${a.tag}`;
}

/** A reference's repository (everything before the tag or digest). */
export function repositoryOf(ref: string): string {
  const at = ref.indexOf('@');
  const name = at < 0 ? ref : ref.slice(0, at);
  const colon = name.lastIndexOf(':');
  return colon > name.lastIndexOf('/') ? name.slice(0, colon) : name;
}
