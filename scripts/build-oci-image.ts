/**
 * Builds the operator's image (and the mock provider's) as an OCI archive, without Docker or a
 * registry: a base made from pinned Debian packages as distroless makes its nodejs base, the
 * pinned Node binary at /nodejs/bin/node, and /app filled and configured by the Dockerfile's
 * runtime stage, applied instruction by instruction (scripts/oci/dockerfile.ts), so the archive
 * follows the same file `docker build` does. A node imports the result with
 * `ctr -n k8s.io images import <archive>`.
 *
 *   npm run build:oci                          the operator (operator/Dockerfile)
 *   npm run build:oci -- --image provider      the mock provider (scripts/oci/provider.Dockerfile)
 *   npm run build:oci -- --image all           both, one archive path a line, the operator last
 *   npm run build:oci -- --app DIR --dist DIR  the operator from a ready /app (an earlier
 *                                              release's build), named as that dist/ names it
 *
 * The operator's /app is what `npm run build:image` builds (its last stdout line), which is the
 * Dockerfile's build stage step for step; the provider's is `tsx scripts/bundle.ts --provider`,
 * its Dockerfile's build stage. Names: the operator's is the image dist/'s Deployment runs
 * (docker.io/library/bucketoperator:<version> once normalised, as the kubelet resolves it); the
 * provider's is bucketoperator-provider:<package.json version>.
 *
 * Each archive is cached under $BUCKETOPERATOR_CACHE/oci/images/<worktree>-<hash> (default
 * root ~/.cache/bucketoperator; one directory per checkout, as scripts/build-image.sh keeps its),
 * named by a hash of every input (the Dockerfile, the package list, the pinned Node, the /app
 * tree, this builder's sources): a warm run is that hash. Only the newest archive of each image
 * stays. The .debs are shared by all checkouts under $BUCKETOPERATOR_CACHE/oci/debs
 * (scripts/install-image-packages.sh, keyed by version and digest).
 * SOURCE_DATE_EPOCH, when set, is the images' creation time (default: the epoch, as distroless).
 *
 * Progress goes to stderr; stdout is the archive path(s), the last line the operator's.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, existsSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { basename, join, posix } from 'node:path';
import { parseArgs } from 'node:util';
import { parseAllDocuments } from 'yaml';
import { bundleProvider } from './bundle';
import { canonicalJson, normalizeRef, refTag, writeOciArchive, type LayerEntry, type WrittenImage } from './oci/archive';
import { baseLayer, distrolessConfig, distrolessImage, nodeLayer, readDeb } from './oci/base';
import { parseDockerfile, runtimeRecipe, type RuntimeRecipe, type Stage } from './oci/dockerfile';
import { debFileName, debianRelease, parsePackageList, type PackageList } from './oci/packages';
import { treeEntries } from './oci/tree';
import { PINNED_NODE_PACKAGE, pinnedNode, REPO_ROOT, type PinnedNode } from './pinned-node';

/** The images this script builds. */
export type ImageId = 'operator' | 'provider';

/** Where an image's recipe and /app come from. */
export interface ImageSource {
  readonly id: ImageId;
  /** Relative to the repository. */
  readonly dockerfile: string;
  readonly ref: string;
  /** A ready /app to use instead of building one (the operator's only: an earlier release's build). */
  readonly appDir?: string;
}

const log = (msg: string) => process.stderr.write(`[build:oci ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);

/** The image dist/'s operator Deployment runs (its first container's `image`). */
export function distOperatorImage(manifest: string): string {
  for (const doc of parseAllDocuments(manifest)) {
    const obj = doc.toJS() as { kind?: string; spec?: { template?: { spec?: { containers?: { image?: string }[] } } } } | null;
    const image = obj?.kind === 'Deployment' ? obj.spec?.template?.spec?.containers?.[0]?.image : undefined;
    if (image) return image;
  }
  throw new Error('dist/04-manager.yaml holds no Deployment with a container image');
}

/** Both images' sources, their names read from dist/ and package.json. */
export function imageSources(repo: string): Record<ImageId, ImageSource> {
  const version = (JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8')) as { version: string }).version;
  return {
    operator: {
      id: 'operator',
      dockerfile: 'operator/Dockerfile',
      ref: distOperatorImage(readFileSync(join(repo, 'dist', '04-manager.yaml'), 'utf8')),
    },
    provider: { id: 'provider', dockerfile: 'scripts/oci/provider.Dockerfile', ref: `bucketoperator-provider:${version}` },
  };
}

/**
 * Checks that the runtime stage starts from the distroless image this base stands for: the
 * pinned Node's major line on the package list's Debian release. Throws naming both.
 */
export function checkBase(recipe: RuntimeRecipe, dockerfile: string, nodeVersion: string, list: PackageList): void {
  const want = distrolessImage(Number(nodeVersion.split('.')[0]), debianRelease(list));
  if (recipe.base !== want) {
    throw new Error(
      `${dockerfile}'s runtime stage starts FROM ${recipe.base}, but the image is built on ${want} (the pinned Node ${nodeVersion} on the Debian release of scripts/image-packages.txt): make them agree`,
    );
  }
}

