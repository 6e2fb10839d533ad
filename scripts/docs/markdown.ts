/**
 * The two pieces of Markdown the generated docs need: a table whose cells may hold any text,
 * and the blocks between `<!-- generated:NAME -->` and `<!-- /generated:NAME -->` markers that
 * `npm run docs` rewrites.
 */

/** A cell's text made safe for one table cell: no line breaks, pipes escaped. */
export function cell(text: string): string {
  return text.replace(/\s*\n\s*/g, ' ').replace(/\|/g, '\\|');
}

/** A Markdown table of `rows` under `headers`; cells are escaped with {@link cell}. */
export function table(headers: readonly string[], rows: readonly (readonly string[])[]): string {
  const line = (cells: readonly string[]) => `| ${cells.map(cell).join(' | ')} |`;
  return [line(headers), `| ${headers.map(() => '---').join(' | ')} |`, ...rows.map(line)].join('\n');
}

const BLOCK = /<!-- generated:([a-z0-9-]+) -->\n[\s\S]*?<!-- \/generated:\1 -->/g;
const OPENING = /<!-- generated:([a-z0-9-]+) -->/g;

/** Names of the generated blocks `text` holds, in order. */
export function blockNames(text: string): string[] {
  return [...text.matchAll(OPENING)].map((m) => m[1] ?? '');
}

/**
 * `text` with every generated block replaced by its fresh content from `blocks`. Throws when
 * a block has no closing marker or names no known content, so a typo never leaves a table
 * silently stale.
 */
export function fillBlocks(text: string, blocks: Readonly<Record<string, string>>, where: string): string {
  const closed = [...text.matchAll(BLOCK)].map((m) => m[1] ?? '');
  const opened = blockNames(text);
  const unclosed = opened.filter((name, i) => closed[i] !== name);
  if (unclosed.length > 0) throw new Error(`${where}: generated block ${unclosed[0] ?? ''} has no closing <!-- /generated:${unclosed[0] ?? ''} -->`);
  return text.replace(BLOCK, (_whole, name: string) => {
    const content = blocks[name];
    if (content === undefined) throw new Error(`${where}: no generator for the block ${name} (known: ${Object.keys(blocks).sort().join(', ')})`);
    return `<!-- generated:${name} -->\n${content.trimEnd()}\n<!-- /generated:${name} -->`;
  });
}
