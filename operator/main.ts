/**
 * The operator binary: the only file that reads flags and environment variables. Which flags
 * there are, with their defaults and help, is the table in flags.ts.
 */
import { isIP } from 'node:net';
import { homedir } from 'node:os';
import { CLUSTER_ID_PATTERN } from './api/v1/well-known';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { loadRestConfig } from './runtime/load-config';
import { createLogger } from './runtime/logging';
import { startOperator } from './operator';
import { API_VERSIONS } from './api/version-names';
import { CERTIFICATE_KEEPERS } from './conversion/rbac';
import { LOG_FORMATS, LOG_LEVELS, OPERATOR_FLAGS, flagDefault, usage, type DefaultedFlagName, type FlagName, type OperatorFlag } from './flags';

const USAGE = usage();

/** Switches: given alone they mean true. */
const SWITCHES: readonly string[] = OPERATOR_FLAGS.filter((f: OperatorFlag) => f.switch).map((f) => `--${f.name}`);

/** Parses `3s`, `500ms`, `2m` or a bare number of ms. */
function duration(flag: string, value: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m)?$/.exec(value.trim());
  if (!m) throw new Error(`--${flag}: expected a duration like 3s or 500ms, got "${value}"`);
  const unit = m[2] === 's' ? 1000 : m[2] === 'm' ? 60_000 : 1;
  const ms = Math.round(Number(m[1]) * unit);
  // Zero would requeue every bucket in a hot loop.
  if (ms < 1) throw new Error(`--${flag}: must be at least 1ms, got "${value}"`);
  return ms;
}

function positiveInt(flag: string, value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new Error(`--${flag}: expected a positive integer, got "${value}"`);
  return n;
}

function number(flag: string, value: string): number {
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n)) throw new Error(`--${flag}: expected a number, got "${value}"`);
  return n;
}

/** `--cluster-id`: a tag value at the provider, so a bounded, plain string. */
function clusterId(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  if (!CLUSTER_ID_PATTERN.test(value)) {
    throw new Error(`--cluster-id: expected 1-63 characters of A-Za-z0-9._- starting with a letter or digit, got "${value}"`);
  }
  return value;
}

/** A TCP port; 0 means off. */
function port(flag: string, value: string): number {
  const n = Number(value);
  if (value.trim() === '' || !Number.isInteger(n) || n < 0 || n > 65535) throw new Error(`--${flag}: expected a port 0-65535, got "${value}"`);
  return n;
}

/** Comma-separated IP addresses. */
function ipList(flag: string, value: string | undefined): string[] {
  if (value === undefined || value.trim() === '') return [];
  const ips = value.split(',').map((s) => s.trim());
  const bad = ips.filter((ip) => isIP(ip) === 0);
  if (bad.length > 0) throw new Error(`--${flag}: not an IP address: "${bad.join('", "')}"`);
  return ips;
}

function bool(flag: string, value: string): boolean {
  if (value === 'true') return true;
  if (value === 'false') return false;
  throw new Error(`--${flag}: expected true or false, got "${value}"`);
}

/**
 * `--log-format`. pretty needs pino-pretty, a development dependency the image does not ship;
 * checked here because pino's own error for a missing transport names no flag.
 */
function logFormat(value: string): 'json' | 'pretty' {
  const format = oneOf('log-format', value, LOG_FORMATS);
  if (format === 'json') return 'json';
  try {
    require.resolve('pino-pretty');
  } catch {
    throw new Error(
      '--log-format pretty: pino-pretty is not installed (it is a development dependency, not part of the image); use --log-format json',
    );
  }
  return 'pretty';
}

/** `value` if it is one of `allowed`. */
function oneOf<T extends string>(flag: string, value: string, allowed: readonly T[]): T {
  if (!(allowed as readonly string[]).includes(value)) throw new Error(`--${flag}: expected one of ${allowed.join('|')}, got "${value}"`);
  return value as T;
}

