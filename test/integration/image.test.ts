/**
 * The local image build (scripts/build-image.sh), which the other integration tests and the
 * benchmarks run: one bundled operator/main.js with the production dependencies inlined and no
 * node_modules, and the bundle refuses what the image cannot do.
 */
import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { isBuiltin } from 'node:module';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { LOCAL_ONLY_FLAGS } from '../support/deployment-invocation';
import { buildImage, imageList, operatorNode, readImageEnv } from '../support/image';
import { operatorInvocation } from '../support/operator-process';

const run = promisify(execFile);

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

  it('holds one bundled operator/main.js that loads nothing but Node built-ins', () => {
    expect(readdirSync(join(dir, 'operator'))).to.deep.equal(['main.js']);
    const bundle = readFileSync(join(dir, 'operator', 'main.js'), 'utf8');
    const required = new Set([...bundle.matchAll(/\brequire\("([^"]+)"\)/g)].map((m) => m[1] ?? ''));
    expect([...required].filter((r) => !isBuiltin(r))).to.deep.equal([]);
    // Spot checks that the production dependencies are inside, not merely absent.
    for (const dep of ['pino', 'prom-client', 'yaml', '@sinclair/typebox']) expect(bundle, dep).to.include(`node_modules/${dep}/`);
  });

  it('accepts every flag the Deployment passes and every local-only flag', async () => {
    // The operator parses all flags strictly before it looks at --help, so exit 0 means none is unknown.
    const flags = Object.fromEntries(Object.keys(LOCAL_ONLY_FLAGS).map((f) => [f, '1']));
    const inv = await operatorInvocation(flags, 'image-test');
    const { stdout } = await run(inv.file, [...inv.argv, '--help'], { cwd: inv.cwd, env: inv.env });
    expect(stdout).to.match(/^Usage: bucketoperator/);
  });

  it('refuses --log-format pretty with one clear line and exit code 2 (pino-pretty is a dev dependency)', async () => {
    const err = await run(operatorNode(), [join(dir, 'operator', 'main.js'), '--log-format', 'pretty'], { cwd: dir, env: {} }).then(
      () => undefined,
      (e: unknown) => e as { code?: number; stderr?: string },
    );
    expect(err?.code).to.equal(2);
    expect(err?.stderr?.split('\n')[0]).to.equal(
      '--log-format pretty: pino-pretty is not installed (it is a development dependency, not part of the image); use --log-format json',
    );
  });
});
