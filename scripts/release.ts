/**
 * `npm run release -- <version> [--date YYYY-MM-DD]`: prepares this checkout to be released as
 * <version>. It
 *   1. moves CHANGELOG.md's "## Unreleased" section into "## <version> - <date>" (an empty
 *      "## Unreleased" stays above it); the section must hold "### Upgrade notes";
 *   2. writes the version to every place that carries it ({@link VERSION_PLACES}): package.json,
 *      package-lock.json, infra/version.ts (the operator image's default tag), and the example
 *      pipeline's pin in examples/ci/package.json and examples/ci/README.md;
 *   3. renders dist/ (`npm run synth`) and examples/ci/dist/ (the ci-example test with
 *      BUCKETOPERATOR_UPDATE_EXAMPLES=1), whose images then carry the new tag;
 *   4. runs test/unit/release/versions.test.ts, which fails when any place disagrees;
 *   5. prints the commit and `git tag -a v<version>` commands to run.
 * It never commits, tags or pushes: a person reviews the diff first.
 *
 * The pure parts (the CHANGELOG's sections, where versions are written and how to read and
 * bump each) are exported for that test and for the upgrade test, which runs the upgrade notes'
 * shell blocks.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { parseAllDocuments } from 'yaml';

/** The repository root. */
export const REPO_ROOT = resolve(__dirname, '..');

const SEMVER = /^(\d+)\.(\d+)\.(\d+)$/;
/** `## 1.2.3` or `## 1.2.3 - 2026-12-04`. */
const VERSION_HEADING = /^(\d+\.\d+\.\d+)(?: - (\d{4}-\d{2}-\d{2}))?$/;
const UNRELEASED = 'Unreleased';
const UPGRADE_NOTES = '### Upgrade notes';

/** Orders two `X.Y.Z` versions (negative: `a` is older). */
export function compareVersions(a: string, b: string): number {
  const pa = SEMVER.exec(a);
  const pb = SEMVER.exec(b);
  if (!pa || !pb) throw new Error(`expected versions X.Y.Z, got "${a}" and "${b}"`);
  for (let i = 1; i <= 3; i++) {
    const d = Number(pa[i]) - Number(pb[i]);
    if (d !== 0) return d;
  }
  return 0;
}

/** One `## ` section of CHANGELOG.md: its heading's text and what follows up to the next one. */
export interface ChangelogSection {
  readonly title: string;
  /** Set for a version heading. */
  readonly version?: string;
  readonly date?: string;
  /** The lines after the heading, blank lines at either end removed. */
  readonly body: string;
}

/** CHANGELOG.md split at its `## ` headings. */
export interface Changelog {
  /** Everything before the first `## ` heading (the title). */
  readonly head: string;
  readonly sections: readonly ChangelogSection[];
}

/** Splits CHANGELOG.md into its sections; fenced code blocks never start one. */
export function parseChangelog(text: string): Changelog {
  const lines = text.split('\n');
  const head: string[] = [];
  const sections: { title: string; lines: string[] }[] = [];
  let fenced = false;
  for (const line of lines) {
    if (line.trimStart().startsWith('```')) fenced = !fenced;
    if (!fenced && line.startsWith('## ')) {
      sections.push({ title: line.slice(3).trim(), lines: [] });
      continue;
    }
    (sections.at(-1)?.lines ?? head).push(line);
  }
  return {
    head: trimBlank(head.join('\n')),
    sections: sections.map(({ title, lines: body }) => {
      const m = VERSION_HEADING.exec(title);
      return { title, ...(m?.[1] ? { version: m[1] } : {}), ...(m?.[2] ? { date: m[2] } : {}), body: trimBlank(body.join('\n')) };
    }),
  };
}

function trimBlank(text: string): string {
  return text.replace(/^\s*\n/, '').replace(/\s+$/, '');
}

/** CHANGELOG.md from its sections: one blank line around each heading, one newline at the end. */
export function renderChangelog(c: Changelog): string {
  const parts = [c.head, ...c.sections.map((s) => (s.body ? `## ${s.title}\n\n${s.body}` : `## ${s.title}`))];
  return `${parts.join('\n\n')}\n`;
}

