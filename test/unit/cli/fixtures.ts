/**
 * Builders of the snapshots the plugin's pure functions judge: a Ready bucket with its config,
 * labelled credential Secret, owned Secret and Service, changed one fact at a time.
 */
import type { V1Secret } from '@kubernetes/client-node';
import type { BucketProviderConfig, Condition, StorageBucket } from '../../../operator/api/v1';
import { CREDENTIALS_SECRET_LABEL, CREDENTIALS_SECRET_TYPE, PAUSED_ANNOTATION } from '../../../operator/api/v1';
import { credentialFacts, ownedFacts, type Snapshot } from '../../../cli/snapshot';

export const NOW = new Date('2026-12-02T03:00:00Z');
export const CREATED = '2026-12-02T02:55:00Z';
/** The API key in the credential Secret: it must never appear in any output. */
export const API_KEY = 'sk-live-very-secret-value';
export const UID = 'uid-logs';

function condition(type: string, status: Condition['status'], reason: string, message = ''): Condition {
  return { type, status, reason, message, lastTransitionTime: CREATED, observedGeneration: 1 };
}

/** A StorageBucket team-a/logs, Ready with provider bucket bkt-1. */
export function readyBucket(): StorageBucket {
  return {
    apiVersion: 'storage.avalonhosting.example/v1',
    kind: 'StorageBucket',
    metadata: { name: 'logs', namespace: 'team-a', uid: UID, generation: 1, creationTimestamp: CREATED as unknown as Date },
    spec: { region: 'eu-west-1', sizeGB: 50, providerRef: { name: 'default' }, deletionPolicy: 'Delete', managementPolicy: 'Full', encrypted: false },
    status: {
      id: 'bkt-1',
      phase: 'Active',
      sizeGB: 50,
      region: 'eu-west-1',
      endpoint: 'https://bkt-1.storage.example.com',
      observedGeneration: 1,
      conditions: [condition('Ready', 'True', 'Available'), condition('Synced', 'True', 'ReconcileSuccess')],
    },
  };
}

/** The bucket waiting with Ready=False `reason` (no provider bucket yet). */
export function waitingBucket(reason: string, message = `${reason} message`, synced: Condition['status'] = 'False'): StorageBucket {
  const b = readyBucket();
  b.status = {
    phase: 'Pending',
    observedGeneration: 1,
    conditions: [condition('Ready', 'False', reason, message), condition('Synced', synced, synced === 'True' ? 'ReconcileSuccess' : reason, message)],
  };
  return b;
}

/** The bucket with the paused annotation, Synced=False ReconcilePaused. */
export function pausedBucket(): StorageBucket {
  const b = readyBucket();
  b.metadata.annotations = { [PAUSED_ANNOTATION]: 'true' };
  b.status!.conditions = [condition('Ready', 'True', 'Available'), condition('Synced', 'False', 'ReconcilePaused', 'reconciliation paused')];
  return b;
}

export function config(ready: Condition = condition('Ready', 'True', 'Available', 'provider accepted the credentials')): BucketProviderConfig {
  return {
    metadata: { name: 'default', namespace: 'team-a', generation: 1, creationTimestamp: CREATED as unknown as Date },
    spec: { endpoint: 'https://storage.example.com', secretRef: { name: 'provider-key', key: 'apiKey' } },
    status: { observedGeneration: 1, conditions: [ready] },
  };
}

export function configWith(status: Condition['status'], reason: string, message: string): BucketProviderConfig {
  return config(condition('Ready', status, reason, message));
}

export function credentialSecret(opts: { labelled?: boolean; data?: Record<string, string> } = {}): V1Secret {
  return {
    metadata: {
      name: 'provider-key',
      namespace: 'team-a',
      creationTimestamp: CREATED as unknown as Date,
      ...(opts.labelled === false ? {} : { labels: { [CREDENTIALS_SECRET_LABEL]: CREDENTIALS_SECRET_TYPE } }),
    },
    data: opts.data ?? { apiKey: Buffer.from(API_KEY).toString('base64') },
  };
}

function controlled(kind: 'Secret' | 'Service', name: string, bucket: StorageBucket) {
  return ownedFacts(kind, name, bucket, {
    metadata: {
      name,
      creationTimestamp: CREATED as unknown as Date,
      ownerReferences: [{ apiVersion: 'v1', kind: 'StorageBucket', name: 'logs', uid: UID, controller: true }],
    },
  });
}

/** A snapshot of `bucket` (Ready by default) with everything around it in order; `over` replaces parts. */
export function snapshot(over: Partial<Snapshot> & { secret?: V1Secret | undefined | 'forbidden' } = {}): Snapshot {
  const bucket = over.bucket ?? readyBucket();
  const cfg = over.config ?? { state: 'found', object: config() };
  const secret = 'secret' in over ? over.secret : credentialSecret();
  const base: Snapshot = {
    now: NOW,
    bucket,
    config: cfg,
    ...(cfg.state === 'found' ? { credentials: credentialFacts(cfg.object, secret) } : {}),
    accessSecret: controlled('Secret', 'logs-access', bucket),
    service: controlled('Service', 'logs', bucket),
    events: [],
  };
  const { secret: _secret, ...rest } = over;
  return { ...base, ...rest };
}
