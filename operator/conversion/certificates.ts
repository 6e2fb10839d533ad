/**
 * The conversion webhook's certificates, made with node:crypto alone: a self-signed CA and
 * a serving certificate it signs, both ECDSA P-256 with SHA-256. Node 20 cannot build an
 * X.509 certificate, so the TBSCertificate is encoded here (der.ts) and signed with
 * `crypto.sign`; every certificate is parsed back with `X509Certificate` before it is returned.
 *
 * Profile (RFC 5280), chosen for what the API server's Go TLS client checks:
 * - CA: basicConstraints CA:TRUE pathlen 0 (critical), keyUsage keyCertSign, cRLSign and
 *   digitalSignature (critical), subjectKeyIdentifier.
 * - Serving: basicConstraints CA:FALSE (critical), keyUsage digitalSignature (critical; an
 *   ECDSA key does no key encipherment), extKeyUsage serverAuth, subjectAltName (Go ignores
 *   the common name, so the SANs are what it matches), authorityKeyIdentifier.
 * - Random positive 127-bit serial numbers; validity given by the caller, in whole seconds.
 *
 * Private keys are PKCS#8 PEM strings the caller stores in a Secret; no function here logs or
 * puts them in an error message.
 */
import { createHash, generateKeyPairSync, randomBytes, sign, X509Certificate, type KeyObject, createPrivateKey } from 'node:crypto';
import { isIP } from 'node:net';
import {
  bitString,
  boolean,
  explicit,
  implicitPrimitive,
  integer,
  namedBits,
  octetString,
  oid,
  readElements,
  sequence,
  set,
  time,
  utf8String,
} from './der';

/** A certificate and its private key, both PEM. */
export interface IssuedCertificate {
  readonly certificate: string;
  /** PKCS#8 PEM. Secret material: stored in the webhook's Secret, never logged. */
  readonly privateKey: string;
}

/** What {@link issueCa} makes. */
export interface CaOptions {
  readonly commonName: string;
  readonly notBefore: Date;
  readonly notAfter: Date;
}

/** What {@link issueServing} makes. */
export interface ServingOptions {
  readonly commonName: string;
  /** DNS subjectAltNames, e.g. from {@link serviceDnsNames}. */
  readonly dnsNames: readonly string[];
  /** IP subjectAltNames (IPv4 or IPv6), e.g. `127.0.0.1` for a webhook reached by URL in tests. */
  readonly ipAddresses?: readonly string[];
  readonly notBefore: Date;
  readonly notAfter: Date;
  /** The CA that signs it. */
  readonly ca: IssuedCertificate;
}

const OID = {
  commonName: '2.5.4.3',
  ecPublicKey: '1.2.840.10045.2.1',
  ecdsaWithSha256: '1.2.840.10045.4.3.2',
  subjectKeyIdentifier: '2.5.29.14',
  keyUsage: '2.5.29.15',
  subjectAltName: '2.5.29.17',
  basicConstraints: '2.5.29.19',
  authorityKeyIdentifier: '2.5.29.35',
  extKeyUsage: '2.5.29.37',
  serverAuth: '1.3.6.1.5.5.7.3.1',
} as const;

/** KeyUsage bit numbers (RFC 5280 4.2.1.3). */
const KEY_USAGE = { digitalSignature: 0, keyCertSign: 5, cRLSign: 6 } as const;

/** Longest common name X.509 allows (RFC 5280's ub-common-name). */
export const MAX_COMMON_NAME = 64;

/**
 * `base` followed by `suffix` as a common name of at most {@link MAX_COMMON_NAME} characters:
 * when too long, `base` is cut and a short hash of the whole of it keeps names from different
 * bases apart; `suffix` (e.g. a CA's `-ca-<time>`) is kept whole. A Service name may be 63
 * characters and the CA's name adds 14; a shortened name costs nothing, since no verifier
 * matches the common name (Go's TLS client ignores it; the SANs are what it checks).
 */