/** The newest version with a section of its own (the first version heading), if any. */
export function newestVersion(c: Changelog): string | undefined {
  return c.sections.find((s) => s.version !== undefined)?.version;
}

/**
 * CHANGELOG.md with its Unreleased section released as `version` on `date`: the section's body
 * under `## <version> - <date>`, and an empty `## Unreleased` above it. Refuses a version not
 * newer than the newest one, an empty Unreleased section and one without upgrade notes.
 */
export function cutRelease(text: string, version: string, date: string): string {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(date)) throw new Error(`the date must be YYYY-MM-DD, got "${date}"`);
  const c = parseChangelog(text);
  const at = c.sections.findIndex((s) => s.title === UNRELEASED);
  const unreleased = c.sections[at];
  if (!unreleased) throw new Error(`CHANGELOG.md has no "## ${UNRELEASED}" section`);
  const newest = newestVersion(c);
  if (newest !== undefined && compareVersions(version, newest) <= 0)
    throw new Error(`${version} is not newer than ${newest}, the newest version in CHANGELOG.md`);
  if (!unreleased.body) throw new Error(`CHANGELOG.md's "## ${UNRELEASED}" section is empty: nothing to release`);
  if (!unreleased.body.split('\n').includes(UPGRADE_NOTES)) {
    throw new Error(
      `CHANGELOG.md's "## ${UNRELEASED}" section has no "${UPGRADE_NOTES}": say what upgrading from ${newest ?? 'the last version'} takes, even if nothing`,
    );
  }
  const released: ChangelogSection = { title: `${version} - ${date}`, version, date, body: unreleased.body };
  const sections = [...c.sections.slice(0, at), { title: UNRELEASED, body: '' }, released, ...c.sections.slice(at + 1)];
  return renderChangelog({ head: c.head, sections });
}

/** The `### Upgrade notes` of `version`'s section, and the shell blocks (```sh) in them, in order. */
export function upgradeNotes(text: string, version: string): { readonly text: string; readonly shellBlocks: readonly string[] } {
  const section = parseChangelog(text).sections.find((s) => s.version === version);
  if (!section) throw new Error(`CHANGELOG.md has no section for ${version}`);
  const lines = section.body.split('\n');
  const start = lines.indexOf(UPGRADE_NOTES);
  if (start < 0) throw new Error(`CHANGELOG.md's ${version} section has no "${UPGRADE_NOTES}"`);
  let end = lines.findIndex((l, i) => i > start && l.startsWith('### '));
  if (end < 0) end = lines.length;
  const notes = lines.slice(start + 1, end);
  const shellBlocks: string[] = [];
  // A block inside a list item is indented; its lines lose the fence's indentation.
  let block: { indent: number; lines: string[] } | undefined;
  for (const line of notes) {
    const fence = /^( *)```(\w*)\s*$/.exec(line);
    if (block === undefined && fence && ['sh', 'bash', 'shell'].includes(fence[2] ?? '')) {
      block = { indent: (fence[1] ?? '').length, lines: [] };
    } else if (block !== undefined && fence && fence[2] === '') {
      shellBlocks.push(block.lines.join('\n'));
      block = undefined;
    } else if (block !== undefined) {
      const indent = block.indent;
      block.lines.push(line.slice(Math.min(indent, line.length - line.trimStart().length)));
    }
  }
  return { text: notes.join('\n'), shellBlocks };
}

/**
 * The operator images in YAML `text` named `bucketoperator` (any registry), as `name:tag`
 * references: every `image` value of every document.
 */
export function operatorImages(text: string): string[] {
  const found: string[] = [];
  const walk = (node: unknown): void => {
    if (Array.isArray(node)) node.forEach(walk);
    else if (node !== null && typeof node === 'object') {
      for (const [key, value] of Object.entries(node)) {
        if (key === 'image' && typeof value === 'string' && /(^|\/)bucketoperator(:|@|$)/.test(value)) found.push(value);
        else walk(value);
      }
    }
  };
  for (const doc of parseAllDocuments(text)) walk(doc.toJS());
  return found;
}

/** The tag of an image reference (`registry/name:tag`), or '' when it has none. */
export function imageTag(ref: string): string {
  const name = ref.split('@')[0] ?? '';
  const colon = name.lastIndexOf(':');
  return colon > name.lastIndexOf('/') ? name.slice(colon + 1) : '';
}

/** `bucketoperator-X.Y.Z.tgz` and `bucketoperator:X.Y.Z` mentions in prose. */
const PROSE_VERSION = /\bbucketoperator([-:])(\d+\.\d+\.\d+)\b/g;

/** A place that carries the version: how to read it there and how to write another. */
export interface VersionPlace {
  /** Files (relative to the repository) or directories whose YAML files are all read. */
  readonly paths: readonly string[];
  /** What it says; each value must be the version. */
  read(text: string): string[];
  /** The text with `version` written; undefined when the place is rendered, not edited. */
  readonly write?: (text: string, version: string) => string;
}

const json = (text: string): Record<string, unknown> => JSON.parse(text) as Record<string, unknown>;

/** Replaces the first `"version": "..."` line indented by `indent` (JSON files keep their layout). */
function writeJsonVersion(text: string, version: string, indent: string, count: number): string {
  let left = count;
  const pattern = new RegExp(`^${indent}"version": "[^"]*"`, 'gm');
  const out = text.replace(pattern, (m) => (left-- > 0 ? `${indent}"version": "${version}"` : m));
  if (left > 0) throw new Error(`expected ${count} "version" lines indented by ${indent.length}`);
  return out;
}

