import { expect } from 'chai';
import { spawn, spawnSync } from 'node:child_process';
import { join, resolve } from 'node:path';
import { captureLogger } from './fakes';

describe('logging', () => {
  it('redacts secret-bearing fields and keeps the rest', () => {
    const { logger, lines } = captureLogger();
    logger.info(
      {
        apiKey: 'k1',
        provider: { apiKey: 'k2', endpoint: 'http://p' },
        creds: { token: 't', password: 'p' },
        headers: { authorization: 'Bearer x' },
        req: { headers: { authorization: 'Bearer y' } },
      },
      'hello',
    );
    const line = lines[0] ?? {};
    expect(line).to.include({ msg: 'hello', apiKey: '[REDACTED]' });
    expect(line.provider).to.deep.equal({ apiKey: '[REDACTED]', endpoint: 'http://p' });
    expect(line.creds).to.deep.equal({ token: '[REDACTED]', password: '[REDACTED]' });
    expect(line.headers).to.deep.equal({ authorization: '[REDACTED]' });
    expect(line.req).to.deep.equal({ headers: { authorization: '[REDACTED]' } });
  });

  it('child loggers carry their bindings', () => {
    const { logger, lines } = captureLogger();
    logger.child({ controller: 'c', reconcileID: 'r' }).debug('x');
    expect(lines[0]).to.include({ controller: 'c', reconcileID: 'r', level: 20 });
  });
});

describe('logging to stdout', () => {
  const REPO = resolve(__dirname, '..', '..', '..');
  // The default destination writes asynchronously; what the operator logged just before it
  // exits (a fatal error, the last lines of a shutdown) must still reach its output.
  const run = (exit: 'process.exit' | 'throw') => {
    const script = [
      `const { createLogger } = require(${JSON.stringify(join(REPO, 'operator/runtime/logging.ts'))});`,
      `const logger = createLogger();`,
      `for (let i = 0; i < 20000; i++) logger.info({ i }, 'line');`,
      exit === 'process.exit' ? `process.exit(3);` : `throw new Error('boom');`,
    ].join('\n');
    return spawnSync(process.execPath, ['--import', 'tsx', '-e', script], { cwd: REPO, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  };

  for (const exit of ['process.exit', 'throw'] as const) {
    it(`loses no line logged right before ${exit === 'throw' ? 'an uncaught error' : 'process.exit'}`, function () {
      this.timeout(30_000);
      const res = run(exit);
      expect(res.status).to.equal(exit === 'throw' ? 1 : 3);
      const lines = res.stdout.split('\n').filter(Boolean);
      expect(lines).to.have.length(20000);
      expect((JSON.parse(lines[19999] ?? '{}') as { i?: number }).i).to.equal(19999);
    });
  }

  // Lines are written in batches; a line logged by an operator that then goes quiet must still
  // reach its output while it runs, not only when it exits.
  it('writes a lone line while the process keeps running', async function () {
    this.timeout(30_000);
    const script = [
      `const { createLogger } = require(${JSON.stringify(join(REPO, 'operator/runtime/logging.ts'))});`,
      `createLogger().info('lone line');`,
      `setInterval(() => {}, 60_000);`,
    ].join('\n');
    const child = spawn(process.execPath, ['--import', 'tsx', '-e', script], { cwd: REPO, stdio: ['ignore', 'pipe', 'inherit'] });
    try {
      const seen = await new Promise<string>((resolveLine, reject) => {
        let out = '';
        child.stdout.setEncoding('utf8');
        child.stdout.on('data', (chunk: string) => {
          out += chunk;
          if (out.includes('\n')) resolveLine(out);
        });
        child.on('exit', (code) => reject(new Error(`exited with ${String(code)} before writing: ${out}`)));
        setTimeout(() => reject(new Error('no line within 20 s')), 20_000).unref();
      });
      expect(JSON.parse(seen.split('\n')[0] ?? '{}')).to.include({ msg: 'lone line' });
    } finally {
      child.kill('SIGKILL');
    }
  });
});
