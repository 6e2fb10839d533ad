/**
 * The release's two CycloneDX 1.6 SBOMs, as pure functions of what was read:
 *   - the npm tree that ships (package-lock.json's production closure, scripts/release/npm-tree.ts);
 *   - the operator image: its Debian packages (from the image's own dpkg records, held to the
 *     pinned list with each .deb's SHA-256), the Node runtime at /nodejs/bin/node, and the
 *     operator bundle with the npm packages it may inline nested in it.
 * Every component carries a purl (pkg:npm, pkg:deb/debian, pkg:generic/node) and the hashes that
 * are known. No clock and no random serial: the caller passes the time (the commit's), and the
 * serial number is derived from the content, so one commit always gives the same bytes.
 */
import { createHash } from 'node:crypto';
import { canonicalJson } from '../oci/archive';
import type { ShippedPackage, ShippedTree } from './npm-tree';

/** The CycloneDX version the SBOMs follow. */
export const CYCLONEDX_SPEC_VERSION = '1.6';

/** A CycloneDX hash. */
export interface CdxHash {
  readonly alg: 'SHA-1' | 'SHA-256' | 'SHA-512';
  /** Lower-case hex. */
  readonly content: string;
}

/** A CycloneDX licence choice: an SPDX id, or an expression. */
export type CdxLicense = { readonly license: { readonly id: string } } | { readonly expression: string };

/** A CycloneDX external reference. */
export interface CdxExternalReference {
  readonly type: 'distribution' | 'vcs' | 'website';
  readonly url: string;
  readonly hashes?: readonly CdxHash[];
}

/** A CycloneDX property (namespaced name, string value). */
export interface CdxProperty {
  readonly name: string;
  readonly value: string;
}

/** The component fields these SBOMs use. */
export interface CdxComponent {
  readonly type: 'application' | 'container' | 'library' | 'operating-system';
  readonly 'bom-ref': string;
  readonly name: string;
  readonly version: string;
  readonly purl?: string;
  readonly hashes?: readonly CdxHash[];
  readonly licenses?: readonly CdxLicense[];
  readonly externalReferences?: readonly CdxExternalReference[];
  readonly properties?: readonly CdxProperty[];
  readonly components?: readonly CdxComponent[];
}

/** A CycloneDX dependency edge list. */
export interface CdxDependency {
  readonly ref: string;
  readonly dependsOn: readonly string[];
}

/** A CycloneDX BOM, the fields these SBOMs use. */
export interface Bom {
  readonly bomFormat: 'CycloneDX';
  readonly specVersion: string;
  readonly serialNumber: string;
  readonly version: 1;
  readonly metadata: {
    readonly timestamp: string;
    readonly lifecycles: readonly { readonly phase: 'build' }[];
    readonly tools: { readonly components: readonly CdxComponent[] };
    readonly component: CdxComponent;
  };
  readonly components: readonly CdxComponent[];
  readonly dependencies: readonly CdxDependency[];
}

/** What wrote an SBOM (recorded in its metadata). */
export interface SbomTool {
  readonly name: string;
  readonly version: string;
}

/** Percent-encodes one purl segment (name, version or qualifier value) as the purl spec asks. */
export function purlSegment(s: string): string {
  return encodeURIComponent(s);
}

/** `pkg:npm/%40scope/name@version`. */
export function npmPurl(name: string, version: string): string {
  const slash = name.startsWith('@') ? name.indexOf('/') : -1;
  const path = slash > 0 ? `${purlSegment(name.slice(0, slash))}/${purlSegment(name.slice(slash + 1))}` : purlSegment(name);
  return `pkg:npm/${path}@${purlSegment(version)}`;
}

/** `pkg:deb/debian/name@version?arch=amd64&distro=debian-13` (qualifiers in key order, as the spec asks). */
export function debPurl(name: string, version: string, arch: string, debianRelease: number): string {
  return `pkg:deb/debian/${purlSegment(name)}@${purlSegment(version)}?arch=${purlSegment(arch)}&distro=debian-${debianRelease}`;
}

/** `pkg:oci/name@sha256%3A...?arch=amd64&tag=0.2.0`: an image by digest, wherever it is stored. */
export function ociPurl(name: string, digest: string, arch: string, tag: string): string {
  return `pkg:oci/${purlSegment(name)}@${purlSegment(digest)}?arch=${purlSegment(arch)}&tag=${purlSegment(tag)}`;
}

const SRI_ALGS: Readonly<Record<string, CdxHash['alg']>> = { sha1: 'SHA-1', sha256: 'SHA-256', sha512: 'SHA-512' };

