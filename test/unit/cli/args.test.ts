import { expect } from 'chai';
import { DEFAULT_TIMEOUT_MS, parseArgs, parseDuration, type Options } from '../../../cli/args';
import { CliError, ExitCode } from '../../../cli/exit-codes';

const ok: Record<string, { argv: string[]; want: Partial<Options & { help: boolean }> }> = {
  'a command and a name, defaults for the rest': {
    argv: ['trace', 'logs'],
    want: {
      command: 'trace',
      name: 'logs',
      output: 'text',
      watch: false,
      color: 'auto',
      allNamespaces: false,
      timeoutMs: DEFAULT_TIMEOUT_MS,
      help: false,
    },
  },
  'kubectl flags in both forms, before and after the command': {
    argv: ['--context', 'prod', 'trace', '-n', 'team-a', 'logs', '--kubeconfig=/k', '-o', 'wide', '-w'],
    want: { command: 'trace', name: 'logs', context: 'prod', namespace: 'team-a', kubeconfig: '/k', output: 'wide', watch: true },
  },
  '-n=ns and --namespace=ns': { argv: ['why', 'logs', '-n=a'], want: { namespace: 'a' } },
  '-o json': { argv: ['why', 'logs', '--output=json'], want: { output: 'json' } },
  '--no-color and --color': { argv: ['trace', 'x', '--no-color'], want: { color: 'never' } },
  '--color=always': { argv: ['trace', 'x', '--color=always'], want: { color: 'always' } },
  'adopt with --id': { argv: ['adopt', 'logs', '--id', 'bkt-1'], want: { command: 'adopt', id: 'bkt-1' } },
  'reconcile --wait --timeout 2m': { argv: ['reconcile', 'logs', '--wait', '--timeout', '2m'], want: { wait: true, timeoutMs: 120_000 } },
  'report -A with a file and a metrics URL': {
    argv: ['report', '-A', '-f', 'out.tgz', '--metrics-url', 'http://localhost:8080/metrics'],
    want: {
      command: 'report',
      allNamespaces: true,
      file: 'out.tgz',
      metricsUrl: 'http://localhost:8080/metrics',
      operatorNamespace: 'bucketoperator-system',
    },
  },
  'trace -A lists every namespace, with no name': {
    argv: ['trace', '-A', '-o', 'wide'],
    want: { command: 'trace', allNamespaces: true, output: 'wide' },
  },
  'why --all-namespaces': { argv: ['why', '--all-namespaces', '-o', 'json'], want: { command: 'why', allNamespaces: true, output: 'json' } },
  'no arguments is the help': { argv: [], want: { command: 'help', help: true } },
  '<command> --help is the help, even without a name': { argv: ['adopt', '--help'], want: { command: 'adopt', help: true } },
  'a boolean flag set to false is absent': { argv: ['trace', 'x', '--watch=false'], want: { watch: false } },
  '-- ends the flags': { argv: ['why', '--', '-odd-name'], want: { name: '-odd-name' } },
};

const refused: Record<string, { argv: string[]; message: string }> = {
  'an unknown command': { argv: ['describe', 'x'], message: 'unknown command "describe"' },
  'an unknown flag': { argv: ['trace', 'x', '--colour'], message: 'unknown flag --colour' },
  'a flag without its value': { argv: ['trace', 'x', '-n'], message: 'flag -n needs a value' },
  'an empty value': { argv: ['trace', 'x', '--context='], message: 'flag --context needs a value' },
  'a missing name': { argv: ['why'], message: 'why needs the name of a StorageBucket' },
  'two names': { argv: ['pause', 'a', 'b'], message: 'pause takes one StorageBucket name, got 2' },
  'an output kubectl bucket does not render': { argv: ['trace', 'x', '-o', 'yaml'], message: '-o must be wide or json, not "yaml"' },
  'a flag of another command': { argv: ['pause', 'x', '--watch'], message: 'flag --watch does not apply to pause' },
  '-A with an edit': { argv: ['pause', 'x', '-A'], message: 'flag --all-namespaces does not apply to pause' },
  '-A with a name': { argv: ['trace', 'x', '-A'], message: 'trace -A lists every StorageBucket; name none, or use -n with a name' },
  '-A with a watch': { argv: ['trace', '-A', '-w'], message: '-w follows one StorageBucket: name it instead of -A' },
  '-n with -A on why': { argv: ['why', '-A', '-n', 'a'], message: 'use -n or -A, not both' },
  '-n with -A': { argv: ['report', '-A', '-n', 'a'], message: 'use -n or -A, not both' },
  'adopt without --id': { argv: ['adopt', 'x'], message: 'adopt needs --id <provider bucket id>' },
  'a timeout that is no duration': {
    argv: ['reconcile', 'x', '--timeout', '10'],
    message: '--timeout must be a duration such as 30s or 2m, not "10"',
  },
  'a colour mode that does not exist': {
    argv: ['trace', 'x', '--color=sometimes'],
    message: '--color must be auto, always or never, not "sometimes"',
  },
  'arguments to report': { argv: ['report', 'x'], message: 'report takes no arguments, got "x"' },
};

describe('kubectl bucket: flags', () => {
  for (const [name, { argv, want }] of Object.entries(ok)) {
    it(name, () => expect(parseArgs(argv)).to.deep.include(want));
  }
  for (const [name, { argv, message }] of Object.entries(refused)) {
    it(`refuses ${name} (usage, exit 2)`, () => {
      let caught: unknown;
      try {
        parseArgs(argv);
      } catch (err) {
        caught = err;
      }
      expect(caught).to.be.instanceOf(CliError);
      expect((caught as CliError).code).to.equal(ExitCode.USAGE);
      expect((caught as CliError).message).to.equal(`${message} (see kubectl bucket help)`);
    });
  }

  const durations: Record<string, number | undefined> = {
    '30s': 30_000,
    '2m': 120_000,
    '1m30s': 90_000,
    '500ms': 500,
    '1h': 3_600_000,
    '10': undefined,
    '-1s': undefined,
    s: undefined,
  };
  for (const [text, ms] of Object.entries(durations)) {
    it(`reads the duration ${JSON.stringify(text)} as ${String(ms)}`, () => expect(parseDuration(text)).to.equal(ms));
  }
});
