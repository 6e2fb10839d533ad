/**
 * The cosign command lines the release runs and the ones a verifier runs, as argument lists, so
 * the release step, the verify command and docs/operate/verify-a-release.md say the same thing
 * (a unit test holds the doc to {@link verifyCommandLines}).
 *
 * Keyed signing with the transparency log off: nothing is sent to Sigstore's public services, and
 * verification needs only the public key and the registry. `--insecure-ignore-tlog=true` is the
 * flag that says so on the verifying side; without it cosign would ask Rekor for an entry that was
 * never made.
 */

/** The predicate types the release attaches, by cosign's `--type` name. */
export type AttestationType = 'cyclonedx' | 'slsaprovenance1';

/** `cosign sign`: signs an image (or artifact) by digest and pushes the signature beside it. */
export function signArgs(key: string, refByDigest: string): string[] {
  return ['sign', '--key', key, '--tlog-upload=false', '--yes', refByDigest];
}

/** `cosign attest`: wraps the predicate in an in-toto statement about the digest, signs it and pushes it. */
export function attestArgs(key: string, refByDigest: string, type: AttestationType, predicateFile: string): string[] {
  return ['attest', '--key', key, '--tlog-upload=false', '--yes', '--type', type, '--predicate', predicateFile, refByDigest];
}

/** `cosign sign-blob`: a detached signature (base64) of a file. */
export function signBlobArgs(key: string, file: string, signatureFile: string): string[] {
  return ['sign-blob', '--key', key, '--tlog-upload=false', '--yes', '--output-signature', signatureFile, file];
}

/** `cosign verify`: the signature on an image (or artifact) by digest. */
export function verifyArgs(publicKey: string, refByDigest: string): string[] {
  return ['verify', '--key', publicKey, '--insecure-ignore-tlog=true', refByDigest];
}

/** `cosign verify-attestation`: the signed statements of one predicate type about a digest (printed as DSSE envelopes). */
export function verifyAttestationArgs(publicKey: string, refByDigest: string, type: AttestationType): string[] {
  return ['verify-attestation', '--key', publicKey, '--insecure-ignore-tlog=true', '--type', type, refByDigest];
}

/** `cosign verify-blob`: a detached signature of a file. */
export function verifyBlobArgs(publicKey: string, file: string, signatureFile: string): string[] {
  return ['verify-blob', '--key', publicKey, '--insecure-ignore-tlog=true', '--signature', signatureFile, file];
}

/** Placeholders the doc uses for the values a reader fills in. */
export const PLACEHOLDERS = {
  key: 'cosign.pub',
  image: '$IMAGE@$IMAGE_DIGEST',
  manifests: '$MANIFESTS@$MANIFESTS_DIGEST',
} as const;

/**
 * Every cosign command a verifier runs, as shell lines with {@link PLACEHOLDERS}: what
 * docs/operate/verify-a-release.md shows and what `npm run release:verify` runs.
 */
export function verifyCommandLines(files: readonly string[]): string[] {
  const { key, image, manifests } = PLACEHOLDERS;
  const line = (args: string[]) => ['cosign', ...args].join(' ');
  return [
    ...files.map((f) => line(verifyBlobArgs(key, f, `${f}.sig`))),
    line(verifyArgs(key, image)),
    line(verifyAttestationArgs(key, image, 'cyclonedx')),
    line(verifyAttestationArgs(key, image, 'slsaprovenance1')),
    line(verifyArgs(key, manifests)),
    line(verifyAttestationArgs(key, manifests, 'slsaprovenance1')),
  ];
}
