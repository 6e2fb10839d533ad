/**
 * The webhook's certificates as the data of one Secret: reads the facts the rotation planner
 * (rotation.ts) decides on, and carries out its steps. Every replica serves what this Secret
 * holds, so all of them present certificates from the same CAs.
 *
 * Layout (the usual kubernetes.io/tls keys plus the CA): `ca.crt` the CA bundle (what the
 * CRDs' caBundle holds), `ca.key` the newest CA's key, `tls.crt` and `tls.key` the serving
 * certificate and its key. Values are PEM text. Keys are secret: messages name which entry is
 * wrong and never quote one.
 */
import { createPrivateKey, X509Certificate, type KeyObject } from 'node:crypto';
import { fitCommonName, issueCa, issueServing, type IssuedCertificate } from './certificates';
import type { CaFacts, CertFacts, CertPolicy, RotationStep, ServingFacts } from './rotation';

/** Keys of the webhook Secret's data. */
export const CertSecretKey = { caBundle: 'ca.crt', caKey: 'ca.key', cert: 'tls.crt', key: 'tls.key' } as const;

/** The Secret's data, decoded: key to PEM text. */
export type CertData = Readonly<Record<string, string>>;

/** Names the serving certificate is for. */
export interface ServingNames {
  /** Common name of the serving certificate and prefix of its CAs' (shortened to fit, see fitCommonName). */
  readonly commonName: string;
  readonly dnsNames: readonly string[];
  readonly ipAddresses?: readonly string[];
}

/**
 * How far back a new certificate's notBefore is set, so a verifier whose clock runs behind
 * ours (the API server's, another node's) does not find it not yet valid. A constant rather
 * than a policy field: the planner recovers issue times as notBefore plus this.
 */
export const CERT_BACKDATE_MS = 60 * 60 * 1000;

const PEM_CERT = /-----BEGIN CERTIFICATE-----\r?\n[\s\S]*?-----END CERTIFICATE-----\r?\n?/g;

/** What the server needs from the Secret: the serving certificate and key, and the CA bundle. */
export interface ServingCredentials {
  readonly cert: string;
  /** Secret material. */
  readonly key: string;
}

/**
 * The certificate and key to serve from `data`, when both are there. `ca.crt` is not needed
 * to serve: the operator's own Secret always has it, a Secret another tool keeps may not.
 */
export function servingCredentials(data: CertData | undefined): ServingCredentials | undefined {
  const cert = data?.[CertSecretKey.cert];
  const key = data?.[CertSecretKey.key];
  return cert && key ? { cert, key } : undefined;
}

/** The facts of `data` for {@link planRotation}; `undefined` data is an absent Secret. */
export function readCertFacts(data: CertData | undefined, names: ServingNames): CertFacts {
  if (!data || Object.keys(data).length === 0) return { kind: 'absent' };
  const bundle = data[CertSecretKey.caBundle] ?? '';
  const caPems = bundle.match(PEM_CERT) ?? [];
  if (caPems.length === 0) return { kind: 'unusable', reason: `${CertSecretKey.caBundle} holds no certificate` };
  let cas: X509Certificate[];
  try {
    cas = caPems.map((pem) => new X509Certificate(pem));
  } catch {
    return { kind: 'unusable', reason: `${CertSecretKey.caBundle} holds a certificate that does not parse` };
  }
  const caKey = parseKey(data[CertSecretKey.caKey]);
  if (!caKey) return { kind: 'unusable', reason: `${CertSecretKey.caKey} is missing or not a private key` };
  const caFacts: CaFacts[] = cas.map((ca) => ({ ...lifetime(ca), signing: ca.ca && safeCheckKey(ca, caKey) }));
  return { kind: 'present', cas: caFacts, ...servingFacts(data, cas, names) };
}

function servingFacts(data: CertData, cas: readonly X509Certificate[], names: ServingNames): { serving?: ServingFacts } {
  const pem = data[CertSecretKey.cert];
  if (!pem) return {};
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(pem);
  } catch {
    return {};
  }
  const key = parseKey(data[CertSecretKey.key]);
  return {
    serving: {
      ...lifetime(cert),
      issuer: cas.findIndex((ca) => cert.checkIssued(ca) && cert.verify(ca.publicKey)),
      namesMatch: namesMatch(cert, names),
      keyMatches: key !== undefined && safeCheckKey(cert, key),
    },
  };
}

