/**
 * Startup checks of certificate data from a kubeconfig or the ServiceAccount mount, so a
 * broken CA fails loading with the field that holds it, not the first request with a TLS
 * error that names nothing. Messages never quote the data.
 */
import { X509Certificate } from 'node:crypto';

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/**
 * Decodes kubeconfig `*-data` (standard base64, whitespace allowed as Go's decoder does
 * not, but YAML folding may add it); throws `<what> is not valid base64` otherwise.
 */
export function decodeBase64Field(data: string, what: string): Buffer {
  const compact = data.replace(/\s+/g, '');
  if (compact === '' || compact.length % 4 !== 0 || !BASE64.test(compact)) throw new Error(`${what} is not valid base64`);
  return Buffer.from(compact, 'base64');
}

const PEM_BLOCK = /-----BEGIN ([A-Z0-9 ]+)-----\r?\n([\s\S]*?)-----END \1-----/g;

/**
 * Checks that `pem` is a bundle of one or more PEM certificates that parse as X.509; throws
 * `<what> is not a PEM certificate` (or names the block that does not parse).
 */
export function checkCertificateBundle(pem: Buffer, what: string): void {
  const text = pem.toString('utf8');
  let count = 0;
  for (const m of text.matchAll(PEM_BLOCK)) {
    if (m[1] !== 'CERTIFICATE') continue;
    count++;
    try {
      new X509Certificate(m[0]);
    } catch {
      throw new Error(`${what}: certificate ${count} does not parse as X.509`);
    }
  }
  if (count === 0) throw new Error(`${what} is not a PEM certificate (no BEGIN CERTIFICATE block)`);
}
