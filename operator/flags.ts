/**
 * The operator's flags as one table. main.ts parses exactly these, takes their defaults from
 * here and prints its usage from them; `npm run docs` renders docs/reference/flags.md from the
 * same rows, so a flag, its default and its help are written once. Names follow
 * controller-runtime's so manifests and habits carry over. Declaring reads nothing: main.ts
 * stays the only file that reads flags and environment variables.
 */
import { API_VERSIONS } from './api/version-names';
import { CERTIFICATE_KEEPERS, DEFAULT_WEBHOOK_SECRET, DEFAULT_WEBHOOK_SERVICE } from './conversion/rbac';

/** Log levels `--log-level` accepts (pino's). */
export const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'] as const;

/** Formats `--log-format` accepts. */
export const LOG_FORMATS = ['json', 'pretty'] as const;

/** One flag of the operator. */
export interface OperatorFlag {
  /** The flag without its leading dashes. */
  readonly name: string;
  /** What the value looks like in the usage text, e.g. `N`, `DURATION`, `v1|v2`. */
  readonly value: string;
  /** A switch: `--name` alone means `--name=true`, as with Go's flag package. */
  readonly switch?: boolean;
  /** The value used when the flag is not given, spelled as a user would give it. */
  readonly default?: string;
  /** What applies when the flag is not given and no fixed default does. */
  readonly unset?: string;
  /** The environment variable read when the flag is not given. */
  readonly env?: string;
  /** What the flag does. */
  readonly help: string;
}

/** Every flag, in the order the usage text lists them. */
export const OPERATOR_FLAGS = [
  {
    name: 'kubeconfig',
    value: 'PATH',
    unset: 'every path of $KUBECONFIG merged, then the in-cluster ServiceAccount, then ~/.kube/config',
    help: 'kubeconfig to reach the API server; HTTPS_PROXY/HTTP_PROXY/NO_PROXY apply',
  },
  {
    name: 'kube-api-qps',
    value: 'N',
    default: '500',
    help: 'client-side API requests per second, watches and the Lease excepted; 0 or less disables the limit',
  },
  { name: 'kube-api-burst', value: 'N', default: '1000', help: 'client-side API request burst' },
  {
    name: 'kube-api-http2',
    value: 'true|false',
    switch: true,
    default: 'true',
    help: 'speak HTTP/2 to the API server when it offers h2, as client-go does; false: HTTP/1.1, watches on sockets of their own',
  },
  {
    name: 'watch-namespace',
    value: 'NS',
    env: 'WATCH_NAMESPACE',
    unset: 'all namespaces',
    help: 'manage StorageBuckets and BucketProviderConfigs of this namespace only',
  },
  { name: 'leader-elect', value: 'true|false', switch: true, default: 'false', help: 'Lease leader election, for more than one replica' },
  {
    name: 'leader-election-namespace',
    value: 'NS',
    env: 'POD_NAMESPACE',
    unset: 'bucketoperator-system',
    help: 'namespace of the leader-election Lease and of the conversion webhook Secret',
  },
  { name: 'leader-election-id', value: 'NAME', default: 'bucketoperator-leader', help: 'name of the leader-election Lease' },
  { name: 'metrics-bind-address', value: 'ADDR', default: ':8080', help: '/metrics listen address; "0" disables it' },
  { name: 'health-probe-bind-address', value: 'ADDR', default: ':8081', help: '/healthz and /readyz listen address' },
  { name: 'max-concurrent-reconciles', value: 'N', default: '8', help: 'parallel reconciles of StorageBuckets (the workers)' },
  { name: 'poll-interval', value: 'DURATION', default: '3s', help: 'how often a bucket in transition (Provisioning, Resizing) is asked about' },
  {
    name: 'drift-interval',
    value: 'DURATION',
    default: '60s',
    help: 'time between bulk drift scans (one provider list per account and 1,000 buckets)',
  },
  {
    name: 'cluster-id',
    value: 'ID',
    unset: 'the uid of the kube-system namespace',
    help: "this cluster's identity in provider buckets' owner tags; a cluster that replaces one gone for good takes its ID to manage its buckets",
  },
  {
    name: 'provider-qps',
    value: 'N',
    default: '20',
    help: 'provider calls per second per account (an endpoint plus an API key), so tenants with their own keys never spend the calls of others',
  },
  { name: 'provider-burst', value: 'N', default: '40', help: 'provider call burst per account' },
  {
    name: 'provider-max-in-flight',
    value: 'N',
    default: '8',
    help: 'provider calls in flight per account; more wait, so a slow endpoint holds at most this many sockets and calls',
  },
  {
    name: 'allow-link-local-endpoints',
    value: 'true|false',
    switch: true,
    default: 'false',
    help: 'let BucketProviderConfigs point at link-local (169.254.0.0/16, fe80::/10) and cloud metadata addresses',
  },
  {
    name: 'conversion-webhook-port',
    value: 'N',
    default: '0',
    help: "serve the CRDs' conversion webhook over HTTPS on this port and keep its certificates and the CRDs' caBundle; 0: off",
  },
  {
    name: 'conversion-webhook-service',
    value: 'NAME',
    default: DEFAULT_WEBHOOK_SERVICE,
    help: 'the Service in front of the webhook, named in its certificate',
  },
  {
    name: 'conversion-webhook-secret',
    value: 'NAME',
    default: DEFAULT_WEBHOOK_SECRET,
    help: "the Secret holding the webhook's CA and certificate, in the operator's namespace",
  },
  {
    name: 'conversion-webhook-certificates',
    value: CERTIFICATE_KEEPERS.join('|'),
    default: 'operator',
    help: "who keeps the webhook Secret and the CRDs' caBundle: the operator, or another tool such as cert-manager, the operator then only reading the Secret",
  },
  {
    name: 'conversion-webhook-ip-sans',
    value: 'IPS',
    unset: 'none',
    help: 'comma-separated IP addresses the certificate also names, for an API server that calls the webhook by URL',
  },
  {
    name: 'api-version',
    value: API_VERSIONS.join('|'),
    default: 'v1',
    help: "the version of StorageBucket and BucketProviderConfig the operator reads and writes; set it to the CRDs' storage version, so its own work never needs the conversion webhook",
  },
  { name: 'log-level', value: 'LEVEL', default: 'info', help: `one of ${LOG_LEVELS.join('|')}` },
  {
    name: 'log-format',
    value: LOG_FORMATS.join('|'),
    default: 'json',
    help: 'json lines on stdout, or pretty (needs pino-pretty, a development dependency the image does not ship)',
  },
] as const satisfies readonly OperatorFlag[];

