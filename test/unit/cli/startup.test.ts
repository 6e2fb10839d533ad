import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';

const REPO = resolve(__dirname, '..', '..', '..');

/** What `run(argv)` did in a fresh process: its exit code, what it wrote to stderr, and the modules it loaded. */
interface Started {
  readonly code: number;
  readonly stderr: string;
  readonly files: string[];
}

/**
 * Runs `run(argv)` in a fresh process and returns the modules it loaded: what start-up costs
 * before any request. (Timings are not asserted, bench/README.md's rule; what is loaded
 * decides them: bench/cli-startup.ts measures.)
 */
function start(argv: string[]): Started {
  const script = `
    const { run } = require(${JSON.stringify(join(REPO, 'cli', 'main.ts'))});
    let stderr = '';
    const term = { out() {}, err(s) { stderr += s; }, isTTY: false, columns: 80, env: {} };
    run(${JSON.stringify(argv)}, term, new AbortController().signal).then((code) => {
      process.stdout.write(JSON.stringify({ code, stderr, files: Object.keys(require.cache) }));
    });`;
  const out = execFileSync(process.execPath, ['--import', 'tsx', '-e', script], { cwd: REPO, encoding: 'utf8' });
  const { code, stderr, files } = JSON.parse(out) as Started;
  return {
    code,
    stderr,
    files: files.map((f) => relative(REPO, f)).filter((f) => !f.startsWith('node_modules/tsx/') && !f.startsWith('node_modules/get-tsconfig/')),
  };
}

function loadedBy(argv: string[]): string[] {
  return start(argv).files;
}

/** What only a command that talks to the API server needs: the client, the operator's kinds and schemas, YAML, metrics, logging. */
const HEAVY = /^(operator\/|infra\/|node_modules\/(@sinclair\/typebox|yaml|prom-client|pino|@opentelemetry)\/)/;

const cases: Record<string, string[]> = {
  '--help': ['--help'],
  'help of a command': ['trace', '--help'],
  version: ['version'],
  'a usage error': ['trace'],
};

/**
 * What a command that connects must not load, by what it is: the operator's machinery (schema
 * construction, metrics, logging, informers and the manager, the provider client), none of
 * which reading a bucket and judging it needs. Each is loaded by the operator, not the plugin.
 * Packages match wherever node_modules is (a linked one resolves outside the checkout).
 */
const OPERATOR_ONLY: Readonly<Record<string, RegExp>> = {
  'TypeBox (schemas built at import)': /(^|\/)node_modules\/@sinclair\/typebox\//,
  'the v1 API index and its schema modules': /^operator\/api\/v1\/(index|schema-helpers|storagebucket|bucketproviderconfig|validate)\.ts$/,
  'the v2 API (loaded only to convert an object that is not v1)': /^operator\/api\/(v2|convert)\//,
  'prom-client': /(^|\/)node_modules\/(prom-client|@opentelemetry|bintrees|tdigest)\//,
  pino: /(^|\/)node_modules\/(pino|pino-std-serializers|sonic-boom|thread-stream|@pinojs)\//,
  'client-node (the runtime has its own client)': /(^|\/)node_modules\/@kubernetes\/client-node\//,
  'the runtime index': /^operator\/runtime\/index\.ts$/,
  "the runtime's metrics, logging, informers and manager": new RegExp(
    `^operator/runtime/(${[
      'metrics',
      'logging',
      'write-failures',
      'informer',
      'informer-factory',
      'reflector',
      'cache',
      'manager',
      'controller',
      'builder',
      'workqueue',
      'leader-election',
      'health',
    ].join('|')})\\.ts$`,
  ),
  'the provider client': /^operator\/provider-client\//,
};

/** A command that connects, and the module that proves its command code was loaded before it ended. */
const connecting: Record<string, { argv: string[]; command: string }> = {
  'why NAME': { argv: ['why', 'logs'], command: 'cli/commands/trace.ts' },
  'trace NAME': { argv: ['trace', 'logs'], command: 'cli/commands/trace.ts' },
  report: { argv: ['report'], command: 'cli/commands/report.ts' },
  // An edit of annotations only: adopt and orphan check values against the schemas, and load them.
  'pause NAME': { argv: ['pause', 'logs'], command: 'cli/commands/edit.ts' },
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

  describe('a command that connects, against an API server that refuses connections', () => {
    let dir = '';
    let kubeconfig = '';
    let server = '';

    before(async () => {
      // A port that was free a moment ago: nothing listens there, so the connection is refused at once.
      const listener = createServer();
      await new Promise<void>((done) => listener.listen(0, '127.0.0.1', done));
      const { port } = listener.address() as AddressInfo;
      await new Promise((done) => listener.close(done));
      server = `https://127.0.0.1:${port}`;
      dir = mkdtempSync(join(tmpdir(), 'bucketoperator-startup-'));
      kubeconfig = join(dir, 'kubeconfig');
      writeFileSync(
        kubeconfig,
        [
          'apiVersion: v1',
          'kind: Config',
          'clusters:',
          '- name: gone',
          `  cluster: { server: '${server}' }`,
          'users:',
          '- name: someone',
          '  user: { token: not-a-secret }',
          'contexts:',
          '- name: gone',
          '  context: { cluster: gone, user: someone }',
          'current-context: gone',
          '',
        ].join('\n'),
      );
    });

    after(() => rmSync(dir, { recursive: true, force: true }));

    for (const [name, c] of Object.entries(connecting)) {
      it(`${name} loads the client and its own command, and none of the operator's machinery`, () => {
        const { code, stderr, files } = start([...c.argv, '--kubeconfig', kubeconfig]);
        // It got as far as the network: the config was read, the first request refused.
        expect(code).to.equal(1);
        expect(stderr).to.match(new RegExp(`^error: cannot reach the API server at ${server.replace(/\./g, '\\.')}: .*ECONNREFUSED\n$`));
        expect(files).to.include.members(['cli/kube.ts', 'operator/runtime/client.ts', c.command]);
        const found = Object.entries(OPERATOR_ONLY).flatMap(([what, re]) => {
          const hits = files.filter((f) => re.test(f));
          const more = hits.length > 3 ? ` and ${hits.length - 3} more` : '';
          return hits.length > 0 ? [`${what}: ${hits.slice(0, 3).join(', ')}${more}`] : [];
        });
        expect(found).to.deep.equal([]);
      });
    }
  });
});
