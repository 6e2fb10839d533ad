/**
 * Entry point of `npm run provider`: the only provider file that reads argv, environment
 * and signals. SIGINT/SIGTERM close gracefully (in-flight requests finish, the data file
 * is flushed); a second signal exits at once.
 */
import { pino } from 'pino';
import { parseCli, USAGE, type CliConfig } from './cli';
import { startProvider } from './server';

async function main(): Promise<void> {
  let config: CliConfig;
  try {
    config = await parseCli(process.argv.slice(2), process.env);
  } catch (err) {
    process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n\n${USAGE}`);
    process.exitCode = 2;
    return;
  }
  if (config.help) {
    process.stdout.write(USAGE);
    return;
  }
  // Nothing logs headers, but redact anyway so a future debug line cannot leak a key.
  const logger = pino({
    level: config.logLevel,
    base: { component: 'provider' },
    redact: { paths: ['req.headers.authorization', 'headers.authorization', 'authorization'], censor: '[redacted]' },
  });
  const provider = await startProvider({ ...config.options, logger });

  let stopping = false;
  const stop = (signal: NodeJS.Signals): void => {
    if (stopping) {
      logger.warn({ signal }, 'second signal, exiting now');
      process.exit(1);
    }
    stopping = true;
    logger.info({ signal }, 'stopping');
    provider.close().then(
      () => {
        process.exitCode = 0;
      },
      (err: unknown) => {
        logger.error({ err }, 'cannot stop cleanly');
        process.exitCode = 1;
      },
    );
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}

main().catch((err: unknown) => {
  process.stderr.write(`provider failed to start: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exitCode = 1;
});
