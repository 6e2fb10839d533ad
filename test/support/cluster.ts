/**
 * `npm run cluster`: a local control plane in the foreground for poking at by hand.
 * Prints the kubeconfig and a line to paste into a shell; Ctrl-C stops it.
 */
import { startControlPlane } from './control-plane';

const STOP_SIGNALS: NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];

async function main(): Promise<void> {
  const started = Date.now();
  console.log('starting etcd, kube-apiserver and kube-controller-manager ...');
  const cp = await startControlPlane();
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  console.log(`control plane ready in ${seconds}s
  server:     ${cp.server}
  kubeconfig: ${cp.kubeconfigPath}
  logs:       ${cp.logDir}

  export KUBECONFIG=${cp.kubeconfigPath}; ${cp.binaries.kubectl} get ns

Ctrl-C stops it and removes its files.`);

  // The control-plane processes do not keep Node alive (so a forgotten stop() cannot hang a
  // test run); here the foreground process must stay until a signal arrives.
  const keepAlive = setInterval(() => undefined, 1 << 30);
  const signal = await new Promise<NodeJS.Signals>((resolve) => {
    for (const s of STOP_SIGNALS) process.once(s, () => resolve(s));
  });
  clearInterval(keepAlive);
  console.log(`\n${signal}: stopping the control plane ...`);
  await cp.stop();
  console.log('stopped');
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exitCode = 1;
});
