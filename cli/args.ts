/**
 * Command-line parsing of `kubectl bucket`: the commands, and the flags kubectl users expect
 * (`--kubeconfig`, `--context`, `-n`, `-A`, `-o`, `-w`), in both `--flag value` and
 * `--flag=value` forms. Pure: it reads only its argument and throws a `CliError(USAGE)` whose
 * message names the offending flag.
 */
import { CliError, ExitCode } from './exit-codes';

/** The commands, in the order the help lists them. */
export const COMMANDS = ['trace', 'why', 'reconcile', 'pause', 'resume', 'adopt', 'orphan', 'report', 'help', 'version'] as const;

/** A command name. */
export type Command = (typeof COMMANDS)[number];

/** Output formats: a tree with messages cut to fit, the same with full messages, or JSON. */
export type OutputFormat = 'text' | 'wide' | 'json';

/** When to colour the output. */
export type ColorMode = 'auto' | 'always' | 'never';

/** Everything a command needs from the command line. */
export interface Options {
  readonly command: Command;
  /** The StorageBucket's name (trace, why and the edits); none for `trace -A` and `why -A`, which list every bucket. */
  readonly name?: string;
  readonly kubeconfig?: string;
  readonly context?: string;
  /** `-n`; the kubeconfig context's namespace, then `default`, when unset. */
  readonly namespace?: string;
  /** `-A`: every namespace (trace and why list every StorageBucket; report). */
  readonly allNamespaces: boolean;
  readonly output: OutputFormat;
  /** `-w` (trace only). */
  readonly watch: boolean;
  readonly color: ColorMode;
  /** `--id` (adopt only). */
  readonly id?: string;
  /** `--wait` (reconcile only): wait until the operator has handled the request. */
  readonly wait: boolean;
  /** `--timeout` for `--wait`, in ms. */
  readonly timeoutMs: number;
  /** `-f`/`--file` (report only): where the archive goes. */
  readonly file?: string;
  /** `--metrics-url` (report only): the operator's /metrics, e.g. through a port-forward. */
  readonly metricsUrl?: string;
  /** `--operator-namespace` (report only). */
  readonly operatorNamespace: string;
}

/** Namespace the shipped manifests install the operator into. */
export const DEFAULT_OPERATOR_NAMESPACE = 'bucketoperator-system';

/** Default of `--timeout`. */
export const DEFAULT_TIMEOUT_MS = 60_000;

/** Commands that take a StorageBucket name. */
const NAMED: ReadonlySet<Command> = new Set(['trace', 'why', 'reconcile', 'pause', 'resume', 'adopt', 'orphan']);

interface FlagSpec {
  readonly long: string;
  readonly short?: string;
  readonly value: boolean;
  /** Commands that accept it; every command when absent. */
  readonly only?: readonly Command[];
}

const FLAGS: readonly FlagSpec[] = [
  { long: 'kubeconfig', value: true },
  { long: 'context', value: true },
  { long: 'namespace', short: 'n', value: true },
  { long: 'all-namespaces', short: 'A', value: false, only: ['trace', 'why', 'report'] },
  { long: 'output', short: 'o', value: true, only: ['trace', 'why'] },
  { long: 'watch', short: 'w', value: false, only: ['trace'] },
  { long: 'color', value: true },
  { long: 'no-color', value: false },
  { long: 'id', value: true, only: ['adopt'] },
  { long: 'wait', value: false, only: ['reconcile'] },
  { long: 'timeout', value: true, only: ['reconcile'] },
  { long: 'file', short: 'f', value: true, only: ['report'] },
  { long: 'metrics-url', value: true, only: ['report'] },
  { long: 'operator-namespace', value: true, only: ['report'] },
  { long: 'help', short: 'h', value: false },
];

function usage(message: string): never {
  throw new CliError(ExitCode.USAGE, `${message} (see kubectl bucket help)`);
}

/** Parses a kubectl-style duration (`30s`, `2m`, `1m30s`, `500ms`) into ms. */
export function parseDuration(text: string): number | undefined {
  if (!/^(\d+(ms|s|m|h))+$/.test(text)) return undefined;
  let ms = 0;
  for (const [, n, unit] of text.matchAll(/(\d+)(ms|s|m|h)/g)) {
    ms += Number(n) * ({ ms: 1, s: 1000, m: 60_000, h: 3_600_000 } as const)[unit as 'ms' | 's' | 'm' | 'h'];
  }
  return ms;
}

/**
 * Parses `argv` (the arguments after `kubectl bucket`). Flags may come before or after the
 * command. `help` with no command prints the help; `<command> --help` prints it too.
 */
