/**
 * The few DER (ASN.1 Distinguished Encoding Rules) encodings an X.509 certificate needs.
 * Node 20's node:crypto parses and verifies certificates but cannot build one, and the
 * operator takes no dependency for it: certificates.ts assembles a TBSCertificate from these
 * and signs it with node:crypto.
 *
 * Only encoding, and only of values the operator itself produces: every function takes
 * well-formed input and throws on anything else rather than emit a structure a verifier
 * would read differently.
 */

/** One DER element: tag byte, definite length, contents. */
export function tlv(tag: number, contents: Buffer): Buffer {
  return Buffer.concat([Buffer.from([tag]), encodeLength(contents.length), contents]);
}

/** Definite length: short form below 128, long form (0x80 | byte count, big-endian) above. */
function encodeLength(length: number): Buffer {
  if (length < 0x80) return Buffer.from([length]);
  const bytes: number[] = [];
  for (let n = length; n > 0; n = Math.floor(n / 256)) bytes.unshift(n % 256);
  return Buffer.from([0x80 | bytes.length, ...bytes]);
}

/** SEQUENCE of `items`, in order. */
export function sequence(...items: Buffer[]): Buffer {
  return tlv(0x30, Buffer.concat(items));
}

/** SET of `items`; DER sorts a SET OF by encoding, so callers with several items get that order. */
export function set(...items: Buffer[]): Buffer {
  return tlv(0x31, Buffer.concat([...items].sort(Buffer.compare)));
}

/** BOOLEAN (DER: true is 0xff). */
export function boolean(value: boolean): Buffer {
  return tlv(0x01, Buffer.from([value ? 0xff : 0x00]));
}

/**
 * INTEGER from a non-negative number or the big-endian bytes of a non-negative integer:
 * minimal length (leading zero bytes dropped), and a zero byte prepended when the top bit is
 * set, so the value is never read as negative (Go rejects negative serial numbers).
 */
export function integer(value: number | Buffer): Buffer {
  let bytes: Buffer;
  if (typeof value === 'number') {
    if (!Number.isSafeInteger(value) || value < 0) throw new Error('der: integer must be a non-negative safe integer');
    const out: number[] = [];
    for (let n = value; n > 0; n = Math.floor(n / 256)) out.unshift(n % 256);
    bytes = Buffer.from(out.length ? out : [0]);
  } else {
    let start = 0;
    while (start < value.length - 1 && value[start] === 0) start++;
    bytes = value.length ? value.subarray(start) : Buffer.from([0]);
  }
  if ((bytes[0] ?? 0) & 0x80) bytes = Buffer.concat([Buffer.from([0]), bytes]);
  return tlv(0x02, bytes);
}

/** OBJECT IDENTIFIER from dotted decimal, e.g. `2.5.4.3`. */
export function oid(dotted: string): Buffer {
  const arcs = dotted.split('.').map((a) => {
    if (!/^(0|[1-9][0-9]*)$/.test(a)) throw new Error(`der: bad object identifier ${dotted}`);
    return Number(a);
  });
  const [first, second, ...rest] = arcs;
  if (first === undefined || second === undefined || first > 2 || (first < 2 && second > 39)) throw new Error(`der: bad object identifier ${dotted}`);
  const out: number[] = [];
  for (const arc of [first * 40 + second, ...rest]) {
    // Base 128, most significant group first, every byte but the last with the high bit set.
    const groups: number[] = [arc % 128];
    for (let n = Math.floor(arc / 128); n > 0; n = Math.floor(n / 128)) groups.unshift((n % 128) | 0x80);
    out.push(...groups);
  }
  return tlv(0x06, Buffer.from(out));
}

/** UTF8String. */
export function utf8String(value: string): Buffer {
  return tlv(0x0c, Buffer.from(value, 'utf8'));
}

/** OCTET STRING. */
export function octetString(value: Buffer): Buffer {
  return tlv(0x04, value);
}

/** BIT STRING of whole bytes (no unused bits). */
export function bitString(value: Buffer): Buffer {
  return tlv(0x03, Buffer.concat([Buffer.from([0]), value]));
}

/**
 * BIT STRING of named bits (bit 0 first, as KeyUsage numbers them), in DER's minimal form:
 * trailing zero bits are not encoded.
 */
export function namedBits(bits: readonly number[]): Buffer {
  if (bits.length === 0) return tlv(0x03, Buffer.from([0]));
  const highest = Math.max(...bits);
  const bytes = Buffer.alloc(Math.floor(highest / 8) + 1);
  for (const bit of bits) bytes[Math.floor(bit / 8)]! |= 0x80 >> (bit % 8);
  const unused = 7 - (highest % 8);
  return tlv(0x03, Buffer.concat([Buffer.from([unused]), bytes]));
}

/**
 * Time as X.509 wants it (RFC 5280 4.1.2.5): UTCTime `YYMMDDHHMMSSZ` for 1950 to 2049,
 * GeneralizedTime `YYYYMMDDHHMMSSZ` otherwise; whole seconds, UTC.
 */
export function time(date: Date): Buffer {
  const ms = date.getTime();
  if (!Number.isFinite(ms)) throw new Error('der: invalid date');
  const iso = new Date(ms - (ms % 1000)).toISOString(); // YYYY-MM-DDTHH:MM:SS.000Z
  const digits = iso.slice(0, 19).replace(/[-T:]/g, '');
  const year = date.getUTCFullYear();
  if (year >= 1950 && year < 2050) return tlv(0x17, Buffer.from(`${digits.slice(2)}Z`, 'ascii'));
  return tlv(0x18, Buffer.from(`${digits}Z`, 'ascii'));
}

/** `[n]` EXPLICIT: the element wrapped in a constructed context-specific tag. */
export function explicit(n: number, inner: Buffer): Buffer {
  return tlv(0xa0 | n, inner);
}

/** `[n]` IMPLICIT of a primitive type: the contents under a primitive context-specific tag. */
export function implicitPrimitive(n: number, contents: Buffer): Buffer {
  return tlv(0x80 | n, contents);
}

/** Where one element sits in a buffer: its tag, and its contents and whole extent as offsets. */
export interface DerElement {
  readonly tag: number;
  /** Offset of the tag byte. */
  readonly start: number;
  /** Offset of the first contents byte. */
  readonly contentStart: number;
  /** Offset just past the element. */
  readonly end: number;
}

/**
 * The elements one after the other in `buf` from `from` to `to` (a SEQUENCE's contents, for
 * instance). Reads only what certificates.ts needs to copy out of a certificate of its own
 * making (the subject of a CA); throws on a length that runs past `to`.
 */
export function readElements(buf: Buffer, from = 0, to = buf.length): DerElement[] {
  const out: DerElement[] = [];
  let at = from;
  while (at < to) {
    const tag = buf[at];
    const first = buf[at + 1];
    if (tag === undefined || first === undefined) throw new Error('der: truncated element');
    let length = first;
    let contentStart = at + 2;
    if (first & 0x80) {
      const count = first & 0x7f;
      if (count === 0 || count > 4) throw new Error('der: unsupported length');
      length = 0;
      for (let i = 0; i < count; i++) length = length * 256 + (buf[at + 2 + i] ?? 0);
      contentStart += count;
    }
    const end = contentStart + length;
    if (end > to) throw new Error('der: element runs past its container');
    out.push({ tag, start: at, contentStart, end });
    at = end;
  }
  return out;
}
