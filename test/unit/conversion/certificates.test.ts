import { expect } from 'chai';
import { execFileSync, spawnSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  fitCommonName,
  issueCa,
  issueServing,
  MAX_COMMON_NAME,
  serviceDnsNames,
  type IssuedCertificate,
} from '../../../operator/conversion/certificates';

const NOW = Date.parse('2026-12-02T05:00:00Z');
const DAY = 86_400_000;
const NAMES = serviceDnsNames('bucketoperator-webhook', 'bucketoperator-system');

describe('webhook certificates (node:crypto, no X.509 builder)', () => {
  let dir = '';
  let ca: IssuedCertificate;
  let other: IssuedCertificate;
  let serving: IssuedCertificate;
  const file = (name: string, pem: string) => {
    const path = join(dir, name);
    writeFileSync(path, pem);
    return path;
  };
  /** `openssl verify` of `cert` against `caPem`; at `at` (epoch ms) when given. */
  const opensslVerify = (caPem: string, cert: string, at?: number) =>
    spawnSync(
      'openssl',
      [
        'verify',
        '-CAfile',
        file('trust.pem', caPem),
        '-purpose',
        'sslserver',
        '-x509_strict',
        ...(at ? ['-attime', String(Math.floor(at / 1000))] : []),
        file('leaf.pem', cert),
      ],
      { encoding: 'utf8' },
    );
  const text = (pem: string) => execFileSync('openssl', ['x509', '-noout', '-text', '-in', file('cert.pem', pem)], { encoding: 'utf8' });

  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'webhook-certs-'));
    ca = issueCa({ commonName: 'bucketoperator-webhook-ca', notBefore: new Date(NOW - 3_600_000), notAfter: new Date(NOW + 365 * DAY) });
    other = issueCa({ commonName: 'bucketoperator-webhook-ca', notBefore: new Date(NOW - 3_600_000), notAfter: new Date(NOW + 365 * DAY) });
    serving = issueServing({
      commonName: 'bucketoperator-webhook',
      dnsNames: NAMES,
      ipAddresses: ['127.0.0.1'],
      notBefore: new Date(NOW - 3_600_000),
      notAfter: new Date(NOW + 90 * DAY + 999),
      ca,
    });
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('the CA is a self-signed CA certificate with its own key', () => {
    const x = new X509Certificate(ca.certificate);
    expect(x.ca).to.equal(true);
    expect(x.verify(x.publicKey)).to.equal(true);
    expect(x.checkIssued(x)).to.equal(true);
    expect(x.subject).to.equal('CN=bucketoperator-webhook-ca');
    expect(new Date(x.validFrom).getTime()).to.equal(NOW - 3_600_000);
    expect(new Date(x.validTo).getTime()).to.equal(NOW + 365 * DAY);
    expect(ca.privateKey).to.match(/^-----BEGIN PRIVATE KEY-----\n/);
  });

  it('openssl reads the CA as ECDSA P-256 with CA:TRUE, pathlen 0 and certificate signing', () => {
    const out = text(ca.certificate);
    expect(out).to.include('Signature Algorithm: ecdsa-with-SHA256');
    expect(out).to.include('ASN1 OID: prime256v1');
    expect(out).to.match(/Basic Constraints: critical\s+CA:TRUE, pathlen:0/);
    expect(out).to.match(/Key Usage: critical\s+Digital Signature, Certificate Sign, CRL Sign/);
    expect(out).to.include('Subject Key Identifier');
  });

  it('the serving certificate is signed by the CA and by no other', () => {
    const x = new X509Certificate(serving.certificate);
    const caX = new X509Certificate(ca.certificate);
    expect(x.ca).to.equal(false);
    expect(x.verify(caX.publicKey)).to.equal(true);
    expect(x.checkIssued(caX)).to.equal(true);
    expect(x.verify(new X509Certificate(other.certificate).publicKey)).to.equal(false);
    expect(x.issuer).to.equal(caX.subject);
    expect(x.serialNumber).to.not.equal(caX.serialNumber);
    expect(x.keyUsage).to.deep.equal(['1.3.6.1.5.5.7.3.1']); // serverAuth
  });

  it("the serving certificate names the Service's DNS names and 127.0.0.1, and nothing else", () => {
    const x = new X509Certificate(serving.certificate);
    for (const name of NAMES) expect(x.checkHost(name)).to.equal(name);
    expect(NAMES).to.deep.equal([
      'bucketoperator-webhook.bucketoperator-system.svc',
      'bucketoperator-webhook.bucketoperator-system.svc.cluster.local',
    ]);
    expect(x.checkHost('bucketoperator-webhook')).to.equal(undefined);
    expect(x.checkHost('evil.example.com')).to.equal(undefined);
    expect(x.checkIP('127.0.0.1')).to.equal('127.0.0.1');
    expect(x.checkIP('10.0.0.1')).to.equal(undefined);
  });

  it('validity is the given time in whole seconds', () => {
    const x = new X509Certificate(serving.certificate);
    expect(new Date(x.validFrom).getTime()).to.equal(NOW - 3_600_000);
    expect(new Date(x.validTo).getTime()).to.equal(NOW + 90 * DAY);
  });

  it('openssl verify accepts the chain for TLS server use (strict X.509 checks) while both are valid', () => {
    const r = opensslVerify(ca.certificate, serving.certificate, NOW);
    expect(r.stdout + r.stderr).to.match(/: OK/);
    expect(r.status).to.equal(0);
    expect(text(serving.certificate)).to.match(/Basic Constraints: critical\s+CA:FALSE/);
  });

  it('openssl verify refuses it against another CA, before its notBefore and after its notAfter', () => {
    expect(opensslVerify(other.certificate, serving.certificate, NOW).status).to.not.equal(0);
    const early = opensslVerify(ca.certificate, serving.certificate, NOW - 2 * 3_600_000);
    expect(early.status).to.not.equal(0);
    expect(early.stdout + early.stderr).to.match(/not yet valid/);
    const late = opensslVerify(ca.certificate, serving.certificate, NOW + 91 * DAY);
    expect(late.status).to.not.equal(0);
    expect(late.stdout + late.stderr).to.match(/expired/);
  });

  it('a validity past 2049 is encoded so that openssl and node both read it', () => {
    const long = issueCa({ commonName: 'long', notBefore: new Date(NOW), notAfter: new Date('2060-06-01T00:00:00Z') });
    expect(new Date(new X509Certificate(long.certificate).validTo).toISOString()).to.equal('2060-06-01T00:00:00.000Z');
    expect(text(long.certificate)).to.include('Not After : Jun  1 00:00:00 2060 GMT');
  });

  it('IPv6 subjectAltNames', () => {
    const v6 = issueServing({
      commonName: 's',
      dnsNames: [],
      ipAddresses: ['::1', 'fd00::a:1'],
      notBefore: new Date(NOW),
      notAfter: new Date(NOW + DAY),
      ca,
    });
    const x = new X509Certificate(v6.certificate);
    expect(x.checkIP('::1')).to.equal('::1');
    expect(x.checkIP('fd00::a:1')).to.equal('fd00::a:1');
    expect(x.checkIP('fd00::a:2')).to.equal(undefined);
  });

  it('fits a common name into 64 characters, the suffix kept whole and names that differ still different', () => {
    const service = 'a'.repeat(63);
    const cases = {
      'short enough': { base: 'bucketoperator-webhook', suffix: '-ca-1795000000', want: 'bucketoperator-webhook-ca-1795000000' },
      'exactly 64': { base: 'b'.repeat(50), suffix: '-ca-1795000000', want: `${'b'.repeat(50)}-ca-1795000000` },
    };
    for (const [name, tc] of Object.entries(cases)) expect(fitCommonName(tc.base, tc.suffix), name).to.equal(tc.want);
    const ca = fitCommonName(service, '-ca-1795000000');
    expect(ca).to.have.length(MAX_COMMON_NAME);
    expect(ca).to.match(/^a+-[0-9a-f]{8}-ca-1795000000$/);
    expect(fitCommonName(`${'a'.repeat(62)}b`, '-ca-1795000000')).to.not.equal(ca);
    expect(fitCommonName(service)).to.equal(service);
    // The CA made with it is a certificate openssl reads.
    const made = issueCa({ commonName: ca, notBefore: new Date(NOW - 3_600_000), notAfter: new Date(NOW + DAY) });
    expect(new X509Certificate(made.certificate).subject).to.equal(`CN=${ca}`);
  });

  it('refuses what would not work, with messages that quote no key', () => {
    const bad: Record<string, () => unknown> = {
      'empty validity': () => issueCa({ commonName: 'x', notBefore: new Date(NOW), notAfter: new Date(NOW) }),
      'no names': () => issueServing({ commonName: 'x', dnsNames: [], notBefore: new Date(NOW), notAfter: new Date(NOW + DAY), ca }),
      'a key of another CA': () =>
        issueServing({
          commonName: 'x',
          dnsNames: NAMES,
          notBefore: new Date(NOW),
          notAfter: new Date(NOW + DAY),
          ca: { ...ca, privateKey: other.privateKey },
        }),
      'not a DNS name': () => issueServing({ commonName: 'x', dnsNames: ['a b'], notBefore: new Date(NOW), notAfter: new Date(NOW + DAY), ca }),
    };
    for (const [what, fn] of Object.entries(bad)) {
      let message = '';
      try {
        fn();
      } catch (err) {
        message = err instanceof Error ? err.message : String(err);
      }
      expect(message, what).to.not.equal('');
      expect(message, what).to.not.match(/PRIVATE KEY|MII/);
    }
  });
});
