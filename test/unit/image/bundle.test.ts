/**
 * scripts/bundle.ts: production dependencies are inlined, development and peer dependencies
 * never are, and an operator import of one fails the build (the image has no node_modules to
 * load it from at run time).
 */
import { expect } from 'chai';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bundleFile, externalPackages } from '../../../scripts/bundle';
import { REPO } from '../../support/image';

interface Manifest {
  readonly dependencies: Record<string, string>;
  readonly devDependencies: Record<string, string>;
  readonly peerDependencies: Record<string, string>;
}

const manifest = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as Manifest;

describe('scripts/bundle.ts', function () {
  this.timeout(30_000);
  let dir: string;

  beforeEach(() => {
    // Outside the checkout, as scripts/build-image.sh compiles: packages resolve from the
    // checkout's node_modules only.
    dir = mkdtempSync(join(tmpdir(), 'bundle-test-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  async function bundle(source: string): Promise<string> {
    const entry = join(dir, 'main.js');
    writeFileSync(entry, source);
    await bundleFile({ entry, outfile: join(dir, 'out', 'main.js'), repo: REPO });
    return readFileSync(join(dir, 'out', 'main.js'), 'utf8');
  }

  it('keeps every development and peer dependency external, and no production one', () => {
    const external = externalPackages(manifest);
    expect(external).to.include.members([...Object.keys(manifest.devDependencies), ...Object.keys(manifest.peerDependencies)]);
    for (const dep of Object.keys(manifest.dependencies)) expect(external, dep).not.to.include(dep);
  });

  it('inlines a production dependency: the output requires nothing but Node built-ins', async () => {
    const out = await bundle(`const YAML = require('yaml');\nconsole.log(YAML.stringify({ a: 1 }));\n`);
    expect(out).not.to.match(/require\("yaml"\)/);
  });

  const devImports: Record<string, string> = {
    'a development dependency': 'chai',
    'a subpath of a development dependency': '@kubernetes/client-node/dist/config.js',
    'a peer dependency': 'cdk8s',
  };
  for (const [name, specifier] of Object.entries(devImports)) {
    it(`fails on an import of ${name} (${specifier})`, async () => {
      const err = await bundle(`require(${JSON.stringify(specifier)});\n`).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).to.be.instanceOf(Error);
      expect((err as Error).message).to.match(/not production dependencies/);
      expect((err as Error).message).to.include(`imports ${specifier}`);
    });
  }

  it('leaves a require.resolve probe of a development dependency alone (operator/main.ts checks pino-pretty so)', async () => {
    const out = await bundle(`try { require.resolve('pino-pretty'); } catch { console.log('absent'); }\n`);
    expect(out).to.include('require.resolve("pino-pretty")');
  });

  it('fails on a require of a computed name, which a bundle cannot hold', async () => {
    const err = await bundle(`require(process.argv[2]);\n`).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).to.be.instanceOf(Error);
    expect((err as Error).message).to.include('unsupported-require-call');
  });
});
