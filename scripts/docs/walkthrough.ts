/**
 * The shell blocks of a document that a test runs as written: each ```sh block right after a
 * `<!-- walkthrough -->` line. test/integration/readme-walkthrough.test.ts runs the README's
 * against the real control plane.
 */

/** One marked block: its shell text and the line its fence opens on (1-based). */
export interface ShellBlock {
  readonly line: number;
  readonly script: string;
}

const MARKER = '<!-- walkthrough -->';

/** The marked blocks of `markdown`, in order. Throws when a marker is not followed by a sh block. */
export function walkthroughBlocks(markdown: string): ShellBlock[] {
  const lines = markdown.split('\n');
  const blocks: ShellBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    if (lines[i]?.trim() !== MARKER) continue;
    const open = i + 1;
    if (!/^```(sh|bash|shell)\s*$/.test(lines[open] ?? '')) throw new Error(`line ${i + 1}: ${MARKER} is not followed by a \`\`\`sh block`);
    const close = lines.findIndex((l, j) => j > open && l.startsWith('```'));
    if (close < 0) throw new Error(`line ${open + 1}: the walkthrough block is never closed`);
    blocks.push({ line: open + 1, script: lines.slice(open + 1, close).join('\n') });
    i = close;
  }
  return blocks;
}
