/**
 * Mocha reporter for the integration lanes: the spec reporter's output, then one line per
 * test file with its wall time, hooks included (the spec reporter times tests only, and a
 * file's before hooks, which start operators and providers, are often most of its time).
 * The lane runner (scripts/test-integration.ts) reads the `file-time` lines.
 */
import Mocha from 'mocha';
import { relative } from 'node:path';

const { EVENT_SUITE_BEGIN, EVENT_SUITE_END, EVENT_RUN_END } = Mocha.Runner.constants;

/** The line prefix the lane runner parses: `file-time <seconds> <path>`. */
const FILE_TIME_PREFIX = 'file-time';

/** Spec output plus per-file wall times, hooks included. */
class FileTimesReporter extends Mocha.reporters.Spec {
  constructor(runner: Mocha.Runner, options?: Mocha.MochaOptions) {
    super(runner, options);
    const started = new Map<string, number>();
    const took = new Map<string, number>();
    runner.on(EVENT_SUITE_BEGIN, (suite: Mocha.Suite) => {
      if (suite.file && suite.parent?.root) started.set(suite.file, started.get(suite.file) ?? performance.now());
    });
    runner.on(EVENT_SUITE_END, (suite: Mocha.Suite) => {
      const begun = suite.file && suite.parent?.root ? started.get(suite.file) : undefined;
      if (suite.file && begun !== undefined) took.set(suite.file, performance.now() - begun);
    });
    runner.once(EVENT_RUN_END, () => {
      for (const [file, ms] of took) {
        process.stdout.write(`${FILE_TIME_PREFIX} ${(ms / 1000).toFixed(1)} ${relative(process.cwd(), file)}\n`);
      }
    });
  }
}

export = FileTimesReporter;
