/**
 * The operator binary: the only file that reads flags and environment variables. Flags follow
 * controller-runtime's names so manifests and habits carry over.
 */
import { isIP } from 'node:net';
import { homedir } from 'node:os';
import { CLUSTER_ID_PATTERN } from './api/v1/well-known';
import { parseArgs } from 'node:util';
import { loadRestConfig } from './runtime/load-config';
import { createLogger } from './runtime/logging';
import { startOperator } from './operator';
import { API_VERSIONS } from './api/version-names';
import { CERTIFICATE_KEEPERS, DEFAULT_WEBHOOK_SECRET, DEFAULT_WEBHOOK_SERVICE } from './conversion/rbac';

const USAGE = `Usage: bucketoperator [flags]
  --kubeconfig PATH                 kubeconfig (default: every path of $KUBECONFIG merged, then in-cluster,
                                    then ~/.kube/config); HTTPS_PROXY/HTTP_PROXY/NO_PROXY apply
  --kube-api-qps N                  client-side API requests per second, watches and the Lease
                                    excepted; 0 or less disables (default 500)
  --kube-api-burst N                client-side API request burst (default 1000)
  --kube-api-http2[=true|false]     speak HTTP/2 to the API server when it offers h2, as client-go
                                    does (default true; false: HTTP/1.1, watches on sockets of their own)
  --watch-namespace NS              watch one namespace (default: all; env WATCH_NAMESPACE)
  --leader-elect[=true|false]       Lease leader election (default false)
  --leader-election-namespace NS    namespace of the Lease (default: $POD_NAMESPACE or bucketoperator-system)
  --leader-election-id NAME         Lease name (default bucketoperator-leader)
  --metrics-bind-address ADDR       /metrics listen address, "0" disables (default :8080)
  --health-probe-bind-address ADDR  /healthz and /readyz listen address (default :8081)
  --max-concurrent-reconciles N     parallel reconciles of StorageBuckets (default 8)
  --poll-interval DURATION          poll while Provisioning/Resizing, e.g. 3s (default 3s)
  --drift-interval DURATION         time between bulk drift scans (one provider list per account), e.g. 60s (default 60s)
  --cluster-id ID                   this cluster's identity in provider buckets' owner tags (default: the
                                    uid of the kube-system namespace); a cluster that replaces one gone
                                    for good takes its ID to manage its buckets
  --provider-qps N --provider-burst N   provider calls per account, i.e. endpoint plus API key (default 20/40)
  --provider-max-in-flight N        provider calls in flight per account; more wait, so a slow endpoint
                                    holds at most this many sockets and calls (default 8)
  --allow-link-local-endpoints[=true|false]  let BucketProviderConfigs point at link-local
                                    (169.254.0.0/16, fe80::/10) and cloud metadata addresses
                                    (default false)
  --conversion-webhook-port N       serve the CRDs' conversion webhook over HTTPS on this port and keep its
                                    certificates and the CRDs' caBundle (default 0: off)
  --conversion-webhook-service NAME the Service in front of the webhook, named in its certificate
                                    (default bucketoperator-webhook)
  --conversion-webhook-secret NAME  the Secret holding the webhook's CA and certificate, in the operator's
                                    namespace (default bucketoperator-webhook-cert)
  --conversion-webhook-certificates operator|external
                                    who keeps the webhook Secret and the CRDs' caBundle: the operator,
                                    or another tool such as cert-manager, the operator then only
                                    reading the Secret (default operator)
  --conversion-webhook-ip-sans IPS  comma-separated IP addresses the certificate also names, for an API
                                    server that calls the webhook by URL (default none)
  --api-version v1|v2               the version of StorageBucket and BucketProviderConfig the operator reads
                                    and writes; set it to the CRDs' storage version, so its own work never
                                    needs the conversion webhook (default v1)
  --log-level LEVEL                 debug|info|warn|error (default info)
  --log-format json|pretty          (default json)`;

/** Flags that take true/false and mean true when given alone. */
const BOOLEAN_FLAGS = ['--leader-elect', '--allow-link-local-endpoints', '--kube-api-http2'];

const LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'] as const;

/** Parses `3s`, `500ms`, `2m` or a bare number of ms. */
function duration(flag: string, value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  const m = /^(\d+(?:\.\d+)?)(ms|s|m)?$/.exec(value.trim());
  if (!m) throw new Error(`--${flag}: expected a duration like 3s or 500ms, got "${value}"`);
  const unit = m[2] === 's' ? 1000 : m[2] === 'm' ? 60_000 : 1;
  const ms = Math.round(Number(m[1]) * unit);
  // Zero would requeue every bucket in a hot loop.
  if (ms < 1) throw new Error(`--${flag}: must be at least 1ms, got "${value}"`);
  return ms;
}

function positiveInt(flag: string, value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new Error(`--${flag}: expected a positive integer, got "${value}"`);
  return n;
}

