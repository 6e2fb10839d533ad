/**
 * Assembles the operator: REST client, shared informers, manager, provider clients and the
 * bucket controllers. main.ts calls it with parsed flags; tests, the local demo and benchmarks
 * call it in-process with their own options.
 */
import { hostname } from 'node:os';
import type { Logger } from 'pino';
import { Registry } from 'prom-client';
import { readClusterId } from './bucket/cluster-identity';
import { kubeWriter } from './bucket/kube-writer';
import type { ApiVersionName } from './api/version-names';
import { ownVersion } from './bucket/own-version';
import { setupBucketControllers } from './bucket/setup';
import { setupConversionWebhook, type ConversionWebhook, type ConversionWebhookOptions } from './conversion/setup';
import { ProviderClients } from './provider-client';
import { KubeClient } from './runtime/client';
import { EventRecorder } from './runtime/events';
import { InformerFactory } from './runtime/informer-factory';
import { Manager } from './runtime/manager';
import type { RestConfig } from './runtime/rest-config';

/** Per-request timeout of the leader-election client: under half the renew deadline (10 s). */
export const LEASE_REQUEST_TIMEOUT_MS = 4_000;
/** Name under which the operator writes fields, events and its Lease. */
export const OPERATOR_NAME = 'bucketoperator';

/** Everything the operator can be told. */
export interface OperatorOptions {
  /** The API server and credentials, e.g. from `loadRestConfig`. */
  readonly restConfig: RestConfig;
  readonly logger: Logger;
  /** Watch one namespace; all when unset. */
  readonly watchNamespace?: string;
  readonly leaderElection: boolean;
  /** @default 'bucketoperator-system' */
  readonly leaderElectionNamespace?: string;
  /** @default 'bucketoperator-leader' */
  readonly leaderElectionId?: string;
  readonly metricsBindAddress: string;
  readonly healthProbeBindAddress: string;
  /** @default 8 */
  readonly maxConcurrentReconciles?: number;
  /** @default 3000 */
  readonly pollIntervalMs?: number;
  /** @default 60000 */
  readonly driftIntervalMs?: number;
  /** Client-side API requests per second (watches and the Lease excepted); <= 0 disables. @default DEFAULT_QPS */
  readonly kubeApiQps?: number;
  /** @default DEFAULT_BURST */
  readonly kubeApiBurst?: number;
  /**
   * Speak HTTP/2 when the API server offers it, as client-go does: kube-apiserver spends
   * about a fifth less CPU per request on it (bench/client-cost.ts). @default true
   */
  readonly kubeApiHttp2?: boolean;
  /** Provider calls per second per account (endpoint plus API key). @default 20 */
  readonly providerQps?: number;
  /** Provider burst per account. @default 40 */
  readonly providerBurst?: number;
  /** Provider calls in flight per account; more wait for a seat. @default 8 */
  readonly providerMaxInFlight?: number;
  /** @default 10000 */
  readonly providerTimeoutMs?: number;
  /**
   * Allow provider endpoints at link-local and cloud metadata addresses (literal hosts are
   * refused when a bucket connects, resolved ones when a socket opens). @default false
   */
  readonly allowLinkLocalEndpoints?: boolean;
  /** @default 30000 */
  readonly gracefulShutdownTimeoutMs?: number;
  /** Overrides the Lease identity (tests). */
  readonly identity?: string;
  /**
   * This cluster's identity in the provider buckets' owner tags. @default the uid of the
   * kube-system namespace, read once at start
   */
  readonly clusterId?: string;
  /**
   * Serve the conversion webhook (every replica) and keep its certificates and the CRDs'
   * caBundle (the leader). Off when unset.
   */
  readonly conversionWebhook?: ConversionWebhookOptions;
  /**
   * The version of its own kinds the operator reads and writes: the CRDs' storage version, so
   * its own work never needs the conversion webhook. @default 'v1'
   */
  readonly ownApiVersion?: ApiVersionName;
}

/** A running operator. */
export interface RunningOperator {
  readonly manager: Manager;
  /** The shared informers, for inspecting what the caches hold. */
  readonly informers: InformerFactory;
  readonly registry: Registry;
  /** Resolves when the manager stopped; rejects when it failed (e.g. leadership lost). */
  readonly done: Promise<void>;
  /** Stops gracefully and waits. */
  stop(): Promise<void>;
}

