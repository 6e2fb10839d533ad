/**
 * A control plane of its own whose two CRDs serve v1 and v2 through the operator's conversion
 * webhook (by URL on loopback: the test control plane has no Service routing), with the
 * operator's RBAC and both admission policies as the construct renders them with the webhook
 * on (namespace mode), and a kubeconfig of the operator's ServiceAccount. Each file that
 * replaces the CRDs gets its own control plane, so the shared one keeps dist/'s CRDs.
 */
import { Chart, Testing } from 'cdk8s';
import { OperatorAdmissionPolicy } from '../../infra/admission-policy';
import { renderCrd } from '../../infra/crd';
import { COMMON_LABELS } from '../../infra/labels';
import { OperatorRbac } from '../../infra/rbac';
import * as v1 from '../../operator/api/v1';
import * as v2 from '../../operator/api/v2';
import { combineVersions, withStorageVersion } from '../../operator/api/versions';
import type { ApiVersionName } from '../../operator/api/version-names';
import { startOperator, type RunningOperator } from '../../operator/operator';
import { loadKubeconfig } from '../../operator/runtime/kubeconfig';
import { createLogger } from '../../operator/runtime/logging';
import type { CertificateKeeperKind } from '../../operator/conversion/rbac';
import type { RestConfig } from '../../operator/runtime/rest-config';
import { freshNamespace } from '../integration/setup';
import { waitForSecretPolicy } from './admission';
import { startControlPlane, type ControlPlane } from './control-plane';
import { eventually } from './eventually';
import { kubectlOk } from './kube';
import { freePort } from './ports';
import { testApp } from './test-app';

/** The two kinds, each as [v1, v2]. */
export const VERSION_PAIRS = [
  [v1.StorageBucketDefinition, v2.StorageBucketDefinition],
  [v1.BucketProviderConfigDefinition, v2.BucketProviderConfigDefinition],
] as const;

/** The CRD name of `def`'s kind. */
export const crdName = (def: v1.ApiDefinition): string => `${def.plural}.${def.group}`;

/** The CRD of `pair`'s kind storing `storage`, converted by the webhook at `url`. */
export function webhookCrd(pair: readonly [v1.ApiDefinition, v1.ApiDefinition], url: string, storage: ApiVersionName = 'v1') {
  return renderCrd(withStorageVersion(combineVersions(pair), storage), { ...COMMON_LABELS }, { conversionWebhook: { url } });
}

/**
 * Waits until a kubectl read of `resource` `name` fails (the webhook it needs made
 * unreachable) and returns kubectl's stderr: the API server's words for the user.
 */
export function failedRead(cp: ControlPlane, resource: string, name: string, namespace: string): Promise<string> {
  return eventually(
    async () => {
      const res = await cp.kubectl(['get', resource, name, '-n', namespace, '-o', 'json']);
      return res.code !== 0 ? res.stderr : undefined;
    },
    { description: `a read of ${resource} ${name} to fail`, timeoutMs: 30_000 },
  );
}

/** A BucketProviderConfig in `apiVersion` naming a Secret that does not exist: the operator reports it. */
export function configWithoutSecret(apiVersion: string, name: string, namespace: string) {
  return {
    apiVersion,
    kind: 'BucketProviderConfig',
    metadata: { name, namespace },
    spec: { endpoint: 'https://storage.example.com', secretRef: { name: 'missing' } },
  };
}

/**
 * Reads through the API server in `loops` loops until stopped, counting what succeeds and
 * what fails: conversion traffic a certificate change must not interrupt. `read(i)` is the
 * i-th request of a loop.
 */
export function conversionTraffic(loops: number, read: (i: number) => Promise<unknown>): { stop(): Promise<{ ok: number; failures: string[] }> } {
  let stopped = false;
  let ok = 0;
  const failures: string[] = [];
  const loop = async (id: number) => {
    for (let i = 0; !stopped; i++) {
      try {
        await read(i);
        ok++;
      } catch (err) {
        failures.push(`${id}-${i} at ${new Date().toISOString()}: ${err instanceof Error ? err.message : String(err)}`);
      }
      // Modest load: the machine is shared.
      await new Promise((r) => setTimeout(r, 20));
    }
  };
  const running = Array.from({ length: loops }, (_, id) => loop(id));
  return {
    async stop() {
      stopped = true;
      await Promise.all(running);
      return { ok, failures };
    },
  };
}

/** kubectl arguments of a server-side apply of stdin under the tests' field manager (as GitOps tools apply). */
export const SERVER_SIDE_APPLY = ['apply', '--server-side', '--force-conflicts', '--field-manager=conversion-test', '-f', '-'] as const;

/**
 * docs/v2.md's last rollback step for `def`'s CRD: the conversion stanza replaced by
 * `strategy: None` (the operator's field manager owns the caBundle, so a server-side apply
 * alone is refused), then the v1-only CRD applied server-side.
 */
export async function applyV1Only(cp: ControlPlane, def: v1.ApiDefinition): Promise<void> {
  await kubectlOk(cp, [
    'patch',
    'crd',
    crdName(def),
    '--type=json',
    '-p',
    '[{"op":"replace","path":"/spec/conversion","value":{"strategy":"None"}}]',
  ]);
  await kubectlOk(cp, [...SERVER_SIDE_APPLY], JSON.stringify(renderCrd(def, { ...COMMON_LABELS })));
}

/** The webhook Secret's name in these tests. */
export const WEBHOOK_SECRET = 'bucketoperator-webhook-cert';

