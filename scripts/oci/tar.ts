/**
 * A deterministic tar writer and reader for image layers: POSIX ustar headers, with a pax
 * extended header in front of an entry whose path or link target does not fit ustar's fields.
 * Directories, regular files and symbolic links only, which is all an image layer of ours holds.
 * Pure: bytes in, bytes out; the same entries always give the same bytes.
 */

const BLOCK = 512;

/** One member of a tar stream, as written or as read back. */
export type TarMember =
  | { readonly type: 'dir'; readonly path: string; readonly mode: number; readonly uid: number; readonly gid: number }
  | { readonly type: 'file'; readonly path: string; readonly mode: number; readonly uid: number; readonly gid: number; readonly content: Buffer }
  | { readonly type: 'symlink'; readonly path: string; readonly target: string; readonly uid: number; readonly gid: number };

const TYPE_FLAG = { file: '0', symlink: '2', dir: '5' } as const;

function octal(value: number, width: number): string {
  const digits = value.toString(8);
  if (digits.length > width - 1) throw new Error(`tar: ${value} does not fit a ${width}-byte field`);
  return digits.padStart(width - 1, '0') + '\0';
}

/** ustar's prefix (up to 155 bytes) and name (up to 100 bytes), split at a `/`; undefined when impossible. */
function splitName(name: string): { prefix: string; name: string } | undefined {
  if (Buffer.byteLength(name) <= 100) return { prefix: '', name };
  for (let i = name.lastIndexOf('/'); i > 0; i = name.lastIndexOf('/', i - 1)) {
    const prefix = name.slice(0, i);
    const rest = name.slice(i + 1);
    if (Buffer.byteLength(prefix) <= 155 && Buffer.byteLength(rest) <= 100 && rest !== '') return { prefix, name: rest };
  }
  return undefined;
}

/** A pax record `"<len> key=value\n"`, whose length counts its own digits. */
function paxRecord(key: string, value: string): string {
  const body = ` ${key}=${value}\n`;
  const bodyLen = Buffer.byteLength(body);
  let len = bodyLen + 1;
  while (bodyLen + String(len).length !== len) len = bodyLen + String(len).length;
  return `${len}${body}`;
}

interface HeaderFields {
  readonly name: string;
  readonly mode: number;
  readonly uid: number;
  readonly gid: number;
  readonly size: number;
  readonly mtime: number;
  readonly typeflag: string;
  readonly linkname: string;
}

function header(f: HeaderFields): Buffer {
  const h = Buffer.alloc(BLOCK, 0);
  const split = splitName(f.name) ?? { prefix: '', name: f.name.slice(0, 100) };
  h.write(split.name, 0, 100, 'utf8');
  h.write(octal(f.mode & 0o7777, 8), 100, 8, 'ascii');
  h.write(octal(f.uid, 8), 108, 8, 'ascii');
  h.write(octal(f.gid, 8), 116, 8, 'ascii');
  h.write(octal(f.size, 12), 124, 12, 'ascii');
  h.write(octal(f.mtime, 12), 136, 12, 'ascii');
  h.write('        ', 148, 8, 'ascii');
  h.write(f.typeflag, 156, 1, 'ascii');
  h.write(f.linkname, 157, 100, 'utf8');
  h.write('ustar\0', 257, 6, 'ascii');
  h.write('00', 263, 2, 'ascii');
  h.write(split.prefix, 345, 155, 'utf8');
  let sum = 0;
  for (const byte of h) sum += byte;
  h.write(octal(sum, 7) + ' ', 148, 8, 'ascii');
  return h;
}

function padded(body: Buffer): Buffer[] {
  const pad = (BLOCK - (body.length % BLOCK)) % BLOCK;
  return pad > 0 ? [body, Buffer.alloc(pad, 0)] : [body];
}

/** The name a member is stored under: no leading `/` or `./`, directories with a trailing `/`. */
function storedName(m: TarMember): string {
  return m.type === 'dir' ? `${m.path}/` : m.path;
}

/** True when `s` is plain ASCII, so ustar's fields hold it as any reader decodes it. */
function ascii(s: string): boolean {
  return /^[\x20-\x7e]*$/.test(s);
}

/**
 * The uncompressed tar of `members`, in the order given, every entry with modification time
 * `mtime` (seconds since the epoch) and no user or group names (ids only).
 */