/** Starts the operator; it runs until `stop()` or a fatal error. */
export function startOperator(opts: OperatorOptions): RunningOperator {
  const registry = new Registry();
  const http2 = opts.kubeApiHttp2 ?? true;
  const client = new KubeClient({
    restConfig: opts.restConfig,
    registry,
    userAgent: OPERATOR_NAME,
    qps: opts.kubeApiQps,
    burst: opts.kubeApiBurst,
    http2,
  });
  // As controller-runtime: leader election has a client of its own, so a Lease renewal never
  // waits behind bulk writes, their QPS limit or their connections.
  // Each request well inside the 10 s renew deadline: one that hangs on a dead connection gives
  // up in time for the next attempt, on a fresh session, to renew before the deadline.
  const leaseClient = new KubeClient({
    restConfig: opts.restConfig,
    registry,
    userAgent: `${OPERATOR_NAME}-leader-election`,
    qps: 0,
    http2,
    requestTimeoutMs: LEASE_REQUEST_TIMEOUT_MS,
  });
  const informers = new InformerFactory({ lw: client, logger: opts.logger.child({ component: 'informer' }), registry });
  const identity = opts.identity ?? `${hostname()}_${process.pid}`;
  const manager = new Manager({
    client: leaseClient,
    logger: opts.logger,
    informers,
    registry,
    namespace: opts.watchNamespace,
    metricsBindAddress: opts.metricsBindAddress,
    healthProbeBindAddress: opts.healthProbeBindAddress,
    // With the webhook on, the Pod's readiness is the webhook's: its Service follows it, and
    // the API server needs it for every request in a version other than the stored one.
    readyzIncludesController: opts.conversionWebhook === undefined,
    gracefulShutdownTimeoutMs: opts.gracefulShutdownTimeoutMs,
    leaderElection: {
      enabled: opts.leaderElection,
      namespace: opts.leaderElectionNamespace ?? 'bucketoperator-system',
      name: opts.leaderElectionId ?? 'bucketoperator-leader',
      identity,
    },
  });
  const clients = new ProviderClients({
    registry,
    qps: opts.providerQps,
    burst: opts.providerBurst,
    maxInFlightPerAccount: opts.providerMaxInFlight,
    timeoutMs: opts.providerTimeoutMs,
    allowLinkLocalEndpoints: opts.allowLinkLocalEndpoints,
  });
  const events = new EventRecorder({
    client,
    reportingController: `storage.avalonhosting.example/${OPERATOR_NAME}`,
    reportingInstance: identity,
    logger: opts.logger.child({ component: 'events' }),
    failures: manager.writeFailures,
  });
  const abort = new AbortController();
  let webhook: ConversionWebhook | undefined;
  // The controllers are registered once the cluster identity is known: every replica reads the
  // same one, before it can lead, so no bucket is ever tagged without it.
  const run = async (): Promise<void> => {
    if (opts.conversionWebhook) {
      // Served from the start, before the cluster identity or leadership: conversion is not leader-only.
      const served = setupConversionWebhook(manager, { client, logger: opts.logger, fieldManager: OPERATOR_NAME }, opts.conversionWebhook);
      webhook = served;
      // Drains from the moment a stop is asked for, beside the controllers' drain.
      abort.signal.addEventListener('abort', () => served.drain(), { once: true });
      const address = await served.start();
      opts.logger.info({ port: address.port }, 'Serving the conversion webhook');
    }
    const clusterId = opts.clusterId ?? (await readClusterId(client, abort.signal));
    const own = ownVersion(opts.ownApiVersion);
    setupBucketControllers(manager, {
      own,
      writer: kubeWriter(client, OPERATOR_NAME, own),
      events,
      clients,
      clusterId,
      maxConcurrentReconciles: opts.maxConcurrentReconciles,
      pollIntervalMs: opts.pollIntervalMs,
      driftIntervalMs: opts.driftIntervalMs,
    });
    opts.logger.info({ msg: 'cluster identity', clusterId });
    await manager.start(abort.signal);
  };
  const done = run().finally(async () => {
    await webhook?.stop();
    clients.close();
    client.close();
    leaseClient.close();
  });
  return {
    manager,
    informers,
    registry,
    done,
    async stop() {
      abort.abort();
      await done.catch(() => undefined);
    },
  };
}
