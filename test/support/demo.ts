/**
 * `npm start`, the local demo, as a user's cluster runs the operator: a real control plane and a
 * real node, the operator's and the mock provider's images loaded into it, the provider as a Pod
 * behind a Service, `kubectl apply -f dist/` (so the operator runs as the Pod dist/ describes,
 * under its own ServiceAccount, RBAC and admission policy), and a sample BucketProviderConfig,
 * Secret and StorageBucket. Prints how to watch the bucket; Ctrl-C tears everything down and puts
 * the machine back as it was.
 *
 *   npm start                   control plane and node (needs root, as the node does)
 *   npm start -- --no-node      control plane only: the operator and the provider run as
 *                               processes on this machine (the image's build, started with the
 *                               Deployment's flags and env, under the operator's token)
 *   npm start -- --once         exit once the sample bucket is Ready (the tests)
 */
import { join } from 'node:path';
import { startControlPlane, type ControlPlane } from './control-plane';
import { eventually } from './eventually';
import { applyDistFolder, buildImages, deployProvider, operatorDeployment, tenantNamespace } from './in-cluster';
import { apply, bucketManifest, condition, getJson, providerManifests, type BucketJson } from './kube';
import { controlPlaneOptionsForNode, startNode, type RunningNode } from './node';
import { startStack, type Stack } from './stack';

const NAMESPACE = 'demo';
const BUCKET = 'demo-bucket';
const CONFIG = 'default';
const STOP_SIGNALS: NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];
const USAGE = 'usage: npm start [-- [--no-node] [--once]]';

/** What runs beside the control plane. */
interface Running {
  /** Lines for the banner: where to look. */
  readonly where: string[];
  stop(): Promise<void>;
}

/** The operator and the provider as Pods on a node, dist/ applied unchanged. */
async function onNode(cp: ControlPlane, signal: AbortSignal): Promise<Running> {
  // Built while the node starts; awaited once it can take them.
  const images = buildImages();
  images.catch(() => undefined);
  console.log('starting the node: containerd, kubelet, kube-proxy, kube-scheduler, CoreDNS ...');
  const node: RunningNode = await startNode(cp, { log: (line) => console.log(`  ${line}`), signal });
  try {
    const { provider: providerArchive, operator: operatorArchive } = await images;
    console.log('loading the operator and provider images into the node ...');
    await node.importImage(providerArchive);
    await node.importImage(operatorArchive);
    console.log('starting the mock storage provider behind a Service ...');
    const provider = await deployProvider(cp, { activationDelayMs: 5000 });
    console.log('kubectl apply -f dist/ and kubectl rollout status ...');
    await applyDistFolder(cp);
    await tenantNamespace(cp, NAMESPACE, provider, CONFIG);
    const op = operatorDeployment();
    return {
      where: [
        `node:          ${node.name} (${node.ip}); node logs in ${node.logDir}`,
        `provider:      ${provider.endpoint} (a Pod behind a Service)`,
        `operator:      kubectl -n ${op.namespace} logs deployment/${op.name}`,
      ],
      stop: () => node.stop(),
    };
  } catch (err) {
    await node.stop();
    throw err;
  }
}

/** The operator and the provider as processes on this machine (`--no-node`). */
async function onHost(cp: ControlPlane): Promise<Running> {
  console.log('applying dist/ (CRDs, namespace, RBAC, manager), starting the mock storage provider and the operator under its ServiceAccount ...');
  const stack: Stack = await startStack(cp, {
    name: 'demo',
    provider: { activationDelayMs: 5000 },
    operator: { pollInterval: '1s' },
    tokenExpirationSeconds: 86_400,
  });
  await apply(cp, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NAMESPACE } });
  for (const m of providerManifests(NAMESPACE, stack.provider.url, stack.provider.apiKey, CONFIG)) await apply(cp, m);
  return {
    where: [
      `provider:      ${stack.provider.url}`,
      `operator log:  ${join(stack.dir, 'operator.log')}`,
      `metrics:       ${stack.operator.metricsUrl}`,
    ],
    stop: () => stack.stop(),
  };
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  for (const a of args) if (a !== '--once' && a !== '--no-node') throw new Error(`unknown argument ${a}\n${USAGE}`);
  const once = args.includes('--once');
  const withNode = !args.includes('--no-node');
  const abort = new AbortController();
  const stopSignal = new Promise<NodeJS.Signals>((resolve) => {
    for (const s of STOP_SIGNALS)
      process.once(s, () => {
        abort.abort();
        resolve(s);
      });
  });
  let cp: ControlPlane | undefined;
  let running: Running | undefined;
  try {
    console.log('starting the control plane (etcd, kube-apiserver, kube-controller-manager) ...');
    cp = await startControlPlane(withNode ? controlPlaneOptionsForNode() : {});
    running = withNode ? await onNode(cp, abort.signal) : await onHost(cp);
    await apply(cp, bucketManifest(NAMESPACE, BUCKET, { sizeGB: 10, providerRef: { name: CONFIG } }));

    const k = `KUBECONFIG=${cp.kubeconfigPath} ${cp.binaries.kubectl}`;
    console.log(`
BucketOperator demo is running.
  kubeconfig:    ${cp.kubeconfigPath}
  kubectl:       ${cp.binaries.kubectl}
${running.where.map((l) => `  ${l}`).join('\n')}

Watch the sample bucket go Ready (about 5 s at the provider):
  ${k} get sbucket -n ${NAMESPACE} -w
  ${k} wait --for=condition=Ready sbucket/${BUCKET} -n ${NAMESPACE} --timeout=60s
  ${k} get secret ${BUCKET}-access -n ${NAMESPACE} -o yaml
Resize it, then delete it:
  ${k} patch sbucket ${BUCKET} -n ${NAMESPACE} --type=merge -p '{"spec":{"sizeGB":20}}'
  ${k} delete sbucket ${BUCKET} -n ${NAMESPACE}
`);
    const ready = await eventually(
      async () => {
        const b = await getJson<BucketJson>(cp!, 'storagebuckets.v1.storage.avalonhosting.example', BUCKET, NAMESPACE);
        return b && condition(b, 'Ready')?.status === 'True' ? b : undefined;
      },
      { description: `${BUCKET} to be Ready`, timeoutMs: 120_000, intervalMs: 500 },
    );
    console.log(`${BUCKET} is Ready: provider bucket ${ready.status?.id} at ${ready.status?.endpoint}`);
    if (once) return;

    console.log('Ctrl-C stops everything.');
    const keepAlive = setInterval(() => undefined, 1 << 30);
    const signal = await stopSignal;
    clearInterval(keepAlive);
    console.log(`\n${signal}: stopping ...`);
  } finally {
    // The node first: it deletes its Node object through the API server.
    await running?.stop();
    await cp?.stop();
    console.log('stopped');
  }
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exitCode = 1;
});
