/**
 * Command-line and environment configuration of the provider. Takes argv and env as
 * arguments (main.ts is the only reader of process state), so it is testable as is.
 */
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { parseFaultSettings } from './faults';
import { HttpError } from './http';
import type { FaultSettings, ProviderOptions } from './types';

/** Port used when `--port` is not given. */
export const DEFAULT_CLI_PORT = 8090;

/** Help text for `--help` and usage errors. */
export const USAGE = `Usage: npm run provider -- [options]

Mock object-storage API (see provider/README.md).

Server:
  --port N                      listen port (0 = ephemeral)            [${DEFAULT_CLI_PORT}]
  --host ADDR                   listen address                          [127.0.0.1]
  --api-key KEY                 accepted bearer key (repeatable); each key is an
                                account of its own, ACCOUNT:KEY puts keys that
                                share an ACCOUNT into one account
  --api-keys-file PATH          file with one key (or ACCOUNT:KEY) per line
  --admin-token TOKEN           enables /admin/* (prefer env PROVIDER_ADMIN_TOKEN)
  --regions a,b,c               accepted regions
  --activation-delay-ms N       Provisioning -> Active                  [5000]
  --resize-delay-ms N           Resizing -> Active             [activation delay]
  --data-file PATH              persist state to this JSON file
  --max-body-bytes N            largest request body                    [65536]
  --log-level LEVEL             pino level                              [info]

Faults (also switchable at run time with PUT /admin/faults):
  --latency-ms N                added delay per /buckets request
  --error-rate R                0..1 answered with --error-status
  --error-status S              500 | 502 | 503 | 504                   [503]
  --throttle-rate R             0..1 answered 429 with Retry-After
  --retry-after-seconds N                                               [1]
  --drop-after-commit-on-create R | count:N
                                destroy the socket after a create commits
  --late-commit-on-create COUNT:DELAY_MS
                                never answer the next COUNT new creates;
                                commit each DELAY_MS later
  --fail-next STATUS:COUNT      answer the next COUNT requests with STATUS
  --outage                      every /buckets request answers 503
  --fault-seed N                seed for the rates                      [1]

List faults (GET /buckets without idempotencyKey, i.e. the drift scan's list):
  --list-error-status S         429 | 500 | 502 | 503 | 504
  --list-empty-object           answer 200 {}
  --list-not-json               answer 200 with a body that is not JSON
  --list-repeat-continue        every page carries the same continue token
  --list-slow-body-ms N         drip the body over N ms
  --list-fault-account NAME     only this account's lists     [every account]

Hostile modes (what a broken or hostile endpoint does; see provider/README.md):
  --reset-rate R                0..1 reset the connection (TCP RST), no answer
  --redirect-to URL             answer 307, Location: URL + the request's path
  --huge-answer-bytes N         answer with a JSON body of N bytes, streamed
  --huge-answer-chunked         ... without Content-Length
  --huge-answer-status S        200 | 429 | 500 | 502 | 503 | 504       [200]
  --malformed-json              answer 200 with JSON cut short
  --trickle-interval-ms N       send every body one byte per N ms
  Slow answers: --latency-ms N with --outage (or --fail-next S:COUNT).

Environment: PROVIDER_API_KEYS (comma separated keys or ACCOUNT:KEY), PROVIDER_ADMIN_TOKEN.
`;

/** What the command line asks for. */
export interface CliConfig {
  help: boolean;
  logLevel: string;
  /** Everything but the logger, which main.ts builds from `logLevel`. */
  options: ProviderOptions;
}

function int(value: string | undefined, flag: string): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value)) throw new Error(`${flag} must be a non-negative integer`);
  return Number(value);
}

function num(value: string | undefined, flag: string): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n)) throw new Error(`${flag} must be a number`);
  return n;
}

