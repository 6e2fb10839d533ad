/**
 * Keeps the webhook's certificates current: reads the Secret, asks the rotation planner
 * (rotation.ts) what to do, writes the Secret, and puts its CA bundle into the caBundle of
 * every CRD that converts through the webhook. Runs on the leader only (a manager Runnable):
 * two writers would each make their own CA.
 *
 * The caBundle is brought in line with the Secret before the planner may take the next step,
 * so the API server trusts a new CA before any replica serves a certificate from it. A
 * caBundle someone else changed (a re-applied CRD manifest) is put back on the next pass.
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
  /** Creates the Secret (`resourceVersion` undefined) or replaces it conditionally. */
  write(data: CertData, resourceVersion: string | undefined): Promise<void>;
  /** The CRDs the webhook converts for, as they are now. */
  crds(): Promise<CrdConversion[]>;
  /** Sets one CRD's caBundle to `caBundle` (PEM). */
  setCaBundle(crd: string, caBundle: string): Promise<void>;
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

/** The leader's loop over the webhook's certificates. */
export class CertificateKeeper {
  /** Names it in the manager's logs. */
  readonly name = 'conversion-certificates';
  private readonly now: () => number;
  private readonly foreign = new Set<string>();

  constructor(private readonly opts: CertificateKeeperOptions) {
    this.now = opts.now ?? Date.now;
  }

  /**
   * One pass: caBundles in line with the Secret, then at most one rotation step, then the
   * caBundles again. Returns when to pass again (epoch ms): at once after a step, so a fresh
   * Secret converges in one go, else when the planner wants to look again.
   */
  async reconcile(): Promise<number> {
    const { store, policy, names, logger } = this.opts;
    const stored = await store.read();
    if (stored) await this.inject(stored.data);
    const now = this.now();
    const step = planRotation(readCertFacts(stored?.data, names), now, policy);
    if (step.kind === 'keep') return step.recheckAt;
    const data = applyRotation(step, stored?.data, now, policy, names);
    await store.write(data, stored?.resourceVersion);
    logger.info({ step: step.kind, ...('reason' in step ? { reason: step.reason } : {}) }, 'Rotated conversion webhook certificates');
    await this.inject(data);
    return now;
  }

  /** Runs passes until `signal` aborts (a manager Runnable). */
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

  private async inject(data: CertData): Promise<void> {
    const bundle = data[CertSecretKey.caBundle];
    if (!bundle) return;
    for (const crd of await this.opts.store.crds()) {
      if (!crd.webhook || crd.caBundle === bundle) continue;
      if (!convertsThrough(crd.target, this.opts.names)) {
        // Said once per CRD and target, not every pass.
        const key = `${crd.name} ${JSON.stringify(crd.target ?? {})}`;
        if (!this.foreign.has(key)) {
          this.foreign.add(key);
          this.opts.logger.warn(
            { crd: crd.name, target: crd.target ?? {} },
            "Not injecting the caBundle: the CRD's conversion webhook is not this operator's (another install, or none)",
          );
        }
        continue;
      }
      await this.opts.store.setCaBundle(crd.name, bundle);
      this.opts.logger.info({ crd: crd.name }, 'Injected conversion webhook caBundle');
    }
  }
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
