import { expect } from 'chai';
import type { StorageBucket } from '../../../operator/api/v1';
import { actionsFor, explore, formatReport } from '../../support/model/explore';
import { checkQuiescent, checkWrite, namesObject, type Violation } from '../../support/model/invariants';
import { ModelApiServer } from '../../support/model/api-server';
import type { PlacedBucket } from '../../support/model/provider';
import { Prng } from '../../support/model/prng';
import { runSequence } from '../../support/model/sequence';
import { shrink } from '../../support/model/shrink';

/** Fixed seeds of `npm test`; bench/model.ts runs thousands more (npm run model). */
const SEEDS = Array.from({ length: 240 }, (_, i) => i + 1);

const obj = (name: string, uid: string, extra: Partial<StorageBucket['metadata']> = {}, status?: StorageBucket['status']): StorageBucket => ({
  apiVersion: 'storage.avalonhosting.example/v1',
  kind: 'StorageBucket',
  metadata: { namespace: 'ns1', name, uid, ...extra },
  spec: { region: 'us-east-1', sizeGB: 10, providerRef: { name: 'default' } },
  ...(status ? { status } : {}),
});
const placed = (id: string, tags: Record<string, string>, endpoint = 'https://provider-a.example'): PlacedBucket => ({
  endpoint,
  account: 'alpha',
  bucket: { id, region: 'us-east-1', sizeGB: 10, encrypted: false, phase: 'Active', endpoint: `${id}.example`, tags },
});
const tagsOf = (name: string, uid?: string) => ({
  'managed-by': 'bucketoperator',
  'kubernetes-namespace': 'ns1',
  'kubernetes-name': name,
  ...(uid ? { 'kubernetes-uid': uid } : {}),
  // Tags the operator may add later are ignored.
  'kubernetes-cluster': 'c1',
});
const ready: NonNullable<StorageBucket['status']> = {
  id: 'bucket-1',
  conditions: [{ type: 'Ready', status: 'True', reason: 'Available', message: '', lastTransitionTime: '2026-01-01T00:00:00Z' }],
};

describe('model-checked sequences of user, provider and operator actions', () => {
  describe('the model itself', () => {
    it('the same seed generates the same actions and the same run', async () => {
      expect(actionsFor(7)).to.deep.equal(actionsFor(7));
      const [a, b] = [await runSequence(actionsFor(7)), await runSequence(actionsFor(7))];
      expect(a.trace).to.deep.equal(b.trace);
      expect(a.reconciles).to.equal(b.reconciles);
    });

    it('the generator is mulberry32: fixed first draws', () => {
      const rng = new Prng(1);
      expect([rng.next(), rng.next()].map((x) => x.toFixed(6))).to.deep.equal(['0.627074', '0.002736']);
    });

    it('the shrinker keeps a 1-minimal list that still fails', async () => {
      const items = Array.from({ length: 30 }, (_, i) => i);
      const fails = async (c: readonly number[]) => c.includes(3) && c.includes(17) && c.includes(29);
      expect(await shrink(items, fails)).to.deep.equal([3, 17, 29]);
    });

    const quiescent: Record<string, { args: { objects: StorageBucket[]; buckets: PlacedBucket[] }; want: Violation['invariant'][] }> = {
      'one tagged bucket for a Ready object': {
        args: { objects: [obj('b1', 'u1', {}, ready)], buckets: [placed('bucket-1', tagsOf('b1', 'u1'))] },
        want: [],
      },
      'two buckets naming one object, at two endpoints (ids repeat)': {
        args: {
          objects: [obj('b1', 'u1', {}, ready)],
          buckets: [placed('bucket-1', tagsOf('b1', 'u1')), placed('bucket-1', tagsOf('b1', 'u1'), 'https://provider-b.example')],
        },
        want: ['oneBucketPerObject', 'readyHasOneBucket'],
      },
      'a bucket of an earlier object of the same name (another uid) is not this one': {
        args: {
          objects: [obj('b1', 'u2', {}, { ...ready, id: 'bucket-2' })],
          buckets: [placed('bucket-1', tagsOf('b1', 'u1')), placed('bucket-2', tagsOf('b1', 'u2'))],
        },
        want: [],
      },
      'Ready with no bucket': { args: { objects: [obj('b1', 'u1', {}, ready)], buckets: [] }, want: ['readyHasOneBucket'] },
      'Ready but paused: the status is not being kept': {
        args: { objects: [obj('b1', 'u1', { annotations: { 'storage.avalonhosting.example/paused': 'true' } }, ready)], buckets: [] },
        want: [],
      },
    };
    for (const [name, { args, want }] of Object.entries(quiescent)) {
      it(`quiescent check: ${name}`, () => {
        expect(checkQuiescent(args.objects, args.buckets).map((v) => v.invariant)).to.deep.equal(want);
      });
    }

    it('a write to a bucket whose tags name another live object is flagged as it is made, and so is any write for an observer', () => {
      const api = new ModelApiServer();
      const other = api.userCreate('StorageBucket', obj('b2', 'ignored'));
      const before = placed('bucket-1', tagsOf('b2', other.metadata.uid)).bucket;
      const actor = { kind: 'reconcile', namespace: 'ns1', name: 'b1', uid: 'u1', observe: true } as const;
      const got = checkWrite(api, { endpoint: 'https://provider-a.example', account: 'alpha', op: 'delete', actor, id: 'bucket-1', before });
      expect(got.map((v) => v.invariant)).to.deep.equal(['observeNeverWrites', 'noForeignWrite']);
      expect(namesObject(before.tags, other)).to.equal(true);
    });
  });

  it(`${SEEDS.length} random sequences keep every invariant`, async function () {
    this.timeout(120_000);
    const report = await explore({ seeds: SEEDS });
    expect(report.sequences).to.equal(SEEDS.length);
    if (report.groups.length > 0) expect.fail(`invariants broken (see test/support/model/known-findings.md):\n${formatReport(report)}`);
  });
});
