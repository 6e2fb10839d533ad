/**
 * Shared fixtures for integration tests: one control plane per mocha run, started by the
 * first test file that asks for it and stopped by mocha's global teardown. Load this file
 * with `"require": ["test/integration/setup.ts"]` in .mocharc.integration.json.
 */
import { startControlPlane, type ControlPlane } from '../support/control-plane';

/** Re-exported for the test files that import it from here. */
export { freshNamespace } from '../support/kube';

// On globalThis rather than in a module variable: mocha loads this file through --require and
// the test files import it, and should the two ever resolve to separate module instances, a
// second control plane would be started and the first never stopped.
const SHARED = Symbol.for('bucketoperator.integration.sharedControlPlane');
type Holder = { [SHARED]?: Promise<ControlPlane> };
const holder = globalThis as Holder;

/**
 * The control plane shared by every integration test file of this mocha run, started on the
 * first call. A failed start is remembered, so later files fail at once with the same error
 * instead of each waiting for a start that cannot succeed.
 */
export function sharedControlPlane(): Promise<ControlPlane> {
  holder[SHARED] ??= startControlPlane();
  return holder[SHARED];
}

/** Mocha global fixture: stops the shared control plane, if one was started. */
export async function mochaGlobalTeardown(): Promise<void> {
  const pending = holder[SHARED];
  if (!pending) return;
  delete holder[SHARED];
  const cp = await pending.catch(() => undefined);
  await cp?.stop();
}
