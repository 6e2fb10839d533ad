import { expect } from 'chai';
import { pino } from 'pino';
import type { V1Secret } from '@kubernetes/client-node';
import type { BucketProviderConfig, BucketProviderConfigStatus, StorageBucket } from '../../../operator/api/v1';
import { CONFIG_IN_USE_FINALIZER } from '../../../operator/api/v1';
import { ConfigReconciler, IN_USE_REASON } from '../../../operator/bucket/config-reconciler';
import { BUCKETS_BY_CONFIG, bucketConfigIndex } from '../../../operator/bucket/indexes';
import { Reason } from '../../../operator/bucket/reasons';
import type { ObjectWriter } from '../../../operator/bucket/writer';
import { IndexedCache } from '../../../operator/runtime/cache';
import type { ReconcileContext } from '../../../operator/runtime/reconcile';
import type { KubeObject, ObjectKey } from '../../../operator/runtime/types';
import { bucket, credentialSecrets, credentialsSecret, providerConfig } from '../../support/fixtures';

/** What the reconciler wrote, in order. */
interface Writes {
  added: string[];
  removed: string[];
  status: BucketProviderConfigStatus[];
  liveLists: ObjectKey[];
}

const notUsed = async (): Promise<never> => {
  throw new Error('not expected in this test');
};

/** A writer that records the config writes and answers the live list with `liveUsers`. */
function fakeWriter(liveUsers: boolean, writes: Writes): ObjectWriter {
  return {
    addFinalizer: async <T extends KubeObject>(_kind: unknown, obj: T, finalizer: string) => {
      writes.added.push(finalizer);
      return obj;
    },
    removeFinalizer: async (_kind, _obj, finalizer) => {
      writes.removed.push(finalizer);
    },
    patchStatus: async <T extends KubeObject>(_kind: unknown, obj: T, status: Record<string, unknown>) => {
      writes.status.push(status as BucketProviderConfigStatus);
      return obj;
    },
    configHasUsers: async (key) => {
      writes.liveLists.push(key);
      return liveUsers;
    },
    patchMetadata: notUsed,
    apply: notUsed,
    create: notUsed,
    get: notUsed,
  };
}

const ctx: ReconcileContext = { logger: pino({ level: 'silent' }), reconcileID: 'r1', signal: new AbortController().signal, priority: 0 };
const key = { namespace: 'ns1', name: 'default' };
/** The API key of a Secret that did not opt in: it must never show anywhere. */
const UNLABELLED_KEY = 'unlabelled-api-key-7';

