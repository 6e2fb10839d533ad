import { expect } from 'chai';
import { ADOPT_ANNOTATION } from '../../../operator/api/v1';
import { decide, type Observation, type Step } from '../../../operator/bucket/plan';
import type { StorageBucket } from '../../../operator/api/v1';
import { bucket, providerBucket } from '../../support/fixtures';

const ENDPOINT = 'http://provider.example';
const observe = () => bucket().withSpec({ managementPolicy: 'Observe' });

const cases: Record<string, { args: { bucket: StorageBucket; obs?: Observation }; want: Step }> = {
  'observe: the named bucket exists: mirror it, no finalizer or key first': {
    args: { bucket: observe().adopting('bucket-000001').build(), obs: { exists: true, bucket: providerBucket() } },
    want: { type: 'mirror', found: true, announce: true, recheck: 'drift' },
  },
  'observe: the named bucket does not exist: report it, never create': {
    args: { bucket: observe().adopting('bucket-000001').build(), obs: { exists: false } },
    want: { type: 'mirror', found: false, announce: false, recheck: 'drift' },
  },
  'observe: a spec smaller than the provider bucket is not enforced': {
    args: {
      bucket: observe().withSpec({ managementPolicy: 'Observe', sizeGB: 500, encrypted: true }).adopting('bucket-000001').build(),
      obs: { exists: true, bucket: providerBucket() },
    },
    want: { type: 'mirror', found: true, announce: true, recheck: 'drift' },
  },
  'observe: the named bucket is resizing: mirror it and read again at the poll interval': {
    args: { bucket: observe().adopting('bucket-000001').build(), obs: { exists: true, bucket: providerBucket({ phase: 'Resizing' }) } },
    want: { type: 'mirror', found: true, announce: false, recheck: 'poll' },
  },
  'observe: nothing names the bucket: blocked with a reason': {
    args: { bucket: observe().build(), obs: { exists: false } },
    want: {
      type: 'blocked',
      reason: 'InvalidSpec',
      message: `managementPolicy Observe needs the ${ADOPT_ANNOTATION} annotation naming the provider bucket to observe`,
    },
  },
  'observe: deleting with a finalizer from an earlier Full policy: release it, never delete': {
    args: { bucket: observe().prepared().adopting('bucket-000001').deleting().build(), obs: { exists: true, bucket: providerBucket() } },
    want: { type: 'removeFinalizer', why: 'orphan' },
  },
  'observe: deleting without a finalizer: nothing to do': {
    args: { bucket: observe().adopting('bucket-000001').deleting().build(), obs: { exists: true, bucket: providerBucket() } },
    want: { type: 'nothing' },
  },
  'full again after observe: prepare (finalizer and key) before anything else': {
    args: { bucket: bucket().adopting('bucket-000001').withStatus({ id: 'bucket-000001' }).build() },
    want: { type: 'prepare', addFinalizer: true, mintKey: true, createNow: false },
  },
  'full again after observe, prepared: the observed bucket is now managed (drift corrected)': {
    args: {
      bucket: bucket().withSpec({ sizeGB: 20 }).prepared().adopting('bucket-000001').withStatus({ id: 'bucket-000001' }).build(),
      obs: { exists: true, bucket: providerBucket() },
    },
    want: { type: 'update', id: 'bucket-000001', patch: { sizeGB: 20 }, requested: true, grows: true, adopting: false },
  },
};

describe('decide: managementPolicy Observe', () => {
  for (const [name, { args, want }] of Object.entries(cases)) {
    it(name, () => {
      expect(
        decide(args.bucket, {
          driftReported: false,
          connection: { endpoint: ENDPOINT, accountId: 'acct-1' },
          ...(args.obs ? { observation: args.obs } : {}),
        }),
      ).to.deep.equal(want);
    });
  }
});
