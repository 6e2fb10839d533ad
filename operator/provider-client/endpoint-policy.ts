/**
 * Which provider endpoints the operator refuses to send an API key to, whatever a
 * BucketProviderConfig says: link-local addresses and cloud metadata services, in every form an
 * address can be written in. A config author who may create configs but not read the
 * operator's own credentials could otherwise point the operator at the node's metadata service
 * (which answers link-local requests with instance credentials) and read the answers back
 * through bucket status and events.
 *
 * Plain loopback and private IPv4 and IPv6 addresses stay allowed: the mock provider listens on
 * loopback and in-cluster providers on private addresses. An IPv6 address that only carries an
 * IPv4 address through a translator or tunnel (NAT64, 6to4, IPv4-translated and the deprecated
 * IPv4-compatible form) is judged by the IPv4 address it embeds, more strictly: it is refused
 * when that address is link-local, a metadata address, loopback, private, shared (CGNAT) or
 * "this network", because a translator reaches those from where it stands, a network the
 * operator cannot see, and a real provider never needs the detour (its IPv4 address works as
 * it is). An IPv4-mapped address (::ffff:a.b.c.d) is the IPv4 address itself on this host's
 * sockets, so it is judged exactly as that address.
 *
 * Checked twice: on the endpoint's literal host when a bucket connects (operator/bucket/
 * connect.ts), and on every address a host name resolves to when a socket is opened
 * ({@link guardedLookup}), so a DNS name pointing at a metadata address (or a DNS64 resolver
 * synthesising a NAT64 one) is refused too. {@link endpointUserinfoProblem} is a separate check
 * that no flag lifts: credentials written into the URL.
 */
import dns from 'node:dns';
import net from 'node:net';
import { ProviderError } from './errors';

/** Transport code of a refused endpoint address (ProviderError.code). */
export const ENDPOINT_DENIED = 'EENDPOINTDENIED';

/** The operator flag that lifts the restriction; named in every refusal. */
export const ALLOW_LINK_LOCAL_FLAG = '--allow-link-local-endpoints';

/**
 * Addresses of cloud metadata services outside the link-local ranges (AWS's IPv6 IMDS,
 * Google's IPv6 metadata server, Alibaba Cloud, Azure's WireServer), besides 169.254.169.254
 * itself (AWS, Azure's IMDS, GCP, Oracle and others). Azure's WireServer (168.63.129.16) is a
 * public address that every Azure VM reaches and that hands out the VM's extension settings
 * and certificates, so it is refused by address, not by range.
 */
export const METADATA_ADDRESSES: readonly string[] = ['169.254.169.254', 'fd00:ec2::254', 'fd20:ce::254', '100.100.100.200', '168.63.129.16'];

/** Host names of cloud metadata services (compared lower-case, without a trailing dot). */
export const METADATA_HOSTNAMES: readonly string[] = [
  'metadata.google.internal',
  'metadata.goog',
  'metadata',
  'instance-data',
  'instance-data.ec2.internal',
];

/** An IPv4 range as its first address (a 32-bit number) and prefix length. */
interface Range4 {
  readonly base: number;
  readonly bits: number;
  readonly why: string;
}

/** `a.b.c.d` as a 32-bit unsigned number (the caller made sure it is an IPv4 address). */
function v4Number(address: string): number {
  return address.split('.').reduce((n, part) => n * 256 + Number(part), 0);
}

function range4(cidr: string, why: string): Range4 {
  const [base = '', bits = '32'] = cidr.split('/');
  return { base: v4Number(base), bits: Number(bits), why };
}

function inRange4(n: number, r: Range4): boolean {
  const size = 2 ** (32 - r.bits);
  return Math.floor(n / size) === Math.floor(r.base / size);
}

const METADATA = 'a cloud metadata address';
const LINK_LOCAL = 'a link-local address';

/** IPv4 addresses refused wherever they appear; the first match names the reason. */
const DENIED_V4: readonly Range4[] = [
  ...METADATA_ADDRESSES.filter((a) => net.isIPv4(a)).map((a) => range4(`${a}/32`, METADATA)),
  range4('169.254.0.0/16', LINK_LOCAL),
];

/**
 * IPv4 addresses refused when an IPv6 translation or tunnel form embeds them (see the note at
 * the top), besides {@link DENIED_V4}.
 */
const NON_GLOBAL_V4: readonly Range4[] = [
  range4('0.0.0.0/8', 'a "this network" address'),
  range4('10.0.0.0/8', 'a private address'),
  range4('100.64.0.0/10', 'a shared (carrier-grade NAT) address'),
  range4('127.0.0.0/8', 'a loopback address'),
  range4('172.16.0.0/12', 'a private address'),
  range4('192.168.0.0/16', 'a private address'),
];

