/**
 * Bundles the compiled operator into the one file the image ships: `<tscOut>/operator/main.js`
 * (what `tsc -p tsconfig.build.json` emits) becomes `<outDir>/operator/main.js`, production
 * dependencies inlined, so the image needs no node_modules. One file instead of about a hundred
 * modules plus node_modules takes about 10 MiB off the operator's idle RSS (fewer module
 * wrappers, one source string, no package.json reads and resolution caches).
 *
 *   tsx scripts/bundle.ts <tscOut> <outDir>      (run from the repository root)
 *   tsx scripts/bundle.ts --provider <outDir>    the mock provider, from its TypeScript source,
 *                                                to <outDir>/provider/main.js
 *
 * operator/Dockerfile and scripts/build-image.sh both run it (IMAGE_BUNDLE_SCRIPT in
 * scripts/image.env). It fails, instead of shipping a bundle that fails later, when esbuild
 * warns (a dynamic require it cannot follow, say) or when the operator imports a development or
 * peer dependency: those stay external, and the image has nothing to load them from.
 */
import { build, formatMessages, type Message, type Metafile } from 'esbuild';
import { mkdirSync, readFileSync } from 'node:fs';
import { isBuiltin } from 'node:module';
import { join, resolve } from 'node:path';

/** The package.json fields the bundle reads. */
export interface PackageManifest {
  readonly devDependencies?: Readonly<Record<string, string>>;
  readonly peerDependencies?: Readonly<Record<string, string>>;
  readonly engines?: Readonly<Record<string, string>>;
}

/** What one bundle run produced. */
export interface BundleResult {
  readonly outfile: string;
  readonly bytes: number;
  /** Source files inlined (the operator's modules and those of its dependencies). */
  readonly inputs: number;
}

/** Options of {@link bundleFile}. */
export interface BundleOptions {
  /** The compiled entry point. */
  readonly entry: string;
  readonly outfile: string;
  /** The directory whose node_modules and package.json the bundle resolves against. */
  readonly repo: string;
}

/**
 * Every development and peer dependency: never inlined. An operator module that imports one
 * then fails {@link bundleFile} (and would fail in the image) instead of shipping a test tool or
 * a cdk8s peer in the operator.
 */
export function externalPackages(manifest: PackageManifest): string[] {
  return [...new Set([...Object.keys(manifest.devDependencies ?? {}), ...Object.keys(manifest.peerDependencies ?? {})])].sort();
}

/**
 * esbuild's target: the Node release the image runs, which is the floor of `engines.node`
 * (`^X.Y.Z`; test/unit/image/node-runtime.test.ts holds it to the pinned binary and the
 * Dockerfile), so esbuild lowers no syntax that Node runs natively.
 */
export function nodeTarget(manifest: PackageManifest): string {
  const range = manifest.engines?.['node'] ?? '';
  const m = /^\^(\d+\.\d+\.\d+)$/.exec(range);
  if (!m?.[1]) throw new Error(`package.json engines.node must be ^X.Y.Z (the pinned Node release), got "${range}"`);
  return `node${m[1]}`;
}

/**
 * Imports the bundle leaves to run time that the image cannot satisfy: anything external that
 * is not a Node built-in. A `require.resolve` is a probe, not a load: operator/main.ts asks for
 * pino-pretty that way to refuse `--log-format pretty` with a clear message where it is missing.
 */
export function unresolvedImports(metafile: Metafile): string[] {
  const found: string[] = [];
  for (const [file, input] of Object.entries(metafile.inputs)) {
    for (const imp of input.imports) {
      if (imp.external === true && imp.kind !== 'require-resolve' && !isBuiltin(imp.path)) found.push(`${file} imports ${imp.path}`);
    }
  }
  return found.sort();
}

async function describe(messages: Message[], kind: 'error' | 'warning'): Promise<string> {
  return (await formatMessages(messages, { kind, color: false })).join('').trim();
}

