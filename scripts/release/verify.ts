/**
 * The verify command: checks a release with nothing but the public key, the release's files and
 * the registry (no transparency log, no Sigstore service). It gathers what cosign and crane report
 * into {@link Evidence} and lets the pure {@link judge} decide; release.json only says where to
 * look (the registry references), the signed provenance says what must be found there, and this
 * code which files and attestations there must be.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { verifyArgs, verifyAttestationArgs, verifyBlobArgs } from './cosign-commands';
import type { ExternalParameters, ProvenanceStatement } from './provenance';
import { compareTrees, readDist, readManifestsArtifact, type ManifestFile } from './manifests-artifact';
import { ATTESTATIONS, byTag, RELEASE_FILES, repositoryOf, signatureFile, type ArtifactRole, type ReleaseList } from './release-list';

/** The files besides the provenance whose signatures and digests are checked. */
const SIGNED_FILES = [RELEASE_FILES.npmSbom, RELEASE_FILES.imageSbom];
import { releaseTools, runTool, runToolBytes, type ReleaseTools } from './tools';
import { judge, type AttestationEvidence, type Evidence, type FileEvidence, type Outcome, type RefEvidence } from './verdict';

/** Options of {@link verifyRelease}. */
export interface VerifyOptions {
  /** The checkout (to find the tools). */
  readonly repo: string;
  /** The release's files: release.json, the SBOMs, the provenance and their .sig files. */
  readonly dir: string;
  /** The project's public key (or a KMS URI cosign understands). */
  readonly key: string;
  /** References to check instead of release.json's (a mirror's copy, say), by role. */
  readonly refs?: Partial<Record<ArtifactRole, string>>;
  /** The version the release must be. */
  readonly version?: string;
  /** A local dist/ the manifests artifact must equal. */
  readonly dist?: string;
  /** Where to unpack the manifests artifact once it verified. */
  readonly extract?: string;
  readonly env?: NodeJS.ProcessEnv;
  readonly tools?: ReleaseTools;
}

/** What {@link verifyRelease} found. */
export interface VerifyResult {
  /** Empty when the release verifies. */
  readonly problems: readonly string[];
  /** The references checked and the digests they resolved to. */
  readonly checked: readonly { readonly role: ArtifactRole; readonly ref: string; readonly digest?: string }[];
  /** What the signed provenance says was released (source, version), once the release verified. */
  readonly release?: ExternalParameters;
}

const sha256 = (data: Buffer) => createHash('sha256').update(data).digest('hex');
const errorOf = (err: unknown) => ({ error: err instanceof Error ? err.message : String(err) });

async function outcome(p: Promise<unknown>): Promise<Outcome> {
  try {
    await p;
    return true;
  } catch (err) {
    return errorOf(err);
  }
}

/** The statements in cosign verify-attestation's output: one DSSE envelope per line, payload base64. */
export function attestationStatements(stdout: string): unknown[] {
  return stdout
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l.startsWith('{'))
    .map((l) => {
      const envelope = JSON.parse(l) as { payload?: string };
      if (!envelope.payload) throw new Error('an attestation without a payload');
      return JSON.parse(Buffer.from(envelope.payload, 'base64').toString('utf8')) as unknown;
    });
}

function readJson(path: string): unknown {
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as unknown;
  } catch {
    return undefined;
  }
}

