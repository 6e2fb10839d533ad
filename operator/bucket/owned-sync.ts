/**
 * Keeps a bucket's owned Secret and Service in line with the provider bucket, without ever
 * taking over an object of the same name that someone else made.
 */
import type { V1Service } from '@kubernetes/client-node';
import type { StorageBucket } from '../api/v1';
import type { ProviderBucket } from '../provider-client';
import { isAlreadyExists, keyOf, type Cache, type KubeObject, type ResourceKind } from '../runtime';
import { SECRET, SERVICE } from './kinds';
import { desiredSecret, desiredService, isControlledBy, secretNeedsApply, serviceNeedsApply, type OwnedSecret } from './owned';
import { EventReason } from './reasons';
import { settled, type EventSink, type ObjectWriter } from './writer';

/** Caches and writers {@link OwnedObjects} uses. */
export interface OwnedObjectsDeps {
  /** Owned Secrets: only those labelled as the operator's, data condensed to hashes. */
  readonly ownedSecrets: Cache<OwnedSecret>;
  /** Owned Services: only those labelled as the operator's. */
  readonly services: Cache<V1Service>;
  readonly writer: ObjectWriter;
  readonly events: EventSink;
  /** apiVersion of the owner references: the StorageBucket version read and written. @default v1 */
  readonly ownerApiVersion?: string;
}

/** Writes the owned objects only when the cached copies differ from the desired ones. */
export class OwnedObjects {
  constructor(private readonly d: OwnedObjectsDeps) {}

  /** Brings the Secret and Service of `bucket` in line with `external`, reached at `providerEndpoint`. */
  async ensure(bucket: StorageBucket, providerEndpoint: string, external: Pick<ProviderBucket, 'id' | 'endpoint' | 'region'>): Promise<void> {
    const access = { id: external.id, endpoint: external.endpoint, region: external.region, providerEndpoint };
    const secret = desiredSecret(bucket, access, this.d.ownerApiVersion);
    const service = desiredService(bucket, access, this.d.ownerApiVersion);
    // Independent objects: written together, and both attempted even when one fails.
    await settled(
      this.ensureOne(bucket, SECRET, secret, this.d.ownedSecrets, (live) => secretNeedsApply(secret, live)),
      this.ensureOne(bucket, SERVICE, service, this.d.services, (live) => serviceNeedsApply(service, live)),
    );
  }

  /**
   * The cache holds only objects labelled as ours, so a miss means "absent, or not labelled":
   * the object is created (a POST fails on an existing name, where an apply would take it
   * over), and only when one exists is it read once and applied if this bucket controls it,
   * which also labels one made before the label existed.
   */
  private async ensureOne<L extends KubeObject>(
    bucket: StorageBucket,
    kind: ResourceKind,
    desired: KubeObject,
    cache: Cache<L>,
    needsApply: (live: L) => boolean,
  ): Promise<void> {
    const key = keyOf(desired);
    let live = cache.get(key);
    if (!live) {
      try {
        await this.d.writer.create(kind, desired);
        return;
      } catch (err) {
        if (!isAlreadyExists(err)) throw err;
      }
      live = await this.d.writer.get<L>(kind, key);
      // Deleted since the create failed: the next attempt creates it.
      if (!live) throw new Error(`${kind.kind} ${key.namespace}/${key.name} vanished while being created`);
    }
    if (!isControlledBy(live, bucket)) {
      // Someone else's object of that name (perhaps an app's own) is never taken over.
      const note = `${kind.kind} ${live.metadata?.name ?? ''} exists and is not controlled by this StorageBucket; left untouched`;
      this.d.events.event(bucket, 'Warning', EventReason.OwnedObjectConflict, 'Apply', note);
      return;
    }
    if (needsApply(live)) await this.d.writer.apply(kind, desired);
  }
}
