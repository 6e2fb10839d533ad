import { expect } from 'chai';
import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { basename, join, relative, resolve } from 'node:path';
import { bundlePlugin, LAZY_BUNDLES, PLUGIN_BIN, PLUGIN_BUNDLE, type PluginBuild } from '../../../scripts/bundle-plugin';

const REPO = resolve(__dirname, '..', '..', '..');

/** What one run of the shipped plugin did: its exit code and output, the files it required and the Node built-ins it loaded. */
interface Loaded {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
  /** Relative to the package's lib/cli. */
  readonly files: readonly string[];
  /** Node's own module list (`NativeModule http2`, `Internal Binding tls_wrap`, ...). */
  readonly builtins: readonly string[];
}

/** Records, at exit, what the process required and which built-ins Node loaded. */
const RECORDER = `process.on('exit', () => require('node:fs').writeFileSync(process.env.LOADED_OUT, JSON.stringify({ files: Object.keys(require.cache), builtins: process.moduleLoadList })));`;

/**
 * The structure that keeps the plugin's start cheap, as `npm run build:lib` ships it (timings
 * are bench/cli-startup.ts's; nothing here is timed): a two-line executable that turns the
 * compile cache on, one bundle for `trace` and `why` with no package inlined, the code few
 * commands need in files of their own, and nothing loaded that a command does not use.
 */
