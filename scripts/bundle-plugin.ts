/**
 * Builds the `kubectl bucket` plugin as the package ships it, into `<outDir>/cli/`:
 *
 * - `main.js`, the package's `bin` (cli/bin.ts): turns on Node's compile cache, then loads
 * - `plugin.js`: cli/main.ts and what `trace` and `why` run (the client, the kubeconfig reader,
 *   the commands), as one CommonJS file. Node reads one file instead of about a hundred modules
 *   and their package.json files, and the commands' modules stay lazy inside it (esbuild keeps
 *   a dynamic import as a function that runs the module's body when first asked for).
 * - one file per {@link LAZY_BUNDLES} entry: code only some commands run, required by
 *   `plugin.js` when first needed. A bundle's every top-level function is created when the file
 *   loads, used or not: the YAML library and TypeBox inlined made `plugin.js` four times larger
 *   and `version` take about a fifth more CPU than the unbundled modules did.
 *
 * Every file inlines what it needs: the installed plugin loads nothing from node_modules.
 * `npm run build:lib` runs this (and so `npm pack`, by prepack), as does test/support/plugin.ts
 * for the end-to-end tests. Like scripts/bundle.ts (the operator image's bundle, whose settings
 * it shares) it fails rather than ship a bundle that fails later: on an esbuild warning, or when
 * the plugin imports a development or peer dependency.
 *
 *   tsx scripts/bundle-plugin.ts [outDir]     (default: lib, beside tsc's output)
 */
import { build, formatMessages, type BuildOptions, type Message, type Metafile, type Plugin } from 'esbuild';
import { readFileSync } from 'node:fs';
import { join, relative, resolve, sep } from 'node:path';
import { externalPackages, nodeTarget, unresolvedImports, type PackageManifest } from './bundle';

/** The executable (the package's `bin`), under the output directory. */
export const PLUGIN_BIN = join('cli', 'main.js');
/** The main bundle, beside the executable. */
export const PLUGIN_BUNDLE = join('cli', 'plugin.js');

/** A module bundled into a file of its own, loaded by the plugin when a command first needs it. */
export interface LazyBundle {
  /** The module, relative to the repository, as esbuild resolves it. */
  readonly module: string;
  /** The file beside `plugin.js`. */
  readonly file: string;
}

/**
 * The code `trace` and `why` of a v1 object never run. Each file is whole (a module that two of
 * them import is in both): what crosses between them is plain data.
 */
export const LAZY_BUNDLES: readonly LazyBundle[] = [
  // report writes YAML; a kubeconfig the fast path of cli/kubeconfig-yaml.ts does not read.
  { module: 'node_modules/yaml/dist/index.js', file: 'yaml.js' },
  // Objects served in another version than v1 (cli/as-v1.ts), with their schemas and TypeBox.
  { module: 'operator/api/convert/index.ts', file: 'convert.js' },
  // adopt and orphan check values against the v1 schemas (cli/edits.ts).
  { module: 'operator/api/v1/index.ts', file: 'api-v1.js' },
];

/**
 * Node built-ins that only a rare path uses, loaded when first used instead of when the
 * client's modules load: each costs milliseconds of modules of its own. child_process (an exec
 * credential plugin) brings dgram and the IPC machinery; fs/promises (a token file) readline;
 * http2 (the plugin speaks HTTP/1.1, cli/kube.ts) assert, fs/promises and readline. For each,
 * the names the plugin's modules import by name (esbuild fails the build when one imports a
 * name not listed); a default import gets an object that loads the module on first use.
 */
export const LAZY_BUILTINS: Readonly<Record<string, readonly string[]>> = {
  'node:child_process': ['spawn'],
  'node:fs/promises': ['readFile', 'stat'],
  'node:http2': [],
};

/** The module that stands in for `yaml` in operator/runtime/kubeconfig.ts. */
export const KUBECONFIG_YAML = join('cli', 'kubeconfig-yaml.ts');