/**
 * A Subresource Integrity string (`sha512-<base64>`, several separated by spaces) as CycloneDX
 * hashes (hex). Unknown algorithms are left out.
 */
export function integrityHashes(integrity: string | undefined): CdxHash[] {
  if (!integrity) return [];
  const out: CdxHash[] = [];
  for (const part of integrity.trim().split(/\s+/)) {
    const dash = part.indexOf('-');
    const alg = SRI_ALGS[part.slice(0, dash)];
    if (dash <= 0 || !alg) continue;
    out.push({ alg, content: Buffer.from(part.slice(dash + 1), 'base64').toString('hex') });
  }
  return out;
}

/** A package.json `license` value as a CycloneDX licence: a plain SPDX id, else an expression. */
export function cdxLicense(license: string | undefined): CdxLicense[] {
  if (!license) return [];
  return /^[A-Za-z0-9][A-Za-z0-9.+-]*$/.test(license) ? [{ license: { id: license } }] : [{ expression: license }];
}

/** One shipped npm package as a component. */
export function npmComponent(p: ShippedPackage): CdxComponent {
  const purl = npmPurl(p.name, p.version);
  const hashes = integrityHashes(p.integrity);
  const licenses = cdxLicense(p.license);
  return {
    type: 'library',
    'bom-ref': purl,
    name: p.name,
    version: p.version,
    purl,
    ...(hashes.length > 0 ? { hashes } : {}),
    ...(licenses.length > 0 ? { licenses } : {}),
    ...(p.resolved ? { externalReferences: [{ type: 'distribution' as const, url: p.resolved }] } : {}),
  };
}

/**
 * The shipped packages as components (one per purl: a name and version the lockfile holds at two
 * paths is one component) and their dependency edges, keyed by purl.
 */
export function npmComponents(tree: ShippedTree): { components: CdxComponent[]; dependencies: CdxDependency[]; direct: string[] } {
  const purlOf = new Map(tree.packages.map((p) => [p.path, npmPurl(p.name, p.version)]));
  const refs = (paths: readonly string[]) => [...new Set(paths.map((p) => purlOf.get(p) ?? ''))].filter((r) => r !== '').sort();
  const components = new Map<string, CdxComponent>();
  const edges = new Map<string, Set<string>>();
  for (const p of tree.packages) {
    const c = npmComponent(p);
    if (!components.has(c['bom-ref'])) components.set(c['bom-ref'], c);
    const set = edges.get(c['bom-ref']) ?? new Set<string>();
    for (const r of refs(p.dependsOn)) set.add(r);
    edges.set(c['bom-ref'], set);
  }
  return {
    components: [...components.values()],
    dependencies: [...edges.entries()].map(([ref, deps]) => ({ ref, dependsOn: [...deps].sort() })),
    direct: refs(tree.root.dependsOn),
  };
}

/**
 * The serial number of a BOM: a UUID (RFC 9562 version 8, vendor-specific) taken from the SHA-256
 * of its canonical JSON without the serial, so equal content always has an equal serial.
 */