export function fitCommonName(base: string, suffix = ''): string {
  if (base.length + suffix.length <= MAX_COMMON_NAME) return `${base}${suffix}`;
  const hash = `-${createHash('sha256').update(base).digest('hex').slice(0, 8)}`;
  const keep = MAX_COMMON_NAME - suffix.length - hash.length;
  if (keep < 1) throw new Error(`certificate common name: suffix "${suffix}" leaves no room for a name`);
  return `${base.slice(0, keep)}${hash}${suffix}`;
}

/** The DNS names a Service is reached by from inside the cluster, which the API server uses for a webhook `service` reference. */
export function serviceDnsNames(service: string, namespace: string): string[] {
  return [`${service}.${namespace}.svc`, `${service}.${namespace}.svc.cluster.local`];
}

/** A new self-signed CA. */
export function issueCa(opts: CaOptions): IssuedCertificate {
  checkValidity(opts.notBefore, opts.notAfter);
  const { publicKey, privateKey } = newKeyPair();
  const name = distinguishedName(opts.commonName);
  const ski = keyIdentifier(publicKey);
  const extensions = [
    extension(OID.basicConstraints, true, sequence(boolean(true), integer(0))),
    extension(OID.keyUsage, true, namedBits([KEY_USAGE.digitalSignature, KEY_USAGE.keyCertSign, KEY_USAGE.cRLSign])),
    extension(OID.subjectKeyIdentifier, false, octetString(ski)),
  ];
  const tbs = tbsCertificate({ issuer: name, subject: name, publicKey, notBefore: opts.notBefore, notAfter: opts.notAfter, extensions });
  return finish(tbs, privateKey, privateKey);
}

/** A serving certificate signed by `opts.ca`. */
export function issueServing(opts: ServingOptions): IssuedCertificate {
  checkValidity(opts.notBefore, opts.notAfter);
  const ipAddresses = opts.ipAddresses ?? [];
  if (opts.dnsNames.length + ipAddresses.length === 0) throw new Error('issueServing: at least one DNS name or IP address is needed');
  const ca = new X509Certificate(opts.ca.certificate);
  const caKey = createPrivateKey(opts.ca.privateKey);
  if (!ca.checkPrivateKey(caKey)) throw new Error('issueServing: the CA private key does not match the CA certificate');
  const { publicKey, privateKey } = newKeyPair();
  const sans = [
    ...opts.dnsNames.map((dns) => implicitPrimitive(2, Buffer.from(dnsName(dns), 'ascii'))),
    ...ipAddresses.map((ip) => implicitPrimitive(7, ipBytes(ip))),
  ];
  const extensions = [
    extension(OID.basicConstraints, true, sequence()),
    extension(OID.keyUsage, true, namedBits([KEY_USAGE.digitalSignature])),
    extension(OID.extKeyUsage, false, sequence(oid(OID.serverAuth))),
    extension(OID.subjectAltName, false, sequence(...sans)),
    extension(OID.authorityKeyIdentifier, false, sequence(implicitPrimitive(0, keyIdentifier(ca.publicKey)))),
  ];
  const tbs = tbsCertificate({
    issuer: subjectOf(ca),
    subject: distinguishedName(opts.commonName),
    publicKey,
    notBefore: opts.notBefore,
    notAfter: opts.notAfter,
    extensions,
  });
  return finish(tbs, caKey, privateKey);
}

function checkValidity(notBefore: Date, notAfter: Date): void {
  if (!(notBefore.getTime() < notAfter.getTime())) throw new Error('certificate validity: notBefore must be before notAfter');
}

function newKeyPair(): { publicKey: KeyObject; privateKey: KeyObject } {
  return generateKeyPairSync('ec', { namedCurve: 'P-256' });
}

function tbsCertificate(p: { issuer: Buffer; subject: Buffer; publicKey: KeyObject; notBefore: Date; notAfter: Date; extensions: Buffer[] }): Buffer {
  const serial = randomBytes(16);
  serial[0] = (serial[0] ?? 0) & 0x7f;
  return sequence(
    explicit(0, integer(2)), // v3
    integer(serial),
    sequence(oid(OID.ecdsaWithSha256)),
    p.issuer,
    sequence(time(p.notBefore), time(p.notAfter)),
    p.subject,
    p.publicKey.export({ type: 'spki', format: 'der' }),
    explicit(3, sequence(...p.extensions)),
  );
}