/** What {@link bundlePlugin} produced. */
export interface PluginBuild {
  /** The executable (the package's `bin`). */
  readonly bin: string;
  /** Every file, the executable first; each with the sources inlined into it, relative to the repository. */
  readonly files: readonly { readonly path: string; readonly bytes: number; readonly inputs: readonly string[] }[];
}

async function describe(messages: Message[], kind: 'error' | 'warning'): Promise<string> {
  return (await formatMessages(messages, { kind, color: false })).join('').trim();
}

/** Runs one esbuild build; any warning or error becomes one thrown Error. */
async function checkedBuild(options: BuildOptions & { metafile: true }): Promise<Metafile> {
  const result = await build({ ...options, logLevel: 'silent' }).catch(async (err: unknown) => {
    const errors = (err as { errors?: Message[] }).errors;
    throw new Error(errors ? `esbuild failed:\n${await describe(errors, 'error')}` : 'esbuild failed', { cause: err });
  });
  if (result.warnings.length > 0) {
    throw new Error(`esbuild warned; the plugin may not run as its modules do:\n${await describe(result.warnings, 'warning')}`);
  }
  return result.metafile;
}

/**
 * operator/runtime/kubeconfig.ts reads kubeconfig files with `yaml`; in the plugin it gets
 * cli/kubeconfig-yaml.ts instead: the same `parse`, with a fast path for the plain block style
 * kubeconfigs are written in. Every other importer of `yaml` gets the package.
 */
function kubeconfigYaml(repo: string): Plugin {
  const importer = join(repo, 'operator', 'runtime', 'kubeconfig.ts');
  return {
    name: 'kubeconfig-yaml',
    setup(b) {
      b.onResolve({ filter: /^yaml$/ }, (args) => (resolve(args.importer) === importer ? { path: join(repo, KUBECONFIG_YAML) } : undefined));
    },
  };
}

/** An import of a {@link LAZY_BUNDLES} module becomes a run-time require of its file. */
function lazyBundles(repo: string, bundles: readonly LazyBundle[]): Plugin {
  return {
    name: 'lazy-bundles',
    setup(b) {
      b.onResolve({ filter: /.*/ }, async (args) => {
        if (args.kind === 'entry-point' || (args.pluginData as { inner?: boolean } | undefined)?.inner) return undefined;
        const found = await b.resolve(args.path, {
          kind: args.kind,
          importer: args.importer,
          resolveDir: args.resolveDir,
          pluginData: { inner: true },
        });
        if (found.errors.length > 0 || found.external) return undefined;
        const module = relative(repo, found.path).split(sep).join('/');
        const lazy = bundles.find((l) => l.module === module);
        return lazy ? { path: `./${lazy.file}`, external: true } : undefined;
      });
    },
  };
}

/** Each {@link LAZY_BUILTINS} module is a stand-in whose functions require the built-in on their first call. */
const lazyBuiltins: Plugin = {
  name: 'lazy-builtins',
  setup(b) {
    const names = Object.keys(LAZY_BUILTINS);
    const filter = new RegExp(`^(${names.map((n) => n.replace(/[/.]/g, '\\$&')).join('|')})$`);
    b.onResolve({ filter }, (args) =>
      args.namespace === 'lazy-builtin' ? { path: args.path, external: true } : { path: args.path, namespace: 'lazy-builtin' },
    );
    b.onLoad({ filter: /.*/, namespace: 'lazy-builtin' }, (args) => {
      const id = JSON.stringify(args.path);
      return {
        contents: [
          ...(LAZY_BUILTINS[args.path] ?? []).map((name) => `export function ${name}(...args) { return require(${id}).${name}(...args); }`),
          `export default new Proxy({}, { get: (_, key) => require(${id})[key] });`,
        ].join('\n'),
        loader: 'js',
      };
    });
  },
};

/**
 * The runtime counts requests on a prom-client registry when it is given one; the plugin never
 * gives one, so prom-client (with its dependencies about 100 KiB) stays out. Were it ever
 * required, the stand-in says why it is missing.
 */