/** Checks the release in `dir`; returns every problem found (none: it verifies). */
export async function verifyRelease(opts: VerifyOptions): Promise<VerifyResult> {
  const env = opts.env ?? process.env;
  const tools = opts.tools ?? releaseTools(opts.repo, env);
  const listPath = join(opts.dir, RELEASE_FILES.list);
  if (!existsSync(listPath)) throw new Error(`${opts.dir} holds no ${RELEASE_FILES.list}: is it a release's directory?`);
  const list = JSON.parse(readFileSync(listPath, 'utf8')) as ReleaseList;
  const cosign = (args: string[]) => runTool(tools.cosign, args, { env });
  const blobSignature = (name: string, signature: string): Promise<Outcome> =>
    existsSync(join(opts.dir, signature))
      ? outcome(cosign(verifyBlobArgs(opts.key, join(opts.dir, name), join(opts.dir, signature))))
      : Promise.resolve({ error: `${signature} is missing` });

  // Every check is independent of the others: they run together, and the verdict reads them in
  // the list's order, so the report is the same whatever finishes first.
  const provPath = join(opts.dir, RELEASE_FILES.provenance);
  const provenanceCheck = (async () => ({
    statement: readJson(provPath),
    signature: existsSync(provPath) ? await blobSignature(RELEASE_FILES.provenance, signatureFile(RELEASE_FILES.provenance)) : { error: 'missing' },
  }))();
  // The files and attestations come from this code, not from release.json, which anyone can edit.
  const fileChecks = SIGNED_FILES.map(async (name): Promise<FileEvidence> => {
    const path = join(opts.dir, name);
    if (!existsSync(path)) return { name, signature: { error: 'missing' } };
    return { name, sha256: sha256(readFileSync(path)), signature: await blobSignature(name, signatureFile(name)) };
  });
  const predicates: Record<string, unknown> = {};
  for (const a of ATTESTATIONS)
    if (a.predicateFrom !== RELEASE_FILES.provenance) predicates[a.predicateFrom] = readJson(join(opts.dir, a.predicateFrom));

  const refChecks = list.artifacts.map(async (artifact): Promise<RefEvidence> => {
    const ref = opts.refs?.[artifact.role] ?? byTag(artifact);
    let digest: string | { error: string };
    try {
      digest = (await runTool(tools.crane, ['digest', ref], { env })).stdout.trim();
    } catch (err) {
      digest = errorOf(err);
    }
    if (typeof digest !== 'string') return { role: artifact.role, ref, digest, signature: { error: 'not checked' }, attestations: [] };
    // By the digest the tag resolved to: what was checked is what a pull by that digest gets.
    const pinned = `${repositoryOf(ref)}@${digest}`;
    const attestationChecks = ATTESTATIONS.filter((a) => a.role === artifact.role).map(async (spec): Promise<AttestationEvidence> => {
      try {
        const { stdout } = await cosign(verifyAttestationArgs(opts.key, pinned, spec.type));
        return { spec, statements: attestationStatements(stdout) };
      } catch (err) {
        return { spec, statements: errorOf(err) };
      }
    });
    const [signature, attestations] = await Promise.all([outcome(cosign(verifyArgs(opts.key, pinned))), Promise.all(attestationChecks)]);
    return { role: artifact.role, ref, digest, signature, attestations };
  });
  const [provenance, files, refs] = await Promise.all([provenanceCheck, Promise.all(fileChecks), Promise.all(refChecks)]);
  const manifestsRef = refs.find((r) => r.role === 'manifests');
  const manifestsAt =
    manifestsRef && typeof manifestsRef.digest === 'string' ? `${repositoryOf(manifestsRef.ref)}@${manifestsRef.digest}` : undefined;

  let manifestDifferences: Evidence['manifestDifferences'];
  let manifestFiles: ManifestFile[] | undefined;
  if (manifestsAt && (opts.dist || opts.extract)) {
    try {
      const at = manifestsAt;
      const manifest = await runToolBytes(tools.crane, ['manifest', at], { env });
      if (`sha256:${sha256(manifest)}` !== at.split('@')[1])
        throw new Error(`the registry served a manifest whose digest is not ${at.split('@')[1]}`);
      const blobs = new Map<string, Buffer>();
      for (const layer of (JSON.parse(manifest.toString('utf8')) as { layers?: { digest: string }[] }).layers ?? [])
        blobs.set(layer.digest, await runToolBytes(tools.crane, ['blob', `${repositoryOf(at)}@${layer.digest}`], { env }));
      manifestFiles = readManifestsArtifact(manifest, (d) => blobs.get(d) ?? Buffer.alloc(0));
      if (opts.dist) manifestDifferences = compareTrees(readDist(opts.dist), manifestFiles);
    } catch (err) {
      manifestDifferences = errorOf(err);
    }
  }

  const evidence: Evidence = { provenance, files, predicates, refs, ...(manifestDifferences !== undefined ? { manifestDifferences } : {}) };
  const problems = judge(evidence, opts.version !== undefined ? { version: opts.version } : {});
  // Only a release that verified is unpacked: an extracted tree is a promise that it is the signed one.
  if (problems.length === 0 && opts.extract && manifestFiles) {
    for (const f of manifestFiles) {
      const path = join(opts.extract, f.path);
      mkdirSync(dirname(path), { recursive: true });
      writeFileSync(path, f.content);
    }
  }
  const external = (provenance.statement as ProvenanceStatement | undefined)?.predicate?.buildDefinition?.externalParameters;
  return {
    problems,
    checked: refs.map((r) => ({ role: r.role, ref: r.ref, ...(typeof r.digest === 'string' ? { digest: r.digest } : {}) })),
    ...(problems.length === 0 && external ? { release: external } : {}),
  };
}