/**
 * Every place that carries the package version. package.json is the source; the others follow
 * it, and test/unit/release/versions.test.ts fails when one does not.
 */
export const VERSION_PLACES: readonly VersionPlace[] = [
  {
    paths: ['package.json'],
    read: (t) => [String(json(t)['version'])],
    write: (t, v) => writeJsonVersion(t, v, '  ', 1),
  },
  {
    paths: ['package-lock.json'],
    read: (t) => {
      const lock = json(t) as { version?: string; packages?: Record<string, { version?: string }> };
      return [String(lock.version), String(lock.packages?.['']?.version)];
    },
    // The root's "version" (two spaces) and the root package's (six: "packages" > "").
    write: (t, v) => writeJsonVersion(writeJsonVersion(t, v, '  ', 1), v, '      ', 1),
  },
  {
    paths: ['infra/version.ts'],
    read: (t) => [...t.matchAll(/^export const VERSION = '([^']*)';$/gm)].map((m) => m[1] ?? ''),
    write: (t, v) => t.replace(/^export const VERSION = '[^']*';$/m, `export const VERSION = '${v}';`),
  },
  {
    paths: ['CHANGELOG.md'],
    read: (t) => [newestVersion(parseChangelog(t)) ?? ''],
  },
  {
    paths: ['examples/ci/package.json'],
    read: (t) => [String((json(t)['dependencies'] as Record<string, unknown> | undefined)?.['bucketoperator'])],
    write: (t, v) => t.replace(/^(\s*"bucketoperator": )"[^"]*"/m, `$1"${v}"`),
  },
  {
    paths: ['examples/ci/README.md'],
    read: (t) => [...t.matchAll(PROSE_VERSION)].map((m) => m[2] ?? ''),
    write: (t, v) => t.replace(PROSE_VERSION, (_m, sep: string) => `bucketoperator${sep}${v}`),
  },
  {
    // Rendered from infra/ (the default image) and examples/ci/main.ts (the workflow's tag).
    paths: ['dist', 'examples/ci/dist'],
    read: (t) => operatorImages(t).map(imageTag),
  },
];

/** The files a place names: its files, and the YAML files anywhere under its directories. */
export function placeFiles(repo: string, place: VersionPlace): string[] {
  const yamlUnder = (dir: string): string[] =>
    readdirSync(dir, { withFileTypes: true })
      .sort((a, b) => a.name.localeCompare(b.name))
      .flatMap((e) => (e.isDirectory() ? yamlUnder(join(dir, e.name)) : /\.ya?ml$/.test(e.name) ? [join(dir, e.name)] : []));
  return place.paths.flatMap((p) => {
    const path = join(repo, p);
    return statSync(path).isDirectory() ? yamlUnder(path) : [path];
  });
}

