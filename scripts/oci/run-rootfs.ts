/**
 * Runs an image archive's entrypoint without a container runtime: the archive is checked and
 * unpacked into a temporary root filesystem, then its ENTRYPOINT (with the given arguments in
 * place of CMD) runs there through `unshare --root --wd --setuid --setgid`, with the image's
 * environment, user and working directory. Only the image's own files take part: its loader,
 * its libc and libstdc++, its Node, its /app. Needs root (CAP_SYS_CHROOT); no namespaces, no
 * network isolation: a check that the image starts, not a sandbox.
 *
 *   tsx scripts/oci/run-rootfs.ts <archive> [-- args...]      exit code is the entrypoint's
 *   tsx scripts/oci/run-rootfs.ts --exec <archive> -- cmd...  runs cmd instead of the entrypoint
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ImageConfig } from './archive';
import { userIds } from './dockerfile';
import { readOciArchive, unpackLayers } from './read-archive';

/** The command line `unshare` runs for an image config, as a container runtime would start it. */
export function rootfsCommand(root: string, config: ImageConfig, args: readonly string[] | undefined, exec: boolean): string[] {
  const { uid, gid } = userIds(config.User ?? '0');
  const argv = exec ? [...(args ?? [])] : [...(config.Entrypoint ?? []), ...(args ?? config.Cmd ?? [])];
  if (argv.length === 0) throw new Error('nothing to run: the image has no ENTRYPOINT or CMD and no command was given');
  return ['unshare', `--root=${root}`, `--wd=${config.WorkingDir ?? '/'}`, `--setuid=${uid}`, `--setgid=${gid}`, '--', ...argv];
}

function main(argv: readonly string[]): number {
  const exec = argv[0] === '--exec';
  const rest = exec ? argv.slice(1) : argv;
  const archive = rest[0];
  const dash = rest.indexOf('--');
  if (!archive || (rest.length > 1 && dash !== 1)) throw new Error('usage: tsx scripts/oci/run-rootfs.ts [--exec] <archive> [-- args...]');
  const args = dash === 1 ? rest.slice(2) : undefined;
  const image = readOciArchive(readFileSync(archive));
  const root = mkdtempSync(join(tmpdir(), 'oci-rootfs-'));
  try {
    // mkdtemp makes it 0700: after the chroot the image's user could not even look up /nodejs.
    chmodSync(root, 0o755);
    unpackLayers(image.layers, root);
    const cmd = rootfsCommand(root, image.config.config, args, exec);
    const env = Object.fromEntries((image.config.config.Env ?? []).map((e) => [e.slice(0, e.indexOf('=')), e.slice(e.indexOf('=') + 1)]));
    process.stderr.write(`[run-rootfs] ${cmd.slice(1).join(' ')}\n`);
    const res = spawnSync(cmd[0] ?? 'unshare', cmd.slice(1), { stdio: 'inherit', env });
    if (res.error) throw res.error;
    return res.status ?? 1;
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

if (require.main === module) {
  try {
    process.exitCode = main(process.argv.slice(2));
  } catch (err) {
    process.stderr.write(`[run-rootfs] ERROR: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  }
}