/**
 * The /app layer: the directories WORKDIR creates and what each COPY puts in place. A COPY from
 * an earlier stage takes its content from `appDir`, the local build of the directory the final
 * WORKDIR holds (its path below that WORKDIR); a COPY from the build context takes it from the
 * repository. Throws when a COPY lands outside the final WORKDIR or when `appDir` holds entries
 * no COPY names (or lacks one a COPY names).
 */
export function appLayer(recipe: RuntimeRecipe, appDir: string, repo: string): LayerEntry[] {
  const workdir = recipe.config.WorkingDir ?? '/';
  const entries: LayerEntry[] = recipe.workdirs.map((w) => ({ type: 'dir', path: w.path, mode: 0o755, uid: w.uid, gid: w.gid }));
  const named = new Set<string>();
  for (const c of recipe.copies) {
    const owner = { uid: c.uid, gid: c.gid };
    if (c.from === undefined) {
      entries.push(...treeEntries(join(repo, c.source), c.target, owner));
      continue;
    }
    const rel = posix.relative(workdir, c.target);
    if (rel === '' || rel.startsWith('..'))
      throw new Error(`COPY --from=${c.from} ${c.source} lands at ${c.target}, outside WORKDIR ${workdir}, which the local build mirrors`);
    named.add(rel.split('/')[0] ?? rel);
    const local = join(appDir, rel);
    if (!existsSync(local)) throw new Error(`COPY --from=${c.from} ${c.source} ${c.target}: the local build ${appDir} has no ${rel}`);
    entries.push(...treeEntries(local, c.target, owner));
  }
  const held = readdirSync(appDir)
    .filter((n) => !n.startsWith('.'))
    .sort();
  const copied = [...named].sort();
  if (canonicalJson(held) !== canonicalJson(copied)) {
    throw new Error(`the local build ${appDir} holds [${held.join(', ')}] but the runtime stage copies [${copied.join(', ')}]`);
  }
  // Later COPYs win over earlier ones and over the WORKDIR directory, as in a layer they would.
  const byPath = new Map<string, LayerEntry>();
  for (const e of entries) byPath.set(posix.normalize(e.path), e);
  return [...byPath.values()];
}

/** SHA-256 of a file tree: every path, type, executable bit and content, in name order. */
export function hashTree(root: string, paths: readonly string[]): string {
  const h = createHash('sha256');
  for (const p of [...paths].sort()) {
    for (const e of treeEntries(join(root, p), `/${p}`, { uid: 0, gid: 0 })) {
      h.update(`${e.type} ${e.path} ${e.type === 'symlink' ? e.target : e.mode.toString(8)}\n`);
      if (e.type === 'file') h.update(createHash('sha256').update(e.content).digest('hex'));
    }
  }
  return h.digest('hex');
}

function cacheRoot(): string {
  return process.env['BUCKETOPERATOR_CACHE'] ?? join(homedir(), '.cache', 'bucketoperator');
}

/**
 * This checkout's own cache directory under `oci/<kind>/`, named as scripts/build-image.sh names
 * its: worktrees of one machine share the cache root but build different sources, and one must
 * never delete the archive another is about to hand to a node.
 */
function worktreeCache(repo: string, kind: string): string {
  return join(cacheRoot(), 'oci', kind, `${basename(repo)}-${createHash('sha256').update(repo).digest('hex').slice(0, 12)}`);
}

