/**
 * One model world: the API server, two provider endpoints with two accounts, and the operator
 * process as production wires it (operator/bucket/setup.ts): the real {@link BucketReconciler}
 * with the real `connect`, the real {@link DriftScanner}, label-selected caches filled from
 * the API server before every reconcile, an injected clock and key generator. A restart
 * throws the process away (reconciler, released uids, drift findings) and keeps the world.
 */
import type { V1Secret, V1Service } from '@kubernetes/client-node';
import pino from 'pino';
import type { BucketProviderConfig, StorageBucket } from '../../../operator/api/v1';
import {
  CONFIG_IN_USE_FINALIZER,
  CREDENTIALS_SECRET_LABEL,
  CREDENTIALS_SECRET_TYPE,
  MANAGED_BY_LABEL,
  MANAGED_BY_VALUE,
} from '../../../operator/api/v1';
import { connect, withoutUnlabelledData, type CredentialSecrets } from '../../../operator/bucket/connect';
import { DriftReports } from '../../../operator/bucket/drift';
import { DriftScanner } from '../../../operator/bucket/drift-scanner';
import { PROVIDER_CONFIG, SECRET, SERVICE, STORAGE_BUCKET } from '../../../operator/bucket/kinds';
import { condenseSecretData, type OwnedSecret } from '../../../operator/bucket/owned';
import { BucketReconciler } from '../../../operator/bucket/reconciler';
import { ReleasedObjects } from '../../../operator/bucket/released';
import type { EventSink } from '../../../operator/bucket/writer';
import { ProviderClients, type ProviderClient } from '../../../operator/provider-client';
import { IndexedCache, KeyChannel, type Action, type KubeObject, type ObjectKey, type ReconcileContext } from '../../../operator/runtime';
import { ModelApiServer, type ApiServerState } from './api-server';
import { ModelProviders } from './provider';

/** The cluster identity the modelled operator runs with. */
export const MODEL_CLUSTER = 'model-cluster';
/** The identity of another cluster whose operator shares the model's provider accounts. */
export const OTHER_CLUSTER = 'other-cluster';
/** The two provider endpoints of the model. */
export const ENDPOINTS = ['https://provider-a.example', 'https://provider-b.example'] as const;
/** Credential Secrets every namespace holds, by name, with the account their key belongs to. */
export const CREDENTIALS = { 'cred-alpha': { key: 'key-alpha', account: 'alpha' }, 'cred-beta': { key: 'key-beta', account: 'beta' } } as const;
/** Name of a credential Secret. */
export type CredentialName = keyof typeof CREDENTIALS;
/** The namespaces of the model. */
export const NAMESPACES = ['ns1', 'ns2'] as const;
/** The config every StorageBucket of the model names. */
export const CONFIG_NAME = 'default';
/** Poll interval the reconciler runs with; a runner round advances the clock by it. */
export const POLL_MS = 3000;
/** Drift interval; a drift tick advances the clock by it. */
export const DRIFT_MS = 60_000;

const silent = pino({ level: 'silent' });
const noEvents: EventSink = { event: () => undefined };

/** ProviderClients whose clients are the model's in-process ones. */
class ModelClients extends ProviderClients {
  constructor(private readonly providers: ModelProviders) {
    super({});
  }
  override client(endpoint: string, apiKey: string): ProviderClient {
    return this.providers.client(endpoint, apiKey);
  }
}

function cacheOf<T extends KubeObject>(
  objects: readonly KubeObject[],
  keep: (o: KubeObject) => boolean = () => true,
  transform?: (o: KubeObject) => KubeObject,
): IndexedCache<T> {
  const c = new IndexedCache<T>();
  for (const o of objects) if (keep(o)) c.upsert((transform ? transform(o) : o) as T);
  return c;
}

const labelled = (label: string, value: string) => (o: KubeObject) => o.metadata?.labels?.[label] === value;

/** The in-memory state of one operator process. */
interface Process {
  readonly released: ReleasedObjects;
  readonly reports: DriftReports;
}

/** A {@link ModelWorld} as plain data (see {@link ModelWorld.snapshot}). */
export interface WorldSnapshot {
  readonly clock: number;
  readonly keys: number;
  readonly api: ApiServerState;
  readonly providers: ReturnType<ModelProviders['dump']>;
}

/** A world the model drives: cluster, providers and one operator process at a time. */
export class ModelWorld {
  /** Model time, epoch ms. */
  clock = Date.UTC(2026, 5, 1);
  readonly api = new ModelApiServer();
  readonly providers = new ModelProviders({
    endpoints: ENDPOINTS,
    keys: Object.fromEntries(Object.values(CREDENTIALS).map((c) => [c.key, c.account])),
    now: () => this.clock,
  });
  private readonly clients = new ModelClients(this.providers);
  private process: Process = this.newProcess();
  private keys = 0;
  private reconciles = 0;
  private readonly ctl = new AbortController();
  /** Reconciles run so far. */
  get reconcileCount(): number {
    return this.reconciles;
  }