const noPromClient: Plugin = {
  name: 'no-prom-client',
  setup(b) {
    b.onResolve({ filter: /^prom-client$/ }, () => ({ path: 'prom-client', namespace: 'not-in-plugin' }));
    b.onLoad({ filter: /.*/, namespace: 'not-in-plugin' }, () => ({
      contents: 'throw new Error("prom-client is not part of the kubectl plugin: its API clients take no metrics registry");',
      loader: 'js',
    }));
  },
};

/** The executable's `require('./main')` is the bundle beside it, left to run time. */
const mainIsTheBundle: Plugin = {
  name: 'main-is-the-bundle',
  setup(b) {
    b.onResolve({ filter: /^\.\/main$/ }, () => ({ path: `./${PLUGIN_BUNDLE.split(sep).pop() ?? ''}`, external: true }));
  },
};

/** Builds the plugin from `repo`'s sources into `outDir` (see the file comment). */
export async function bundlePlugin(repo: string, outDir: string): Promise<PluginBuild> {
  const manifest = JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8')) as PackageManifest;
  const common: BuildOptions & { metafile: true } = {
    bundle: true,
    platform: 'node',
    target: nodeTarget(manifest),
    format: 'cjs',
    // As the operator's bundle: whitespace and syntax only, so a stack trace names functions as the source does.
    minifyWhitespace: true,
    minifySyntax: true,
    legalComments: 'eof',
    metafile: true,
    absWorkingDir: repo,
    // A development or peer dependency is never inlined: importing one fails below.
    external: externalPackages(manifest),
    nodePaths: [join(repo, 'node_modules')],
    logOverride: { 'unsupported-require-call': 'warning', 'unsupported-dynamic-import': 'warning' },
  };
  const metas: { path: string; meta: Metafile }[] = [];
  const bundle = async (entry: string, file: string, plugins: Plugin[]): Promise<void> => {
    const path = resolve(outDir, 'cli', file);
    metas.push({ path, meta: await checkedBuild({ ...common, entryPoints: [join(repo, entry)], outfile: path, plugins }) });
  };
  const bin = resolve(outDir, PLUGIN_BIN);
  metas.push({
    path: bin,
    meta: await checkedBuild({ ...common, entryPoints: [join(repo, 'cli', 'bin.ts')], outfile: bin, plugins: [mainIsTheBundle] }),
  });
  await bundle(join('cli', 'main.ts'), 'plugin.js', [kubeconfigYaml(repo), lazyBundles(repo, LAZY_BUNDLES), lazyBuiltins, noPromClient]);
  for (const lazy of LAZY_BUNDLES) await bundle(lazy.module, lazy.file, [noPromClient]);
  // The files of the plugin itself are imports left to run time too.
  const own = new Set([PLUGIN_BUNDLE, ...LAZY_BUNDLES.map((l) => l.file)].map((f) => ` imports ./${f.split(sep).pop() ?? ''}`));
  const missing = metas.flatMap(({ meta }) => unresolvedImports(meta)).filter((m) => ![...own].some((o) => m.endsWith(o)));
  if (missing.length > 0) {
    throw new Error(
      `the plugin imports packages that are not production dependencies (an installed package has none of them):\n  ${missing.join('\n  ')}`,
    );
  }
  return {
    bin,
    files: metas.map(({ path, meta }) => {
      const output = Object.values(meta.outputs)[0];
      return { path, bytes: output?.bytes ?? 0, inputs: Object.keys(output?.inputs ?? {}).sort() };
    }),
  };
}

async function main(argv: readonly string[]): Promise<void> {
  if (argv.length > 1) throw new Error('usage: tsx scripts/bundle-plugin.ts [outDir]');
  const repo = resolve(__dirname, '..');
  const res = await bundlePlugin(repo, resolve(argv[0] ?? join(repo, 'lib')));
  for (const f of res.files) {
    process.stderr.write(`bundle-plugin: ${relative(process.cwd(), f.path)}: ${f.inputs.length} modules, ${(f.bytes / 1024).toFixed(0)} KiB\n`);
  }
}

if (require.main === module) {
  main(process.argv.slice(2)).catch((err: unknown) => {
    process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
}
