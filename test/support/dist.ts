/** Applies dist/ to a control plane the way a user would: CRDs first, established, then the rest. */
import { join } from 'node:path';
import { REPO_ROOT } from '../../infra/generate';
import type { ControlPlane } from './control-plane';

const APPLIED = Symbol.for('bucketoperator.test.distApplied');
type Holder = { [APPLIED]?: WeakMap<ControlPlane, Promise<void>> };

/** Applies dist/ once per control plane; later calls wait for the first. */
export function applyDist(cp: ControlPlane): Promise<void> {
  const holder = globalThis as Holder;
  holder[APPLIED] ??= new WeakMap();
  let done = holder[APPLIED].get(cp);
  if (!done) {
    done = apply(cp);
    holder[APPLIED].set(cp, done);
  }
  return done;
}

async function apply(cp: ControlPlane): Promise<void> {
  const dist = join(REPO_ROOT, 'dist');
  const run = async (args: string[]) => {
    const res = await cp.kubectl(args);
    if (res.code !== 0) throw new Error(`kubectl ${args.join(' ')} failed: ${res.stderr.trim()}`);
  };
  await run(['apply', '-f', join(dist, '00-crds.yaml')]);
  await run(['wait', '--for=condition=Established', '--timeout=60s', 'crd/storagebuckets.storage.avalonhosting.example', 'crd/bucketproviderconfigs.storage.avalonhosting.example']);
  await run(['apply', '-f', dist]);
}
