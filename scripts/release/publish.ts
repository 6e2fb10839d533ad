/**
 * The release step: from a checkout whose image is built (`npm run build:oci`) and whose dist/ is
 * rendered, it writes the SBOMs and the provenance to an output directory, pushes the image and the
 * manifests artifact to a registry, and signs all of it with the project key (cosign, keyed, no
 * transparency log). The decisions (what the SBOMs, the artifact, the provenance and the list
 * hold) are the pure modules beside this one; this file reads, runs the tools and writes.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { debianRelease, parsePackageList } from '../oci/packages';
import { lockedNode, PINNED_NODE_PACKAGE } from '../pinned-node';
import { attestArgs, signArgs, signBlobArgs } from './cosign-commands';
import { checkPackagesPinned, readImageContents, unpackLayout } from './image-contents';
import { manifestsArtifact, readDist, writeArtifactLayout } from './manifests-artifact';
import { shippedTree, type Lockfile } from './npm-tree';
import {
  DEFAULT_BUILDER_ID,
  integrityDigest,
  provenanceStatement,
  sourceDependency,
  subject,
  wholeSeconds,
  type ExternalParameters,
  type ResourceDescriptor,
} from './provenance';
import {
  ATTESTATIONS,
  byDigest,
  byTag,
  RELEASE_FILES,
  releaseList,
  repositoryFor,
  signatureFile,
  type PublishedArtifact,
  type ReleaseList,
} from './release-list';
import { debPurl, imageSbom, npmSbom, renderJson } from './sbom';
import { releaseTools, runTool, type ReleaseTools } from './tools';

/** Options of {@link publishRelease}. */
export interface PublishOptions {
  /** The checkout. */
  readonly repo: string;
  /** Where the SBOMs, the provenance, the signatures and release.json go (created if missing). */
  readonly out: string;
  /** The cosign private key (a file, or a KMS URI cosign understands); its password in COSIGN_PASSWORD. */
  readonly key: string;
  /** `host[:port][/path]` the image and the manifests are pushed under. */
  readonly registry: string;
  /** The source repository's URI; default: the checkout's `origin` remote. */
  readonly source?: string;
  /** The builder's id in the provenance. @default DEFAULT_BUILDER_ID */
  readonly builderId?: string;
  /** Release a checkout with uncommitted changes (recorded as worktreeClean: false). @default false */
  readonly allowDirty?: boolean;
  /** The image archive; default: what `npm run build:oci` builds (or finds cached). */
  readonly imageArchive?: string;
  /** Environment of the tools (COSIGN_PASSWORD, registry credentials). @default process.env */
  readonly env?: NodeJS.ProcessEnv;
  readonly log?: (msg: string) => void;
  /** @default releaseTools(repo) */
  readonly tools?: ReleaseTools;
}

const sha256 = (data: Buffer | string) => createHash('sha256').update(data).digest('hex');

/** What the checkout's git says about the source. */
export interface SourceFacts {
  readonly commit: string;
  readonly clean: boolean;
  /** The commit time, RFC 3339: the SBOMs' timestamp, so one commit gives one SBOM. */
  readonly commitTime: string;
  /** `refs/tags/v<version>` when HEAD carries that tag. */
  readonly ref?: string;
  readonly origin?: string;
}

