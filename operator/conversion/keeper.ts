/**
 * Keeps the webhook's certificates current: reads the Secret, asks the rotation planner
 * (rotation.ts) what to do, writes the Secret, and puts its CA bundle into the caBundle of
 * every CRD that converts through the webhook. Rotation runs on the leader only (a manager
 * Runnable): two rotators would each make their own CA.
 *
 * One thing any replica may do ({@link CertificateKeeper.bootstrap}, as open-policy-agent's
 * cert-controller does): make the Secret when there is none, with a create, so of replicas
 * racing only one wins and the others use its Secret. Otherwise a new replica with the webhook
 * on waits for a leader to make the certificate, and while an old replica without the webhook
 * holds the Lease (a rolling update from a version without it), none ever comes.
 *
 * The API server trusts every CA before a replica can serve a certificate from it: each write
 * of the Secret is preceded by adding the CAs it brings to the CRDs' caBundle (kept beside
 * what the caBundle already trusts, with a conditional patch), and followed, on the leader, by
 * the caBundle set to exactly the Secret's bundle. So the creator of a missing Secret, leader
 * or not, is also the one that makes the API server trust it, which matters when the leader
 * is a replica without the webhook that injects nothing. The caBundle is brought in line with
 * the Secret before the planner may take the next step, and a caBundle someone else changed
 * (a re-applied CRD manifest) is put back on the next pass.
 *
 * The Kubernetes side is a seam ({@link CertStore}) so the loop is tested with a fake.
 */
import type { Logger } from 'pino';
import { planRotation, type CertPolicy } from './rotation';
import { applyRotation, CertSecretKey, readCertFacts, type CertData, type ServingNames } from './secret-certs';

/** The Secret as the keeper reads it. */
export interface StoredCerts {
  readonly data: CertData;
  /** For a conditional update: a concurrent writer makes the write fail rather than be overwritten. */
  readonly resourceVersion: string;
  /** Its labels as read: a replacement keeps those other tools added. */
  readonly labels?: Readonly<Record<string, string>>;
  /** Its annotations as read: a replacement keeps them. */
  readonly annotations?: Readonly<Record<string, string>>;
}

/** A CRD whose caBundle the keeper maintains. */
export interface CrdConversion {
  readonly name: string;
  /** `spec.conversion.strategy` is Webhook: only then does a caBundle belong there. */
  readonly webhook: boolean;
  /** PEM text of `spec.conversion.webhook.clientConfig.caBundle`, decoded. */
  readonly caBundle: string | undefined;
  /** Where `spec.conversion.webhook.clientConfig` sends conversions. */
  readonly target?: ConversionTarget;
  /** For a conditional caBundle patch: a concurrent writer makes it fail rather than be overwritten. */
  readonly resourceVersion?: string;
}

/** `spec.conversion.webhook.clientConfig` without its caBundle. */
export interface ConversionTarget {
  readonly service?: { readonly namespace: string; readonly name: string };
  readonly url?: string;
}

/**
 * Whether `target` is this webhook, as its serving certificate names it: a Service whose DNS
 * name the certificate carries, or a URL whose host it carries. A CRD converted by another
 * install's webhook (another operator namespace, another Service) is not this keeper's: its CA
 * there would break every conversion of that install.
 */
export function convertsThrough(target: ConversionTarget | undefined, names: ServingNames): boolean {
  if (target?.service) return names.dnsNames.includes(`${target.service.name}.${target.service.namespace}.svc`);
  if (target?.url === undefined) return false;
  let host: string;
  try {
    host = new URL(target.url).hostname.replace(/^\[(.*)\]$/, '$1');
  } catch {
    return false;
  }
  return names.dnsNames.includes(host) || (names.ipAddresses ?? []).includes(host);
}

/** What the keeper reads and writes in the cluster. */
export interface CertStore {
  /** The Secret, or undefined when there is none. */
  read(): Promise<StoredCerts | undefined>;
  /** Creates the Secret; false when it exists already (another replica made it first). */
  create(data: CertData): Promise<boolean>;
  /**
   * Replaces the Secret `previous` was read from, conditionally on its resourceVersion: `data`
   * over its data, its labels and annotations kept (merged, not replaced).
   */
  replace(data: CertData, previous: StoredCerts): Promise<void>;
  /** The CRDs the webhook converts for, as they are now. */
  crds(): Promise<CrdConversion[]>;
  /** Sets one CRD's caBundle to `caBundle` (PEM), conditionally on `resourceVersion` when given. */
  setCaBundle(crd: string, caBundle: string, resourceVersion?: string): Promise<void>;
}

/** Dependencies of {@link CertificateKeeper}. */
export interface CertificateKeeperOptions {
  readonly store: CertStore;
  readonly policy: CertPolicy;
  readonly names: ServingNames;
  readonly logger: Logger;
  /** Wall-clock epoch milliseconds; certificates carry real dates. @default Date.now */
  readonly now?: () => number;
  /**
   * Longest sleep between passes, so a caBundle changed by someone else is repaired.
   * @default 60s
   */
  readonly resyncMs?: number;
  /** Sleep after a failed pass. @default 5s */
  readonly retryMs?: number;
}

/** The leader's loop over the webhook's certificates, and every replica's first certificate. */
export class CertificateKeeper {
  /** Names it in the manager's logs. */
  readonly name = 'conversion-certificates';
  private readonly now: () => number;
  private readonly foreign = new Set<string>();

  constructor(private readonly opts: CertificateKeeperOptions) {
    this.now = opts.now ?? Date.now;
  }