function main(): void {
  const options: NonNullable<ParseArgsConfig['options']> = {
    ...Object.fromEntries(OPERATOR_FLAGS.map((f) => [f.name, { type: 'string' } as const])),
    help: { type: 'boolean', short: 'h' },
  };
  const { values } = parseArgs({
    options,
    // A switch alone means true, as with Go's flag package.
    args: process.argv.slice(2).map((a) => (SWITCHES.includes(a) ? `${a}=true` : a)),
    strict: true,
  });
  if (values['help']) {
    console.log(USAGE);
    return;
  }
  /** The flag's value as given, or undefined. */
  const given = (name: FlagName): string | undefined => {
    const v = values[name];
    return typeof v === 'string' ? v : undefined;
  };
  /** The flag's value as given, else its default from the table. */
  const arg = (name: DefaultedFlagName): string => given(name) ?? flagDefault(name);

  const level = oneOf('log-level', arg('log-level'), LOG_LEVELS);
  const logger = createLogger({ level, pretty: logFormat(arg('log-format')) === 'pretty' });
  const restConfig = loadRestConfig({ kubeconfig: given('kubeconfig'), env: process.env, homeDir: homedir() });
  logger.info({ config: restConfig.source, server: restConfig.server }, 'Loaded API server configuration');

  const leaderElectionNamespace = given('leader-election-namespace') ?? process.env['POD_NAMESPACE'] ?? 'bucketoperator-system';
  const webhookPort = port('conversion-webhook-port', arg('conversion-webhook-port'));
  const operator = startOperator({
    restConfig,
    logger,
    watchNamespace: given('watch-namespace') ?? process.env['WATCH_NAMESPACE'] ?? undefined,
    leaderElection: bool('leader-elect', arg('leader-elect')),
    leaderElectionNamespace,
    leaderElectionId: arg('leader-election-id'),
    identity: process.env['POD_NAME'],
    metricsBindAddress: arg('metrics-bind-address'),
    healthProbeBindAddress: arg('health-probe-bind-address'),
    maxConcurrentReconciles: positiveInt('max-concurrent-reconciles', arg('max-concurrent-reconciles')),
    pollIntervalMs: duration('poll-interval', arg('poll-interval')),
    driftIntervalMs: duration('drift-interval', arg('drift-interval')),
    clusterId: clusterId(given('cluster-id')),
    kubeApiQps: number('kube-api-qps', arg('kube-api-qps')),
    kubeApiBurst: positiveInt('kube-api-burst', arg('kube-api-burst')),
    kubeApiHttp2: bool('kube-api-http2', arg('kube-api-http2')),
    providerQps: positiveInt('provider-qps', arg('provider-qps')),
    providerBurst: positiveInt('provider-burst', arg('provider-burst')),
    providerMaxInFlight: positiveInt('provider-max-in-flight', arg('provider-max-in-flight')),
    allowLinkLocalEndpoints: bool('allow-link-local-endpoints', arg('allow-link-local-endpoints')),
    ownApiVersion: oneOf('api-version', arg('api-version'), API_VERSIONS),
    ...(webhookPort
      ? {
          conversionWebhook: {
            port: webhookPort,
            // The webhook's Secret and Service live beside the operator, where its Lease does.
            namespace: process.env['POD_NAMESPACE'] ?? leaderElectionNamespace,
            serviceName: arg('conversion-webhook-service'),
            secretName: arg('conversion-webhook-secret'),
            ipAddresses: ipList('conversion-webhook-ip-sans', given('conversion-webhook-ip-sans')),
            certificates: oneOf('conversion-webhook-certificates', arg('conversion-webhook-certificates'), CERTIFICATE_KEEPERS),
          },
        }
      : {}),
  });

  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'Shutting down');
    void operator.stop();
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
  operator.done.then(
    () => process.exit(0),
    (err: unknown) => {
      logger.error({ err }, 'Operator stopped with an error');
      process.exit(1);
    },
  );
}

try {
  main();
} catch (err) {
  console.error(err instanceof Error ? err.message : String(err));
  console.error(USAGE);
  process.exit(2);
}
