/**
 * A local file or directory as layer entries, the way COPY puts it into an image: the tree lands
 * at a target path with the given owner. Modes are normalised (directories 0755, files 0644, or
 * 0755 when any execute bit is set) so the layer does not depend on the umask of the machine that
 * built the files.
 */
import { lstatSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { join, posix } from 'node:path';
import type { LayerEntry } from './archive';

/** Owner of copied entries. */
export interface Owner {
  readonly uid: number;
  readonly gid: number;
}

/** The normalised mode of a file: executable for everyone or for no one. */
export function normalisedFileMode(mode: number): number {
  return (mode & 0o111) !== 0 ? 0o755 : 0o644;
}

/**
 * `local` (a file, a symlink or a directory, walked) as entries under `target`, an absolute
 * image path; the directory itself becomes `target`, as `COPY dir /target` does.
 */
export function treeEntries(local: string, target: string, owner: Owner): LayerEntry[] {
  const out: LayerEntry[] = [];
  const visit = (path: string, at: string) => {
    const st = lstatSync(path);
    if (st.isSymbolicLink()) out.push({ type: 'symlink', path: at, target: readlinkSync(path) });
    else if (st.isDirectory()) {
      out.push({ type: 'dir', path: at, mode: 0o755, ...owner });
      for (const name of readdirSync(path).sort()) visit(join(path, name), posix.join(at, name));
    } else if (st.isFile()) out.push({ type: 'file', path: at, mode: normalisedFileMode(st.mode), ...owner, content: readFileSync(path) });
    else throw new Error(`${path} is neither a file, a directory nor a symlink: it cannot go into an image`);
  };
  visit(local, target);
  return out;
}
