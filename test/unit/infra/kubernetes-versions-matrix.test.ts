/**
 * The support matrix is written in four places that must agree: the construct's list
 * (infra/kubernetes-versions.ts), the releases the smoke suite builds and runs
 * (test/support/control-plane/matrix.env), the release `npm test` runs (versions.env, the newest
 * of the matrix) and the tables of docs/reference/kubernetes-versions.md.
 */
import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { API_FEATURES, SUPPORTED_KUBERNETES } from '../../../infra/kubernetes-versions';
import { REPO_ROOT } from '../../../infra/generate';
import { parseMatrix } from '../../support/control-plane/binaries';

const CONTROL_PLANE = join(REPO_ROOT, 'test', 'support', 'control-plane');
const DOC = readFileSync(join(REPO_ROOT, 'docs', 'reference', 'kubernetes-versions.md'), 'utf8');

/** The cells of the table rows under the heading `heading` (header and rule left out). */
function table(heading: string): string[][] {
  const section = DOC.split(/^## /m).find((s) => s.startsWith(`${heading}\n`));
  if (!section) throw new Error(`docs/reference/kubernetes-versions.md has no section '${heading}'`);
  return section
    .split('\n')
    .filter((l) => l.startsWith('| ') && !l.startsWith('| ---'))
    .slice(1)
    .map((l) =>
      l
        .slice(2, -2)
        .split(' | ')
        .map((c) => c.trim()),
    );
}

describe('the support matrix, written down once per use', () => {
  const matrix = parseMatrix(readFileSync(join(CONTROL_PLANE, 'matrix.env'), 'utf8'));

  it('matrix.env lists the supported minors, oldest first, at the releases the construct names', () => {
    expect(matrix.map((m) => [m.minor, m.kubernetes])).to.deep.equal(SUPPORTED_KUBERNETES.map((s) => [s.minor, s.tested]));
  });

  it("the newest release of the matrix is versions.env's pin, etcd included, so npm test's cached build serves it", () => {
    const pinned = Object.fromEntries(
      readFileSync(join(CONTROL_PLANE, 'versions.env'), 'utf8')
        .split('\n')
        .map((l) => /^([A-Z0-9_]+)=(\S+)$/.exec(l))
        .filter((m): m is RegExpExecArray => m !== null)
        .map((m) => [m[1], m[2]]),
    );
    const newest = matrix.at(-1);
    expect([newest?.kubernetes, newest?.etcd]).to.deep.equal([pinned['K8S_VERSION'], pinned['ETCD_VERSION']]);
  });

  it('docs/reference/kubernetes-versions.md states each minor with the release tested', () => {
    expect(table('Supported Kubernetes versions').map(([minor, tested]) => [minor, tested])).to.deep.equal(
      SUPPORTED_KUBERNETES.map((s) => [s.minor, s.tested]),
    );
  });

  it('docs/reference/kubernetes-versions.md states every API feature with the minor it needs', () => {
    expect(table('What the rendering needs from the API server')).to.deep.equal(API_FEATURES.map((f) => [f.name, f.since, f.usedBy]));
  });

  const refused: Record<string, string> = {
    'a line with one field': 'v1.36.3\n',
    'an etcd that is not a version': 'v1.36.3 latest\n',
    'a Kubernetes that is not a version': 'v1.36 v3.6.8\n',
  };
  for (const [name, text] of Object.entries(refused)) {
    it(`matrix.env refuses ${name}`, () => expect(() => parseMatrix(text)).to.throw());
  }
});
