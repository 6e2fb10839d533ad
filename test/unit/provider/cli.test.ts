import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { DEFAULT_CLI_PORT, parseCli } from '../../../provider/cli';
import { parseSnapshot } from '../../../provider/persistence';
import { call, create } from './helpers';

describe('provider CLI', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'provider-cli-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('defaults to port 8090 on 127.0.0.1 with faults off', async () => {
    const { options, logLevel, help } = await parseCli(['--api-key', 'a'], {});
    expect(options).to.deep.include({ port: DEFAULT_CLI_PORT, host: '127.0.0.1', apiKeys: ['a'] });
    expect(options).to.not.have.property('adminToken');
    expect(options.faults).to.deep.equal({});
    expect([logLevel, help]).to.deep.equal(['info', false]);
  });

  it('combines keys from flags, PROVIDER_API_KEYS and --api-keys-file', async () => {
    const file = join(dir, 'keys');
    await writeFile(file, '# comment\nfile-1\n\n  file-2  \r\nflag-1\n');
    const { options } = await parseCli(['--api-key', 'flag-1', '--api-key', 'flag-2', '--api-keys-file', file], {
      PROVIDER_API_KEYS: 'env-1, env-2,',
    });
    expect(options.apiKeys).to.deep.equal(['flag-1', 'flag-2', 'env-1', 'env-2', 'file-1', 'file-2']);
  });

  it('reads every server and fault flag', async () => {
    const { options, logLevel } = await parseCli(
      [
        '--api-key=k',
        '--port',
        '0',
        '--host',
        '0.0.0.0',
        '--regions',
        'a-1, b-2',
        '--activation-delay-ms',
        '10',
        '--resize-delay-ms',
        '20',
        '--data-file',
        '/tmp/x.json',
        '--max-body-bytes',
        '100',
        '--log-level',
        'debug',
        '--latency-ms',
        '5',
        '--error-rate',
        '0.25',
        '--error-status',
        '500',
        '--throttle-rate',
        '0.5',
        '--retry-after-seconds',
        '2',
        '--drop-after-commit-on-create',
        'count:3',
        '--fail-next',
        '503:4',
        '--outage',
        '--fault-seed',
        '77',
      ],
      { PROVIDER_ADMIN_TOKEN: 'adm' },
    );
    expect(logLevel).to.equal('debug');
    expect(options).to.deep.equal({
      port: 0,
      host: '0.0.0.0',
      apiKeys: ['k'],
      adminToken: 'adm',
      regions: ['a-1', 'b-2'],
      activationDelayMs: 10,
      resizeDelayMs: 20,
      dataFile: '/tmp/x.json',
      maxBodyBytes: 100,
      faults: {
        latencyMs: 5,
        errorRate: 0.25,
        errorStatus: 500,
        throttleRate: 0.5,
        retryAfterSeconds: 2,
        dropAfterCommitOnCreate: { count: 3 },
        failNext: { status: 503, count: 4 },
        outage: true,
        seed: 77,
      },
    });
  });

  const invalid: Record<string, [argv: string[], env: Record<string, string>, message: RegExp]> = {
    'no key anywhere': [[], {}, /no API key/],
    'unknown flag': [['--api-key', 'k', '--colour'], {}, /colour/],
    'positional argument': [['--api-key', 'k', 'extra'], {}, /extra/],
    'port not a number': [['--api-key', 'k', '--port', 'http'], {}, /--port/],
    'fail-next without count': [['--api-key', 'k', '--fail-next', '503'], {}, /--fail-next/],
    'error rate above 1': [['--api-key', 'k', '--error-rate', '2'], {}, /errorRate/],
    'missing keys file': [['--api-keys-file', '/nonexistent/keys'], {}, /--api-keys-file/],
  };
  for (const [name, [argv, env, message]] of Object.entries(invalid)) {
    it(`rejects ${name}`, async () => {
      let error: unknown;
      try {
        await parseCli(argv, env);
      } catch (err) {
        error = err;
      }
      expect(error).to.be.instanceOf(Error);
      expect((error as Error).message).to.match(message);
    });
  }

  it('runs with npm run provider flags and flushes the data file on SIGTERM', async function () {
    this.timeout(20000);
    const dataFile = join(dir, 'state.json');
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', 'provider/main.ts', '--port', '0', '--data-file', dataFile, '--activation-delay-ms', '60000'],
      {
        cwd: process.cwd(),
        env: { ...process.env, PROVIDER_API_KEYS: 'test-api-key-0123456789', PROVIDER_ADMIN_TOKEN: 'cli-admin' },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    try {
      const url = await new Promise<string>((resolve, reject) => {
        const lines = createInterface({ input: child.stdout });
        lines.on('line', (line) => {
          const entry = JSON.parse(line) as { msg?: string; url?: string };
          if (entry.msg === 'provider listening' && entry.url !== undefined) resolve(entry.url);
        });
        void exited.then((code) => reject(new Error(`provider exited early with ${code}`)));
      });
      const created = await create(url, 'cli');
      expect(created.status).to.equal(201);
      expect((await call(url, '/admin/stats', { auth: 'Bearer cli-admin' })).status).to.equal(200);
      child.kill('SIGTERM');
      expect(await exited).to.equal(0);
      const saved = parseSnapshot(JSON.parse(await readFile(dataFile, 'utf8')));
      expect(saved.idempotencyKeys.map((k) => k.key)).to.deep.equal(['cli']);
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
    }
  });
});
