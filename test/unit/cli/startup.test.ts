import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import { join, relative, resolve } from 'node:path';

const REPO = resolve(__dirname, '..', '..', '..');

/**
 * The modules `run(argv)` loads, in a fresh process: what start-up costs before any request.
 * (Timings are not asserted, bench/README.md's rule; what is loaded decides them.)
 */
function loadedBy(argv: string[]): string[] {
  const script = `
    const { run } = require(${JSON.stringify(join(REPO, 'cli', 'main.ts'))});
    const term = { out() {}, err() {}, isTTY: false, columns: 80, env: {} };
    run(${JSON.stringify(argv)}, term, new AbortController().signal).then((code) => {
      process.stdout.write(JSON.stringify({ code, files: Object.keys(require.cache) }));
    });`;
  const out = execFileSync(process.execPath, ['--import', 'tsx', '-e', script], { cwd: REPO, encoding: 'utf8' });
  const { files } = JSON.parse(out) as { files: string[] };
  return files.map((f) => relative(REPO, f)).filter((f) => !f.startsWith('node_modules/tsx/') && !f.startsWith('node_modules/get-tsconfig/'));
}

/** What only a command that talks to the API server needs: the client, the operator's kinds and schemas, YAML, metrics, logging. */
const HEAVY = /^(operator\/|infra\/|node_modules\/(@sinclair\/typebox|yaml|prom-client|pino|@opentelemetry)\/)/;

const cases: Record<string, string[]> = {
  '--help': ['--help'],
  'help of a command': ['trace', '--help'],
  version: ['version'],
  'a usage error': ['trace'],
};

describe('kubectl bucket: start-up', function () {
  this.timeout(30_000);
  for (const [name, argv] of Object.entries(cases)) {
    it(`${name} loads only the flag parser: no client, no schemas, no YAML`, () => {
      const files = loadedBy(argv);
      expect(files.filter((f) => HEAVY.test(f))).to.deep.equal([]);
      expect(files.filter((f) => f.startsWith('cli/')).sort()).to.deep.equal(['cli/args.ts', 'cli/exit-codes.ts', 'cli/main.ts', 'cli/terminal.ts']);
    });
  }

  it('a command that connects loads the client when it runs (what the cases above must not see)', () => {
    const files = loadedBy(['why', 'logs', '--kubeconfig', '/nonexistent/kubeconfig']);
    expect(files).to.include.members(['cli/kube.ts', 'operator/runtime/client.ts', 'operator/runtime/load-config.ts']);
  });
});