  constructor() {
    this.api.now = () => new Date(this.clock);
    for (const namespace of NAMESPACES) {
      for (const [name, c] of Object.entries(CREDENTIALS)) {
        this.api.userCreate<V1Secret>('Secret', {
          apiVersion: 'v1',
          kind: 'Secret',
          metadata: { name, namespace, labels: { [CREDENTIALS_SECRET_LABEL]: CREDENTIALS_SECRET_TYPE } },
          data: { apiKey: Buffer.from(c.key).toString('base64') },
        });
      }
      // As the config controller leaves it: marked in use, so buckets may be created through it.
      const config: BucketProviderConfig = {
        apiVersion: 'storage.avalonhosting.example/v1',
        kind: 'BucketProviderConfig',
        metadata: { name: CONFIG_NAME, namespace, finalizers: [CONFIG_IN_USE_FINALIZER] },
        spec: { endpoint: ENDPOINTS[0], secretRef: { name: 'cred-alpha', key: 'apiKey' } },
      };
      this.api.userCreate('BucketProviderConfig', config);
    }
    this.api.drainEvents();
  }

  private newProcess(): Process {
    return { released: new ReleasedObjects(300_000, () => this.clock), reports: new DriftReports() };
  }

  /**
   * The world as plain data: cluster, providers, clock and key counter. The operator's memory
   * is not kept: a world loaded from it starts a new operator process.
   */
  snapshot(): WorldSnapshot {
    return { clock: this.clock, keys: this.keys, api: this.api.dump(), providers: this.providers.dump() };
  }

  /** A world in the state `s` describes, with a newly started operator. */
  static load(s: WorldSnapshot): ModelWorld {
    const w = new ModelWorld();
    w.clock = s.clock;
    w.keys = s.keys;
    w.api.load(s.api);
    w.providers.load(s.providers);
    return w;
  }

  /** Kills the operator and starts a new one: nothing in memory survives. */
  restart(): void {
    this.process = this.newProcess();
  }

  /** The caches as a fresh informer would hold them now. */
  private caches() {
    const buckets = cacheOf<StorageBucket>(this.api.list('StorageBucket'));
    const configs = cacheOf<BucketProviderConfig>(this.api.list('BucketProviderConfig'));
    const allSecrets = this.api.list<V1Secret>('Secret');
    const credentials = cacheOf<V1Secret>(allSecrets, labelled(CREDENTIALS_SECRET_LABEL, CREDENTIALS_SECRET_TYPE));
    const owned = labelled(MANAGED_BY_LABEL, MANAGED_BY_VALUE);
    const ownedSecrets = cacheOf<OwnedSecret>(allSecrets, owned, (o) => condenseSecretData(structuredClone(o)));
    const services = cacheOf<V1Service>(this.api.list('Service'), owned);
    const secrets: CredentialSecrets = {
      cache: credentials,
      waitForSync: async () => undefined,
      lookup: async (key) => withoutUnlabelledData(this.api.read<V1Secret>('Secret', key)),
    };
    return { buckets, configs, secrets, ownedSecrets, services };
  }

  /**
   * Runs one reconcile of `key` with the current process; an Error is what the runner would
   * get. `lagging`: the cache still shows the bucket as it was before its latest write (or,
   * once it is gone, as it last was), as an informer behind the API server does.
   */
  async reconcile(key: ObjectKey, opts: { lagging?: boolean } = {}): Promise<Action | Error> {
    const c = this.caches();
    const behind = opts.lagging ? this.api.lagging<StorageBucket>(KINDS.bucket, key) : undefined;
    if (behind) c.buckets.upsert(behind);
    const live = c.buckets.get(key);
    this.reconciles++;
    const reconciler = new BucketReconciler({
      buckets: c.buckets,
      clusterId: MODEL_CLUSTER,
      ownedSecrets: c.ownedSecrets,
      services: c.services,
      connect: (bucket, signal) => connect({ configs: c.configs, secrets: c.secrets, clients: this.clients }, bucket, signal),
      writer: this.api,
      events: noEvents,
      pollIntervalMs: POLL_MS,
      driftIntervalMs: DRIFT_MS,
      driftReports: this.process.reports,
      released: this.process.released,
      now: () => new Date(this.clock),
      newKey: () => `idem-${++this.keys}`,
      jitter: (ms) => ms,
    });
    const ctx: ReconcileContext = { logger: silent, reconcileID: `r${this.reconciles}`, signal: this.ctl.signal, priority: 0 };
    this.providers.actor = {
      kind: 'reconcile',
      namespace: key.namespace,
      name: key.name,
      uid: live?.metadata.uid ?? '',
      observe: live?.spec.managementPolicy === 'Observe',
    };
    try {
      return await reconciler.reconcile(key, ctx);
    } catch (err) {
      return err instanceof Error ? err : new Error(String(err));
    } finally {
      this.providers.actor = { kind: 'user' };
    }
  }

  /** One drift scan, as the leader's scanner runs it; returns the keys it names. */
  async driftScan(): Promise<ObjectKey[]> {
    const c = this.caches();
    const scanner = new DriftScanner({
      buckets: c.buckets,
      configs: c.configs,
      secrets: c.secrets,
      clients: this.clients,
      clusterId: MODEL_CLUSTER,
      reports: this.process.reports,
      channel: new KeyChannel(),
      logger: silent,
    });
    this.providers.actor = { kind: 'driftScan' };
    try {
      const summary = await scanner.scan(this.ctl.signal);
      return summary.findings.map((f) => f.key);
    } finally {
      this.providers.actor = { kind: 'user' };
    }
  }
}

/** Kinds the runner maps events of, re-exported for it. */
export const KINDS = { bucket: STORAGE_BUCKET.kind, config: PROVIDER_CONFIG.kind, secret: SECRET.kind, service: SERVICE.kind } as const;
