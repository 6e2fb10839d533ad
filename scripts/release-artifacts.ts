/**
 * The release's artifacts, made and checked (docs/operate/verify-a-release.md is the reader's side):
 *
 *   npm run release:artifacts -- --out <dir> --key <cosign.key> --registry <host[:port][/path]>
 *       [--source <repository URI>] [--builder-id <URI>] [--image-archive <tar>] [--allow-dirty]
 *     Writes to <dir> a CycloneDX SBOM of the npm tree that ships (sbom-npm.cdx.json) and of the
 *     operator image (sbom-image.cdx.json), pushes the image (npm run build:oci) to
 *     <registry>/bucketoperator:<version> and dist/ as an OCI artifact to
 *     <registry>/bucketoperator-manifests:<version>, writes an in-toto SLSA provenance statement
 *     naming all four (provenance.intoto.json), and signs with the key: both registry artifacts
 *     (cosign sign), the image SBOM and the provenance as attestations (cosign attest), and each
 *     file (cosign sign-blob, <file>.sig). The transparency log is never used. The key's password
 *     comes from COSIGN_PASSWORD. release.json lists it all.
 *
 *   npm run release:verify -- <dir> --key <cosign.pub> [--image <ref>] [--manifests <ref>]
 *       [--version X.Y.Z] [--dist <dir>] [--extract <dir>]
 *     Verifies every signature, attestation and provenance subject of the release in <dir> with
 *     the public key alone, offline but for the registry; prints each problem and exits 1 when
 *     there is one. --image/--manifests check a copy elsewhere (a mirror); --dist compares the
 *     manifests artifact with a local tree; --extract unpacks it once everything verified.
 *
 *   npm run release:registry [-- --disk <dir>]
 *     Serves an OCI registry on 127.0.0.1 (crane registry serve) for a trial release.
 *
 * The tools are cosign and crane at the versions scripts/release/tools.env pins, built by
 * `npm run build:release-tools`.
 */
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { publishRelease } from './release/publish';
import { startRegistry } from './release/registry';
import { releaseTools } from './release/tools';
import { verifyRelease } from './release/verify';

const REPO = resolve(__dirname, '..');

function required(value: string | undefined, flag: string): string {
  if (!value) throw new Error(`${flag} is required`);
  return value;
}

async function release(argv: readonly string[]): Promise<void> {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      out: { type: 'string' },
      key: { type: 'string' },
      registry: { type: 'string' },
      source: { type: 'string' },
      'builder-id': { type: 'string' },
      'image-archive': { type: 'string' },
      'allow-dirty': { type: 'boolean', default: false },
    },
    strict: true,
  });
  await publishRelease({
    repo: REPO,
    out: resolve(required(values.out, '--out')),
    key: required(values.key, '--key'),
    registry: required(values.registry, '--registry'),
    ...(values.source ? { source: values.source } : {}),
    ...(values['builder-id'] ? { builderId: values['builder-id'] } : {}),
    ...(values['image-archive'] ? { imageArchive: resolve(values['image-archive']) } : {}),
    allowDirty: values['allow-dirty'],
  });
}

async function verify(argv: readonly string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args: [...argv],
    options: {
      key: { type: 'string' },
      image: { type: 'string' },
      manifests: { type: 'string' },
      version: { type: 'string' },
      dist: { type: 'string' },
      extract: { type: 'string' },
    },
    allowPositionals: true,
    strict: true,
  });
  if (positionals.length !== 1) throw new Error('usage: npm run release:verify -- <release dir> --key <cosign.pub> [options]');
  const result = await verifyRelease({
    repo: REPO,
    dir: resolve(positionals[0] ?? ''),
    key: required(values.key, '--key'),
    refs: { ...(values.image ? { image: values.image } : {}), ...(values.manifests ? { manifests: values.manifests } : {}) },
    ...(values.version ? { version: values.version } : {}),
    ...(values.dist ? { dist: resolve(values.dist) } : {}),
    ...(values.extract ? { extract: resolve(values.extract) } : {}),
  });
  for (const c of result.checked) process.stdout.write(`${c.role}: ${c.ref} -> ${c.digest ?? '(unresolved)'}\n`);
  if (result.problems.length > 0) {
    process.stdout.write(`NOT VERIFIED: ${result.problems.length} problem(s)\n${result.problems.map((p) => `  - ${p}`).join('\n')}\n`);
    process.exitCode = 1;
    return;
  }
  const r = result.release;
  const what = r ? `bucketoperator ${r.version} from ${r.source.repository} at ${r.source.commit}` : 'the release';
  process.stdout.write(`VERIFIED: ${what}: every signature, attestation and provenance subject checks out with the key\n`);
}

async function registry(argv: readonly string[]): Promise<void> {
  const { values } = parseArgs({ args: [...argv], options: { disk: { type: 'string' } }, strict: true });
  const reg = await startRegistry(releaseTools(REPO).crane, values.disk ? { disk: resolve(values.disk) } : {});
  process.stdout.write(`registry on ${reg.host} (Ctrl-C stops it)\n`);
  await new Promise<void>((done) => {
    process.once('SIGINT', done);
    process.once('SIGTERM', done);
  });
  await reg.stop();
}

async function main(argv: readonly string[]): Promise<void> {
  const [command, ...rest] = argv;
  if (command === 'verify') return verify(rest);
  if (command === 'registry') return registry(rest);
  return release(argv);
}

if (require.main === module) {
  main(process.argv.slice(2)).catch((err: unknown) => {
    process.stderr.write(`release-artifacts: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
}