export function contentSerial(bom: Omit<Bom, 'serialNumber'>): string {
  const h = createHash('sha256').update(canonicalJson(bom)).digest();
  h[6] = ((h[6] ?? 0) & 0x0f) | 0x80;
  h[8] = ((h[8] ?? 0) & 0x3f) | 0x80;
  const hex = h.subarray(0, 16).toString('hex');
  return `urn:uuid:${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;
}

function bom(component: CdxComponent, components: CdxComponent[], dependencies: CdxDependency[], timestamp: string, tool: SbomTool): Bom {
  const body: Omit<Bom, 'serialNumber'> = {
    bomFormat: 'CycloneDX',
    specVersion: CYCLONEDX_SPEC_VERSION,
    version: 1,
    metadata: {
      timestamp,
      lifecycles: [{ phase: 'build' }],
      tools: { components: [{ type: 'application', 'bom-ref': `tool:${tool.name}`, name: tool.name, version: tool.version }] },
      component,
    },
    components,
    dependencies,
  };
  const serialNumber = contentSerial(body);
  return {
    bomFormat: body.bomFormat,
    specVersion: body.specVersion,
    serialNumber,
    version: body.version,
    metadata: body.metadata,
    components,
    dependencies,
  };
}

/** The SBOM of the npm tree that ships: the package itself and its production closure. */
export function npmSbom(tree: ShippedTree, timestamp: string, tool: SbomTool): Bom {
  const purl = npmPurl(tree.root.name, tree.root.version);
  const licenses = cdxLicense(tree.root.license);
  const root: CdxComponent = {
    type: 'library',
    'bom-ref': purl,
    name: tree.root.name,
    version: tree.root.version,
    purl,
    ...(licenses.length > 0 ? { licenses } : {}),
  };
  const npm = npmComponents(tree);
  return bom(root, npm.components, [{ ref: purl, dependsOn: npm.direct }, ...npm.dependencies], timestamp, tool);
}

/** One Debian package of the image: what its dpkg record says, and its .deb's digest from the pinned list. */
export interface ImageDebPackage {
  readonly name: string;
  readonly version: string;
  readonly architecture: string;
  /** SHA-256 of the .deb, hex. */
  readonly debSha256: string;
}

/** What the image SBOM is made of. */
export interface ImageSbomInput {
  readonly image: {
    /** The repository's last path component, e.g. `bucketoperator`. */
    readonly name: string;
    readonly tag: string;
    /** The manifest digest, `sha256:<hex>`. */
    readonly digest: string;
    readonly architecture: string;
  };
  readonly debian: { readonly release: number; readonly packages: readonly ImageDebPackage[] };
  readonly node: {
    readonly version: string;
    /** Where the image holds it. */
    readonly path: string;
    /** SHA-256 of the binary, hex. */
    readonly sha256: string;
    /** The npm package it came from, with its tarball's integrity. */
    readonly from?: { readonly name: string; readonly version: string; readonly integrity: string; readonly resolved?: string };
  };
  readonly app: {
    readonly name: string;
    readonly version: string;
    readonly license?: string;
    /** The bundle the image runs, and its SHA-256 (hex). */
    readonly bundlePath: string;
    readonly bundleSha256: string;
    /** The production tree the bundle inlines from (a superset: esbuild drops what is never imported). */
    readonly tree: ShippedTree;
  };
}

/** The SBOM of the operator image. */
export function imageSbom(input: ImageSbomInput, timestamp: string, tool: SbomTool): Bom {
  const { image, debian, node, app } = input;
  const imageRef = ociPurl(image.name, image.digest, image.architecture, image.tag);
  const container: CdxComponent = {
    type: 'container',
    'bom-ref': imageRef,
    name: image.name,
    version: image.tag,
    purl: imageRef,
    hashes: [{ alg: 'SHA-256', content: image.digest.replace(/^sha256:/, '') }],
  };
  const os: CdxComponent = { type: 'operating-system', 'bom-ref': `os:debian-${debian.release}`, name: 'debian', version: String(debian.release) };
  const debs = [...debian.packages]
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    .map((p): CdxComponent => {
      const purl = debPurl(p.name, p.version, p.architecture, debian.release);
      return { type: 'library', 'bom-ref': purl, name: p.name, version: p.version, purl, hashes: [{ alg: 'SHA-256', content: p.debSha256 }] };
    });
  const nodePurl = `pkg:generic/node@${purlSegment(node.version)}`;
  const nodeComponent: CdxComponent = {
    type: 'application',
    'bom-ref': nodePurl,
    name: 'node',
    version: node.version,
    purl: nodePurl,
    hashes: [{ alg: 'SHA-256', content: node.sha256 }],
    licenses: [{ license: { id: 'MIT' } }],
    properties: [{ name: 'bucketoperator:image:path', value: node.path }],
    ...(node.from
      ? {
          externalReferences: [
            {
              type: 'distribution' as const,
              url: node.from.resolved ?? npmPurl(node.from.name, node.from.version),
              hashes: integrityHashes(node.from.integrity),
            },
          ],
        }
      : {}),
  };
  const npm = npmComponents(app.tree);
  const appRef = `app:${app.name}@${app.version}`;
  const appLicenses = cdxLicense(app.license);
  const appComponent: CdxComponent = {
    type: 'application',
    'bom-ref': appRef,
    name: app.name,
    version: app.version,
    hashes: [{ alg: 'SHA-256', content: app.bundleSha256 }],
    ...(appLicenses.length > 0 ? { licenses: appLicenses } : {}),
    properties: [{ name: 'bucketoperator:image:path', value: app.bundlePath }],
    // Nested: these packages are inlined into the bundle, not installed beside it.
    components: npm.components,
  };
  return bom(
    container,
    [os, ...debs, nodeComponent, appComponent],
    [
      { ref: imageRef, dependsOn: [os['bom-ref'], ...debs.map((d) => d['bom-ref']), nodePurl, appRef] },
      { ref: appRef, dependsOn: npm.direct },
      ...npm.dependencies,
    ],
    timestamp,
    tool,
  );
}

/** A BOM as the file the release writes: two-space JSON and a final newline. */
export function renderJson(value: unknown): string {
  return `${JSON.stringify(value, null, 2)}\n`;
}
