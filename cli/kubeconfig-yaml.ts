/**
 * The YAML parser the shipped plugin reads kubeconfig files with: `parse` of the `yaml`
 * package, behind a fast path for the plain block style that kubectl, client-go and the usual
 * cluster tools write (maps, sequences, one-line scalars). scripts/bundle-plugin.ts hands this
 * module to operator/runtime/kubeconfig.ts in place of `yaml`; run from the sources, the
 * plugin uses `yaml` itself.
 *
 * Why: `yaml` is a full YAML 1.2 implementation that scans a document character by character
 * in JavaScript; on a kubeconfig with its base64 certificates that was about an eighth of the
 * plugin's CPU from start to exit (bench/cli-startup.ts). The fast path reads one line at a
 * time with regular expressions. It accepts only what it can read exactly as `yaml.parse`
 * does (test/unit/cli/kubeconfig-yaml.test.ts holds the two to the same results) and hands
 * anything else, a comment after a value, a number, a flow collection, an anchor, to `yaml`.
 */
import type * as Yaml from 'yaml';

/** Parses a kubeconfig document as `yaml.parse(text)` would, the same value or the same error. */
export function parse(text: string): unknown {
  const fast = parseBlockYaml(text);
  if (fast) return fast.value;
  // Required here, not imported: a kubeconfig in the plain style never loads it.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return (require('yaml') as typeof Yaml).parse(text);
}

/** One line that carries content: its indentation (spaces) and the rest. */
interface Line {
  readonly indent: number;
  readonly text: string;
}

/** Thrown inside the fast path on anything it does not read; `parseBlockYaml` then returns undefined. */
class NotPlain extends Error {}

/** `key:` or `key: value`; keys are plain words, as kubeconfig's are. */
const ENTRY = /^([A-Za-z_][\w./-]*):(?: +(.*))?$/;
/**
 * A plain scalar that YAML 1.2's core schema reads as a string: no number and no indicator
 * first (a home path `~/x` and a flag `--x` are fine), no comment.
 */
const PLAIN_STRING = /^(?:[A-Za-z_/]|~\/|--?[A-Za-z])[\w ./:@=+~%,'"()-]*$/;
const NULLS = new Set(['null', 'Null', 'NULL']);
const BOOLEANS = new Map([
  ['true', true],
  ['True', true],
  ['TRUE', true],
  ['false', false],
  ['False', false],
  ['FALSE', false],
]);

/**
 * The fast path: the document's value when `text` is a mapping in the plain block style,
 * undefined otherwise (then only `yaml` can say what it is, or what is wrong with it).
 */
export function parseBlockYaml(text: string): { readonly value: Record<string, unknown> } | undefined {
  // Tabs, carriage returns and a byte-order mark each have rules of their own.
  if (/[\t\r\uFEFF]/.test(text)) return undefined;
  const lines: Line[] = [];
  for (const raw of text.split('\n')) {
    const body = raw.trimStart();
    if (body === '' || body.startsWith('#')) continue;
    lines.push({ indent: raw.length - body.length, text: body.trimEnd() });
  }
  try {
    const reader = new BlockReader(lines);
    if (lines[0]?.indent !== 0) return undefined;
    const value = reader.mapping(0);
    if (!reader.done()) return undefined;
    return { value };
  } catch (err) {
    if (err instanceof NotPlain) return undefined;
    throw err;
  }
}

/** A recursive reader over the content lines, by indentation. */
class BlockReader {
  private i = 0;

  constructor(private readonly lines: Line[]) {}

  done(): boolean {
    return this.i >= this.lines.length;
  }

  private peek(): Line | undefined {
    return this.lines[this.i];
  }

  /** Fails when the next line is indented deeper than `indent`: a continuation this reader does not take. */
  private noDeeper(indent: number): void {
    const next = this.peek();
    if (next && next.indent > indent) throw new NotPlain();
  }

  /** The block mapping whose keys sit at `indent`. */
  mapping(indent: number): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    for (let line = this.peek(); line && line.indent === indent; line = this.peek()) {
      const m = ENTRY.exec(line.text);
      const key = m?.[1];
      if (!m || key === undefined || isSeqItem(line.text)) throw new NotPlain();
      // Keys YAML reads as null or a boolean, a repeated key (an error), or one JavaScript treats specially.
      if (NULLS.has(key) || BOOLEANS.has(key) || key === '__proto__' || Object.hasOwn(out, key)) throw new NotPlain();
      this.i++;
      const rest = m[2] ?? '';
      out[key] = rest === '' ? this.nested(indent) : scalar(rest);
      this.noDeeper(indent);
    }
    return out;
  }

  /** The value of `key:` with nothing after it: a deeper block, a sequence at the key's own indentation, or null. */
  private nested(indent: number): unknown {
    const next = this.peek();
    if (next && next.indent > indent) return isSeqItem(next.text) ? this.sequence(next.indent) : this.mapping(next.indent);
    if (next && next.indent === indent && isSeqItem(next.text)) return this.sequence(indent);
    return null;
  }

  /** The block sequence whose dashes sit at `indent`. */
  private sequence(indent: number): unknown[] {
    const out: unknown[] = [];
    for (let line = this.peek(); line && line.indent === indent && isSeqItem(line.text); line = this.peek()) {
      const rest = line.text.slice(1).trimStart();
      if (rest === '') throw new NotPlain();
      if (ENTRY.test(rest)) {
        // `- key: value`: a mapping whose keys line up with this first one.
        const at = indent + line.text.length - rest.length;
        this.lines[this.i] = { indent: at, text: rest };
        out.push(this.mapping(at));
      } else {
        this.i++;
        out.push(scalar(rest));
      }
      this.noDeeper(indent);
    }
    return out;
  }
}

function isSeqItem(text: string): boolean {
  return text === '-' || text.startsWith('- ');
}

/** A one-line scalar (or an empty flow collection), as the core schema reads it. */
function scalar(text: string): unknown {
  if (text === '{}') return {};
  if (text === '[]') return [];
  if (text.startsWith("'")) {
    const m = /^'((?:[^']|'')*)'$/.exec(text);
    if (m?.[1] === undefined) throw new NotPlain();
    return m[1].replaceAll("''", "'");
  }
  if (text.startsWith('"')) {
    // Escapes have rules of their own.
    const m = /^"([^"\\]*)"$/.exec(text);
    if (m?.[1] === undefined) throw new NotPlain();
    return m[1];
  }
  if (NULLS.has(text)) return null;
  const bool = BOOLEANS.get(text);
  if (bool !== undefined) return bool;
  // `a: b` on one line is no scalar, and a trailing colon starts a mapping.
  if (!PLAIN_STRING.test(text) || text.includes(': ') || text.endsWith(':')) throw new NotPlain();
  return text;
}
