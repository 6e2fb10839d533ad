import { expect } from 'chai';
import { HELP } from '../../../cli/args';
import { frame } from '../../../cli/commands/trace';
import { ExitCode } from '../../../cli/exit-codes';
import { run } from '../../../cli/main';
import type { Terminal } from '../../../cli/terminal';
import { recorder as fakeRecorder } from './fake-kube';
import { NOW, snapshot, waitingBucket } from './fixtures';

const recorder = (): Terminal & { stdout: string; stderr: string } => fakeRecorder(120);

const cases: Record<string, { argv: string[]; code: ExitCode; stdout?: string | RegExp; stderr?: string | RegExp }> = {
  'no arguments print the help': { argv: [], code: ExitCode.OK, stdout: HELP },
  'help prints the help': { argv: ['help'], code: ExitCode.OK, stdout: HELP },
  'version prints the package version': { argv: ['version'], code: ExitCode.OK, stdout: /^kubectl-bucket \d+\.\d+\.\d+\n$/ },
  'a usage error goes to stderr with exit 2': {
    argv: ['trace'],
    code: ExitCode.USAGE,
    stderr: 'error: trace needs the name of a StorageBucket (see kubectl bucket help)\n',
  },
  'a kubeconfig that cannot be read is exit 1, naming the file': {
    argv: ['why', 'logs', '--kubeconfig', '/nonexistent/kubeconfig'],
    code: ExitCode.ERROR,
    stderr: 'error: cannot read kubeconfig /nonexistent/kubeconfig: ENOENT\n',
  },
  'an empty kubeconfig is exit 1, naming it': {
    argv: ['why', 'logs', '--kubeconfig', '/dev/null', '--context', 'prod'],
    code: ExitCode.ERROR,
    stderr: /^error: kubeconfig \/dev\/null is not a kubeconfig/,
  },
};

describe('kubectl bucket: main', () => {
  for (const [name, c] of Object.entries(cases)) {
    it(name, async () => {
      const t = recorder();
      expect(await run(c.argv, t, new AbortController().signal)).to.equal(c.code);
      for (const [got, want] of [
        [t.stdout, c.stdout],
        [t.stderr, c.stderr],
      ] as const) {
        if (want instanceof RegExp) expect(got).to.match(want);
        else if (want !== undefined) expect(got).to.equal(want);
      }
    });
  }

  it('exit codes 0 to 5 keep their meaning, 6 is "not served here", and the help lists every one', () => {
    expect(ExitCode).to.deep.equal({ OK: 0, ERROR: 1, USAGE: 2, NOT_FOUND: 3, NOT_READY: 4, STALLED: 5, NOT_SERVED: 6 });
    const codes = HELP.slice(HELP.indexOf('Exit codes:'));
    for (const code of Object.values(ExitCode)) expect(codes).to.match(new RegExp(`\\b${code} \\w`), `exit code ${code} in the help`);
    expect(codes).to.include('6 StorageBuckets not served in this context (no CRD there: check --context)');
  });

  it('a watch frame changes its key only when something other than the time changes', () => {
    const term = { columns: 120 };
    const a = frame(snapshot({ bucket: waitingBucket('Provisioning') }), { output: 'text' }, term, false);
    const later = frame(snapshot({ bucket: waitingBucket('Provisioning'), now: new Date(NOW.getTime() + 90_000) }), { output: 'text' }, term, false);
    const changed = frame(snapshot({ bucket: waitingBucket('Resizing') }), { output: 'text' }, term, false);
    expect(later.text).to.not.equal(a.text);
    expect(later.key).to.equal(a.key);
    expect(changed.key).to.not.equal(a.key);
    const json = frame(snapshot({ bucket: waitingBucket('Provisioning') }), { output: 'json' }, term, false);
    const jsonLater = frame(
      snapshot({ bucket: waitingBucket('Provisioning'), now: new Date(NOW.getTime() + 90_000) }),
      { output: 'json' },
      term,
      false,
    );
    expect([jsonLater.key === json.key, json.code]).to.deep.equal([true, ExitCode.NOT_READY]);
  });
});
