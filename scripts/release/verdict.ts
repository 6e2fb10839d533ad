/**
 * The verify command's one decision: from what the tools reported (signatures, the digests tags
 * resolve to, the attestations' statements, the files' digests), is this release what its
 * signed provenance says it is? Pure; every problem is reported, not only the first, so one run
 * tells an intake review everything that is wrong.
 *
 * The rules: the provenance file's signature verifies with the key; every file's signature
 * verifies and its SHA-256 is the one the provenance names; every registry artifact's tag
 * resolves to the digest the provenance names, that digest's signature verifies, and each
 * attestation verifies and holds a statement about that digest whose predicate is the release's
 * (the image SBOM file, the provenance's predicate); and every subject of the provenance was
 * checked by one of these.
 */
import { canonicalJson } from '../oci/archive';
import { BUILD_TYPE, SLSA_PROVENANCE_V1, STATEMENT_TYPE } from './provenance';
import type { ArtifactRole, AttestationSpec } from './release-list';
import { REPOSITORY_NAMES, RELEASE_FILES, repositoryOf } from './release-list';

/** How one check ended: true, or why not. */
export type Outcome = true | { readonly error: string };

/** What was found about one signed file. */
export interface FileEvidence {
  readonly name: string;
  /** Undefined when the file is missing. */
  readonly sha256?: string;
  readonly signature: Outcome;
}

/** What was found about one attestation type on one registry artifact. */
export interface AttestationEvidence {
  readonly spec: AttestationSpec;
  /** The verified statements (decoded DSSE payloads), or why verification failed. */
  readonly statements: readonly unknown[] | { readonly error: string };
}

/** What was found about one registry artifact. */
export interface RefEvidence {
  readonly role: ArtifactRole;
  /** The reference checked (normally repository:tag). */
  readonly ref: string;
  /** The digest it resolves to, or why it does not resolve. */
  readonly digest: string | { readonly error: string };
  /** The signature of that digest. */
  readonly signature: Outcome;
  readonly attestations: readonly AttestationEvidence[];
}

/** Everything the verify command gathered. */
export interface Evidence {
  /** The provenance file's parsed JSON (undefined when missing or not JSON) and its signature. */
  readonly provenance: { readonly statement?: unknown; readonly signature: Outcome };
  /** The other signed files. */
  readonly files: readonly FileEvidence[];
  /** The parsed JSON of the files attestation predicates come from, by file name. */
  readonly predicates: Readonly<Record<string, unknown>>;
  readonly refs: readonly RefEvidence[];
  /** Differences between the manifests artifact's files and a local dist/, when one was compared. */
  readonly manifestDifferences?: readonly string[] | { readonly error: string };
}

/** What the caller expects beyond the provenance's own word. */
export interface Expectations {
  /** The version the release must be (the provenance's externalParameters.version). */
  readonly version?: string;
}

interface StatementShape {
  readonly _type?: unknown;
  readonly predicateType?: unknown;
  readonly subject?: readonly { readonly name?: unknown; readonly digest?: { readonly sha256?: unknown } }[];
  readonly predicate?: { readonly buildDefinition?: { readonly buildType?: unknown; readonly externalParameters?: { readonly version?: unknown } } };
}

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/** The provenance's subjects as name -> hex digest; throws on a statement that is not ours. */
export function provenanceSubjects(statement: unknown): Map<string, string> {
  const s = statement as StatementShape;
  if (!isObject(statement)) throw new Error('it is not a JSON object');
  if (s._type !== STATEMENT_TYPE) throw new Error(`its _type is ${String(s._type)}, expected ${STATEMENT_TYPE}`);
  if (s.predicateType !== SLSA_PROVENANCE_V1) throw new Error(`its predicateType is ${String(s.predicateType)}, expected ${SLSA_PROVENANCE_V1}`);
  const buildType = s.predicate?.buildDefinition?.buildType;
  if (buildType !== BUILD_TYPE) throw new Error(`its buildType is ${String(buildType)}, expected ${BUILD_TYPE}`);
  const out = new Map<string, string>();
  for (const sub of s.subject ?? []) {
    if (typeof sub.name !== 'string' || typeof sub.digest?.sha256 !== 'string') throw new Error('a subject has no name or sha256');
    out.set(sub.name, sub.digest.sha256);
  }
  if (out.size === 0) throw new Error('it names no subject');
  return out;
}

/**
 * The subject that stands for a registry artifact: the one named by its repository, else the only
 * one whose last path component is the role's repository name (the release was copied to another
 * registry, as a mirror for an air-gapped cluster does). Undefined when there is none or more than one.
 */
