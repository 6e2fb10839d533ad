/**
 * The local image build (scripts/build-image.sh), which the other integration tests and the
 * benchmarks run: it holds the production dependency closure of the lockfile and nothing else,
 * and the compiled operator refuses what the image cannot do.
 */
import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { LOCAL_ONLY_FLAGS } from '../support/deployment-invocation';
import { buildImage, imageList, readImageEnv, REPO } from '../support/image';
import { operatorInvocation } from '../support/operator-process';

const run = promisify(execFile);

interface LockEntry {
  readonly dev?: boolean;
  readonly peer?: boolean;
  readonly optional?: boolean;
}

function lockPackages(path: string, keep: (e: LockEntry) => boolean): string[] {
  const lock = JSON.parse(readFileSync(path, 'utf8')) as { packages: Record<string, LockEntry> };
  return Object.entries(lock.packages)
    .filter(([p, e]) => p !== '' && keep(e))
    .map(([p]) => p)
    .sort();
}

describe('the image build (scripts/build-image.sh)', function () {
  this.timeout(300_000);
  let dir: string;

  before(async () => {
    dir = await buildImage();
  });

  it('holds exactly what the image /app holds', () => {
    const entries = readdirSync(dir)
      .filter((e) => !e.startsWith('.'))
      .sort();
    expect(entries).to.deep.equal(imageList(readImageEnv(), 'IMAGE_RUNTIME_FILES').sort());
  });

  it('installs the production closure of package-lock.json: no dev tools, no cdk8s peers', () => {
    const wanted = lockPackages(join(REPO, 'package-lock.json'), (e) => !e.dev && !e.peer && !e.optional);
    // npm records what it actually installed in node_modules/.package-lock.json.
    const installed = lockPackages(join(dir, 'node_modules', '.package-lock.json'), () => true);
    expect(installed).to.deep.equal(wanted);
    for (const absent of ['cdk8s', 'cdk8s-plus-28', 'constructs', 'pino-pretty', 'typescript', 'tsx']) {
      expect(installed, absent).not.to.include(`node_modules/${absent}`);
    }
  });

  it('accepts every flag the Deployment passes and every local-only flag', async () => {
    // The operator parses all flags strictly before it looks at --help, so exit 0 means none is unknown.
    const flags = Object.fromEntries(Object.keys(LOCAL_ONLY_FLAGS).map((f) => [f, '1']));
    const inv = await operatorInvocation(flags, 'image-test');
    const { stdout } = await run(inv.file, [...inv.argv, '--help'], { cwd: inv.cwd, env: inv.env });
    expect(stdout).to.match(/^Usage: bucketoperator/);
  });

  it('refuses --log-format pretty with one clear line and exit code 2 (pino-pretty is a dev dependency)', async () => {
    const err = await run(process.execPath, [join(dir, 'operator', 'main.js'), '--log-format', 'pretty'], { cwd: dir, env: {} }).then(
      () => undefined,
      (e: unknown) => e as { code?: number; stderr?: string },
    );
    expect(err?.code).to.equal(2);
    expect(err?.stderr?.split('\n')[0]).to.equal(
      '--log-format pretty: pino-pretty is not installed (it is a development dependency, not part of the image); use --log-format json',
    );
  });
});
