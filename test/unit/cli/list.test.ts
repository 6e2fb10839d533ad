import { expect } from 'chai';
import { parseArgs } from '../../../cli/args';
import { listAll } from '../../../cli/commands/list';
import { ExitCode } from '../../../cli/exit-codes';
import { GROUP } from '../../../operator/api/v1/group';
import { PAUSED_ANNOTATION } from '../../../operator/api/v1/well-known';
import type { KubeObject } from '../../../operator/runtime/types';
import { NOW } from './fixtures';
import { fakeKube, outcome, recorder, storedObjects } from './fake-kube';

/** team-a/logs Ready; team-b/data waiting for its credential Secret; team-c/old paused. */
function threeNamespaces(): KubeObject[] {
  const waiting = storedObjects({ namespace: 'team-b', name: 'data' }).filter((o) => !(o.kind === 'Secret' && o.metadata?.name === 'provider-key'));
  const [paused, ...around] = storedObjects({ namespace: 'team-c', name: 'old' });
  paused!.metadata = { ...paused!.metadata, annotations: { [PAUSED_ANNOTATION]: 'true' } };
  return [...storedObjects(), ...waiting, paused!, ...around];
}

const run = async (argv: string[], objects: KubeObject[], extra: { webhookDown?: boolean; versions?: string[] } = {}) => {
  const kube = fakeKube({ versions: extra.versions ?? ['v1'], objects, ...(extra.webhookDown ? { webhookDown: true } : {}) });
  const term = recorder();
  const got = await outcome(() => listAll(kube, parseArgs(argv), term, () => NOW));
  return { ...got, term, kube };
};

describe('kubectl bucket: trace -A and why -A', () => {
  it('trace -A: one line per bucket, sorted, with the root cause; the exit code is the worst of them', async () => {
    const { code, term } = await run(['trace', '-A'], threeNamespaces());
    expect(code).to.equal(ExitCode.STALLED);
    const lines = term.stdout.trimEnd().split('\n');
    expect(lines[0]).to.match(/^NAMESPACE\s+NAME\s+READY\s+SYNCED\s+REASON\s+AGE\s+ROOT CAUSE$/);
    expect(lines.slice(1).map((l) => l.split(/\s+/).slice(0, 2).join('/'))).to.deep.equal(['team-a/logs', 'team-b/data', 'team-c/old']);
    expect(lines[1]).to.match(/^team-a\s+logs\s+True\s+True\s+Available\s+5m\s+-$/);
    expect(lines[2]).to.match(/Secret\/provider-key \(credentials\): SecretNotFound: Secret team-b\/provider-key not found$/);
    expect(lines[3]).to.match(/StorageBucket\/old.*\[paused\]$/);
  });

  it('why -A: the paragraph of each bucket, one a line', async () => {
    const { code, term } = await run(['why', '-A'], [...storedObjects(), ...storedObjects({ namespace: 'team-b', name: 'data' })]);
    expect(code).to.equal(ExitCode.OK);
    expect(term.stdout).to.equal(
      'StorageBucket team-a/logs is Ready: provider bucket bkt-1 is Active (50 GB, eu-west-1).\n' +
        'StorageBucket team-b/data is Ready: provider bucket bkt-1 is Active (50 GB, eu-west-1).\n',
    );
  });

  it('-o json: a list of the documents trace -o json prints', async () => {
    const { code, term } = await run(['trace', '-A', '-o', 'json'], threeNamespaces());
    const doc = JSON.parse(term.stdout) as { kind: string; items: { kind: string; namespace: string; name: string; class: string }[] };
    expect([code, doc.kind]).to.deep.equal([ExitCode.STALLED, 'BucketTraceList']);
    expect(doc.items.map((i) => [i.kind, i.namespace, i.name, i.class])).to.deep.equal([
      ['BucketTrace', 'team-a', 'logs', 'ready'],
      ['BucketTrace', 'team-b', 'data', 'progressing'],
      ['BucketTrace', 'team-c', 'old', 'paused'],
    ]);
  });

  it('no StorageBucket anywhere: says so on stderr, exit 0', async () => {
    const { code, term } = await run(['trace', '-A'], []);
    expect([code, term.stdout, term.stderr]).to.deep.equal([ExitCode.OK, '', 'No StorageBuckets found in any namespace.\n']);
  });

  it('reads with lists, not a round of GETs per bucket: configs, owned Secrets and Services, Events once each; a shared credential Secret once', async () => {
    const many = Array.from({ length: 5 }, (_, i) => storedObjects({ name: `b${i}` })).flat();
    // One config and one credential Secret in the namespace, shared by all five buckets.
    const objects = many.filter((o, i) => many.findIndex((x) => x.kind === o.kind && x.metadata?.name === o.metadata?.name) === i);
    const { code, kube } = await run(['trace', '-A'], objects);
    expect(code).to.equal(ExitCode.OK);
    expect(kube.requests.filter((r) => !r.startsWith('GET /apis'))).to.have.members([
      `LIST ${GROUP}/v1 storagebuckets *`,
      `LIST ${GROUP}/v1 bucketproviderconfigs *`,
      `LIST v1 secrets * -l ${GROUP}/managed-by=bucketoperator`,
      `LIST v1 services * -l ${GROUP}/managed-by=bucketoperator`,
      'LIST events.k8s.io/v1 events *',
      'GET v1 secrets team-a/provider-key',
    ]);
  });

  it('objects stored in both versions with the webhook down: no version serves the list, and the error names the webhook', async () => {
    const objects = [...storedObjects({ bucket: 'v1' }), ...storedObjects({ namespace: 'team-b', bucket: 'v2' })];
    const { code, error } = await run(['trace', '-A'], objects, { versions: ['v2', 'v1'], webhookDown: true });
    expect(code).to.equal(ExitCode.ERROR);
    expect(error).to.match(
      new RegExp(
        `^cannot read storagebuckets in all namespaces in any served version \\(v2, v1\\): the conversion webhook of storagebuckets\\.${GROUP.replace(/\./g, '\\.')} \\(the operator's\\) failed`,
      ),
    );
    expect(error).to.include('The API server said: conversion webhook for storage.avalonhosting.example/v2, Kind=StorageBucket failed');
  });
});