function list(value: string | undefined): string[] {
  return (value ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
}

function faultSettings(values: Record<string, string | boolean | string[] | undefined>): FaultSettings {
  const str = (name: string): string | undefined => {
    const v = values[name];
    return typeof v === 'string' ? v : undefined;
  };
  const raw: Record<string, unknown> = {
    latencyMs: int(str('latency-ms'), '--latency-ms'),
    errorRate: num(str('error-rate'), '--error-rate'),
    errorStatus: int(str('error-status'), '--error-status'),
    throttleRate: num(str('throttle-rate'), '--throttle-rate'),
    retryAfterSeconds: int(str('retry-after-seconds'), '--retry-after-seconds'),
    seed: int(str('fault-seed'), '--fault-seed'),
    outage: values.outage === true ? true : undefined,
    listErrorStatus: int(str('list-error-status'), '--list-error-status'),
    listEmptyObject: values['list-empty-object'] === true ? true : undefined,
    listNotJson: values['list-not-json'] === true ? true : undefined,
    listRepeatContinue: values['list-repeat-continue'] === true ? true : undefined,
    listSlowBodyMs: int(str('list-slow-body-ms'), '--list-slow-body-ms'),
    listFaultAccount: str('list-fault-account'),
    resetRate: num(str('reset-rate'), '--reset-rate'),
    redirectTo: str('redirect-to'),
    hugeAnswerBytes: int(str('huge-answer-bytes'), '--huge-answer-bytes'),
    hugeAnswerChunked: values['huge-answer-chunked'] === true ? true : undefined,
    hugeAnswerStatus: int(str('huge-answer-status'), '--huge-answer-status'),
    malformedJson: values['malformed-json'] === true ? true : undefined,
    trickleIntervalMs: int(str('trickle-interval-ms'), '--trickle-interval-ms'),
  };
  const drop = str('drop-after-commit-on-create');
  if (drop !== undefined) {
    const count = /^count:(\d+)$/.exec(drop);
    raw.dropAfterCommitOnCreate = count?.[1] !== undefined ? { count: Number(count[1]) } : num(drop, '--drop-after-commit-on-create');
  }
  const late = str('late-commit-on-create');
  if (late !== undefined) {
    const m = /^(\d+):(\d+)$/.exec(late);
    if (m === null) throw new Error('--late-commit-on-create must be COUNT:DELAY_MS, e.g. 1:15000');
    raw.lateCommitOnCreate = { count: Number(m[1]), delayMs: Number(m[2]) };
  }
  const failNext = str('fail-next');
  if (failNext !== undefined) {
    const m = /^(\d{3}):(\d+)$/.exec(failNext);
    if (m === null) throw new Error('--fail-next must be STATUS:COUNT, e.g. 503:3');
    raw.failNext = { status: Number(m[1]), count: Number(m[2]) };
  }
  try {
    return parseFaultSettings(raw);
  } catch (err) {
    // Validation names JSON fields; on the command line the flag is what the user typed.
    if (err instanceof HttpError) throw new Error(`invalid fault flag: ${err.message}`);
    throw err;
  }
}

/**
 * Builds the provider configuration from argv (without node and script) and environment.
 * API keys from `--api-key`, then `PROVIDER_API_KEYS`, then `--api-keys-file` are combined in
 * that order: the first one's account is the default account. Entries stay as written
 * (`ACCOUNT:KEY` is split by `startProvider`).
 *
 * @throws on unknown flags, bad values or an unreadable keys file; messages carry no keys.
 */
export async function parseCli(argv: readonly string[], env: Readonly<Record<string, string | undefined>>): Promise<CliConfig> {
  const { values } = parseArgs({
    args: [...argv],
    strict: true,
    allowPositionals: false,
    options: {
      help: { type: 'boolean', short: 'h' },
      port: { type: 'string' },
      host: { type: 'string' },
      'api-key': { type: 'string', multiple: true },
      'api-keys-file': { type: 'string' },
      'admin-token': { type: 'string' },
      regions: { type: 'string' },
      'activation-delay-ms': { type: 'string' },
      'resize-delay-ms': { type: 'string' },
      'data-file': { type: 'string' },
      'max-body-bytes': { type: 'string' },
      'log-level': { type: 'string' },
      'latency-ms': { type: 'string' },
      'error-rate': { type: 'string' },
      'error-status': { type: 'string' },
      'throttle-rate': { type: 'string' },
      'retry-after-seconds': { type: 'string' },
      'drop-after-commit-on-create': { type: 'string' },
      'late-commit-on-create': { type: 'string' },
      'fail-next': { type: 'string' },
      outage: { type: 'boolean' },
      'fault-seed': { type: 'string' },
      'list-error-status': { type: 'string' },
      'list-empty-object': { type: 'boolean' },
      'list-not-json': { type: 'boolean' },
      'list-repeat-continue': { type: 'boolean' },
      'list-slow-body-ms': { type: 'string' },
      'list-fault-account': { type: 'string' },
      'reset-rate': { type: 'string' },
      'redirect-to': { type: 'string' },
      'huge-answer-bytes': { type: 'string' },
      'huge-answer-chunked': { type: 'boolean' },
      'huge-answer-status': { type: 'string' },
      'malformed-json': { type: 'boolean' },
      'trickle-interval-ms': { type: 'string' },
    },
  });
  const help = values.help === true;
  const apiKeys = [...(values['api-key'] ?? []), ...list(env.PROVIDER_API_KEYS)];
  const keysFile = values['api-keys-file'];
  if (keysFile !== undefined) {
    let text: string;
    try {
      text = await readFile(keysFile, 'utf8');
    } catch (err) {
      throw new Error(`cannot read --api-keys-file ${keysFile}`, { cause: err });
    }
    apiKeys.push(
      ...text
        .split(/\r?\n/)
        .map((line) => line.trim())
        .filter((line) => line.length > 0 && !line.startsWith('#')),
    );
  }
  if (apiKeys.length === 0 && !help) {
    throw new Error('no API key: pass --api-key, --api-keys-file or set PROVIDER_API_KEYS');
  }
  const options: ProviderOptions = {
    port: int(values.port, '--port') ?? DEFAULT_CLI_PORT,
    host: values.host ?? '127.0.0.1',
    apiKeys: [...new Set(apiKeys)],
    faults: faultSettings(values),
  };
  const adminToken = values['admin-token'] ?? env.PROVIDER_ADMIN_TOKEN;
  if (adminToken !== undefined && adminToken !== '') options.adminToken = adminToken;
  if (values.regions !== undefined) options.regions = list(values.regions);
  const activation = int(values['activation-delay-ms'], '--activation-delay-ms');
  if (activation !== undefined) options.activationDelayMs = activation;
  const resize = int(values['resize-delay-ms'], '--resize-delay-ms');
  if (resize !== undefined) options.resizeDelayMs = resize;
  if (values['data-file'] !== undefined) options.dataFile = values['data-file'];
  const maxBody = int(values['max-body-bytes'], '--max-body-bytes');
  if (maxBody !== undefined) options.maxBodyBytes = maxBody;
  return { help, logLevel: values['log-level'] ?? 'info', options };
}