/** Reads the commit, whether the work tree is clean, the commit time, the release tag and origin. */
export function sourceFacts(repo: string, version: string): SourceFacts {
  const git = (...args: string[]) => execFileSync('git', args, { cwd: repo, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  const commit = git('rev-parse', 'HEAD');
  const clean = git('status', '--porcelain', '--untracked-files=no') === '';
  const commitTime = wholeSeconds(new Date(Number(git('log', '-1', '--format=%ct')) * 1000));
  const tag = `v${version}`;
  const tagged = git('tag', '--points-at', 'HEAD').split('\n').includes(tag);
  let origin: string | undefined;
  try {
    origin = git('remote', 'get-url', 'origin');
  } catch {
    origin = undefined;
  }
  return { commit, clean, commitTime, ...(tagged ? { ref: `refs/tags/${tag}` } : {}), ...(origin ? { origin } : {}) };
}

/** The image archive `npm run build:oci` prints last (built, or found in its cache). */
function buildImageArchive(repo: string, log: (msg: string) => void): string {
  log('npm run build:oci');
  const out = execFileSync('npm', ['run', '--silent', 'build:oci'], { cwd: repo, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  const path = out.trim().split('\n').at(-1) ?? '';
  if (!path.endsWith('.tar')) throw new Error(`npm run build:oci printed no archive (last line: "${path}")`);
  return path;
}

/** `crane push <layout> <ref>`: the digest it pushed, checked against the one expected. */
async function push(tools: ReleaseTools, layout: string, ref: string, want: string, env: NodeJS.ProcessEnv): Promise<void> {
  const { stdout } = await runTool(tools.crane, ['push', layout, ref], { env });
  const pushed = stdout.trim().split('@').at(-1);
  if (pushed !== want) throw new Error(`crane push ${ref} reported ${pushed ?? '(nothing)'}, expected ${want}`);
}

/** Runs the release step; returns the list it wrote to `<out>/release.json`. */
export async function publishRelease(opts: PublishOptions): Promise<ReleaseList> {
  const started = new Date();
  const log = opts.log ?? ((msg: string) => process.stderr.write(`[release:artifacts] ${msg}\n`));
  const env = opts.env ?? process.env;
  const { repo, out } = opts;
  const tools = opts.tools ?? releaseTools(repo, env);
  const pkg = JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8')) as { version: string };
  const version = pkg.version;
  const git = sourceFacts(repo, version);
  if (!git.clean && !opts.allowDirty)
    throw new Error('the work tree has uncommitted changes: commit them, or pass --allow-dirty for a trial release');
  const repository = opts.source ?? git.origin;
  if (!repository) throw new Error('the checkout has no origin remote: pass --source <repository URI>');
  const tool = { name: 'bucketoperator-release-artifacts', version };

  // What the image holds, held to the pinned package list.
  const archivePath = opts.imageArchive ?? buildImageArchive(repo, log);
  log(`reading ${archivePath}`);
  const archive = readFileSync(archivePath);
  const image = readImageContents(archive);
  // An archive of another version (a stale cache, a wrong --image-archive) must not be signed as this one.
  if (!image.name.endsWith(`/bucketoperator:${version}`))
    throw new Error(`${archivePath} is ${image.name || 'unnamed'}, not bucketoperator:${version}`);
  const listText = readFileSync(join(repo, 'scripts', 'image-packages.txt'), 'utf8');
  const list = parsePackageList(listText);
  checkPackagesPinned(image.packages, list.packages);
  const release = debianRelease(list);
  const lockText = readFileSync(join(repo, 'package-lock.json'), 'utf8');
  const lock = JSON.parse(lockText) as Lockfile;
  const tree = shippedTree(lock);
  const node = lockedNode(repo);
  const nodeResolved = lock.packages?.[`node_modules/${PINNED_NODE_PACKAGE}`]?.resolved;
  const debSha = new Map(list.packages.map((p) => [p.name, p.sha256]));
  const debs = image.packages.map((p) => ({ ...p, debSha256: debSha.get(p.name) ?? '' }));

  // The SBOMs.
  const imageRepository = repositoryFor(opts.registry, 'image');
  const manifestsRepository = repositoryFor(opts.registry, 'manifests');
  const npmBom = renderJson(npmSbom(tree, git.commitTime, tool));
  const imageBom = renderJson(
    imageSbom(
      {
        image: { name: 'bucketoperator', tag: version, digest: image.digest, architecture: image.architecture },
        debian: { release, packages: debs },
        node: {
          version: node.version,
          path: image.runtime.path,
          sha256: image.runtime.sha256,
          from: { name: PINNED_NODE_PACKAGE, version: node.version, integrity: node.integrity, ...(nodeResolved ? { resolved: nodeResolved } : {}) },
        },
        app: {
          name: tree.root.name,
          version,
          ...(tree.root.license ? { license: tree.root.license } : {}),
          bundlePath: image.script.path,
          bundleSha256: image.script.sha256,
          tree,
        },
      },
      git.commitTime,
      tool,
    ),
  );
  mkdirSync(out, { recursive: true });
  writeFileSync(join(out, RELEASE_FILES.npmSbom), npmBom);
  writeFileSync(join(out, RELEASE_FILES.imageSbom), imageBom);
  log(
    `wrote ${RELEASE_FILES.npmSbom} (${tree.packages.length} packages) and ${RELEASE_FILES.imageSbom} (${debs.length} Debian packages, node ${node.version}, the bundle)`,
  );

  const work = mkdtempSync(join(tmpdir(), 'bucketoperator-release-'));
  try {
    // The image and the manifests artifact, pushed.
    const imageArtifact: PublishedArtifact = { role: 'image', repository: imageRepository, tag: version, digest: image.digest };
    unpackLayout(archive, join(work, 'image'));
    log(`pushing ${byTag(imageArtifact)}`);
    await push(tools, join(work, 'image'), byTag(imageArtifact), image.digest, env);
    const manifests = manifestsArtifact(readDist(join(repo, 'dist')), {
      'org.opencontainers.image.revision': git.commit,
      'org.opencontainers.image.source': repository,
      'org.opencontainers.image.version': version,
    });
    const manifestsRef: PublishedArtifact = { role: 'manifests', repository: manifestsRepository, tag: version, digest: manifests.digest };
    writeArtifactLayout(manifests, join(work, 'manifests'), version);
    log(`pushing ${byTag(manifestsRef)} (${manifests.layers.map((l) => l.title).join(', ')})`);
    await push(tools, join(work, 'manifests'), byTag(manifestsRef), manifests.digest, env);

    // The provenance.
    const external: ExternalParameters = {
      source: { repository, commit: git.commit, ...(git.ref ? { ref: git.ref } : {}) },
      version,
      registry: opts.registry,
    };
    const deps: ResourceDescriptor[] = [
      sourceDependency(external),
      { name: 'package-lock.json', digest: { sha256: sha256(lockText) } },
      { name: 'scripts/image-packages.txt', digest: { sha256: sha256(listText) } },
      { uri: `pkg:npm/${PINNED_NODE_PACKAGE}@${node.version}`, digest: integrityDigest(node.integrity) },
      ...list.packages.map((p) => ({
        uri: debPurl(p.name, p.version, image.packages.find((r) => r.name === p.name)?.architecture ?? 'amd64', release),
        digest: { sha256: p.sha256 },
      })),
    ];
    const statement = provenanceStatement({
      subjects: [
        subject(imageRepository, image.digest),
        subject(manifestsRepository, manifests.digest),
        subject(RELEASE_FILES.npmSbom, sha256(npmBom)),
        subject(RELEASE_FILES.imageSbom, sha256(imageBom)),
      ],
      external,
      worktreeClean: git.clean,
      dependencies: deps,
      builderId: opts.builderId ?? DEFAULT_BUILDER_ID,
      builderVersion: { cosign: tools.versions.cosign, crane: tools.versions.crane, node: process.version },
      startedOn: wholeSeconds(started),
      finishedOn: wholeSeconds(new Date()),
    });
    const provenance = renderJson(statement);
    writeFileSync(join(out, RELEASE_FILES.provenance), provenance);
    const predicateFile = join(work, 'provenance.predicate.json');
    writeFileSync(predicateFile, renderJson(statement.predicate));

    // Signatures and attestations.
    const cosign = (args: string[]) => runTool(tools.cosign, args, { env });
    for (const a of [imageArtifact, manifestsRef]) {
      log(`signing ${byDigest(a)}`);
      await cosign(signArgs(opts.key, byDigest(a)));
    }
    for (const spec of ATTESTATIONS) {
      const target = spec.role === 'image' ? imageArtifact : manifestsRef;
      const predicate = spec.predicateFrom === RELEASE_FILES.provenance ? predicateFile : join(out, spec.predicateFrom);
      log(`attesting ${spec.type} on ${byDigest(target)}`);
      await cosign(attestArgs(opts.key, byDigest(target), spec.type, predicate));
    }
    const files = [RELEASE_FILES.npmSbom, RELEASE_FILES.imageSbom, RELEASE_FILES.provenance];
    for (const f of files) await cosign(signBlobArgs(opts.key, join(out, f), join(out, signatureFile(f))));
    log(`signed ${files.join(', ')}`);

    const listed = releaseList(
      version,
      git.commit,
      [imageArtifact, manifestsRef],
      files.map((name) => ({ name, sha256: sha256(readFileSync(join(out, name))) })),
    );
    writeFileSync(join(out, RELEASE_FILES.list), renderJson(listed));
    log(`done: ${byTag(imageArtifact)}@${image.digest}, ${byTag(manifestsRef)}@${manifests.digest}, files in ${out}`);
    return listed;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}