export function parseArgs(argv: readonly string[]): Options & { readonly help: boolean } {
  const values = new Map<string, string | true>();
  const positional: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] ?? '';
    if (arg === '--') {
      positional.push(...argv.slice(i + 1));
      break;
    }
    if (!arg.startsWith('-') || arg === '-') {
      positional.push(arg);
      continue;
    }
    const eq = arg.indexOf('=');
    const head = eq === -1 ? arg : arg.slice(0, eq);
    const spec = head.startsWith('--') ? FLAGS.find((f) => f.long === head.slice(2)) : FLAGS.find((f) => f.short === head.slice(1));
    if (!spec) usage(`unknown flag ${head}`);
    let value: string | true = true;
    if (spec.value) {
      if (eq !== -1) value = arg.slice(eq + 1);
      else {
        const next = argv[i + 1];
        if (next === undefined) usage(`flag ${head} needs a value`);
        value = next;
        i++;
      }
      if (value === '') usage(`flag ${head} needs a value`);
    } else if (eq !== -1) {
      const v = arg.slice(eq + 1);
      if (v !== 'true' && v !== 'false') usage(`flag ${head} takes no value other than true or false`);
      if (v === 'false') continue;
    }
    values.set(spec.long, value);
  }

  const [first, ...rest] = positional;
  const help = values.has('help') || first === undefined || first === 'help';
  const command = (first ?? 'help') as Command;
  if (!COMMANDS.includes(command)) usage(`unknown command "${first}"`);
  for (const flag of values.keys()) {
    const spec = FLAGS.find((f) => f.long === flag);
    if (spec?.only && !spec.only.includes(command) && !help) usage(`flag --${flag} does not apply to ${command}`);
  }
  const str = (k: string): string | undefined => {
    const v = values.get(k);
    return typeof v === 'string' ? v : undefined;
  };

  const all = values.has('all-namespaces');
  let name: string | undefined;
  if (NAMED.has(command)) {
    if (rest.length > 1) usage(`${command} takes one StorageBucket name, got ${rest.length}`);
    name = rest[0];
    // As kubectl get: -A lists, and a name cannot be looked up across namespaces.
    if (all && name !== undefined) usage(`${command} -A lists every StorageBucket; name none, or use -n with a name`);
    if (name === undefined && !all && !help) usage(`${command} needs the name of a StorageBucket`);
  } else if (rest.length > 0 && command !== 'help') {
    usage(`${command} takes no arguments, got "${rest.join(' ')}"`);
  }
  if (all && values.has('namespace')) usage('use -n or -A, not both');
  if (all && values.has('watch')) usage('-w follows one StorageBucket: name it instead of -A');

  const output = str('output') ?? 'text';
  const format: OutputFormat | undefined = output === 'text' ? 'text' : output === 'wide' ? 'wide' : output === 'json' ? 'json' : undefined;
  if (!format) usage(`-o must be wide or json, not "${output}"`);

  const colorFlag = values.has('no-color') ? 'never' : (str('color') ?? 'auto');
  if (colorFlag !== 'auto' && colorFlag !== 'always' && colorFlag !== 'never') usage(`--color must be auto, always or never, not "${colorFlag}"`);

  const id = str('id');
  if (command === 'adopt' && id === undefined && !help) usage('adopt needs --id <provider bucket id>');

  const timeoutText = str('timeout');
  const timeoutMs = timeoutText === undefined ? DEFAULT_TIMEOUT_MS : parseDuration(timeoutText);
  if (timeoutMs === undefined || timeoutMs <= 0) usage(`--timeout must be a duration such as 30s or 2m, not "${timeoutText ?? ''}"`);

  return {
    command,
    help,
    ...(name !== undefined ? { name } : {}),
    ...(str('kubeconfig') !== undefined ? { kubeconfig: str('kubeconfig') } : {}),
    ...(str('context') !== undefined ? { context: str('context') } : {}),
    ...(str('namespace') !== undefined ? { namespace: str('namespace') } : {}),
    allNamespaces: all,
    output: format,
    watch: values.has('watch'),
    color: colorFlag,
    ...(id !== undefined ? { id } : {}),
    wait: values.has('wait'),
    timeoutMs,
    ...(str('file') !== undefined ? { file: str('file') } : {}),
    ...(str('metrics-url') !== undefined ? { metricsUrl: str('metrics-url') } : {}),
    operatorNamespace: str('operator-namespace') ?? DEFAULT_OPERATOR_NAMESPACE,
  };
}

/** The help text. */
export const HELP = `kubectl bucket: inspect and operate StorageBuckets of BucketOperator.

Commands:
  trace NAME [-o wide|json] [-w]   tree of the bucket and what it depends on, root cause first
  trace -A [-o wide|json]          every StorageBucket of every namespace, one line each
  why NAME [-o json]               one paragraph: what is wrong, whether it is terminal, the fix
  why -A [-o json]                 the paragraph of every StorageBucket of every namespace
  reconcile NAME [--wait]          ask the operator to reconcile now (reconcile-requested-at)
  pause NAME                       stop all provider calls for the bucket (paused: "true")
  resume NAME                      remove the paused annotation
  adopt NAME --id ID               adopt an existing provider bucket (adopt-id)
  orphan NAME                      keep the provider bucket when the StorageBucket is deleted
  report [-n NS | -A] [-f FILE]    support bundle: objects (Secret data, env values, URL
                                   credentials and last-applied redacted), Events, the
                                   operator's objects, logs and metrics, as one .tar.gz
  version                          print the plugin version

Flags:
  --kubeconfig PATH   kubeconfig file (default: $KUBECONFIG, in-cluster, ~/.kube/config)
  --context NAME      kubeconfig context
  -n, --namespace NS  namespace (default: the context's, else default)
  -A                  all namespaces (trace, why, report)
  -o wide|json        full messages, or JSON (trace, why)
  -w, --watch         redraw the trace on every change until interrupted
  --color auto|always|never, --no-color   colour (auto: only on a terminal; NO_COLOR is honoured)
  --wait, --timeout 60s                   reconcile: wait until the operator handled it
  --metrics-url URL, --operator-namespace NS   report: where the operator's metrics and Pods are

Exit codes: 0 ok (trace, why: Ready), 1 error, 2 usage, 3 not found,
            4 not Ready yet (trace, why), 5 stalled: terminal reason or paused (trace, why),
            6 StorageBuckets not served in this context (no CRD there: check --context).
            With -A, trace and why exit with the worst code of the buckets listed.
`;
