/**
 * `npm run cluster`: a local control plane and, unless `--no-node`, a real node beside it
 * (containerd, kubelet, kube-proxy, kube-scheduler, CoreDNS) with the operator's image loaded
 * under the name dist/ runs, so `kubectl apply -f dist/` alone starts the operator. In the
 * foreground for poking at by hand; prints the kubeconfig and a line to paste into a shell;
 * Ctrl-C stops it all and puts the machine back as it was.
 *
 *   npm run cluster                              control plane and node (needs root)
 *   npm run cluster -- --image <file.tar>        also load this image archive (repeatable)
 *   npm run cluster -- --no-operator-image       skip `npm run build:oci` and its import
 *   npm run cluster -- --no-node                 control plane only: Pods stay Pending
 */
import { spawn } from 'node:child_process';
import { startControlPlane, type ControlPlane } from './control-plane';
import { controlPlaneOptionsForNode, startNode, type RunningNode } from './node';

const STOP_SIGNALS: NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];
const USAGE = 'usage: npm run cluster [-- [--no-node] [--no-operator-image] [--image <file.tar>]...]';

interface Args {
  node: boolean;
  operatorImage: boolean;
  images: string[];
}

function parseArgs(argv: readonly string[]): Args {
  let node = true;
  let operatorImage = true;
  const images: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--no-node') node = false;
    else if (arg === '--no-operator-image') operatorImage = false;
    else if (arg === '--image' && argv[i + 1] !== undefined) images.push(argv[++i]!);
    else if (arg === '--help' || arg === '-h') {
      console.log(USAGE);
      process.exit(0);
    } else throw new Error(`unknown argument ${arg}\n${USAGE}`);
  }
  if (!node && images.length > 0) throw new Error(`--image needs a node\n${USAGE}`);
  return { node, operatorImage: node && operatorImage, images };
}

/** `npm run build:oci`: the operator's image archive (its last stdout line); progress shows on stderr. */
function buildOperatorImage(): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn('npm', ['run', '--silent', 'build:oci'], { stdio: ['ignore', 'pipe', 'inherit'] });
    let stdout = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.on('error', reject);
    child.on('close', (code) => {
      const path = stdout.trim().split('\n').at(-1);
      if (code === 0 && path) resolve(path);
      else reject(new Error(`npm run build:oci failed (exit ${code}); --no-operator-image starts the cluster without the operator's image`));
    });
  });
}

async function main(): Promise<void> {
  const { node: withNode, operatorImage, images } = parseArgs(process.argv.slice(2));
  // Handlers from the start, so Ctrl-C during a start ends it and still cleans up (the default
  // would exit at once and leave the node's changes for the next start to undo).
  const abort = new AbortController();
  const stopSignal = new Promise<NodeJS.Signals>((resolve) => {
    for (const s of STOP_SIGNALS) {
      process.on(s, () => {
        if (abort.signal.aborted) {
          console.log(`\n${s} again: exiting now; the next start cleans up`);
          process.exit(130);
        }
        abort.abort();
        resolve(s);
      });
    }
  });
  const started = Date.now();
  // Built while the control plane starts; awaited only once the node can take it.
  const operatorArchive = operatorImage ? buildOperatorImage() : undefined;
  operatorArchive?.catch(() => undefined);
  console.log('starting etcd, kube-apiserver and kube-controller-manager ...');
  const cp: ControlPlane = await startControlPlane(withNode ? controlPlaneOptionsForNode() : {});
  let node: RunningNode | undefined;
  try {
    if (withNode && !abort.signal.aborted) {
      console.log('starting the node: containerd, kubelet, kube-proxy, kube-scheduler, CoreDNS ...');
      node = await startNode(cp, { log: (line) => console.log(`  ${line}`), signal: abort.signal });
      if (operatorArchive) images.unshift(await operatorArchive);
      for (const image of images) {
        console.log(`  importing ${image}`);
        await node.importImage(image);
      }
    }
  } catch (err) {
    await node?.stop();
    await cp.stop();
    throw err;
  }
  if (abort.signal.aborted) {
    await node?.stop();
    await cp.stop();
    console.log('stopped before it was ready');
    return;
  }
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  const kubectl = `export KUBECONFIG=${cp.kubeconfigPath}; ${cp.binaries.kubectl}`;
  console.log(`cluster ready in ${seconds}s
  server:     ${cp.server}
  kubeconfig: ${cp.kubeconfigPath}
  logs:       ${cp.logDir}${node ? `, ${node.logDir}` : ''}
${
  node
    ? `  node:       ${node.name} (${node.ip}); Pods ${node.network.podCidr}, Services ${node.network.serviceCidr}, DNS ${node.network.dnsServiceIp}
  images:     no registry is reachable; load an archive with
              ${node.binaries.ctr} --address ${node.containerdAddress} -n k8s.io images import <file.tar>

  ${kubectl} get nodes,pods -A
  kubectl apply -f dist/${operatorImage ? '     (the operator image is loaded)' : '     (after loading the operator image: --no-operator-image skipped it)'}`
    : `  no node (--no-node): Pods stay Pending

  ${kubectl} get ns`
}

Ctrl-C stops it, removes its files and restores the machine.`);

  // The processes do not keep Node alive (so a forgotten stop() cannot hang a test run); here
  // the foreground process must stay until a signal arrives.
  const keepAlive = setInterval(() => undefined, 1 << 30);
  const signal = await stopSignal;
  clearInterval(keepAlive);
  console.log(`\n${signal}: stopping ...`);
  // The node first: it deletes its Node object through the API server.
  await node?.stop();
  await cp.stop();
  console.log('stopped');
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exitCode = 1;
});
