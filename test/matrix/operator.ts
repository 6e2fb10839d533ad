/**
 * The operator of one folder of dist/ (dist/, dist/v2/, dist/v2-stored/, ...) as a local process,
 * started the way that folder's Deployment starts it (test/support/operator-process.ts does the
 * same for dist/ alone), and the route from the API server to its conversion webhook.
 *
 * The test control plane has no kube-proxy, so the webhook Service's ClusterIP leads nowhere.
 * kube-apiserver runs with `--enable-aggregator-routing=true`, which makes it call a Service's
 * endpoints (read from EndpointSlices) instead; without an endpoint-slice controller an
 * EndpointSlice written here names the local process. Endpoint addresses may not be loopback,
 * so it names this machine's address on its default route, where the webhook listens too (it
 * binds every address, as in a Pod). The API server still checks the serving certificate
 * against `<service>.<namespace>.svc`, so the operator's certificate and caBundle are proven
 * exactly as in a cluster.
 */
import { readFileSync } from 'node:fs';
import { networkInterfaces } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import type { ControlPlane } from '../support/control-plane';
import { deploymentIn } from '../support/dist';
import { localInvocation } from '../support/deployment-invocation';
import { buildImage, operatorImageConfig, operatorNode, REPO } from '../support/image';
import { apply } from '../support/kube';
import { fromSource, localFlags, startLoggedProcess, type OperatorProcess } from '../support/operator-process';
import { freePort } from '../support/ports';

/** The namespace, Service and Service port dist/ gives the webhook. */
export const WEBHOOK_SERVICE = { namespace: 'bucketoperator-system', name: 'bucketoperator-webhook', portName: 'webhook' } as const;

/** Options of {@link startFolderOperator}. */
export interface FolderOperatorOptions {
  /** The folder of dist/ whose Deployment is started, e.g. `dist/v2`. */
  readonly folder: string;
  readonly kubeconfig: string;
  readonly logFile: string;
  /** The webhook's port, when the folder's Deployment serves one. */
  readonly webhookPort: number;
}

/** Starts the folder's operator with its Deployment's flags (local ports aside) and waits for /readyz. */
export async function startFolderOperator(opts: FolderOperatorOptions): Promise<OperatorProcess> {
  const deployment = deploymentIn(join(REPO, opts.folder));
  const serves = deployment.spec.template.spec.containers.some((c) => (c.args ?? []).some((a) => a.startsWith('--conversion-webhook-port=')));
  const [metricsPort, healthPort] = [await freePort(), await freePort()];
  const source = fromSource();
  const imageDir = source ? REPO : await buildImage();
  const inv = localInvocation(deployment, operatorImageConfig(), {
    imageDir,
    nodeBinary: operatorNode(),
    flags: localFlags(
      {
        kubeconfig: opts.kubeconfig,
        logFile: opts.logFile,
        pollInterval: '500ms',
        ...(serves ? { flags: { 'conversion-webhook-port': String(opts.webhookPort) } } : {}),
      },
      metricsPort,
      healthPort,
    ),
    fieldRefs: { 'metadata.name': `bucketoperator-matrix-${randomBytes(4).toString('hex')}` },
  });
  const script = source ? ['--import', 'tsx', join(REPO, inv.imageScript.replace(/\.js$/, '.ts'))] : [inv.script];
  return startLoggedProcess({
    file: inv.file,
    argv: [...inv.nodeArgs, ...script, ...inv.args],
    cwd: imageDir,
    env: inv.env,
    logFile: opts.logFile,
    metricsPort,
    healthPort,
    what: `the operator of ${opts.folder}`,
  });
}

/**
 * This machine's IPv4 address on its default route (read from /proc/net/route), else its first
 * non-loopback, non-link-local one: an address an EndpointSlice may name that leads here.
 */
export function hostAddress(): string {
  const interfaces = networkInterfaces();
  const usable = (name: string) =>
    (interfaces[name] ?? []).filter((a) => a.family === 'IPv4' && !a.internal && !a.address.startsWith('169.254.')).map((a) => a.address);
  let routeInterface: string | undefined;
  try {
    routeInterface = readFileSync('/proc/net/route', 'utf8')
      .split('\n')
      .map((line) => line.split('\t'))
      .find((cols) => cols[1] === '00000000')?.[0];
  } catch {
    // Not Linux: fall back to any usable address.
  }
  const address = (routeInterface ? usable(routeInterface) : [])[0] ?? Object.keys(interfaces).flatMap(usable)[0];
  if (!address) throw new Error('this machine has no non-loopback IPv4 address for the webhook EndpointSlice');
  return address;
}

/** Writes the EndpointSlice that sends the API server's webhook calls to `address:port`. */
export async function routeWebhook(cp: ControlPlane, address: string, port: number): Promise<void> {
  await apply(cp, {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: {
      name: `${WEBHOOK_SERVICE.name}-local`,
      namespace: WEBHOOK_SERVICE.namespace,
      labels: {
        'kubernetes.io/service-name': WEBHOOK_SERVICE.name,
        // Not the endpoint-slice controller's (none runs here), so nothing replaces it.
        'endpointslice.kubernetes.io/managed-by': 'bucketoperator-matrix',
      },
    },
    addressType: 'IPv4',
    ports: [{ name: WEBHOOK_SERVICE.portName, port, protocol: 'TCP' }],
    endpoints: [{ addresses: [address], conditions: { ready: true } }],
  });
}
