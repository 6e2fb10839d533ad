/**
 * The npm packages that ship, read from package-lock.json alone (no node_modules, no registry):
 * the closure of the root package's `dependencies` (and the peers and optional dependencies
 * those bring), each found the way Node resolves it, from the nearest `node_modules` outward.
 * This is what the operator's bundle may inline and what the npm package asks its users to
 * install; development dependencies never enter it.
 *
 * Why not `npm sbom --omit dev`: npm 11.19 leaves some production packages out of it here
 * (yaml, a direct dependency, among them) when development tools depend on them too.
 */

/** One package entry of a lockfile (v2 or v3), the fields read here. */
export interface LockEntry {
  readonly name?: string;
  readonly version?: string;
  readonly resolved?: string;
  readonly integrity?: string;
  readonly license?: string;
  readonly dev?: boolean;
  readonly link?: boolean;
  readonly dependencies?: Readonly<Record<string, string>>;
  readonly optionalDependencies?: Readonly<Record<string, string>>;
  readonly peerDependencies?: Readonly<Record<string, string>>;
  readonly peerDependenciesMeta?: Readonly<Record<string, { readonly optional?: boolean }>>;
}

/** package-lock.json, the fields read here. */
export interface Lockfile {
  readonly lockfileVersion?: number;
  readonly packages?: Readonly<Record<string, LockEntry>>;
}

/** A package that ships. */
export interface ShippedPackage {
  /** Its name, scope included (`@sinclair/typebox`). */
  readonly name: string;
  readonly version: string;
  /** Where the lockfile puts it (`node_modules/pino`). */
  readonly path: string;
  /** The tarball's Subresource Integrity string (`sha512-<base64>`), when the lockfile has one. */
  readonly integrity?: string;
  readonly resolved?: string;
  readonly license?: string;
  /** The lockfile paths of the packages it needs that ship, sorted. */
  readonly dependsOn: readonly string[];
}

/** The root package and the packages that ship, in lockfile path order. */
export interface ShippedTree {
  readonly root: { readonly name: string; readonly version: string; readonly license?: string; readonly dependsOn: readonly string[] };
  readonly packages: readonly ShippedPackage[];
}

/** The package name a lockfile path ends in: `node_modules/a/node_modules/@s/b` is `@s/b`. */
export function nameFromPath(path: string): string {
  const at = path.lastIndexOf('node_modules/');
  if (at < 0) throw new Error(`lockfile path "${path}" is not below a node_modules directory`);
  return path.slice(at + 'node_modules/'.length);
}

/**
 * Where `name`, needed by the package at `from` (a lockfile path, '' for the root), is found:
 * `from/node_modules/name`, then each enclosing package's node_modules, then the top. Undefined
 * when the lockfile holds it nowhere on that path.
 */
export function resolveFrom(packages: Readonly<Record<string, LockEntry>>, from: string, name: string): string | undefined {
  let dir = from;
  for (;;) {
    const candidate = dir === '' ? `node_modules/${name}` : `${dir}/node_modules/${name}`;
    if (packages[candidate] !== undefined) return candidate;
    if (dir === '') return undefined;
    const at = dir.lastIndexOf('/node_modules/');
    dir = at < 0 ? '' : dir.slice(0, at);
  }
}

/** The names an entry needs: dependencies, optional ones, and peers that are not optional. */
function needs(entry: LockEntry): { name: string; optional: boolean }[] {
  const peersOptional = entry.peerDependenciesMeta ?? {};
  return [
    ...Object.keys(entry.dependencies ?? {}).map((name) => ({ name, optional: false })),
    ...Object.keys(entry.optionalDependencies ?? {}).map((name) => ({ name, optional: true })),
    ...Object.keys(entry.peerDependencies ?? {}).map((name) => ({ name, optional: peersOptional[name]?.optional === true })),
  ];
}

/**
 * The packages that ship: the closure of the root's production dependencies. Throws when a
 * required package is not in the lockfile (a lockfile out of date with package.json), or when the
 * lockfile is older than v2 (v1 has no `packages` map).
 */
export function shippedTree(lock: Lockfile): ShippedTree {
  const packages = lock.packages;
  const rootEntry = packages?.[''];
  if (!packages || !rootEntry) throw new Error('package-lock.json has no "packages" map with a root entry: lockfile v2 or v3 is needed');
  if (!rootEntry.name || !rootEntry.version) throw new Error("package-lock.json's root entry has no name or version");
  const found = new Map<string, LockEntry>();
  const edges = new Map<string, Set<string>>();
  const walk = (from: string, entry: LockEntry): void => {
    const deps = new Set<string>();
    edges.set(from, deps);
    for (const need of needs(entry)) {
      const path = resolveFrom(packages, from, need.name);
      if (path === undefined) {
        if (need.optional) continue;
        throw new Error(`package-lock.json: ${from || 'the root'} needs ${need.name}, which the lockfile does not hold: run npm install`);
      }
      deps.add(path);
      if (found.has(path)) continue;
      const dep = packages[path] ?? {};
      if (dep.link) throw new Error(`package-lock.json: ${path} is a link; a release ships no linked packages`);
      found.set(path, dep);
      walk(path, dep);
    }
  };
  walk('', { dependencies: rootEntry.dependencies ?? {}, optionalDependencies: rootEntry.optionalDependencies ?? {} });
  const names = (from: string) => [...(edges.get(from) ?? [])].sort();
  const shipped = [...found.entries()]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([path, e]): ShippedPackage => {
      const version = e.version;
      if (!version) throw new Error(`package-lock.json: ${path} has no version`);
      return {
        name: e.name ?? nameFromPath(path),
        version,
        path,
        ...(e.integrity ? { integrity: e.integrity } : {}),
        ...(e.resolved ? { resolved: e.resolved } : {}),
        ...(e.license ? { license: e.license } : {}),
        dependsOn: names(path),
      };
    });
  return {
    root: { name: rootEntry.name, version: rootEntry.version, ...(rootEntry.license ? { license: rootEntry.license } : {}), dependsOn: names('') },
    packages: shipped,
  };
}