export function subjectForRepository(subjects: ReadonlyMap<string, string>, repository: string, role: ArtifactRole): [string, string] | undefined {
  const exact = subjects.get(repository);
  if (exact !== undefined) return [repository, exact];
  const want = REPOSITORY_NAMES[role];
  const matches = [...subjects.entries()].filter(([name]) => name.split('/').at(-1) === want);
  return matches.length === 1 ? matches[0] : undefined;
}

const hex = (digest: string) => digest.replace(/^sha256:/, '');

/** Statements about `digest` with `predicateType` whose predicate equals `want` (canonical JSON). */
function matchingStatements(statements: readonly unknown[], digest: string, predicateType: string, want: unknown): number {
  const wanted = canonicalJson(want);
  return statements.filter((st) => {
    const s = st as StatementShape & { predicate?: unknown };
    const about = (s.subject ?? []).some((sub) => sub.digest?.sha256 === hex(digest));
    return about && s.predicateType === predicateType && canonicalJson(s.predicate) === wanted;
  }).length;
}

/** Every problem with the release, one line each; empty when it verifies. */
export function judge(evidence: Evidence, expect: Expectations = {}): string[] {
  const problems: string[] = [];
  const prov = RELEASE_FILES.provenance;
  if (evidence.provenance.signature !== true)
    problems.push(`${prov}: the signature does not verify with the key (${evidence.provenance.signature.error})`);
  let subjects: Map<string, string> | undefined;
  try {
    subjects = provenanceSubjects(evidence.provenance.statement);
  } catch (err) {
    problems.push(`${prov}: not this project's provenance: ${err instanceof Error ? err.message : String(err)}`);
  }
  const checked = new Set<string>();
  const statement = evidence.provenance.statement as StatementShape | undefined;
  const version = statement?.predicate?.buildDefinition?.externalParameters?.version;
  if (expect.version !== undefined && subjects && version !== expect.version)
    problems.push(`${prov}: the release is version ${String(version)}, expected ${expect.version}`);

  for (const f of evidence.files) {
    if (f.sha256 === undefined) {
      problems.push(`${f.name}: missing`);
      continue;
    }
    if (f.signature !== true) problems.push(`${f.name}: the signature does not verify with the key (${f.signature.error})`);
    if (!subjects) continue;
    const named = subjects.get(f.name);
    checked.add(f.name);
    if (named === undefined) problems.push(`${f.name}: the provenance names no such subject`);
    else if (named !== f.sha256) problems.push(`${f.name}: its sha256 is ${f.sha256}, the provenance names ${named}`);
  }

  for (const r of evidence.refs) {
    if (typeof r.digest !== 'string') {
      problems.push(`${r.ref}: does not resolve (${r.digest.error})`);
      continue;
    }
    if (subjects) {
      const subject = subjectForRepository(subjects, repositoryOf(r.ref), r.role);
      if (!subject) problems.push(`${r.ref}: the provenance names no ${REPOSITORY_NAMES[r.role]} subject`);
      else {
        checked.add(subject[0]);
        if (subject[1] !== hex(r.digest)) problems.push(`${r.ref}: resolves to ${r.digest}, the provenance names sha256:${subject[1]}`);
      }
    }
    if (r.signature !== true) problems.push(`${r.ref}: the signature of ${r.digest} does not verify with the key (${r.signature.error})`);
    for (const a of r.attestations) {
      const what = `${r.ref}: the ${a.spec.type} attestation`;
      if (!Array.isArray(a.statements)) {
        problems.push(`${what} does not verify with the key (${(a.statements as { error: string }).error})`);
        continue;
      }
      const want =
        a.spec.predicateFrom === prov
          ? (evidence.provenance.statement as { predicate?: unknown } | undefined)?.predicate
          : evidence.predicates[a.spec.predicateFrom];
      if (want === undefined) problems.push(`${what}: no ${a.spec.predicateFrom} to compare it with`);
      else if (matchingStatements(a.statements, r.digest, a.spec.predicateType, want) === 0)
        problems.push(`${what} holds no statement about ${r.digest} whose predicate is ${a.spec.predicateFrom}'s`);
    }
  }

  if (subjects) for (const name of subjects.keys()) if (!checked.has(name)) problems.push(`${prov}: names ${name}, which was not checked`);
  const diff = evidence.manifestDifferences;
  if (diff !== undefined) {
    if (!Array.isArray(diff)) problems.push(`the manifests artifact cannot be read: ${(diff as { error: string }).error}`);
    else for (const d of diff) problems.push(`the manifests artifact differs from the local dist/: ${d}`);
  }
  return problems;
}