/** The operator's ServiceAccount: every replica runs as it. */
export const OPERATOR_SA = 'bucketoperator-controller-manager';

/** What {@link startConversionStack} sets up. */
export interface ConversionStack {
  readonly cp: ControlPlane;
  /** Where the tests' objects live; the operator does not watch it. */
  readonly ns: string;
  /** The operator's namespace, which it also watches. */
  readonly opNs: string;
  /** The webhook's port on 127.0.0.1, and the URL the CRDs name. */
  readonly port: number;
  readonly url: string;
  /** The operator's ServiceAccount kubeconfig (file) and RestConfig. */
  readonly saKubeconfig: string;
  readonly saConfig: RestConfig;
  /** The username the admission policies match. */
  readonly username: string;
  /** The webhook policy's name (empty when another tool keeps the certificates). */
  readonly webhookPolicyName: string;
  /**
   * Applies both CRDs (server-side, as admin) storing `storage`, converted by the webhook at
   * `url` (default the stack's), and waits until they are Established.
   */
  applyCrds(opts?: { storage?: ApiVersionName; url?: string }): Promise<void>;
  /** Starts the operator in-process as its ServiceAccount, serving the webhook on the stack's port. */
  startOperator(opts?: { ownApiVersion?: ApiVersionName; logEnv?: string }): RunningOperator;
  stop(): Promise<void>;
}

/**
 * Starts the control plane and everything {@link ConversionStack} describes; no operator yet.
 * CONVERSION_CP_LOGS=<dir> keeps the control plane's logs there.
 */
export async function startConversionStack(name: string, opts: { certificates?: CertificateKeeperKind } = {}): Promise<ConversionStack> {
  const certificates = opts.certificates ?? 'operator';
  const cp = await startControlPlane(process.env['CONVERSION_CP_LOGS'] ? { logDir: process.env['CONVERSION_CP_LOGS'] } : {});
  try {
    const ns = await freshNamespace(cp, name);
    const opNs = await freshNamespace(cp, `${name}-op`);
    const port = await freePort();
    const url = `https://127.0.0.1:${port}/convert`;
    const applyCrds = async (opts: { storage?: ApiVersionName; url?: string } = {}) => {
      for (const pair of VERSION_PAIRS) {
        const crd = webhookCrd(pair, opts.url ?? url, opts.storage);
        await kubectlOk(cp, [...SERVER_SIDE_APPLY], JSON.stringify(crd));
      }
      await kubectlOk(cp, ['wait', '--for=condition=Established', '--timeout=60s', ...VERSION_PAIRS.map(([d]) => `crd/${crdName(d)}`)]);
    };
    await applyCrds();
    const chart = new Chart(testApp(), 'conversion');
    new OperatorRbac(chart, 'rbac', {
      operatorNamespace: opNs,
      serviceAccountName: OPERATOR_SA,
      mode: 'namespace',
      watchNamespace: opNs,
      readsClusterIdentity: false,
      userRoles: false,
      conversionWebhook: { secretName: WEBHOOK_SECRET, certificates },
    });
    // As BucketOperator renders them: the webhook's own policy only when the operator writes.
    const policy = new OperatorAdmissionPolicy(chart, 'policy', {
      operatorNamespace: opNs,
      serviceAccountName: OPERATOR_SA,
      ...(certificates === 'operator' ? { conversionWebhook: { secretName: WEBHOOK_SECRET } } : {}),
    });
    const webhookPolicyName = policy.conversionWebhookPolicyName ?? '';
    await kubectlOk(cp, ['create', 'serviceaccount', OPERATOR_SA, '-n', opNs]);
    await kubectlOk(cp, ['apply', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'List', items: Testing.synth(chart) }));
    await waitForSecretPolicy(cp, policy.username, opNs);
    if (certificates === 'operator') {
      await eventually(
        async () => {
          const res = await cp.kubectl([
            'label',
            'crd',
            crdName(v1.StorageBucketDefinition),
            'probe=1',
            '--dry-run=server',
            `--as=${policy.username}`,
          ]);
          return res.stderr.includes(`ValidatingAdmissionPolicy '${webhookPolicyName}'`) ? true : undefined;
        },
        { description: 'the conversion webhook policy to be enforced', timeoutMs: 30_000, intervalMs: 200 },
      );
    }
    const saKubeconfig = await cp.serviceAccountKubeconfig(opNs, OPERATOR_SA, { expirationSeconds: 7200 });
    const saConfig = loadKubeconfig(saKubeconfig);
    return {
      cp,
      ns,
      opNs,
      port,
      url,
      saKubeconfig,
      saConfig,
      username: policy.username,
      webhookPolicyName,
      applyCrds,
      startOperator: (opts = {}) =>
        startOperator({
          restConfig: saConfig,
          logger: createLogger({ level: process.env[opts.logEnv ?? 'CONVERSION_LOG'] === '1' ? 'debug' : 'silent' }),
          leaderElection: false,
          watchNamespace: opNs,
          clusterId: 'conversion-test',
          metricsBindAddress: '0',
          healthProbeBindAddress: '0',
          ownApiVersion: opts.ownApiVersion,
          conversionWebhook: {
            port,
            host: '127.0.0.1',
            namespace: opNs,
            serviceName: 'bucketoperator-webhook',
            secretName: WEBHOOK_SECRET,
            ipAddresses: ['127.0.0.1'],
            certificates,
          },
        }),
      stop: () => cp.stop(),
    };
  } catch (err) {
    await cp.stop();
    throw err;
  }
}
