/**
 * Runs npm scripts side by side and fails when any fails: `tsx scripts/parallel.ts typecheck lint
 * format:check`. tsc and ESLint's typed rules are each one thread; on two cores they finish in
 * the time of the longer instead of the sum. Each script's output is printed whole when it ends,
 * so the logs do not interleave.
 */
import { spawn } from 'node:child_process';

type Outcome = { script: string; code: number; output: string; seconds: number };

function run(script: string): Promise<Outcome> {
  const began = performance.now();
  const child = spawn('npm', ['run', '--silent', script], { stdio: ['ignore', 'pipe', 'pipe'] });
  const chunks: Buffer[] = [];
  child.stdout.on('data', (c: Buffer) => chunks.push(c));
  child.stderr.on('data', (c: Buffer) => chunks.push(c));
  return new Promise((resolve) => {
    child.once('close', (code, signal) => {
      resolve({
        script,
        code: code ?? (signal ? 1 : 0),
        output: Buffer.concat(chunks).toString('utf8'),
        seconds: (performance.now() - began) / 1000,
      });
    });
  });
}

async function main(): Promise<void> {
  const scripts = process.argv.slice(2);
  if (scripts.length === 0) throw new Error('usage: tsx scripts/parallel.ts <npm script>...');
  const outcomes = await Promise.all(
    scripts.map((s) =>
      run(s).then((o) => {
        process.stdout.write(`> npm run ${o.script}: ${o.code === 0 ? 'ok' : `exit ${o.code}`} in ${o.seconds.toFixed(1)} s\n${o.output}`);
        return o;
      }),
    ),
  );
  const failed = outcomes.filter((o) => o.code !== 0).map((o) => o.script);
  if (failed.length > 0) process.stderr.write(`failed: ${failed.join(', ')}\n`);
  process.exitCode = failed.length > 0 ? 1 : 0;
}

void main();