/** Every value each place holds that is not `version`, as `file: value` lines. */
export function disagreements(repo: string, version: string): string[] {
  const out: string[] = [];
  for (const place of VERSION_PLACES) {
    const files = placeFiles(repo, place);
    const values = files.flatMap((file) => place.read(readFileSync(file, 'utf8')).map((value) => ({ file: relative(repo, file), value })));
    if (values.length === 0) out.push(`${place.paths.join(', ')}: no version found`);
    for (const { file, value } of values) if (value !== version) out.push(`${file}: ${value === '' ? '(none)' : value}`);
  }
  return out;
}

function usage(): never {
  throw new Error('usage: npm run release -- <X.Y.Z> [--date YYYY-MM-DD]');
}

function parseArgs(argv: readonly string[]): { version: string; date: string } {
  let version: string | undefined;
  let date = new Date().toISOString().slice(0, 10);
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] ?? '';
    if (arg === '--date') date = argv[++i] ?? usage();
    else if (arg.startsWith('--date=')) date = arg.slice('--date='.length);
    else if (version === undefined && !arg.startsWith('-')) version = arg.replace(/^v/, '');
    else usage();
  }
  if (version === undefined || !SEMVER.test(version)) usage();
  return { version, date };
}

function step(what: string, cmd: string, args: readonly string[], env: NodeJS.ProcessEnv = process.env): void {
  process.stdout.write(`release: ${what}\n`);
  execFileSync(cmd, args, { cwd: REPO_ROOT, stdio: 'inherit', env });
}

function main(argv: readonly string[]): void {
  const { version, date } = parseArgs(argv);
  const read = (file: string) => readFileSync(join(REPO_ROOT, file), 'utf8');
  const previous = String(json(read('package.json'))['version']);
  if (compareVersions(version, previous) <= 0) throw new Error(`${version} is not newer than package.json's ${previous}`);

  // Refused before anything is written: the CHANGELOG is the one check a person must pass.
  const changelog = cutRelease(read('CHANGELOG.md'), version, date);
  writeFileSync(join(REPO_ROOT, 'CHANGELOG.md'), changelog);
  for (const place of VERSION_PLACES) {
    if (!place.write) continue;
    for (const file of place.paths) writeFileSync(join(REPO_ROOT, file), place.write(read(file), version));
  }
  process.stdout.write(
    `release: ${previous} -> ${version} in CHANGELOG.md and ${VERSION_PLACES.flatMap((p) => (p.write ? p.paths : [])).join(', ')}\n`,
  );

  step('rendering dist/', 'npm', ['run', 'synth']);
  step('rendering examples/ci/dist/', 'npx', ['mocha', '--config', '.mocharc.integration.json', 'test/integration/ci-example.test.ts'], {
    ...process.env,
    BUCKETOPERATOR_UPDATE_EXAMPLES: '1',
  });
  // Not through .mocharc.unit.json, whose spec (the whole unit suite) a --spec would add to.
  step('checking every place carries the version', 'npx', ['mocha', '--import=tsx', 'test/unit/release/versions.test.ts']);

  process.stdout.write(
    [
      '',
      `Ready to release ${version}. Review the diff (git diff), run npm test, then:`,
      '',
      `  git add CHANGELOG.md ${[...new Set(VERSION_PLACES.flatMap((p) => p.paths))].filter((f) => f !== 'CHANGELOG.md').join(' ')}`,
      `  git commit -m 'Release ${version}'`,
      `  git tag -a v${version} -m 'bucketoperator ${version}'`,
      `  git push origin HEAD v${version}`,
      '',
    ].join('\n'),
  );
}

if (require.main === module) {
  try {
    main(process.argv.slice(2));
  } catch (err) {
    process.stderr.write(`release: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  }
}
