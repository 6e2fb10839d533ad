/**
 * Wires the conversion webhook into a manager: every replica serves it (the API server may
 * call any), loading the serving certificate from the webhook Secret as it changes. Unless
 * another tool (cert-manager) keeps the certificates, every replica makes the Secret when there
 * is none (one create wins, its CA trusted by the CRDs first), and the leader alone rotates it
 * and keeps the CRDs' caBundle in line ({@link CertificateKeeper}): a replica must not wait for
 * a leader to become ready, since during a rolling update from a version without the webhook
 * the leader is an old replica that never makes one.
 *
 * The webhook's readiness is its own ("conversion-webhook": listening, a certificate loaded,
 * not draining), so a Pod serving it can stay behind the webhook's Service while its
 * controller waits for caches or the Lease (see the manager's `readyzIncludesController`).
 *
 * The operator itself reads and writes the storage version (`--api-version`), which the API
 * server never converts: its reconciles never depend on the webhook being up.
 */
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import { MANAGED_BY_LABEL, MANAGED_BY_VALUE } from '../api/v1';
import type { Informer, KubeClient, Manager } from '../runtime';
import { serviceDnsNames } from './certificates';
import { CertificateKeeper } from './keeper';
import { decodeSecretData, kubeCertStore, SECRET_KIND } from './kube-store';
import { ConversionMetrics } from './metrics';
import { CONVERTED_CRD_NAMES, type CertificateKeeperKind } from './rbac';
import { checkCertPolicy, DEFAULT_CERT_POLICY, type CertPolicy } from './rotation';
import { servingCredentials, type ServingNames } from './secret-certs';
import { ConversionServer } from './server';

/** Where and as what the webhook is served. */
export interface ConversionWebhookOptions {
  /** HTTPS port; 0 picks a free one (tests). */
  readonly port: number;
  /** Listen address. @default all interfaces */
  readonly host?: string;
  /** Namespace of the Secret and the Service (the operator's). */
  readonly namespace: string;
  /** The Service in front of the replicas: its DNS names go into the serving certificate. */
  readonly serviceName: string;
  /** The Secret holding the CA and serving certificate. */
  readonly secretName: string;
  /** IP addresses the serving certificate also names, for an API server that calls a URL (tests). */
  readonly ipAddresses?: readonly string[];
  /** @default DEFAULT_CERT_POLICY */
  readonly policy?: CertPolicy;
  /**
   * Who keeps the Secret and the caBundle: the operator (its leader makes and rotates them), or
   * another tool (cert-manager and its cainjector), in which case every replica only reads the
   * Secret and serves what is in it. @default 'operator'
   */
  readonly certificates?: CertificateKeeperKind;
  /**
   * On stop, how long the webhook reports not ready and keeps answering before it closes, so
   * the API server stops choosing this replica first (endpoints take a few seconds to update).
   * @default 5s
   */
  readonly drainMs?: number;
}

/** A conversion webhook set up on a manager. */
export interface ConversionWebhook {
  readonly server: ConversionServer;
  /** Starts serving and watching the Secret; resolves with the bound address. */
  start(): Promise<AddressInfo>;
  /** Starts draining: not ready, still answering (see ConversionServer.drain). */
  drain(): void;
  /** Drains until `drainMs` after the drain began, then stops serving (requests in flight finish) and watching. */
  stop(): Promise<void>;
}

interface SecretJson {
  metadata?: { name?: string };
  data?: Record<string, string>;
}

/**
 * Adds the webhook to `manager`: server, readiness check and the making of a missing Secret on
 * every replica, certificate rotation on the leader.
 */
export function setupConversionWebhook(
  manager: Manager,
  deps: { readonly client: Pick<KubeClient, 'get' | 'create' | 'update' | 'patch'>; readonly logger: Logger; readonly fieldManager: string },
  opts: ConversionWebhookOptions,
): ConversionWebhook {
  const policy = opts.policy ?? DEFAULT_CERT_POLICY;
  checkCertPolicy(policy);
  const logger = deps.logger.child({ component: 'conversion-webhook' });
  const names: ServingNames = {
    commonName: opts.serviceName,
    dnsNames: serviceDnsNames(opts.serviceName, opts.namespace),
    ...(opts.ipAddresses?.length ? { ipAddresses: opts.ipAddresses } : {}),
  };
  const server = new ConversionServer({ metrics: new ConversionMetrics({ registry: manager.metrics.registry }), logger });
  let listening = false;
  manager.addReadyzCheck('conversion-webhook', () => {
    if (!listening) throw new Error('not listening yet');
    server.readyCheck();
  });
  const keeper =
    (opts.certificates ?? 'operator') === 'operator'
      ? new CertificateKeeper({
          store: kubeCertStore({
            client: deps.client,
            namespace: opts.namespace,
            secretName: opts.secretName,
            crdNames: CONVERTED_CRD_NAMES,
            labels: { [MANAGED_BY_LABEL]: MANAGED_BY_VALUE },
            fieldManager: deps.fieldManager,
          }),
          policy,
          names,
          logger,
        })
      : undefined;
  // Rotation on the leader; a missing Secret made by whichever replica gets there first (start()).
  if (keeper) manager.addRunnable(keeper);
  const bootstrapStop = new AbortController();
  let bootstrapping: Promise<void> = Promise.resolve();
  // One named Secret, watched by every replica: its own informer, not a cache of all Secrets.
  const informer: Informer<SecretJson> = manager.informers.informerFor<SecretJson>(SECRET_KIND, {
    namespace: opts.namespace,
    fieldSelector: `metadata.name=${opts.secretName}`,
  });
  const load = (secret: SecretJson) => {
    const creds = servingCredentials(decodeSecretData(secret.data));
    if (!creds) return;
    try {
      if (server.setCertificate(creds)) logger.info({ secret: opts.secretName }, 'Loaded conversion webhook serving certificate');
    } catch (err) {
      // Keeps serving the previous certificate; the keeper (or the external tool) replaces a pair that does not load.
      logger.warn({ err: { message: err instanceof Error ? err.message : String(err) } }, 'Cannot load conversion webhook serving certificate');
    }
  };
  informer.addEventHandler({ onAdd: load, onUpdate: (_old, secret) => load(secret) });
  let drainingSince: number | undefined;
  return {
    server,
    async start() {
      const address = await server.listen(opts.port, opts.host);
      listening = true;
      informer.start();
      if (keeper) bootstrapping = keeper.bootstrap(bootstrapStop.signal);
      return address;
    },
    drain() {
      drainingSince ??= Date.now();
      server.drain();
    },
    async stop() {
      this.drain();
      const left = (drainingSince ?? Date.now()) + (opts.drainMs ?? 5_000) - Date.now();
      if (left > 0) await new Promise((resolve) => setTimeout(resolve, left));
      bootstrapStop.abort();
      await bootstrapping;
      await server.stop();
      listening = false;
      await informer.stop();
    },
  };
}