describe('kubectl bucket: the shipped bundle', function () {
  // Five esbuild builds and a dozen plugin runs; a few seconds on a quiet machine.
  this.timeout(120_000);
  let dir = '';
  let pkg = '';
  let built: PluginBuild;
  let kubeconfig = '';
  let server = '';

  const file = (name: string): PluginBuild['files'][number] => {
    const f = built.files.find((x) => relative(join(pkg, 'lib'), x.path) === name);
    if (!f) throw new Error(`no ${name} among ${built.files.map((x) => x.path).join(', ')}`);
    return f;
  };

  /** Runs the packaged executable as the installed package does: no node_modules anywhere above it. */
  const runPlugin = (args: readonly string[]): Loaded => {
    const out = join(dir, 'loaded.json');
    const recorder = join(dir, 'recorder.js');
    writeFileSync(recorder, RECORDER);
    const res = spawnSync(process.execPath, ['--require', recorder, join(pkg, 'lib', PLUGIN_BIN), ...args], {
      cwd: dir,
      encoding: 'utf8',
      env: { PATH: process.env['PATH'] ?? '', HOME: dir, LOADED_OUT: out, NODE_COMPILE_CACHE: join(dir, 'compile-cache') },
      timeout: 60_000,
    });
    const loaded = JSON.parse(readFileSync(out, 'utf8')) as { files: string[]; builtins: string[] };
    return {
      code: res.status,
      stdout: res.stdout,
      stderr: res.stderr,
      files: loaded.files.filter((f) => f !== recorder).map((f) => relative(join(pkg, 'lib', 'cli'), f)),
      builtins: loaded.builtins,
    };
  };

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'bucketoperator-bundle-'));
    pkg = join(dir, 'package');
    built = await bundlePlugin(REPO, join(pkg, 'lib'));
    cpSync(join(REPO, 'package.json'), join(pkg, 'package.json'));
    execFileSync(process.execPath, [join(REPO, 'scripts', 'chmod-bin.mjs'), pkg]);
    // A port that was free a moment ago: the connection is refused at once.
    const listener = createServer();
    await new Promise<void>((done) => listener.listen(0, '127.0.0.1', done));
    server = `https://127.0.0.1:${(listener.address() as AddressInfo).port}`;
    await new Promise((done) => listener.close(done));
    kubeconfig = join(dir, 'kubeconfig');
    // The block style kubectl writes, so the kubeconfig takes the fast path of cli/kubeconfig-yaml.ts.
    writeFileSync(
      kubeconfig,
      [
        'apiVersion: v1',
        'clusters:',
        '- cluster:',
        `    server: ${server}`,
        '  name: gone',
        'contexts:',
        '- context:',
        '    cluster: gone',
        '    user: someone',
        '  name: gone',
        'current-context: gone',
        'kind: Config',
        'users:',
        '- name: someone',
        '  user:',
        '    token: not-a-secret',
        '',
      ].join('\n'),
    );
  });

  after(() => rmSync(dir, { recursive: true, force: true }));

  it('the bin is two lines: Node compile cache on, then the bundle; it is executable', () => {
    const text = readFileSync(join(pkg, 'lib', PLUGIN_BIN), 'utf8');
    expect(text.startsWith('#!/usr/bin/env node\n')).to.equal(true);
    const cacheOn = text.indexOf('enableCompileCache');
    expect(cacheOn, 'turns the compile cache on').to.be.greaterThan(0);
    expect(text.indexOf(`require("./${basename(PLUGIN_BUNDLE)}")`), 'then loads the bundle').to.be.greaterThan(cacheOn);
    expect(file(PLUGIN_BIN).inputs).to.deep.equal(['cli/bin.ts']);
    expect(statSync(join(pkg, 'lib', PLUGIN_BIN)).mode & 0o111).to.equal(0o111);
  });

  it('plugin.js inlines no package (YAML, TypeBox and prom-client are elsewhere or absent) and reads kubeconfigs through the fast path', () => {
    const { inputs } = file(PLUGIN_BUNDLE);
    expect(inputs.filter((i) => i.includes('node_modules/'))).to.deep.equal([]);
    expect(inputs).to.include.members([
      'cli/main.ts',
      'cli/kube.ts',
      'operator/runtime/transport.ts',
      'operator/runtime/kubeconfig.ts',
      'cli/kubeconfig-yaml.ts',
    ]);
    // Neither the schemas nor the converters: they come with TypeBox.
    expect(inputs.filter((i) => /^operator\/api\/(v1\/(index|storagebucket|bucketproviderconfig|validate)|v2\/|convert\/)/.test(i))).to.deep.equal(
      [],
    );
    expect(inputs).to.include('not-in-plugin:prom-client');
  });

  it('uses no fetch (its HTTP client, undici, loads on the first call)', () => {
    for (const f of built.files) expect(readFileSync(f.path, 'utf8'), relative(pkg, f.path)).to.not.match(/\bfetch\(/);
  });

  for (const lazy of LAZY_BUNDLES) {
    it(`${lazy.file} is whole: it loads with no node_modules and gives what the plugin takes from ${lazy.module}`, () => {
      const want: Record<string, string[]> = {
        'yaml.js': ['parse', 'stringify'],
        'convert.js': ['convert'],
        'api-v1.js': ['StorageBucketSpec', 'StorageBucketStatus', 'formatFieldErrors', 'validate'],
      };
      const names = want[lazy.file];
      expect(names, `the test knows ${lazy.file}`).to.not.equal(undefined);
      const out = execFileSync(
        process.execPath,
        [
          '-e',
          `const m = require(${JSON.stringify(join(pkg, 'lib', 'cli', lazy.file))}); console.log(JSON.stringify(${JSON.stringify(names)}.filter((n) => m[n] === undefined)))`,
        ],
        { cwd: dir, encoding: 'utf8' },
      );
      expect(JSON.parse(out), 'missing exports').to.deep.equal([]);
    });
  }

  const quick: Record<string, { args: string[]; code: number; stdout: RegExp }> = {
    version: { args: ['version'], code: 0, stdout: /^kubectl-bucket \d+\.\d+\.\d+\n$/ },
    '--help': { args: ['--help'], code: 0, stdout: /trace NAME/ },
    'a usage error': { args: ['trace'], code: 2, stdout: /^$/ },
  };
  for (const [name, c] of Object.entries(quick)) {
    it(`${name} runs with no node_modules and loads the bin and plugin.js only, and no network module`, () => {
      const r = runPlugin(c.args);
      expect([r.code, r.stdout]).to.satisfy(
        ([code, out]: [number, string]) => code === c.code && c.stdout.test(out),
        `${r.code} ${r.stdout}${r.stderr}`,
      );
      expect(r.files).to.deep.equal(['main.js', 'plugin.js']);
      const network = [
        'NativeModule tls',
        'NativeModule https',
        'NativeModule http',
        'NativeModule http2',
        'NativeModule crypto',
        'NativeModule child_process',
      ];
      expect(r.builtins.filter((b) => network.includes(b))).to.deep.equal([]);
    });
  }

  it('why, up to its first request, loads neither the lazy files nor the built-ins it does not use', () => {
    const r = runPlugin(['why', 'logs', '--kubeconfig', kubeconfig]);
    // It got as far as the network: the kubeconfig was read and the first request refused.
    expect(r.code).to.equal(1);
    expect(r.stderr).to.match(new RegExp(`^error: cannot reach the API server at ${server.replace(/\./g, '\\.')}: .*ECONNREFUSED\n$`));
    expect(r.files).to.deep.equal(['main.js', 'plugin.js']);
    expect(r.builtins).to.include('NativeModule tls');
    const unused = [
      // An exec credential plugin, a token file.
      'NativeModule child_process',
      'NativeModule fs/promises',
      'NativeModule internal/fs/promises',
      // Loaded with the first HTTP/2 session, which a refused connection never opens.
      'NativeModule http2',
      // The `performance` global (cli/kube.ts reads time from process.hrtime).
      'NativeModule perf_hooks',
      // fetch.
      'NativeModule internal/deps/undici/undici',
    ];
    expect(r.builtins.filter((b) => unused.includes(b))).to.deep.equal([]);
  });
});
