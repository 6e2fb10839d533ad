/**
 * The README's five-minute walk, run as a reader runs it: every shell block marked
 * `<!-- walkthrough -->`, in order, in bash with `set -euo pipefail`, against the real control
 * plane and the operator under its ServiceAccount, with the kubectl the control plane was built
 * with and the compiled `kubectl bucket` plugin on PATH. The cluster is first brought to what
 * `npm start` leaves (test/support/demo.ts): a namespace `demo` with a labelled credential Secret,
 * the BucketProviderConfig `default` and the bucket `demo-bucket`. A renamed flag, command,
 * field or column in the walk fails here.
 */
import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { walkthroughBlocks } from '../../scripts/docs/walkthrough';
import { eventually } from '../support/eventually';
import { REPO } from '../support/image';
import { apply, bucketManifest, providerManifests } from '../support/kube';
import { buildPlugin } from '../support/plugin';
import { useStack, type Stack } from '../support/stack';
import { sharedControlPlane } from './setup';

const run = promisify(execFile);

/** What `npm start` names its sample objects (test/support/demo.ts). */
const DEMO = { namespace: 'demo', config: 'default', bucket: 'demo-bucket' } as const;

describe('the README walkthrough (its shell blocks, against the real control plane)', function () {
  this.timeout(120_000);
  let built: Promise<string> | undefined;
  let tmp = '';
  let env: NodeJS.ProcessEnv = {};
  // Registered before the stack's hooks: the plugin's build overlaps the stack's start, and
  // the namespace goes while the operator still runs to release its buckets' finalizers.
  before(() => {
    built = buildPlugin();
    built.catch(() => undefined); // awaited below; this only keeps an early failure from going unhandled
  });
  after(async function () {
    this.timeout(60_000);
    if (tmp) rmSync(tmp, { recursive: true, force: true });
    await stack.cp.kubectl(['delete', 'namespace', DEMO.namespace, '--ignore-not-found', '--timeout=45s']);
  });
  const stack: Stack = useStack(sharedControlPlane, { name: 'walkthrough', operator: { pollInterval: '1s' } });

  before(async function () {
    this.timeout(180_000);
    const { cp, provider } = stack;
    await apply(cp, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: DEMO.namespace } });
    for (const m of providerManifests(DEMO.namespace, provider.url, provider.apiKey, DEMO.config)) await apply(cp, m);
    await apply(cp, bucketManifest(DEMO.namespace, DEMO.bucket, { sizeGB: 10, providerRef: { name: DEMO.config } }));
    tmp = mkdtempSync(join(tmpdir(), 'bucketoperator-walkthrough-'));
    env = {
      PATH: [await built!, dirname(cp.binaries.kubectl), dirname(process.execPath), '/usr/bin', '/bin'].join(':'),
      HOME: tmp,
      KUBECONFIG: cp.kubeconfigPath,
      LANG: 'C.UTF-8',
    };
  });

  it('runs every marked block as written, in order, and leaves the provider as the walk says', async () => {
    const blocks = walkthroughBlocks(readFileSync(join(REPO, 'README.md'), 'utf8'));
    expect(blocks.length, 'README.md marks no walkthrough block').to.be.greaterThan(0);
    for (const block of blocks) {
      const script = `set -euo pipefail\n${block.script}\n`;
      let outcome: { code: number; output: string };
      try {
        const { stdout, stderr } = await run('bash', ['--noprofile', '--norc', '-c', script], { env, cwd: tmp, timeout: 90_000 });
        outcome = { code: 0, output: stdout + stderr };
      } catch (err) {
        const e = err as { code?: number; stdout?: string; stderr?: string };
        if (typeof e.code !== 'number') throw err;
        outcome = { code: e.code, output: `${e.stdout ?? ''}${e.stderr ?? ''}` };
      }
      expect(outcome.code, `README.md line ${block.line} failed:\n${block.script}\n--- its output:\n${outcome.output}`).to.equal(0);
    }
    // The walk ends with its own bucket deleted: gone at the provider too, the demo's still there.
    const left = await eventually(
      async () => {
        const names = (await stack.provider.buckets(DEMO.namespace)).map((b) => b.tags['kubernetes-name']);
        return names.includes('logs') ? undefined : names;
      },
      { description: "the walk's bucket to be gone at the provider", timeoutMs: 20_000, intervalMs: 250 },
    );
    expect(left).to.deep.equal([DEMO.bucket]);
  });
});
