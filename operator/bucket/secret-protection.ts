/**
 * Keeps a provider-credentials Secret while a BucketProviderConfig still references it. Without
 * it, deleting a namespace removes the Secret at once (Secrets have no finalizer), and buckets
 * that still have to deprovision would wait forever for credentials that are gone.
 *
 * Driven by configs and by the informers that watch each referenced Secret by name: no Secret
 * is cached unless a config names it. A Secret no config names any more is no longer watched,
 * so releasing it reads it once from the API.
 */
import type { V1Secret } from '@kubernetes/client-node';
import type { BucketProviderConfig } from '../api/v1';
import { SECRET_IN_USE_FINALIZER } from '../api/v1';
import { done, type Action, type Cache, type NamedCache, type ObjectKey, type ReconcileContext, type Reconciler, type Request } from '../runtime';
import { CONFIGS_BY_SECRET } from './indexes';
import { SECRET } from './kinds';
import type { ObjectWriter } from './writer';

/** Finalizer on referenced Secrets; defined with the API so infra/'s admission policy can import it. */
export { SECRET_IN_USE_FINALIZER };

/** Dependencies of {@link SecretProtectionReconciler}. */
export interface SecretProtectionDeps {
  /** Credential Secrets, watched by name while a config refers to them. */
  readonly secrets: NamedCache<V1Secret>;
  readonly configs: Cache<BucketProviderConfig>;
  readonly writer: ObjectWriter;
}

/** Adds the in-use finalizer to referenced Secrets and removes it once no config needs them. */
export class SecretProtectionReconciler implements Reconciler {
  constructor(private readonly d: SecretProtectionDeps) {}

  async reconcile(req: Request, ctx: ReconcileContext): Promise<Action> {
    // A config counts until it is gone from the cache: while it is being deleted its buckets
    // may still need the credentials to deprovision.
    const users = this.d.configs.byIndex(CONFIGS_BY_SECRET, `${req.namespace}/${req.name}`);
    let secret: V1Secret | undefined;
    if (users.length > 0) {
      await this.d.secrets.waitForKey(req, ctx.signal);
      secret = this.d.secrets.get(req);
    } else {
      // Unreferenced, hence unwatched: only a config change (its release) brings us here.
      secret = await this.d.writer.get<V1Secret>(SECRET, req);
    }
    if (!secret) return done();
    const protectedNow = (secret.metadata?.finalizers ?? []).includes(SECRET_IN_USE_FINALIZER);
    if (users.length > 0 && !protectedNow && !secret.metadata?.deletionTimestamp) {
      await this.d.writer.addFinalizer(SECRET, secret, SECRET_IN_USE_FINALIZER);
      ctx.logger.debug('protected a referenced Secret');
    } else if (users.length === 0 && protectedNow) {
      await this.d.writer.removeFinalizer(SECRET, secret, SECRET_IN_USE_FINALIZER);
      ctx.logger.debug('released an unreferenced Secret');
    }
    return done();
  }
}

/** Maps a config to the Secret it references. */
export function secretForConfig(c: BucketProviderConfig): ObjectKey[] {
  const name = c.spec?.secretRef?.name;
  return name ? [{ namespace: c.metadata.namespace ?? '', name }] : [];
}
