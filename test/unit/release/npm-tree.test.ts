/** scripts/release/npm-tree.ts: the production closure of a lockfile, resolved as Node resolves. */
import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { nameFromPath, resolveFrom, shippedTree, type Lockfile } from '../../../scripts/release/npm-tree';

const REPO = join(__dirname, '..', '..', '..');

const lock = (packages: Lockfile['packages']): Lockfile => ({ lockfileVersion: 3, packages });

describe('release: the npm tree that ships', () => {
  it('is the closure of the root dependencies; development packages stay out', () => {
    const tree = shippedTree(
      lock({
        // d is a development dependency: nothing the root ships reaches it.
        '': { name: 'app', version: '1.0.0', license: 'MIT', dependencies: { a: '^1' } },
        'node_modules/a': { version: '1.0.0', dependencies: { b: '^2' }, integrity: 'sha512-AAAA', license: 'ISC' },
        'node_modules/b': { version: '2.0.0' },
        'node_modules/d': { version: '9.0.0', dev: true, dependencies: { b: '^2' } },
      }),
    );
    expect(tree.root).to.deep.equal({ name: 'app', version: '1.0.0', license: 'MIT', dependsOn: ['node_modules/a'] });
    expect(tree.packages.map((p) => `${p.name}@${p.version} -> ${p.dependsOn.join(',')}`)).to.deep.equal([
      'a@1.0.0 -> node_modules/b',
      'b@2.0.0 -> ',
    ]);
  });

  it('finds a nested copy before the top-level one, as Node does', () => {
    const packages: Lockfile['packages'] = {
      '': { name: 'app', version: '1.0.0', dependencies: { a: '1', c: '1' } },
      'node_modules/a': { version: '1.0.0', dependencies: { b: '1' } },
      'node_modules/a/node_modules/b': { version: '1.0.0' },
      'node_modules/b': { version: '2.0.0' },
      'node_modules/c': { version: '1.0.0', dependencies: { b: '2' } },
    };
    expect(resolveFrom(packages, 'node_modules/a', 'b')).to.equal('node_modules/a/node_modules/b');
    expect(resolveFrom(packages, 'node_modules/c', 'b')).to.equal('node_modules/b');
    expect(resolveFrom(packages, 'node_modules/c', 'zzz')).to.equal(undefined);
    const tree = shippedTree(lock(packages));
    expect(tree.packages.map((p) => `${p.name}@${p.version}`)).to.deep.equal(['a@1.0.0', 'b@1.0.0', 'b@2.0.0', 'c@1.0.0']);
  });

  it('takes peers and optional dependencies that are there, and skips the optional ones that are not', () => {
    const tree = shippedTree(
      lock({
        '': { name: 'app', version: '1.0.0', dependencies: { a: '1' } },
        'node_modules/a': {
          version: '1.0.0',
          peerDependencies: { p: '1', q: '1' },
          peerDependenciesMeta: { q: { optional: true } },
          optionalDependencies: { o: '1', missing: '1' },
        },
        'node_modules/p': { version: '1.0.0' },
        'node_modules/o': { version: '1.0.0' },
      }),
    );
    expect(tree.packages.map((p) => p.name)).to.deep.equal(['a', 'o', 'p']);
  });

  const refusals: Record<string, { packages: Lockfile['packages']; want: RegExp }> = {
    'a lockfile v1 (no packages map)': { packages: undefined, want: /lockfile v2 or v3/ },
    'a required package the lockfile lacks': {
      packages: { '': { name: 'app', version: '1.0.0', dependencies: { gone: '1' } } },
      want: /the root needs gone.*npm install/,
    },
    'a linked package': {
      packages: { '': { name: 'app', version: '1.0.0', dependencies: { l: '1' } }, 'node_modules/l': { link: true } },
      want: /is a link/,
    },
  };
  for (const [name, tc] of Object.entries(refusals)) it(`refuses ${name}`, () => expect(() => shippedTree(lock(tc.packages))).to.throw(tc.want));

  it('names a package by the last node_modules segment, scope included', () => {
    expect(nameFromPath('node_modules/a/node_modules/@s/b')).to.equal('@s/b');
    expect(() => nameFromPath('lib/x')).to.throw(/not below a node_modules/);
  });

  it("on this repository's lockfile: every production dependency ships, and no development one", () => {
    const lockfile = JSON.parse(readFileSync(join(REPO, 'package-lock.json'), 'utf8')) as Lockfile & {
      packages: Record<string, { dev?: boolean; devOptional?: boolean }>;
    };
    const pkg = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
    const tree = shippedTree(lockfile);
    const shipped = tree.packages.map((p) => p.path);
    for (const dep of Object.keys(pkg.dependencies)) expect(shipped, dep).to.include(`node_modules/${dep}`);
    // npm marks what only development needs; the closure computed here must agree with it.
    const notDev = Object.entries(lockfile.packages)
      .filter(([path, e]) => path !== '' && !e.dev && !e.devOptional)
      .map(([path]) => path)
      .sort();
    expect(shipped).to.deep.equal(notDev);
  });
});