function number(flag: string, value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback;
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

/** A TCP port; 0 or unset means off. */
function port(flag: string, value: string | undefined): number {
  if (value === undefined) return 0;
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

function bool(flag: string, value: string | boolean | undefined, unset = false): boolean {
  if (value === undefined) return unset;
  if (value === false) return false;
  if (value === true || value === 'true') return true;
  if (value === 'false') return false;
  throw new Error(`--${flag}: expected true or false, got "${String(value)}"`);
}

/**
 * `--log-format`. pretty needs pino-pretty, a development dependency the image does not ship;
 * checked here because pino's own error for a missing transport names no flag.
 */
function logFormat(value: string | undefined): 'json' | 'pretty' {
  if (value === undefined || value === 'json') return 'json';
  if (value !== 'pretty') throw new Error(`--log-format: expected json or pretty, got "${value}"`);
  try {
    require.resolve('pino-pretty');
  } catch {
    throw new Error(
      '--log-format pretty: pino-pretty is not installed (it is a development dependency, not part of the image); use --log-format json',
    );
  }
  return 'pretty';
}

/** `value` if it is one of `allowed`, `fallback` when the flag is not given. */
function oneOf<T extends string>(flag: string, value: string | undefined, allowed: readonly T[], fallback: T): T {
  if (value === undefined) return fallback;
  if (!(allowed as readonly string[]).includes(value)) throw new Error(`--${flag}: expected one of ${allowed.join('|')}, got "${value}"`);
  return value as T;
}

function main(): void {
  const { values } = parseArgs({
    options: {
      kubeconfig: { type: 'string' },
      'watch-namespace': { type: 'string' },
      'leader-elect': { type: 'string' },
      'leader-election-namespace': { type: 'string' },
      'leader-election-id': { type: 'string' },
      'metrics-bind-address': { type: 'string' },
      'health-probe-bind-address': { type: 'string' },
      'max-concurrent-reconciles': { type: 'string' },
      'poll-interval': { type: 'string' },
      'drift-interval': { type: 'string' },
      'cluster-id': { type: 'string' },
      'kube-api-qps': { type: 'string' },
      'kube-api-burst': { type: 'string' },
      'kube-api-http2': { type: 'string' },
      'provider-qps': { type: 'string' },
      'provider-burst': { type: 'string' },
      'provider-max-in-flight': { type: 'string' },
      'allow-link-local-endpoints': { type: 'string' },
      'conversion-webhook-port': { type: 'string' },
      'conversion-webhook-service': { type: 'string' },
      'conversion-webhook-secret': { type: 'string' },
      'conversion-webhook-ip-sans': { type: 'string' },
      'conversion-webhook-certificates': { type: 'string' },
      'api-version': { type: 'string' },
      'log-level': { type: 'string' },
      'log-format': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
    // A boolean flag alone means true, as with Go's flag package.
    args: process.argv.slice(2).map((a) => (BOOLEAN_FLAGS.includes(a) ? `${a}=true` : a)),
    strict: true,
  });
  if (values.help) {
    console.log(USAGE);
    return;
  }
  const level = oneOf('log-level', values['log-level'], LEVELS, 'info');
  const logger = createLogger({ level, pretty: logFormat(values['log-format']) === 'pretty' });
  const restConfig = loadRestConfig({ kubeconfig: values.kubeconfig, env: process.env, homeDir: homedir() });
  logger.info({ config: restConfig.source, server: restConfig.server }, 'Loaded API server configuration');

  const leaderElectionNamespace = values['leader-election-namespace'] ?? process.env['POD_NAMESPACE'] ?? 'bucketoperator-system';
  const webhookPort = port('conversion-webhook-port', values['conversion-webhook-port']);
  const operator = startOperator({
    restConfig,
    logger,
    watchNamespace: values['watch-namespace'] ?? process.env['WATCH_NAMESPACE'] ?? undefined,
    leaderElection: bool('leader-elect', values['leader-elect']),
    leaderElectionNamespace,
    leaderElectionId: values['leader-election-id'],
    identity: process.env['POD_NAME'],
    metricsBindAddress: values['metrics-bind-address'] ?? ':8080',
    healthProbeBindAddress: values['health-probe-bind-address'] ?? ':8081',
    maxConcurrentReconciles: positiveInt('max-concurrent-reconciles', values['max-concurrent-reconciles'], 8),
    pollIntervalMs: duration('poll-interval', values['poll-interval'], 3000),
    driftIntervalMs: duration('drift-interval', values['drift-interval'], 60_000),
    clusterId: clusterId(values['cluster-id']),
    kubeApiQps: number('kube-api-qps', values['kube-api-qps'], 500),
    kubeApiBurst: positiveInt('kube-api-burst', values['kube-api-burst'], 1000),
    kubeApiHttp2: bool('kube-api-http2', values['kube-api-http2'], true),
    providerQps: positiveInt('provider-qps', values['provider-qps'], 20),
    providerBurst: positiveInt('provider-burst', values['provider-burst'], 40),
    providerMaxInFlight: positiveInt('provider-max-in-flight', values['provider-max-in-flight'], 8),
    allowLinkLocalEndpoints: bool('allow-link-local-endpoints', values['allow-link-local-endpoints']),
    ownApiVersion: oneOf('api-version', values['api-version'], API_VERSIONS, 'v1'),
    ...(webhookPort
      ? {
          conversionWebhook: {
            port: webhookPort,
            // The webhook's Secret and Service live beside the operator, where its Lease does.
            namespace: process.env['POD_NAMESPACE'] ?? leaderElectionNamespace,
            serviceName: values['conversion-webhook-service'] ?? DEFAULT_WEBHOOK_SERVICE,
            secretName: values['conversion-webhook-secret'] ?? DEFAULT_WEBHOOK_SECRET,
            ipAddresses: ipList('conversion-webhook-ip-sans', values['conversion-webhook-ip-sans']),
            certificates: oneOf('conversion-webhook-certificates', values['conversion-webhook-certificates'], CERTIFICATE_KEEPERS, 'operator'),
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
