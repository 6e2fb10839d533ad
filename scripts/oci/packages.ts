/**
 * scripts/image-packages.txt, read: the apt sources and the exact Debian packages (version and
 * .deb digest) the image base is made of. scripts/install-image-packages.sh fetches them; the
 * image builder reads the same list to know which .debs make the base and which Debian release
 * the base is.
 */

/** One pinned package. */
export interface PinnedPackage {
  readonly name: string;
  readonly version: string;
  /** SHA-256 of the .deb, hex. */
  readonly sha256: string;
}

/** The list, parsed. */
export interface PackageList {
  /** apt sources.list lines. */
  readonly sources: readonly string[];
  readonly packages: readonly PinnedPackage[];
}

/** Parses scripts/image-packages.txt; throws on a line it does not know, as the install script does. */
export function parsePackageList(text: string): PackageList {
  const sources: string[] = [];
  const packages: PinnedPackage[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const [kind, ...rest] = line.split(/\s+/);
    if (kind === 'source') sources.push(rest.join(' '));
    else if (kind === 'package') {
      const [name, version, sha256] = rest;
      if (!name || !version || !sha256 || rest.length !== 3 || !/^[0-9a-f]{64}$/.test(sha256)) {
        throw new Error(`image package list: expected "package <name> <version> <sha256>", got "${line}"`);
      }
      packages.push({ name, version, sha256 });
    } else throw new Error(`image package list: unknown line "${line}"`);
  }
  if (sources.length === 0 || packages.length === 0) throw new Error('image package list: names no source or no package');
  const names = packages.map((p) => p.name);
  const twice = names.filter((n, i) => names.indexOf(n) !== i);
  if (twice.length > 0) throw new Error(`image package list: ${twice.join(', ')} listed twice`);
  return { sources, packages };
}

/** Where scripts/install-image-packages.sh puts a package in its directory (apt's `%3a` for `:`). */
export function debFileName(pkg: PinnedPackage): string {
  return `${pkg.name}_${pkg.version.replace(/:/g, '%3a')}.deb`;
}

/**
 * The Debian release the list's base is, from base-files' version (13.8+deb13u8 is Debian 13):
 * what distroless' image names call `debian13`.
 */
export function debianRelease(list: PackageList): number {
  const baseFiles = list.packages.find((p) => p.name === 'base-files');
  const m = /^(?:\d+:)?(\d+)(?:\.|$)/.exec(baseFiles?.version ?? '');
  if (!m?.[1]) throw new Error('image package list: base-files (which says the Debian release) is missing or has no numeric version');
  return Number(m[1]);
}