/** The Secret data after `step` at `now`. `keep` is not a change and throws. */
export function applyRotation(step: RotationStep, data: CertData | undefined, now: number, policy: CertPolicy, names: ServingNames): CertData {
  const newCa = (): IssuedCertificate =>
    issueCa({
      commonName: fitCommonName(names.commonName, `-ca-${Math.floor(now / 1000)}`),
      notBefore: new Date(now - CERT_BACKDATE_MS),
      notAfter: new Date(now + policy.caValidityMs),
    });
  switch (step.kind) {
    case 'create': {
      const ca = newCa();
      // CAs of the Secret being replaced that still hold stay beside the new one: the caBundle
      // trusts them, and a replica may still serve a certificate from one until it loads the
      // new Secret. The planner drops them after an overlap, as in a rotation.
      const bundle = `${carriedCas(data, now).join('')}${ca.certificate}`;
      return withServing({ [CertSecretKey.caBundle]: bundle, [CertSecretKey.caKey]: ca.privateKey }, ca, now, policy, names);
    }
    case 'addCa': {
      const ca = newCa();
      return { ...data, [CertSecretKey.caBundle]: `${bundleOf(data).join('')}${ca.certificate}`, [CertSecretKey.caKey]: ca.privateKey };
    }
    case 'issueServing':
      return withServing(data ?? {}, signingCa(data), now, policy, names);
    case 'dropOldCas': {
      const signing = signingCa(data);
      return { ...data, [CertSecretKey.caBundle]: signing.certificate };
    }
    case 'keep':
      throw new Error('applyRotation: keep changes nothing');
    default: {
      const never: never = step;
      return never;
    }
  }
}

function withServing(data: CertData, ca: IssuedCertificate, now: number, policy: CertPolicy, names: ServingNames): CertData {
  const caNotAfter = new Date(new X509Certificate(ca.certificate).validTo).getTime();
  const serving = issueServing({
    commonName: fitCommonName(names.commonName),
    dnsNames: names.dnsNames,
    ...(names.ipAddresses ? { ipAddresses: names.ipAddresses } : {}),
    notBefore: new Date(now - CERT_BACKDATE_MS),
    // A certificate outliving its CA would fail verification from the CA's expiry on.
    notAfter: new Date(Math.min(now + policy.servingValidityMs, caNotAfter)),
    ca,
  });
  return { ...data, [CertSecretKey.cert]: serving.certificate, [CertSecretKey.key]: serving.privateKey };
}

/** The CA in `data` whose key is `ca.key`, with that key. */
function signingCa(data: CertData | undefined): IssuedCertificate {
  const privateKey = data?.[CertSecretKey.caKey];
  const key = parseKey(privateKey);
  const certificate = bundleOf(data).find((pem) => safeCheckKey(new X509Certificate(pem), key));
  if (!privateKey || !certificate) throw new Error(`no CA in ${CertSecretKey.caBundle} matches ${CertSecretKey.caKey}`);
  return { certificate, privateKey };
}

/** The CA certificates of `data`'s bundle that parse and are valid at `now`. */
function carriedCas(data: CertData | undefined, now: number): string[] {
  return bundleOf(data).filter((pem) => {
    try {
      const cert = new X509Certificate(pem);
      return cert.ca && new Date(cert.validFrom).getTime() <= now && now < new Date(cert.validTo).getTime();
    } catch {
      return false;
    }
  });
}

function bundleOf(data: CertData | undefined): string[] {
  return (data?.[CertSecretKey.caBundle] ?? '').match(PEM_CERT)?.map((pem) => (pem.endsWith('\n') ? pem : `${pem}\n`)) ?? [];
}

function lifetime(cert: X509Certificate): { issuedAt: number; notAfter: number } {
  return { issuedAt: new Date(cert.validFrom).getTime() + CERT_BACKDATE_MS, notAfter: new Date(cert.validTo).getTime() };
}

function parseKey(pem: string | undefined): KeyObject | undefined {
  if (!pem) return undefined;
  try {
    return createPrivateKey(pem);
  } catch {
    return undefined;
  }
}

function safeCheckKey(cert: X509Certificate, key: KeyObject | undefined): boolean {
  if (!key) return false;
  try {
    return cert.checkPrivateKey(key);
  } catch {
    // A key of another type than the certificate's.
    return false;
  }
}

/** The certificate's SANs are exactly `names`' DNS names and IP addresses. */
function namesMatch(cert: X509Certificate, names: ServingNames): boolean {
  const ips = names.ipAddresses ?? [];
  const entries = (cert.subjectAltName ?? '').split(', ').filter((e) => e !== '');
  return (
    entries.length === names.dnsNames.length + ips.length &&
    names.dnsNames.every((dns) => cert.checkHost(dns, { wildcards: false }) === dns) &&
    ips.every((ip) => cert.checkIP(ip) !== undefined)
  );
}