describe('ConfigReconciler', () => {
  const cases: Record<
    string,
    {
      args: { config: BucketProviderConfig; cached?: StorageBucket[]; liveUsers?: boolean; secrets?: V1Secret[]; allowLinkLocal?: boolean };
      want: {
        added?: boolean;
        removed?: boolean;
        askedLive?: boolean;
        ready?: { status: string; reason: string; message?: RegExp };
        bucketCount?: number;
        lookups?: number;
      };
    }
  > = {
    'not deleting, no finalizer yet: finalizer added': {
      args: { config: providerConfig().build() },
      want: { added: true },
    },
    'deleting, cache empty but the live list has a user: finalizer kept, InUse': {
      args: { config: providerConfig().inUse().deleting().build(), liveUsers: true },
      want: { askedLive: true, ready: { status: 'False', reason: IN_USE_REASON, message: /not yet in the operator cache/ }, bucketCount: 1 },
    },
    'deleting, cache and live list empty: finalizer removed': {
      args: { config: providerConfig().inUse().deleting().build(), liveUsers: false },
      want: { askedLive: true, removed: true },
    },
    'deleting, cache has users: finalizer kept without asking the API server': {
      args: { config: providerConfig().inUse().deleting().build(), cached: [bucket('a').build(), bucket('b').build()] },
      want: { ready: { status: 'False', reason: IN_USE_REASON, message: /waits for 2 StorageBucket/ }, bucketCount: 2 },
    },
    'deleting, a cached bucket of another config does not count': {
      args: {
        config: providerConfig().inUse().deleting().build(),
        cached: [
          bucket('a')
            .withSpec({ providerRef: { name: 'other' } })
            .build(),
        ],
        liveUsers: false,
      },
      want: { askedLive: true, removed: true },
    },
    'deleting without our finalizer: nothing to do': {
      args: { config: providerConfig().deleting().build(), liveUsers: true },
      want: {},
    },
    'in use, https and a Secret: Ready': {
      args: { config: providerConfig().inUse().build(), cached: [bucket('a').build()] },
      want: { ready: { status: 'True', reason: Reason.Available }, bucketCount: 1 },
    },
    'in use, http stored without insecure: InvalidProviderConfig naming the field': {
      args: { config: providerConfig().withSpec({ endpoint: 'http://127.0.0.1:8090' }).inUse().build() },
      want: { ready: { status: 'False', reason: Reason.InvalidProviderConfig, message: /spec\.insecure is not true/ }, bucketCount: 0 },
    },
    'in use, http with insecure true: Ready': {
      args: { config: providerConfig().withSpec({ endpoint: 'http://127.0.0.1:8090', insecure: true }).inUse().build() },
      want: { ready: { status: 'True', reason: Reason.Available }, bucketCount: 0 },
    },
    'in use, the metadata service: InvalidProviderConfig naming the flag': {
      args: { config: providerConfig().withSpec({ endpoint: 'http://169.254.169.254', insecure: true }).inUse().build() },
      want: { ready: { status: 'False', reason: Reason.InvalidProviderConfig, message: /--allow-link-local-endpoints/ }, bucketCount: 0 },
    },
    'in use, link-local allowed by the flag: Ready': {
      args: { config: providerConfig().withSpec({ endpoint: 'https://169.254.10.1' }).inUse().build(), allowLinkLocal: true },
      want: { ready: { status: 'True', reason: Reason.Available }, bucketCount: 0 },
    },
    'in use, an endpoint problem is reported before a missing Secret': {
      args: { config: providerConfig().withSpec({ endpoint: 'http://127.0.0.1:8090' }).inUse().build(), secrets: [] },
      want: { ready: { status: 'False', reason: Reason.InvalidProviderConfig }, bucketCount: 0 },
    },
    'in use, Secret missing: SecretNotFound': {
      args: { config: providerConfig().inUse().build(), secrets: [] },
      want: { ready: { status: 'False', reason: Reason.SecretNotFound, message: /^Secret ns1\/key not found$/ }, bucketCount: 0, lookups: 1 },
    },
    'in use, Secret without the credentials label: SecretNotLabeled with the exact command': {
      args: { config: providerConfig().inUse().build(), secrets: [credentialsSecret({ apiKey: UNLABELLED_KEY, labelled: false })] },
      want: {
        ready: {
          status: 'False',
          reason: Reason.SecretNotLabeled,
          message:
            /^Secret ns1\/key is not labelled as provider credentials; to use it run: kubectl label secret -n ns1 key storage\.avalonhosting\.example\/secret-type=provider-credentials$/,
        },
        bucketCount: 0,
        lookups: 1,
      },
    },
    'in use, labelled Secret in the cache: Ready without asking the API': {
      args: { config: providerConfig().inUse().build(), secrets: [credentialsSecret()] },
      want: { ready: { status: 'True', reason: Reason.Available }, bucketCount: 0, lookups: 0 },
    },
  };

  for (const [name, tc] of Object.entries(cases)) {
    it(name, async () => {
      const configs = new IndexedCache<BucketProviderConfig>();
      configs.upsert(tc.args.config);
      const buckets = new IndexedCache<StorageBucket>();
      buckets.addIndex(BUCKETS_BY_CONFIG, bucketConfigIndex);
      for (const b of tc.args.cached ?? []) buckets.upsert(b);
      const secrets = credentialSecrets(tc.args.secrets ?? [credentialsSecret({ apiKey: 'k' })]);
      const writes: Writes = { added: [], removed: [], status: [], liveLists: [] };
      const reconciler = new ConfigReconciler({
        configs,
        buckets,
        secrets,
        writer: fakeWriter(tc.args.liveUsers ?? false, writes),
        allowLinkLocalEndpoints: tc.args.allowLinkLocal,
        now: () => new Date('2026-01-01T00:00:00Z'),
      });

      await reconciler.reconcile(key, ctx);

      expect(writes.added, 'finalizer added').to.deep.equal(tc.want.added ? [CONFIG_IN_USE_FINALIZER] : []);
      expect(writes.removed, 'finalizer removed').to.deep.equal(tc.want.removed ? [CONFIG_IN_USE_FINALIZER] : []);
      expect(writes.liveLists, 'asked the API server').to.deep.equal(tc.want.askedLive ? [key] : []);
      if (!tc.want.ready) {
        expect(writes.status, 'status written').to.deep.equal([]);
        return;
      }
      expect(writes.status).to.have.length(1);
      const status = writes.status[0]!;
      const ready = status.conditions?.find((c) => c.type === 'Ready');
      expect(ready).to.include({ status: tc.want.ready.status, reason: tc.want.ready.reason });
      if (tc.want.ready.message) expect(ready?.message).to.match(tc.want.ready.message);
      expect(status.bucketCount).to.equal(tc.want.bucketCount);
      expect(JSON.stringify(status)).to.not.include(UNLABELLED_KEY);
      if (tc.want.lookups !== undefined) expect(secrets.lookups, 'GETs of the Secret').to.have.length(tc.want.lookups);
    });
  }
});
