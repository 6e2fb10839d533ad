/**
 * Keeps a provider-credentials Secret while a BucketProviderConfig still references it. Without
 * it, deleting a namespace removes the Secret at once (Secrets have no finalizer), and buckets
 * that still have to deprovision would wait forever for credentials that are gone.
 *
 * Only Secrets labelled as credentials are protected, and only those are cached (one
 * label-selected informer). A Secret that loses its label, or that no config names any more,
 * is no longer used by the operator, so its finalizer is released; such a Secret is read once
 * from the API, since the cache no longer holds it (or never held it).
 */
import type { V1Secret } from '@kubernetes/client-node';
import type { BucketProviderConfig } from '../api/v1';
import { SECRET_IN_USE_FINALIZER } from '../api/v1';
import { done, type Action, type Cache, type ObjectKey, type ReconcileContext, type Reconciler, type Request } from '../runtime';
import { isCredentialsSecret, withoutUnlabelledData, type CredentialSecrets } from './connect';
import { CONFIGS_BY_SECRET } from './indexes';
import { SECRET } from './kinds';
import type { ObjectWriter } from './writer';

/** Finalizer on referenced Secrets; defined with the API so infra/'s admission policy can import it. */
export { SECRET_IN_USE_FINALIZER };

/** Dependencies of {@link SecretProtectionReconciler}. */
export interface SecretProtectionDeps {
  /** Credential Secrets: the label-selected cache, and one GET on a miss. */
  readonly secrets: CredentialSecrets;
  readonly configs: Cache<BucketProviderConfig>;
  readonly writer: Pick<ObjectWriter, 'addFinalizer' | 'removeFinalizer'>;
}

/** What to do with a Secret's in-use finalizer. */
export type ProtectionStep = 'add' | 'remove' | 'none';

/**
 * The whole rule, pure: a Secret is protected while it is labelled as credentials and some
 * config (deleting ones included: their buckets may still need it to deprovision) names it.
 * A Secret being deleted gets no new finalizer; a label removed releases it, since the
 * operator will not read that Secret again.
 */
export function protectionStep(secret: V1Secret, referenced: boolean): ProtectionStep {
  const has = (secret.metadata?.finalizers ?? []).includes(SECRET_IN_USE_FINALIZER);
  const wanted = referenced && isCredentialsSecret(secret);
  if (wanted && !has && !secret.metadata?.deletionTimestamp) return 'add';
  if (!wanted && has) return 'remove';
  return 'none';
}

/** Adds the in-use finalizer to referenced credential Secrets and removes it once none is. */
export class SecretProtectionReconciler implements Reconciler {
  constructor(private readonly d: SecretProtectionDeps) {}

  async reconcile(req: Request, ctx: ReconcileContext): Promise<Action> {
    const referenced = this.d.configs.byIndex(CONFIGS_BY_SECRET, `${req.namespace}/${req.name}`).length > 0;
    await this.d.secrets.waitForSync(ctx.signal);
    // A miss is a Secret without the label (removed just now, or never there) or one that is
    // gone: only a config change or the label's removal brings us here, so one GET is rare.
    const secret = this.d.secrets.cache.get(req) ?? withoutUnlabelledData(await this.d.secrets.lookup(req));
    if (!secret) return done();
    switch (protectionStep(secret, referenced)) {
      case 'add':
        await this.d.writer.addFinalizer(SECRET, secret, SECRET_IN_USE_FINALIZER);
        ctx.logger.debug('protected a referenced Secret');
        break;
      case 'remove':
        await this.d.writer.removeFinalizer(SECRET, secret, SECRET_IN_USE_FINALIZER);
        ctx.logger.debug('released a Secret no config uses');
        break;
      case 'none':
        break;
    }
    return done();
  }
}

/** Maps a config to the Secret it references. */
export function secretForConfig(c: BucketProviderConfig): ObjectKey[] {
  const name = c.spec?.secretRef?.name;
  return name ? [{ namespace: c.metadata.namespace ?? '', name }] : [];
}