  /**
   * One pass: caBundles in line with a usable Secret, then at most one rotation step (the CAs
   * it brings trusted first), then the caBundles again. Returns when to pass again (epoch ms):
   * at once after a step, so a fresh Secret converges in one go, else when the planner wants
   * to look again.
   */
  async reconcile(): Promise<number> {
    const { store, policy, names, logger } = this.opts;
    const stored = await store.read();
    const facts = readCertFacts(stored?.data, names);
    // Only a usable bundle goes to the CRDs: an unparsable one there would fail every conversion.
    if (stored && facts.kind === 'present') await this.inject(stored.data);
    const now = this.now();
    const step = planRotation(facts, now, policy);
    if (step.kind === 'keep') return step.recheckAt;
    const data = applyRotation(step, stored?.data, now, policy, names);
    await this.trust(data);
    if (stored) await store.replace(data, stored);
    // Another replica made it first: the next pass reads theirs.
    else if (!(await store.create(data))) return now;
    logger.info({ step: step.kind, ...('reason' in step ? { reason: step.reason } : {}) }, 'Rotated conversion webhook certificates');
    await this.inject(data);
    return now;
  }

  /**
   * What any replica does, leader or not: when there is no Secret, makes one, its CA trusted
   * by the CRDs first. Resolves true when it made it, false when a Secret was there or another
   * replica's create won. A Secret that is there but unusable is left to the leader.
   */
  async ensureSecret(): Promise<boolean> {
    const { store, policy, names, logger } = this.opts;
    if (await store.read()) return false;
    const now = this.now();
    const data = applyRotation({ kind: 'create', reason: 'no certificates yet' }, undefined, now, policy, names);
    await this.trust(data);
    if (!(await store.create(data))) return false;
    logger.info('Created conversion webhook certificates');
    return true;
  }

  /** Runs passes until `signal` aborts (a manager Runnable: the leader only). */
  async start(signal: AbortSignal): Promise<void> {
    const resyncMs = this.opts.resyncMs ?? 60_000;
    while (!signal.aborted) {
      let delay: number;
      try {
        delay = Math.min(resyncMs, Math.max(0, (await this.reconcile()) - this.now()));
      } catch (err) {
        // A conflict (another writer), a missing permission, an API server away: try again soon.
        this.opts.logger.warn({ err: secretFree(err) }, 'Cannot update conversion webhook certificates');
        delay = this.opts.retryMs ?? 5_000;
      }
      await sleep(delay, signal);
    }
  }

  /**
   * Every replica, from its start: {@link ensureSecret} until a Secret exists or `signal`
   * aborts. Rotation stays with the leader.
   */
  async bootstrap(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      try {
        await this.ensureSecret();
        return;
      } catch (err) {
        this.opts.logger.warn({ err: secretFree(err) }, 'Cannot create conversion webhook certificates');
      }
      await sleep(this.opts.retryMs ?? 5_000, signal);
    }
  }

  /**
   * Adds the CAs of `data` that a CRD's caBundle lacks to it, keeping what it holds: the API
   * server trusts them before any replica can serve a certificate from them, and still trusts
   * whatever a replica serves now.
   */
  private async trust(data: CertData): Promise<void> {
    const wanted = pemCertificates(data[CertSecretKey.caBundle]);
    for (const crd of await this.ours()) {
      const held = pemCertificates(crd.caBundle);
      const missing = wanted.filter((pem) => !held.some((h) => samePem(h, pem)));
      if (missing.length === 0) continue;
      await this.opts.store.setCaBundle(crd.name, [...held, ...missing].join(''), crd.resourceVersion);
      this.opts.logger.info({ crd: crd.name }, 'Added a conversion webhook CA to the caBundle');
    }
  }

  /** Sets every caBundle to exactly the bundle of `data`. */
  private async inject(data: CertData): Promise<void> {
    const bundle = data[CertSecretKey.caBundle];
    if (!bundle) return;
    for (const crd of await this.ours()) {
      if (crd.caBundle === bundle) continue;
      await this.opts.store.setCaBundle(crd.name, bundle, crd.resourceVersion);
      this.opts.logger.info({ crd: crd.name }, 'Injected conversion webhook caBundle');
    }
  }

  /** The CRDs that convert through this webhook; others are named in a warning once. */
  private async ours(): Promise<CrdConversion[]> {
    const out: CrdConversion[] = [];
    for (const crd of await this.opts.store.crds()) {
      if (!crd.webhook) continue;
      if (convertsThrough(crd.target, this.opts.names)) {
        out.push(crd);
        continue;
      }
      // Said once per CRD and target, not every pass.
      const key = `${crd.name} ${JSON.stringify(crd.target ?? {})}`;
      if (!this.foreign.has(key)) {
        this.foreign.add(key);
        this.opts.logger.warn(
          { crd: crd.name, target: crd.target ?? {} },
          "Not injecting the caBundle: the CRD's conversion webhook is not this operator's (another install, or none)",
        );
      }
    }
    return out;
  }
}

const PEM_CERT = /-----BEGIN CERTIFICATE-----\r?\n[\s\S]*?-----END CERTIFICATE-----/g;

/** The certificates of a PEM bundle, each ending in a newline; anything else in it is dropped. */
function pemCertificates(bundle: string | undefined): string[] {
  return (bundle ?? '').match(PEM_CERT)?.map((pem) => `${pem}\n`) ?? [];
}

/** The same certificate, whatever the line endings and wrapping. */
function samePem(a: string, b: string): boolean {
  return a.replace(/\s/g, '') === b.replace(/\s/g, '');
}

/** Only the message of `err`: the API server's answer to a Secret write could echo the body sent. */
function secretFree(err: unknown): { message: string } {
  const message = err instanceof Error ? err.message : String(err);
  return { message: message.includes('PRIVATE KEY') ? 'error (message withheld: it quotes Secret data)' : message };
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}