/** The operator's /app: `npm run build:image`, its last stdout line. */
function operatorApp(repo: string): string {
  log('npm run build:image');
  const out = execFileSync('npm', ['run', '--silent', 'build:image'], { cwd: repo, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  const dir = out.trim().split('\n').at(-1) ?? '';
  if (!dir || !existsSync(dir)) throw new Error(`npm run build:image printed no directory (last line: "${dir}")`);
  return dir;
}

/**
 * The provider's /app, as its Dockerfile's build stage makes it: the provider bundle and
 * package.json. Cached by a hash of what that stage copies from the build context.
 */
async function providerApp(repo: string, stages: readonly Stage[]): Promise<string> {
  const build = stages[0];
  if (!build || stages.length < 2) throw new Error('scripts/oci/provider.Dockerfile has no build stage');
  const inputs = build.instructions
    .filter((i) => i.keyword === 'COPY' && !i.args.startsWith('--from'))
    .flatMap((i) => i.args.split(/\s+/).slice(0, -1))
    .sort();
  const key = hashTree(repo, inputs).slice(0, 16);
  const dir = join(worktreeCache(repo, 'provider-app'), key);
  if (existsSync(join(dir, '.done'))) return dir;
  log(`bundling the provider (${inputs.join(' ')})`);
  const work = `${dir}.${process.pid}.work`;
  rmSync(work, { recursive: true, force: true });
  await bundleProvider(repo, work);
  cpSync(join(repo, 'package.json'), join(work, 'package.json'));
  writeFileSync(join(work, '.done'), `${key}\n`);
  // A build running beside this one may have finished first: its result is the same.
  if (existsSync(join(dir, '.done'))) rmSync(work, { recursive: true, force: true });
  else {
    rmSync(dir, { recursive: true, force: true });
    renameSync(work, dir);
  }
  // Bundles of older sources are never read again; another run's work in progress stays.
  const parent = join(dir, '..');
  for (const f of readdirSync(parent)) if (f !== key && !f.endsWith('.work')) rmSync(join(parent, f), { recursive: true, force: true });
  return dir;
}

/** The .debs of the list, fetched (or found) by scripts/install-image-packages.sh. */
function fetchDebs(repo: string): string {
  const dir = join(cacheRoot(), 'oci', 'debs');
  execFileSync('bash', [join(repo, 'scripts', 'install-image-packages.sh'), dir], { stdio: ['ignore', 'ignore', 'inherit'] });
  return dir;
}

const mib = (n: number) => `${(n / 1048576).toFixed(1)} MiB`;

/** Sizes of a written image, for the log. */
export function describeImage(w: WrittenImage): string {
  const compressed = w.layers.reduce((s, l) => s + l.size, 0);
  const uncompressed = w.layers.reduce((s, l) => s + l.uncompressedSize, 0);
  return `${w.name} ${w.manifestDigest.slice(0, 19)}: layers ${mib(compressed)} compressed, ${mib(uncompressed)} uncompressed (${w.layers.map((l) => mib(l.size)).join(' + ')}); archive ${mib(w.archiveSize)}`;
}

interface Shared {
  readonly repo: string;
  readonly node: PinnedNode;
  readonly listText: string;
  readonly list: PackageList;
  readonly created: string;
  readonly builderHash: string;
  /** Base and Node layers, made once for every image of the run. */
  lower?: { base: LayerEntry[]; node: LayerEntry[] };
  readonly layerCache: Map<string, Buffer>;
}

function lowerLayers(s: Shared): { base: LayerEntry[]; node: LayerEntry[] } {
  if (s.lower) return s.lower;
  const debs = fetchDebs(s.repo);
  log(`base: ${s.list.packages.length} Debian packages, node ${s.node.version}`);
  const base = baseLayer(s.list.packages.map((p) => readDeb(p.name, join(debs, debFileName(p)))));
  const pkgDir = join(s.repo, 'node_modules', PINNED_NODE_PACKAGE);
  const node = nodeLayer(readFileSync(s.node.path), readFileSync(join(pkgDir, 'LICENSE')));
  s.lower = { base, node };
  return s.lower;
}

async function buildImage(s: Shared, source: ImageSource): Promise<string> {
  const dockerfileText = readFileSync(join(s.repo, source.dockerfile), 'utf8');
  const stages = parseDockerfile(dockerfileText);
  const recipe = runtimeRecipe(stages, distrolessConfig());
  checkBase(recipe, source.dockerfile, s.node.version, s.list);
  const appDir = source.appDir ?? (source.id === 'operator' ? operatorApp(s.repo) : await providerApp(s.repo, stages));
  const appHash = hashTree(
    appDir,
    readdirSync(appDir).filter((n) => !n.startsWith('.')),
  );
  const key = createHash('sha256')
    .update(
      canonicalJson({
        ref: source.ref,
        dockerfile: dockerfileText,
        packages: s.listText,
        node: { version: s.node.version, integrity: s.node.integrity },
        app: appHash,
        builder: s.builderHash,
        created: s.created,
      }),
    )
    .digest('hex')
    .slice(0, 16);
  const name = normalizeRef(source.ref);
  const repoName = name.slice(name.lastIndexOf('/') + 1).replace(/:.*$/, '');
  const stem = `${repoName}_${refTag(name)}`;
  const dir = worktreeCache(s.repo, 'images');
  const out = join(dir, `${stem}-${key}.tar`);
  const summary = `${out}.json`;
  if (existsSync(out) && existsSync(summary)) {
    log(`${source.id}: up to date (${key})`);
    log(describeImage(JSON.parse(readFileSync(summary, 'utf8')) as WrittenImage));
    return out;
  }
  const { base, node } = lowerLayers(s);
  log(`${source.id}: writing ${out}`);
  const written = await writeOciArchive(
    {
      ref: source.ref,
      created: s.created,
      layers: [base, node, appLayer(recipe, appDir, s.repo)],
      history: [
        `Debian ${debianRelease(s.list)}: ${s.list.packages.map((p) => `${p.name}=${p.version}`).join(' ')}; users root, nobody, nonroot (65532)`,
        `Node ${s.node.version} (${PINNED_NODE_PACKAGE}, ${s.node.integrity}) at /nodejs/bin/node`,
        `${source.dockerfile}: the runtime stage's WORKDIR and COPY`,
      ],
      config: recipe.config,
    },
    out,
    { layerCache: s.layerCache },
  );
  writeFileSync(summary, `${JSON.stringify(written, null, 2)}\n`);
  // Older archives of this image (any tag) are never read again.
  for (const f of readdirSync(dir))
    if (f.startsWith(`${repoName}_`) && !f.startsWith(`${stem}-${key}.`) && !f.endsWith('.partial')) rmSync(join(dir, f), { force: true });
  log(describeImage(written));
  return out;
}

/** The creation time: SOURCE_DATE_EPOCH (seconds) when set, else the epoch. */
export function creationTime(env: Readonly<Record<string, string | undefined>>): string {
  const epoch = env['SOURCE_DATE_EPOCH'];
  if (epoch === undefined || epoch === '') return '1970-01-01T00:00:00Z';
  if (!/^\d+$/.test(epoch)) throw new Error(`SOURCE_DATE_EPOCH must be whole seconds, got "${epoch}"`);
  return new Date(Number(epoch) * 1000).toISOString().replace(/\.000Z$/, 'Z');
}

async function main(argv: readonly string[]): Promise<void> {
  const { values } = parseArgs({
    args: [...argv],
    options: { image: { type: 'string', default: 'operator' }, app: { type: 'string' }, dist: { type: 'string' } },
    strict: true,
  });
  const wanted: readonly ImageId[] | undefined =
    values.image === 'all' ? ['provider', 'operator'] : values.image === 'operator' || values.image === 'provider' ? [values.image] : undefined;
  if (!wanted) throw new Error(`--image must be operator, provider or all, got "${values.image}"`);
  const started = Date.now();
  const repo = REPO_ROOT;
  const listText = readFileSync(join(repo, 'scripts', 'image-packages.txt'), 'utf8');
  const builderFiles = [
    'scripts/build-oci-image.ts',
    'scripts/bundle.ts',
    'scripts/install-image-packages.sh',
    ...readdirSync(join(repo, 'scripts', 'oci')).map((f) => `scripts/oci/${f}`),
  ];
  const shared: Shared = {
    repo,
    node: pinnedNode(repo),
    listText,
    list: parsePackageList(listText),
    created: creationTime(process.env),
    builderHash: hashTree(repo, builderFiles),
    layerCache: new Map(),
  };
  const sources = imageSources(repo);
  if (values.app !== undefined || values.dist !== undefined) {
    // Another build of the operator (an earlier release's /app) under the name its dist/ runs,
    // on this checkout's base, Node and runtime stage: how the node tests run a past release.
    if (!values.app || !values.dist || values.image !== 'operator') throw new Error('--app and --dist go together, with --image operator');
    sources.operator = {
      ...sources.operator,
      appDir: values.app,
      ref: distOperatorImage(readFileSync(join(values.dist, '04-manager.yaml'), 'utf8')),
    };
  }
  for (const id of wanted) {
    const out = await buildImage(shared, sources[id]);
    process.stdout.write(`${out}\n`);
  }
  log(`done in ${((Date.now() - started) / 1000).toFixed(1)}s`);
}

if (require.main === module) {
  main(process.argv.slice(2)).catch((err: unknown) => {
    process.stderr.write(`[build:oci] ERROR: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
}