/** Signs `tbs` with `signer` and returns the certificate with `ownKey`, checked by parsing it back. */
function finish(tbs: Buffer, signer: KeyObject, ownKey: KeyObject): IssuedCertificate {
  const signature = sign('sha256', tbs, signer); // DER-encoded ECDSA-Sig-Value
  const der = sequence(tbs, sequence(oid(OID.ecdsaWithSha256)), bitString(signature));
  const certificate = toPem('CERTIFICATE', der);
  const parsed = new X509Certificate(certificate);
  if (!parsed.checkPrivateKey(ownKey)) throw new Error('certificate does not carry its own public key');
  return { certificate, privateKey: ownKey.export({ type: 'pkcs8', format: 'pem' }).toString() };
}

function extension(id: string, critical: boolean, value: Buffer): Buffer {
  return sequence(oid(id), ...(critical ? [boolean(true)] : []), octetString(value));
}

function distinguishedName(commonName: string): Buffer {
  // A caller with a longer name shortens it first (fitCommonName).
  if (commonName === '' || commonName.length > MAX_COMMON_NAME) throw new Error(`certificate common name must be 1 to ${MAX_COMMON_NAME} characters`);
  return sequence(set(sequence(oid(OID.commonName), utf8String(commonName))));
}

/**
 * The subject of `ca` exactly as encoded in it: a child's issuer must match it byte for byte
 * (verifiers compare the encodings), so it is copied, not rebuilt from the parsed text.
 */
function subjectOf(ca: X509Certificate): Buffer {
  const [cert] = readElements(ca.raw);
  if (!cert) throw new Error('CA certificate is empty');
  const [tbs] = readElements(ca.raw, cert.contentStart, cert.end);
  if (!tbs) throw new Error('CA certificate has no TBSCertificate');
  const fields = readElements(ca.raw, tbs.contentStart, tbs.end);
  // version [0], serialNumber, signature, issuer, validity, subject
  const subject = fields[0]?.tag === 0xa0 ? fields[5] : fields[4];
  if (!subject) throw new Error('CA certificate has no subject');
  return ca.raw.subarray(subject.start, subject.end);
}

/**
 * Key identifier of `publicKey`: SHA-1 of the subjectPublicKey bits (RFC 5280 4.2.1.2
 * method 1), for the CA's subjectKeyIdentifier and its children's authorityKeyIdentifier.
 */
function keyIdentifier(publicKey: KeyObject): Buffer {
  const spki = publicKey.export({ type: 'spki', format: 'der' });
  const [outer] = readElements(spki);
  const [, bits] = outer ? readElements(spki, outer.contentStart, outer.end) : [];
  if (!bits || bits.tag !== 0x03) throw new Error('public key has no subjectPublicKey bit string');
  // Skip the bit string's unused-bits byte.
  return createHash('sha1')
    .update(spki.subarray(bits.contentStart + 1, bits.end))
    .digest();
}

function dnsName(name: string): string {
  if (!/^(\*\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/.test(name)) throw new Error(`"${name}" is not a DNS name`);
  return name;
}

function ipBytes(ip: string): Buffer {
  const family = isIP(ip);
  if (family === 4) return Buffer.from(ip.split('.').map(Number));
  if (family === 6) {
    const [head = '', tail] = ip.split('::');
    const words = (part: string) => (part ? part.split(':') : []);
    const groups =
      tail === undefined ? words(head) : [...words(head), ...Array<string>(8 - words(head).length - words(tail).length).fill('0'), ...words(tail)];
    if (groups.length !== 8 || groups.some((g) => g.includes('.'))) throw new Error(`IP address ${ip} is not supported in a certificate`);
    return Buffer.from(groups.flatMap((g) => [parseInt(g, 16) >> 8, parseInt(g, 16) & 0xff]));
  }
  throw new Error(`"${ip}" is not an IP address`);
}

function toPem(label: string, der: Buffer): string {
  const lines = der.toString('base64').match(/.{1,64}/g) ?? [];
  return `-----BEGIN ${label}-----\n${lines.join('\n')}\n-----END ${label}-----\n`;
}
