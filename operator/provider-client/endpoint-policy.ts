/**
 * Which provider endpoints the operator refuses to send an API key to, whatever a
 * BucketProviderConfig says: link-local addresses and cloud metadata services. A config
 * author who may create configs but not read the operator's own credentials could otherwise
 * point the operator at the node's metadata service (which answers link-local requests with
 * instance credentials) and read the answers back through bucket status and events.
 *
 * Checked twice: on the endpoint's literal host when a bucket connects (operator/bucket/
 * connect.ts), and on every address a host name resolves to when a socket is opened
 * ({@link guardedLookup}), so a DNS name pointing at a metadata address is refused too.
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
 * Google's IPv6 metadata server, Alibaba Cloud), besides 169.254.169.254 itself.
 */
export const METADATA_ADDRESSES: readonly string[] = ['169.254.169.254', 'fd00:ec2::254', 'fd20:ce::254', '100.100.100.200'];

/** Host names of cloud metadata services (compared lower-case, without a trailing dot). */
export const METADATA_HOSTNAMES: readonly string[] = [
  'metadata.google.internal',
  'metadata.goog',
  'metadata',
  'instance-data',
  'instance-data.ec2.internal',
];

const denied = new net.BlockList();
// IPv4 link-local, where AWS, Azure, GCP, Oracle and others serve instance metadata. BlockList
// also matches IPv4-mapped IPv6 forms (::ffff:169.254.169.254) against it.
denied.addSubnet('169.254.0.0', 16, 'ipv4');
denied.addSubnet('fe80::', 10, 'ipv6');
for (const a of METADATA_ADDRESSES) denied.addAddress(a, net.isIPv6(a) ? 'ipv6' : 'ipv4');

/** Why `address` (a literal IP) is refused, or undefined when it is allowed. */
export function deniedAddress(address: string): string | undefined {
  const family = net.isIP(address);
  if (family === 0) return undefined;
  if (!denied.check(address, family === 6 ? 'ipv6' : 'ipv4')) return undefined;
  return METADATA_ADDRESSES.includes(address) ? 'a cloud metadata address' : 'a link-local address';
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
