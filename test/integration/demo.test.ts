/**
 * The project's main job, `npm start`, brings a sample bucket to Ready with the operator and the
 * provider as Pods on the real node, and tears down cleanly. Needs root and `npm run build:node`.
 */
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { join, resolve } from 'node:path';

const REPO = resolve(__dirname, '..', '..');

describe('the local demo (npm start)', function () {
  this.timeout(360_000);

  it('runs the sample bucket to Ready and stops everything', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', join(REPO, 'test', 'support', 'demo.ts'), '--once'], {
      cwd: REPO,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (out += c.toString()));
    const code = await new Promise<number | null>((r) => child.once('exit', r));
    expect(code, out).to.equal(0);
    expect(out).to.match(/demo-bucket is Ready: provider bucket bucket-\S+/);
    expect(out).to.include('get sbucket -n demo -w');
    expect(out, 'the operator ran as the Pod dist/ describes').to.include('kubectl apply -f dist/ and kubectl rollout status');
    expect(out.trimEnd().endsWith('stopped'), out).to.equal(true);
  });
});