/** The name of a flag in {@link OPERATOR_FLAGS}. */
export type FlagName = (typeof OPERATOR_FLAGS)[number]['name'];

/** A flag that has a fixed default. */
export type DefaultedFlagName = Extract<(typeof OPERATOR_FLAGS)[number], { readonly default: string }>['name'];

/** The default of `name`, as a user would give it. */
export function flagDefault(name: DefaultedFlagName): string {
  const flag: OperatorFlag | undefined = OPERATOR_FLAGS.find((f) => f.name === name);
  if (flag?.default === undefined) throw new Error(`--${name} has no default`);
  return flag.default;
}

const USAGE_COLUMN = 36;
const USAGE_WIDTH = 110;

/** `text` cut into lines of at most `width` characters at spaces. */
function wrap(text: string, width: number): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(' ')) {
    if (line && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else {
      line = line ? `${line} ${word}` : word;
    }
  }
  if (line) lines.push(line);
  return lines;
}

/** What `--help` prints: one entry per flag, its default or what applies when it is unset. */
export function usage(flags: readonly OperatorFlag[] = OPERATOR_FLAGS): string {
  const entries = flags.map((f) => {
    const head = `  --${f.name}${f.switch ? `[=${f.value}]` : ` ${f.value}`}`;
    const fallback = f.default !== undefined ? `default ${f.default}` : `default: ${f.unset ?? 'none'}`;
    const body = wrap(`${f.help} (${f.env ? `env ${f.env}; ` : ''}${fallback})`, USAGE_WIDTH - USAGE_COLUMN);
    const first =
      head.length < USAGE_COLUMN ? [`${head.padEnd(USAGE_COLUMN)}${body[0] ?? ''}`] : [head, `${' '.repeat(USAGE_COLUMN)}${body[0] ?? ''}`];
    return [...first, ...body.slice(1).map((l) => `${' '.repeat(USAGE_COLUMN)}${l}`)].join('\n');
  });
  return ['Usage: bucketoperator [flags]', ...entries, '  -h, --help                        this text'].join('\n');
}
