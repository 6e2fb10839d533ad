/**
 * A minimal POSIX ustar writer (pure), so the support bundle is one `.tar.gz` that `tar xzf`
 * opens anywhere, without a dependency. Regular files only; names up to 255 bytes.
 */
import { gzipSync } from 'node:zlib';

/** One file of the archive. */
export interface TarEntry {
  /** Path inside the archive, `/`-separated, no leading slash. */
  readonly name: string;
  readonly content: string | Buffer;
  /** @default 0o644 */
  readonly mode?: number;
}

const BLOCK = 512;

function octal(value: number, width: number): string {
  return value.toString(8).padStart(width - 1, '0') + '\0';
}

/** Splits `name` into ustar's prefix (up to 155 bytes) and name (up to 100 bytes) at a `/`. */
function splitName(name: string): { prefix: string; name: string } {
  if (Buffer.byteLength(name) <= 100) return { prefix: '', name };
  for (let i = name.lastIndexOf('/'); i > 0; i = name.lastIndexOf('/', i - 1)) {
    const prefix = name.slice(0, i);
    const rest = name.slice(i + 1);
    if (Buffer.byteLength(prefix) <= 155 && Buffer.byteLength(rest) <= 100) return { prefix, name: rest };
  }
  throw new Error(`tar: name too long: ${name}`);
}

function header(entry: TarEntry, size: number, mtime: number): Buffer {
  const h = Buffer.alloc(BLOCK, 0);
  const { prefix, name } = splitName(entry.name);
  h.write(name, 0, 100, 'utf8');
  h.write(octal(entry.mode ?? 0o644, 8), 100, 8, 'ascii');
  h.write(octal(0, 8), 108, 8, 'ascii');
  h.write(octal(0, 8), 116, 8, 'ascii');
  h.write(octal(size, 12), 124, 12, 'ascii');
  h.write(octal(mtime, 12), 136, 12, 'ascii');
  h.write('        ', 148, 8, 'ascii');
  h.write('0', 156, 1, 'ascii');
  h.write('ustar\0', 257, 6, 'ascii');
  h.write('00', 263, 2, 'ascii');
  h.write(prefix, 345, 155, 'utf8');
  let sum = 0;
  for (const byte of h) sum += byte;
  h.write(octal(sum, 7) + ' ', 148, 8, 'ascii');
  return h;
}

/** The uncompressed tar of `entries`, each with modification time `mtime`. */
export function tar(entries: readonly TarEntry[], mtime: Date): Buffer {
  const seconds = Math.floor(mtime.getTime() / 1000);
  const parts: Buffer[] = [];
  for (const e of entries) {
    const body = typeof e.content === 'string' ? Buffer.from(e.content, 'utf8') : e.content;
    parts.push(header(e, body.length, seconds), body);
    const pad = (BLOCK - (body.length % BLOCK)) % BLOCK;
    if (pad > 0) parts.push(Buffer.alloc(pad, 0));
  }
  parts.push(Buffer.alloc(BLOCK * 2, 0));
  return Buffer.concat(parts);
}

/** `tar` compressed with gzip: the bytes of a `.tar.gz`. */
export function tarGz(entries: readonly TarEntry[], mtime: Date): Buffer {
  return gzipSync(tar(entries, mtime));
}
