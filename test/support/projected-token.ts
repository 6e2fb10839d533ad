/**
 * A Pod's projected ServiceAccount token, rewritten on the node the way the kubelet rotates it:
 * its AtomicWriter fills a new `..<timestamp>` directory beside the old one and swaps the
 * `..data` symlink with one rename, so a reader sees the old files or the new ones, never a mix.
 * The volume's `token` entry is a symlink through `..data`, so its path never changes: only
 * what it resolves to. Needs root (the files belong to the kubelet).
 */
import { chown, mkdir, readdir, readFile, readlink, rename, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

/** The projected volume that carries the `token` of the Pod `podUid` (the admission plugin's `kube-api-access-*`). */
export async function projectedTokenDir(kubeletRoot: string, podUid: string): Promise<string> {
  const root = join(kubeletRoot, 'pods', podUid, 'volumes', 'kubernetes.io~projected');
  for (const name of await readdir(root)) {
    const dir = join(root, name);
    if ((await readdir(dir)).includes('token')) return dir;
  }
  throw new Error(`no projected volume with a token under ${root}`);
}

/** Writes `token` into the volume at `dir` as the kubelet does; the other files are carried over as they are. */
export async function swapProjectedToken(dir: string, token: string): Promise<void> {
  const current = join(dir, await readlink(join(dir, '..data')));
  const name = `..${new Date().toISOString().replace(/[-:.TZ]/g, '_')}${process.hrtime.bigint() % 1000n}`;
  const next = join(dir, name);
  await mkdir(next, { mode: 0o755 });
  const dirStat = await stat(current);
  await chown(next, dirStat.uid, dirStat.gid);
  for (const file of await readdir(current)) {
    const from = join(current, file);
    const st = await stat(from);
    const to = join(next, file);
    await writeFile(to, file === 'token' ? token : await readFile(from), { mode: st.mode & 0o777 });
    await chown(to, st.uid, st.gid);
  }
  const tmp = join(dir, '..data_tmp');
  await rm(tmp, { force: true });
  await symlink(name, tmp);
  await rename(tmp, join(dir, '..data'));
  await rm(current, { recursive: true, force: true });
}

/** The token the volume serves now. */
export function readProjectedToken(dir: string): Promise<string> {
  return readFile(join(dir, 'token'), 'utf8');
}
