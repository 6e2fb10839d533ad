/**
 * Every relative link of the README, docs/, bench/ and ARCHITECTURE.md reaches a file of the
 * repository, and a heading of it when the link names one, so moving a section or a doc
 * breaks the build instead of a reader's click.
 */
import { expect } from 'chai';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { REPO_ROOT, documents } from '../../../scripts/docs';

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens. */
export function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/`/g, '')
    .replace(/[^\p{L}\p{N} _-]/gu, '')
    .replace(/ /g, '-');
}

/** The anchors of a Markdown text's headings, with GitHub's -1, -2 for repeats. */
function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  let fenced = false;
  for (const line of markdown.split('\n')) {
    if (line.startsWith('```')) fenced = !fenced;
    const m = fenced ? null : /^#{1,6} (.*)$/.exec(line);
    if (!m) continue;
    const base = slug(m[1] ?? '');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

/** The relative links of a Markdown text outside code, as [target, anchor]. */
function links(markdown: string): [string, string][] {
  const prose = markdown.replace(/```[\s\S]*?```/g, '').replace(/`[^`\n]*`/g, '');
  return [...prose.matchAll(/\]\(([^)\s]+)\)/g)]
    .map((m) => m[1] ?? '')
    .filter((href) => !/^[a-z]+:/i.test(href))
    .map((href) => {
      const [path = '', anchor = ''] = href.split('#');
      return [path, anchor];
    });
}

const files = [...documents(REPO_ROOT), join('bench', 'HISTORY.md'), 'ARCHITECTURE.md'];

describe('links in the docs', () => {
  it('finds the docs and some links in them', () => {
    expect(files).to.include.members(['README.md', join('docs', 'install.md'), join('docs', 'before-you-install.md')]);
    expect(links(readFileSync(join(REPO_ROOT, 'README.md'), 'utf8')).length).to.be.greaterThan(10);
  });

  for (const file of files) {
    it(`${file}: every relative link resolves`, () => {
      const text = readFileSync(join(REPO_ROOT, file), 'utf8');
      const broken: string[] = [];
      for (const [path, anchor] of links(text)) {
        const target = path === '' ? join(REPO_ROOT, file) : join(REPO_ROOT, dirname(file), path);
        if (!existsSync(target)) {
          broken.push(`${path}: no such file`);
          continue;
        }
        if (anchor === '' || statSync(target).isDirectory()) continue;
        if (!anchors(readFileSync(target, 'utf8')).has(anchor)) broken.push(`${path}#${anchor}: no such heading in ${relative(REPO_ROOT, target)}`);
      }
      expect(broken).to.deep.equal([]);
    });
  }

  it('reaches every doc under docs/ from the README, directly or through other docs', () => {
    const reached = new Set<string>(['README.md']);
    const queue = ['README.md'];
    while (queue.length > 0) {
      const file = queue.shift() ?? '';
      for (const [path] of links(readFileSync(join(REPO_ROOT, file), 'utf8'))) {
        if (!path.endsWith('.md')) continue;
        const target = relative(REPO_ROOT, join(REPO_ROOT, dirname(file), path));
        if (!reached.has(target) && existsSync(join(REPO_ROOT, target))) {
          reached.add(target);
          queue.push(target);
        }
      }
    }
    expect(documents(REPO_ROOT).filter((f) => !reached.has(f))).to.deep.equal([]);
  });
});

describe('heading anchors', () => {
  const cases: Record<string, { heading: string; want: string }> = {
    plain: { heading: 'Before you install', want: 'before-you-install' },
    'code and punctuation': { heading: 'Troubleshooting with `kubectl bucket`', want: 'troubleshooting-with-kubectl-bucket' },
    'numbers and parentheses': { heading: 'Figures: many tenants (2026-12-02)', want: 'figures-many-tenants-2026-12-02' },
    'a slash and commas': { heading: 'Side by side, in rounds, over HTTP/2', want: 'side-by-side-in-rounds-over-http2' },
  };
  for (const [name, tc] of Object.entries(cases)) it(name, () => expect(slug(tc.heading)).to.equal(tc.want));
});
