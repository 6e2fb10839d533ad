/**
 * dist/ as a user gets it: applied to a control plane the way a user would (CRDs first,
 * established, then the rest, then waiting until the operator's admission policy is enforced,
 * so no test runs the operator while it is still unconfined), and the operator's Deployment
 * read from it.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { REPO_ROOT } from '../../infra/generate';
import { waitForSecretPolicy } from './admission';
import type { ControlPlane } from './control-plane';
import type { DeploymentLike } from './deployment-invocation';

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
  await run([
    'wait',
    '--for=condition=Established',
    '--timeout=60s',
    'crd/storagebuckets.storage.avalonhosting.example',
    'crd/bucketproviderconfigs.storage.avalonhosting.example',
  ]);
  await run(['apply', '-f', dist]);
  await waitForSecretPolicy(cp, 'system:serviceaccount:bucketoperator-system:bucketoperator-controller-manager', 'default');
}

/** The operator's Deployment as dist/ ships it: the one Deployment in dist/*.yaml. */
export function distDeployment(): DeploymentLike {
  return deploymentIn(join(REPO_ROOT, 'dist'));
}

/** The one Deployment in the top-level YAML files of `dist` (a dist/ folder of any release: the operator's). */
export function deploymentIn(dist: string): DeploymentLike {
  const found: DeploymentLike[] = [];
  for (const file of readdirSync(dist)
    .filter((f) => f.endsWith('.yaml'))
    .sort()) {
    for (const doc of parseAllDocuments(readFileSync(join(dist, file), 'utf8'))) {
      const obj = doc.toJS() as { kind?: string } | null;
      if (obj?.kind === 'Deployment') found.push(obj as unknown as DeploymentLike);
    }
  }
  if (found.length !== 1) throw new Error(`${dist} holds ${found.length} Deployments, expected exactly one (the operator's)`);
  return found[0] as DeploymentLike;
}
