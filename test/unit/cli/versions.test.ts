import { expect } from 'chai';
import { parseArgs } from '../../../cli/args';
import { edit } from '../../../cli/commands/edit';
import { trace, why } from '../../../cli/commands/trace';
import { ExitCode } from '../../../cli/exit-codes';
import { GROUP } from '../../../operator/api/v1/group';
import { fakeKube, outcome, recorder, storedObjects, type FakeWorld } from './fake-kube';

const READY = 'StorageBucket team-a/logs is Ready: provider bucket bkt-1 is Active (50 GB, eu-west-1).';
const get = (v: string) => `GET ${GROUP}/${v} storagebuckets team-a/logs`;

const cases: Record<string, { world: FakeWorld; want: { code: ExitCode; reads: string[] } }> = {
  'v1 alone is served: read as v1': {
    world: { versions: ['v1'], objects: storedObjects() },
    want: { code: ExitCode.OK, reads: [get('v1')] },
  },
  'v2 preferred and the webhook up: read as v2 (the server converts) and judged as v1': {
    world: { versions: ['v2', 'v1'], objects: storedObjects() },
    want: { code: ExitCode.OK, reads: [get('v2')] },
  },
  'v2 stored and the webhook down: read as v2, converted in process': {
    world: { versions: ['v2', 'v1'], objects: storedObjects({ bucket: 'v2', config: 'v2' }), webhookDown: true },
    want: { code: ExitCode.OK, reads: [get('v2')] },
  },
  'v1 stored, v2 preferred and the webhook down: v2 refused, read again as v1': {
    world: { versions: ['v2', 'v1'], objects: storedObjects({ bucket: 'v1', config: 'v1' }), webhookDown: true },
    want: { code: ExitCode.OK, reads: [get('v2'), get('v1')] },
  },
};

describe('kubectl bucket: reads in the served preferred version', () => {
  for (const [name, { world, want }] of Object.entries(cases)) {
    it(name, async () => {
      const kube = fakeKube(world);
      const term = recorder();
      expect(await outcome(() => why(kube, parseArgs(['why', 'logs', '-n', 'team-a']), term))).to.deep.equal({ code: want.code });
      expect(term.stdout.trim()).to.equal(READY);
      expect(kube.requests.filter((r) => r.includes('storagebuckets team-a/logs'))).to.deep.equal(want.reads);
    });
  }

  it('trace reads the config in its served version too, and shows it Ready', async () => {
    const kube = fakeKube({ versions: ['v2', 'v1'], objects: storedObjects({ bucket: 'v2', config: 'v2' }), webhookDown: true });
    const term = recorder();
    expect(
      await outcome(() => trace(kube, parseArgs(['trace', 'logs', '-n', 'team-a', '-o', 'json']), term, new AbortController().signal)),
    ).to.deep.equal({
      code: ExitCode.OK,
    });
    const doc = JSON.parse(term.stdout) as { class: string; tree: { children: { kind: string; ready: string }[] } };
    expect(doc.class).to.equal('ready');
    expect(doc.tree.children.find((c) => c.kind === 'BucketProviderConfig')?.ready).to.equal('True');
    expect(kube.requests).to.include(`GET ${GROUP}/v2 bucketproviderconfigs team-a/default`);
  });

  it('an edit goes to the version the bucket was read in, which needs no webhook', async () => {
    const kube = fakeKube({ versions: ['v2', 'v1'], objects: storedObjects({ bucket: 'v2' }), webhookDown: true });
    const term = recorder();
    expect(await outcome(() => edit(kube, parseArgs(['pause', 'logs', '-n', 'team-a']), term, new AbortController().signal))).to.deep.equal({
      code: ExitCode.OK,
    });
    expect(kube.patches.map((p) => [p.kind.version, p.patch])).to.deep.equal([
      ['v2', { metadata: { annotations: { [`${GROUP}/paused`]: 'true' } } }],
    ]);
    expect(term.stdout).to.equal('storagebucket team-a/logs paused\n');
  });

  it('a missing bucket is still exit 3, asked once', async () => {
    const kube = fakeKube({ versions: ['v2', 'v1'], objects: [], webhookDown: true });
    const got = await outcome(() => why(kube, parseArgs(['why', 'absent', '-n', 'team-a']), recorder()));
    expect(got).to.deep.equal({
      code: ExitCode.NOT_FOUND,
      error: 'Error from server (NotFound): storagebucket "absent" not found in namespace "team-a"',
    });
    expect(kube.requests.filter((r) => r.includes('storagebuckets'))).to.deep.equal([`GET ${GROUP}/v2 storagebuckets team-a/absent`]);
  });
});
