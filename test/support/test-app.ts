/**
 * A cdk8s App for tests. `Testing.app()` (and `Testing.chart()`) makes a folder in the system's
 * temporary directory per call and never removes it (about 75 a run of the suites); these all go
 * under one folder that is removed when the process exits.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App, Chart } from 'cdk8s';

let root: string | undefined;

/** A new App whose outdir is an empty folder of its own, removed with the test process. */
export function testApp(): App {
  if (root === undefined) {
    const dir = mkdtempSync(join(tmpdir(), 'bucketoperator-cdk8s-'));
    root = dir;
    process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
  }
  return new App({ outdir: mkdtempSync(join(root, 'app-')) });
}

/** A Chart named `test` in a new {@link testApp}, as `Testing.chart()`. */
export function testChart(): Chart {
  return new Chart(testApp(), 'test');
}