/** The 16 bytes of an IPv6 address (zone id dropped, embedded dotted quad read), or undefined. */
export function ipv6Bytes(address: string): Uint8Array | undefined {
  const text = address.split('%')[0] ?? '';
  if (!net.isIPv6(text)) return undefined;
  const parse = (part: string): number[] =>
    part === ''
      ? []
      : part.split(':').flatMap((g) => {
          if (!net.isIPv4(g)) return [parseInt(g, 16)];
          const n = v4Number(g);
          return [Math.floor(n / 65536), n % 65536];
        });
  const gap = text.indexOf('::');
  const head = parse(gap < 0 ? text : text.slice(0, gap));
  const tail = gap < 0 ? [] : parse(text.slice(gap + 2));
  const groups = [...head, ...new Array<number>(8 - head.length - tail.length).fill(0), ...tail];
  const bytes = new Uint8Array(16);
  groups.forEach((g, i) => {
    bytes[2 * i] = g >> 8;
    bytes[2 * i + 1] = g & 0xff;
  });
  return bytes;
}

/** True when `bytes` starts with `prefix`. */
function startsWith(bytes: Uint8Array, prefix: readonly number[]): boolean {
  return prefix.every((b, i) => bytes[i] === b);
}

/** True when the bytes of `bytes` at `offsets` are all zero. */
function zeroAt(bytes: Uint8Array, offsets: readonly number[]): boolean {
  return offsets.every((o) => bytes[o] === 0);
}

/** The IPv4 address in `bytes` at the given byte offsets, dotted. */
function v4At(bytes: Uint8Array, offsets: readonly number[]): string {
  return offsets.map((o) => String(bytes[o] ?? 0)).join('.');
}

const range = (from: number, to: number): number[] => Array.from({ length: to - from }, (_, i) => from + i);
/** ::ffff:0:0/96, the IPv4-mapped prefix. */
const MAPPED = [...new Array<number>(10).fill(0), 0xff, 0xff];
const LAST_FOUR = [12, 13, 14, 15];

/**
 * RFC 6052's layouts for the prefix lengths that fit inside the local-use NAT64 prefix
 * 64:ff9b:1::/48 (RFC 8215): where the IPv4 address sits, and which bytes must be zero (the
 * "u" byte and the suffix) for the layout to be the one in use. Which length a network chose is
 * not visible in the address, so every layout whose zero bytes hold is read.
 */
const LOCAL_USE_NAT64_LAYOUTS: ReadonlyArray<{ readonly v4: readonly number[]; readonly zero: readonly number[] }> = [
  { v4: [6, 7, 9, 10], zero: [8, ...range(11, 16)] }, // /48
  { v4: [7, 9, 10, 11], zero: [8, ...range(12, 16)] }, // /56
  { v4: [9, 10, 11, 12], zero: [8, ...range(13, 16)] }, // /64
  { v4: LAST_FOUR, zero: [] }, // /96
];

/**
 * The IPv4 addresses an IPv6 translation or tunnel address embeds, each with the name of the
 * form, or [] for any other address (IPv4-mapped ones included: those are judged as the IPv4
 * address itself).
 */
function embeddedV4(bytes: Uint8Array): Array<{ readonly form: string; readonly v4: string }> {
  if (startsWith(bytes, [0, 0x64, 0xff, 0x9b]) && zeroAt(bytes, range(4, 12))) {
    return [{ form: 'a NAT64 address (64:ff9b::/96)', v4: v4At(bytes, LAST_FOUR) }];
  }
  if (startsWith(bytes, [0, 0x64, 0xff, 0x9b, 0, 1])) {
    return LOCAL_USE_NAT64_LAYOUTS.filter((l) => zeroAt(bytes, l.zero)).map((l) => ({
      form: 'a local-use NAT64 address (64:ff9b:1::/48)',
      v4: v4At(bytes, l.v4),
    }));
  }
  if (startsWith(bytes, [0x20, 0x02])) return [{ form: 'a 6to4 address (2002::/16)', v4: v4At(bytes, [2, 3, 4, 5]) }];
  if (zeroAt(bytes, range(0, 8)) && startsWith(bytes.subarray(8), [0xff, 0xff, 0, 0])) {
    return [{ form: 'an IPv4-translated address (::ffff:0:0/96)', v4: v4At(bytes, LAST_FOUR) }];
  }
  // ::/96 less :: and ::1, which are IPv6's own unspecified and loopback addresses.
  if (zeroAt(bytes, range(0, 12)) && !zeroAt(bytes, [12, 13, 14])) {
    return [{ form: 'an IPv4-compatible address (::/96, deprecated)', v4: v4At(bytes, LAST_FOUR) }];
  }
  return [];
}

