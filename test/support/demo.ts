/**
 * `npm start`, the local demo: a real control plane, the mock provider and the operator (the
 * image's build, started with the Deployment's flags and env, under its own ServiceAccount so
 * RBAC is real), dist/ applied, and a sample BucketProviderConfig, Secret and StorageBucket.
 * Prints how to watch the bucket; Ctrl-C tears everything down. `--once` exits after the
 * sample bucket is Ready (used by the tests).
 */
import { join } from 'node:path';
import { startControlPlane, type ControlPlane } from './control-plane';
import { eventually } from './eventually';
import { apply, bucketManifest, condition, getJson, providerManifests, type BucketJson } from './kube';
import { startStack, type Stack } from './stack';

const NAMESPACE = 'demo';
const BUCKET = 'demo-bucket';
const STOP_SIGNALS: NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];

async function main(): Promise<void> {
  const once = process.argv.includes('--once');
  let cp: ControlPlane | undefined;
  let stack: Stack | undefined;
  const teardown = async () => {
    await stack?.stop();
    await cp?.stop();
  };
  try {
    console.log('starting the control plane (etcd, kube-apiserver, kube-controller-manager) ...');
    cp = await startControlPlane();
    console.log('applying dist/ (CRDs, namespace, RBAC, manager), starting the mock storage provider and the operator under its ServiceAccount ...');
    stack = await startStack(cp, {
      name: 'demo',
      provider: { activationDelayMs: 5000 },
      operator: { pollInterval: '1s' },
      tokenExpirationSeconds: 86_400,
    });
    const { provider, operator } = stack;
    const operatorLog = join(stack.dir, 'operator.log');
    await apply(cp, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NAMESPACE } });
    for (const m of providerManifests(NAMESPACE, provider.url, provider.apiKey, 'default')) await apply(cp, m);
    await apply(cp, bucketManifest(NAMESPACE, BUCKET, { sizeGB: 10, providerRef: { name: 'default' } }));

    const k = `KUBECONFIG=${cp.kubeconfigPath} ${cp.binaries.kubectl}`;
    console.log(`
BucketOperator demo is running.
  kubeconfig:    ${cp.kubeconfigPath}
  provider:      ${provider.url}
  operator log:  ${operatorLog}
  metrics:       ${operator.metricsUrl}

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
        const b = await getJson<BucketJson>(cp!, 'sbucket', BUCKET, NAMESPACE);
        return b && condition(b, 'Ready')?.status === 'True' ? b : undefined;
      },
      { description: `${BUCKET} to be Ready`, timeoutMs: 120_000, intervalMs: 500 },
    );
    console.log(`${BUCKET} is Ready: provider bucket ${ready.status?.id} at ${ready.status?.endpoint}`);
    if (once) return;

    console.log('Ctrl-C stops everything.');
    const keepAlive = setInterval(() => undefined, 1 << 30);
    const signal = await new Promise<NodeJS.Signals>((resolve) => {
      for (const s of STOP_SIGNALS) process.once(s, () => resolve(s));
    });
    clearInterval(keepAlive);
    console.log(`\n${signal}: stopping ...`);
  } finally {
    await teardown();
    console.log('stopped');
  }
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exitCode = 1;
});