/** Bundles `entry` into `outfile`; throws on any esbuild warning or unresolved import. */
export async function bundleFile(opts: BundleOptions): Promise<BundleResult> {
  const manifest = JSON.parse(readFileSync(join(opts.repo, 'package.json'), 'utf8')) as PackageManifest;
  const result = await build({
    entryPoints: [opts.entry],
    outfile: opts.outfile,
    bundle: true,
    platform: 'node',
    target: nodeTarget(manifest),
    format: 'cjs',
    external: externalPackages(manifest),
    // tsc may emit outside the checkout (scripts/build-image.sh does); packages still come
    // from the checkout's node_modules, which holds exactly the lockfile's versions.
    nodePaths: [join(opts.repo, 'node_modules')],
    // Whitespace and syntax only: identifiers keep their names, so logged stacks read as the
    // source does. A full minify (renamed locals) measured about 4 MiB more idle RSS, not
    // less, and --keep-names on top of this about 1 MiB more for nothing the logs need.
    minifyWhitespace: true,
    minifySyntax: true,
    legalComments: 'eof',
    metafile: true,
    logLevel: 'silent',
    // Debug-level by default, so esbuild would bundle these silently; each is code that loads
    // a module by a computed name, which a bundle cannot hold.
    logOverride: { 'unsupported-require-call': 'warning', 'unsupported-dynamic-import': 'warning' },
  }).catch(async (err: unknown) => {
    const errors = (err as { errors?: Message[] }).errors;
    throw new Error(errors ? `esbuild failed:\n${await describe(errors, 'error')}` : 'esbuild failed', { cause: err });
  });
  if (result.warnings.length > 0) {
    throw new Error(`esbuild warned; the bundle may not run as the modules do:\n${await describe(result.warnings, 'warning')}`);
  }
  const missing = unresolvedImports(result.metafile);
  if (missing.length > 0) {
    throw new Error(
      `the operator imports packages that are not production dependencies (the image has no node_modules to load them from):\n  ${missing.join('\n  ')}`,
    );
  }
  const output = result.metafile.outputs[Object.keys(result.metafile.outputs)[0] ?? ''];
  return { outfile: opts.outfile, bytes: output?.bytes ?? 0, inputs: Object.keys(result.metafile.inputs).length };
}

/**
 * Bundles the mock provider (provider/main.ts, compiled by esbuild itself: the provider is no
 * part of tsconfig.build.json) into `<outDir>/provider/main.js`, for the provider's image
 * (scripts/oci/provider.Dockerfile).
 */
export async function bundleProvider(repo: string, outDir: string): Promise<BundleResult> {
  mkdirSync(join(outDir, 'provider'), { recursive: true });
  return bundleFile({ entry: join(repo, 'provider', 'main.ts'), outfile: resolve(outDir, 'provider', 'main.js'), repo });
}

async function main(argv: readonly string[]): Promise<void> {
  const [tscOut, outDir] = argv;
  if (!tscOut || !outDir || argv.length !== 2) throw new Error('usage: tsx scripts/bundle.ts <tscOut> <outDir> | --provider <outDir>');
  const repo = process.cwd();
  if (tscOut === '--provider') {
    const res = await bundleProvider(repo, outDir);
    process.stderr.write(`bundle: ${res.inputs} modules -> ${res.outfile} (${(res.bytes / 1024).toFixed(0)} KiB)\n`);
    return;
  }
  mkdirSync(join(outDir, 'operator'), { recursive: true });
  const res = await bundleFile({
    entry: resolve(tscOut, 'operator', 'main.js'),
    outfile: resolve(outDir, 'operator', 'main.js'),
    repo,
  });
  process.stderr.write(`bundle: ${res.inputs} modules -> ${res.outfile} (${(res.bytes / 1024).toFixed(0)} KiB)\n`);
}

if (require.main === module) {
  main(process.argv.slice(2)).catch((err: unknown) => {
    process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
}