export function writeTar(members: readonly TarMember[], mtime: number): Buffer {
  const parts: Buffer[] = [];
  for (const m of members) {
    const name = storedName(m);
    const linkname = m.type === 'symlink' ? m.target : '';
    const pax: string[] = [];
    if (!splitName(name) || !ascii(name)) pax.push(paxRecord('path', name));
    if (Buffer.byteLength(linkname) > 100 || !ascii(linkname)) pax.push(paxRecord('linkpath', linkname));
    if (pax.length > 0) {
      const body = Buffer.from(pax.join(''), 'utf8');
      const paxName = `PaxHeaders/${name.replace(/\/$/, '').split('/').at(-1) ?? 'entry'}`.slice(0, 100);
      parts.push(header({ name: paxName, mode: 0o644, uid: 0, gid: 0, size: body.length, mtime, typeflag: 'x', linkname: '' }), ...padded(body));
    }
    const content = m.type === 'file' ? m.content : Buffer.alloc(0);
    const mode = m.type === 'symlink' ? 0o777 : m.mode;
    parts.push(header({ name, mode, uid: m.uid, gid: m.gid, size: content.length, mtime, typeflag: TYPE_FLAG[m.type], linkname }));
    if (content.length > 0) parts.push(...padded(content));
  }
  parts.push(Buffer.alloc(BLOCK * 2, 0));
  return Buffer.concat(parts);
}

function field(block: Buffer, offset: number, length: number): string {
  const raw = block.subarray(offset, offset + length);
  const end = raw.indexOf(0);
  return raw.subarray(0, end < 0 ? length : end).toString('utf8');
}

function octalField(block: Buffer, offset: number, length: number): number {
  const text = field(block, offset, length).trim();
  return text === '' ? 0 : parseInt(text, 8);
}

function parsePax(body: Buffer): Map<string, string> {
  const out = new Map<string, string>();
  let at = 0;
  while (at < body.length) {
    const space = body.indexOf(0x20, at);
    if (space < 0) break;
    const len = parseInt(body.subarray(at, space).toString('ascii'), 10);
    if (!Number.isFinite(len) || len <= 0) throw new Error('tar: malformed pax record');
    const record = body.subarray(space + 1, at + len - 1).toString('utf8');
    const eq = record.indexOf('=');
    out.set(record.slice(0, eq), record.slice(eq + 1));
    at += len;
  }
  return out;
}

/** One member read back, with the header fields a check needs. */
export type ReadMember = TarMember & { readonly mtime: number };

/**
 * Reads a tar stream back (ustar with pax `path`/`linkpath`, and GNU long names): directories,
 * files and symlinks; hard links are resolved to a copy of their target's content. Throws on a
 * bad header checksum or an entry type it does not know.
 */
export function readTar(data: Buffer): ReadMember[] {
  const out: ReadMember[] = [];
  const byPath = new Map<string, Buffer>();
  let at = 0;
  let pending = new Map<string, string>();
  while (at + BLOCK <= data.length) {
    const block = data.subarray(at, at + BLOCK);
    if (block.every((b) => b === 0)) break;
    let sum = 0;
    for (let i = 0; i < BLOCK; i++) sum += i >= 148 && i < 156 ? 0x20 : (block[i] ?? 0);
    if (sum !== octalField(block, 148, 8)) throw new Error(`tar: bad header checksum at byte ${at}`);
    const size = octalField(block, 124, 12);
    const body = data.subarray(at + BLOCK, at + BLOCK + size);
    at += BLOCK + Math.ceil(size / BLOCK) * BLOCK;
    const typeflag = field(block, 156, 1) || '0';
    if (typeflag === 'x') {
      pending = parsePax(body);
      continue;
    }
    if (typeflag === 'L' || typeflag === 'K') {
      pending.set(typeflag === 'L' ? 'path' : 'linkpath', body.toString('utf8').replace(/\0+$/, ''));
      continue;
    }
    if (typeflag === 'g') continue;
    const prefix = field(block, 345, 155);
    const ustarName = prefix ? `${prefix}/${field(block, 0, 100)}` : field(block, 0, 100);
    const path = (pending.get('path') ?? ustarName).replace(/^\.?\/+/, '').replace(/\/+$/, '');
    const linkname = pending.get('linkpath') ?? field(block, 157, 100);
    pending = new Map();
    const common = { path, uid: octalField(block, 108, 8), gid: octalField(block, 116, 8), mtime: octalField(block, 136, 12) };
    const mode = octalField(block, 100, 8);
    if (typeflag === '5') out.push({ type: 'dir', mode, ...common });
    else if (typeflag === '2') out.push({ type: 'symlink', target: linkname, ...common });
    else if (typeflag === '0' || typeflag === '7') {
      const content = Buffer.from(body);
      byPath.set(path, content);
      out.push({ type: 'file', mode, content, ...common });
    } else if (typeflag === '1') {
      const target = byPath.get(linkname.replace(/^\.?\/+/, ''));
      if (!target) throw new Error(`tar: hard link ${path} to unknown ${linkname}`);
      out.push({ type: 'file', mode, content: target, ...common });
    } else throw new Error(`tar: entry ${path} has type ${typeflag}, which this reader does not handle`);
  }
  return out;
}