/** Why the IPv4 address `v4` is refused: as it stands, or (`embedded`) carried by an IPv6 form. */
function deniedV4(v4: string, embedded: boolean): string | undefined {
  const n = v4Number(v4);
  return [...DENIED_V4, ...(embedded ? NON_GLOBAL_V4 : [])].find((r) => inRange4(n, r))?.why;
}

/** The metadata services' own IPv6 addresses, as bytes. */
const METADATA_V6: readonly Uint8Array[] = METADATA_ADDRESSES.flatMap((a) => ipv6Bytes(a) ?? []);

/** Why `address` (a literal IP, IPv4 or IPv6 in any spelling) is refused, or undefined when it is allowed. */
export function deniedAddress(address: string): string | undefined {
  if (net.isIPv4(address)) return deniedV4(address, false);
  const bytes = ipv6Bytes(address);
  if (!bytes) return undefined;
  if (startsWith(bytes, MAPPED)) {
    const v4 = v4At(bytes, LAST_FOUR);
    const why = deniedV4(v4, false);
    return why && `an IPv4-mapped address of ${v4}, ${why}`;
  }
  for (const { form, v4 } of embeddedV4(bytes)) {
    const why = deniedV4(v4, true);
    if (why) return `${form} embedding ${v4}, ${why}`;
  }
  if (METADATA_V6.some((m) => m.every((b, i) => b === bytes[i]))) return METADATA;
  // fe80::/10
  if (bytes[0] === 0xfe && ((bytes[1] ?? 0) & 0xc0) === 0x80) return LINK_LOCAL;
  return undefined;
}

/**
 * Why `endpoint` is refused for carrying credentials in its URL (`user:pass@host`), or
 * undefined. No flag lifts this: the endpoint is copied into bucket status, the access Secret,
 * condition messages and log lines, and Node would send the pair to the provider as a Basic
 * Authorization header beside the API key. The CRD refuses such endpoints on write; this
 * catches a config stored before that rule. The reason never repeats the endpoint.
 */
export function endpointUserinfoProblem(endpoint: string): string | undefined {
  if (!URL.canParse(endpoint)) return undefined;
  const url = new URL(endpoint);
  if (url.username === '' && url.password === '') return undefined;
  return 'spec.endpoint carries a user name or password (user:pass@host): refused; the API key belongs in the Secret spec.secretRef names';
}

/**
 * Why the host of `endpoint` is refused, or undefined when it is allowed (or not a URL: that
 * is reported elsewhere). Reads the host as the WHATWG URL parser normalises it, so numeric
 * and hex forms such as `http://2852039166/` are seen as the address they are.
 */
export function deniedEndpointHost(endpoint: string): string | undefined {
  if (!URL.canParse(endpoint)) return undefined;
  const host = new URL(endpoint).hostname
    .replace(/^\[(.*)\]$/, '$1')
    .replace(/\.$/, '')
    .toLowerCase();
  if (net.isIP(host)) {
    const why = deniedAddress(host);
    return why && `host ${host} is ${why}`;
  }
  return METADATA_HOSTNAMES.includes(host) ? `host ${host} is a cloud metadata service` : undefined;
}

/** The part of `dns.lookup` the guarded lookup calls (always with `all: true`). */
export type Resolver = (
  hostname: string,
  options: dns.LookupAllOptions,
  callback: (err: NodeJS.ErrnoException | null, addresses: dns.LookupAddress[]) => void,
) => void;

/**
 * A `lookup` for http(s) agents that resolves as `dns.lookup` does and then refuses any
 * answer in the denied ranges, before a socket connects (net calls it only for host names;
 * literal addresses are checked at connect time). The refusal is a retryable ProviderError
 * (DNS may change), whose message names the host and address but never the request.
 */
export function guardedLookup(resolve: Resolver = dns.lookup): net.LookupFunction {
  return (hostname, options, callback) => {
    resolve(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) {
        callback(err, '', 0);
        return;
      }
      for (const a of addresses) {
        const why = deniedAddress(a.address);
        if (why) {
          const refused = new ProviderError(
            `provider endpoint host ${hostname} resolves to ${a.address}, ${why}: refused (${ALLOW_LINK_LOCAL_FLAG} allows it)`,
            { status: 0, code: ENDPOINT_DENIED },
          );
          callback(refused as NodeJS.ErrnoException, '', 0);
          return;
        }
      }
      // Answer in the form the caller asked for: net asks for all addresses when it races
      // IPv4 and IPv6 (autoSelectFamily), otherwise for one.
      if (options.all) {
        (callback as unknown as (e: null, all: dns.LookupAddress[]) => void)(null, addresses);
        return;
      }
      const first = addresses[0];
      if (!first) {
        callback(Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' }), '', 0);
        return;
      }
      callback(null, first.address, first.family);
    });
  };
}
