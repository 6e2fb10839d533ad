import { expect } from 'chai';
import { pino } from 'pino';
import type { V1Secret } from '@kubernetes/client-node';
import type { BucketProviderConfig } from '../../../operator/api/v1';
import { SECRET_IN_USE_FINALIZER } from '../../../operator/api/v1';
import { CONFIGS_BY_SECRET, configSecretIndex } from '../../../operator/bucket/indexes';
import { SecretProtectionReconciler, protectionStep, type ProtectionStep } from '../../../operator/bucket/secret-protection';
import { IndexedCache } from '../../../operator/runtime/cache';
import type { ReconcileContext } from '../../../operator/runtime/reconcile';
import type { KubeObject } from '../../../operator/runtime/types';
import { credentialSecrets, credentialsSecret, providerConfig } from '../../support/fixtures';

const ctx: ReconcileContext = { logger: pino({ level: 'silent' }), reconcileID: 'r1', signal: new AbortController().signal, priority: 0 };
const key = { namespace: 'ns1', name: 'key' };
const protectedBy = [SECRET_IN_USE_FINALIZER];
const deleting = (s: V1Secret): V1Secret => ({ ...s, metadata: { ...s.metadata, deletionTimestamp: new Date('2026-01-01T00:00:00Z') } });

describe('protectionStep', () => {
  const cases: Record<string, { args: { secret: V1Secret; referenced: boolean }; want: ProtectionStep }> = {
    'labelled and referenced: protect': { args: { secret: credentialsSecret(), referenced: true }, want: 'add' },
    'labelled, referenced, protected: nothing': { args: { secret: credentialsSecret({ finalizers: protectedBy }), referenced: true }, want: 'none' },
    'labelled, referenced, being deleted: no new finalizer': { args: { secret: deleting(credentialsSecret()), referenced: true }, want: 'none' },
    'labelled, protected, no longer referenced: release': {
      args: { secret: credentialsSecret({ finalizers: protectedBy }), referenced: false },
      want: 'remove',
    },
    'referenced but not labelled: never protected': { args: { secret: credentialsSecret({ labelled: false }), referenced: true }, want: 'none' },
    // The operator will not read the Secret any more, so it does not hold it either.
    'label removed from a protected, referenced Secret: release': {
      args: { secret: credentialsSecret({ labelled: false, finalizers: protectedBy }), referenced: true },
      want: 'remove',
    },
  };
  for (const [name, tc] of Object.entries(cases)) {
    it(name, () => expect(protectionStep(tc.args.secret, tc.args.referenced)).to.equal(tc.want));
  }
});

describe('SecretProtectionReconciler', () => {
  const cases: Record<
    string,
    { args: { secrets: V1Secret[]; referenced: boolean }; want: { added: number; removed: number; lookups: number; keptData: boolean } }
  > = {
    'labelled and referenced, from the cache: protected without a GET': {
      args: { secrets: [credentialsSecret()], referenced: true },
      want: { added: 1, removed: 0, lookups: 0, keptData: true },
    },
    'label removed (gone from the cache): one GET, finalizer released, no data handed on': {
      args: { secrets: [credentialsSecret({ labelled: false, finalizers: protectedBy })], referenced: true },
      want: { added: 0, removed: 1, lookups: 1, keptData: false },
    },
    'unlabelled and referenced: left alone': {
      args: { secrets: [credentialsSecret({ labelled: false })], referenced: true },
      want: { added: 0, removed: 0, lookups: 1, keptData: false },
    },
    'labelled, protected, config gone: released': {
      args: { secrets: [credentialsSecret({ finalizers: protectedBy })], referenced: false },
      want: { added: 0, removed: 1, lookups: 0, keptData: true },
    },
    'Secret gone: nothing': { args: { secrets: [], referenced: true }, want: { added: 0, removed: 0, lookups: 1, keptData: false } },
  };
  for (const [name, tc] of Object.entries(cases)) {
    it(name, async () => {
      const configs = new IndexedCache<BucketProviderConfig>();
      configs.addIndex(CONFIGS_BY_SECRET, configSecretIndex);
      if (tc.args.referenced) configs.upsert(providerConfig().inUse().build());
      const secrets = credentialSecrets(tc.args.secrets);
      const written: { added: KubeObject[]; removed: KubeObject[] } = { added: [], removed: [] };
      const reconciler = new SecretProtectionReconciler({
        configs,
        secrets,
        writer: {
          addFinalizer: async <T extends KubeObject>(_kind: unknown, obj: T) => {
            written.added.push(obj);
            return obj;
          },
          removeFinalizer: async (_kind, obj) => {
            written.removed.push(obj);
          },
        },
      });

      await reconciler.reconcile(key, ctx);

      expect(written.added, 'finalizer added').to.have.length(tc.want.added);
      expect(written.removed, 'finalizer removed').to.have.length(tc.want.removed);
      expect(secrets.lookups, 'GETs').to.have.length(tc.want.lookups);
      // The writer only needs metadata; an unlabelled Secret's data never leaves the lookup.
      for (const obj of [...written.added, ...written.removed]) expect('data' in obj, 'data handed to the writer').to.equal(tc.want.keptData);
    });
  }
});
