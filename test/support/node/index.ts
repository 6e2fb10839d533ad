/**
 * A real Kubernetes node beside the local control plane: containerd with runc, the CNI bridge,
 * kubelet, kube-proxy (nftables mode), kube-scheduler and CoreDNS, all on this machine, with an
 * egress guard that keeps every Pod and Service packet on it. Needs root, Linux, the binaries of
 * `npm run build:node`, and a control plane started with `controlPlaneOptionsForNode()`.
 *
 * Only one node runs on a machine at a time (a lock under the cache). Before it changes
 * anything, start writes a journal of everything it may change; stop() undoes it all, and so
 * does the next start when a run crashed.
 */
import { mkdir, readFile, symlink } from 'node:fs/promises';
import { join } from 'node:path';
import { stringify } from 'yaml';
import type { ControlPlane, NodeFacingOptions, StartControlPlaneOptions } from '../control-plane';
import { Component, startWatchdog } from '../control-plane/process';
import { eventually } from '../eventually';
import { cacheRoot, nodeVersions, resolveNodeBinaries, type NodeBinaries, type NodeVersions } from './binaries';
import { createNodeCgroup, inCgroups, nodeCgroupDirs, pidsIn } from './cgroups';
import { cleanUp } from './cleanup';
import { COREDNS, coreDnsManifests } from './coredns';
import { daemonCommands, type NodePorts } from './daemons';
import { counterPackets, GUARD_COUNTERS, GUARD_TABLE, guardRuleset } from './egress-guard';
import { writeNodeFiles } from './files';
import { mounts, mustRun, run, writeSysctl } from './host';
import { cachedArchive, coreDnsImageSpec, pauseImageSpec } from './images';
import { readJournal, removeJournal, writeJournal, type NodeJournal } from './journal';
import { NODE_CGROUP, nodeLayout, type NodeLayout } from './layout';
import { acquireLock, type HeldLock } from './lock';
import { cgroupHierarchies } from './mountinfo';
import { NODE_NETWORK, type NodeNetwork } from './network';
import { freePorts, newJournal, preflight } from './prepare';

export { NODE_NETWORK, type NodeNetwork } from './network';
export { resolveNodeBinaries, type NodeBinaries } from './binaries';

/** The control-plane settings a node needs (pass to `startControlPlane`). */
export function controlPlaneOptionsForNode(network: NodeNetwork = NODE_NETWORK): StartControlPlaneOptions {
  const node: NodeFacingOptions = {
    advertiseAddress: network.gateway,
    serviceClusterIpRange: network.serviceCidr,
    kubernetesServiceIp: network.kubernetesServiceIp,
  };
  return { node };
}

/** Options of {@link startNode}. */
export interface StartNodeOptions {
  /** The Node object's name. @default 'bucketoperator-node' */
  name?: string;
  /** Where daemon logs go; kept after stop() when given. @default `logs` in the node's run directory, removed by stop() */
  logDir?: string;
  /** How long to wait for another node on this machine to stop. @default 0: fail at once */
  lockWaitMs?: number;
  /** Run CoreDNS (cluster DNS). @default true */
  dns?: boolean;
  /** Progress lines (what is being started). @default none */
  log?: (line: string) => void;
  /** Aborting it ends a start that is still waiting; the start then undoes itself and throws. */
  signal?: AbortSignal;
}

/** Resident memory of the node's processes with one command name. */
export interface ProcessMemory {
  readonly command: string;
  readonly processes: number;
  readonly rssBytes: number;
}

/** A running node. */
export interface RunningNode {
  readonly name: string;
  /** The node IP: the bridge's address, where kubelet listens and Pods reach the API server. */
  readonly ip: string;
  readonly network: NodeNetwork;
  /** Directory with containerd.log, kubelet.log, kube-proxy.log, kube-scheduler.log. */
  readonly logDir: string;
  /** containerd's socket (for `ctr --address`). */
  readonly containerdAddress: string;
  /** kubelet's --root-dir: `pods/<uid>/volumes/...` holds what it mounts into each Pod. */
  readonly kubeletRoot: string;
  readonly binaries: NodeBinaries;
  /** Imports an image archive (OCI or docker-archive) into the namespace kubelet uses. */
  importImage(tarPath: string): Promise<void>;
  /** Packets the egress guard has dropped so far (Pod or Service traffic that would have left the machine). */
  egressDrops(): Promise<number>;
  /** Resident memory of every process the node runs (daemons, shims, containers), by command. */
  memory(): Promise<ProcessMemory[]>;
  /** Stops everything and puts the machine back as it was; safe to call more than once. */
  stop(): Promise<void>;
}

const START_TIMEOUT_MS = 120_000;
const DEFAULT_NAME = 'bucketoperator-node';

class LocalNode implements RunningNode {
  readonly ip: string;
  readonly containerdAddress: string;
  readonly kubeletRoot: string;
  private readonly containerd: Component;
  private readonly kubelet: Component;
  private readonly kubeProxy: Component;
  private readonly scheduler: Component;
  private disarmWatchdog: () => void = () => undefined;
  private readonly onExit = (): void => {
    for (const c of this.components()) c.killNow();
    this.disarmWatchdog();
  };
  private stopping: Promise<void> | undefined;
  private signal: AbortSignal | undefined;

  constructor(
    readonly name: string,
    readonly network: NodeNetwork,
    readonly binaries: NodeBinaries,
    readonly logDir: string,
    private readonly versions: NodeVersions,
    private readonly layout: NodeLayout,
    private readonly journal: NodeJournal,
    private readonly lock: HeldLock,
    private readonly cp: ControlPlane,
    private readonly log: (line: string) => void,
    procsFiles: string[],
    private readonly ports: NodePorts,
  ) {
    this.ip = network.gateway;
    this.containerdAddress = layout.containerdAddress;
    this.kubeletRoot = layout.kubeletRoot;
    const [containerd, kubelet, kubeProxy, scheduler] = daemonCommands({ binaries, layout, network, name, ports }).map((d) => {
      // Each joins the node's cgroup before it execs, so whatever it forks is found there.
      const wrapped = inCgroups(procsFiles, d.command, d.args);
      return new Component({
        name: d.name,
        command: 'env',
        args: [`PATH=${d.path}`, wrapped.command, ...wrapped.args],
        logFile: join(logDir, `${d.name}.log`),
        pidDir: layout.pidDir,
      });
    }) as [Component, Component, Component, Component];
    this.containerd = containerd;
    this.kubelet = kubelet;
    this.kubeProxy = kubeProxy;
    this.scheduler = scheduler;
  }

  private components(): Component[] {
    return [this.scheduler, this.kubeProxy, this.kubelet, this.containerd];
  }

  /** Every change to the machine, in order, then the daemons; waits until the node is Ready. */
  async start(dns: boolean, signal: AbortSignal | undefined): Promise<void> {
    this.signal = signal;
    const { layout, network } = this;
    const deadline = Date.now() + START_TIMEOUT_MS;
    const remaining = (): number => Math.max(1000, deadline - Date.now());
    for (const dir of [
      layout.toolsDir,
      layout.pidDir,
      layout.pkiDir,
      layout.configDir,
      layout.containerdRoot,
      layout.containerdState,
      layout.kubeletRoot,
      layout.podLogsDir,
      layout.volumePluginDir,
      layout.cniConfDir,
      layout.cniIpamDir,
      layout.imagesDir,
      this.logDir,
    ]) {
      await mkdir(dir, { recursive: true });
    }
    await symlink(this.binaries.nft, join(layout.toolsDir, 'nft'));
    this.disarmWatchdog = startWatchdog(layout.pidDir, join(layout.runDir, 'watchdog'));
    process.on('exit', this.onExit);

    // The guard comes before the bridge and before forwarding is on: no packet can leave first.
    const apiserverPort = Number(new URL(this.cp.server).port);
    this.log('installing the egress guard');
    await mustRun(this.binaries.nft, ['-f', '-'], { input: guardRuleset({ network, localOnlyTcpPorts: [apiserverPort, this.ports.kubelet] }) });
    this.log(`creating bridge ${network.bridge} with ${network.gateway}/${network.prefixLength}`);
    await mustRun('ip', ['link', 'add', 'name', network.bridge, 'type', 'bridge']);
    await mustRun('ip', ['addr', 'add', `${network.gateway}/${network.prefixLength}`, 'dev', network.bridge]);
    await mustRun('ip', ['link', 'set', network.bridge, 'up']);
    await writeSysctl('net.ipv4.ip_forward', '1');

    await writeNodeFiles({
      cp: this.cp,
      name: this.name,
      network,
      layout,
      binaries: this.binaries,
      ports: this.ports,
      sandboxImage: this.pauseRef(),
    });
    this.log('starting containerd');
    this.containerd.start();
    await eventually(async () => (await run(this.binaries.ctr, ['--address', layout.containerdAddress, 'version'], { timeoutMs: 5000 })).code === 0, {
      description: 'containerd to answer',
      timeoutMs: remaining(),
      intervalMs: 100,
      abortIf: () => this.died(this.containerd),
    });
    const [pause, coredns] = await this.imageArchives();
    await this.importImage(pause);
    if (dns) await this.importImage(coredns);

    this.log('starting kubelet, kube-proxy and kube-scheduler');
    for (const c of [this.kubelet, this.kubeProxy, this.scheduler]) c.start();
    await eventually(
      async () => {
        const res = await this.cp.kubectl(['get', 'node', this.name, '-o', 'jsonpath={.status.conditions[?(@.type=="Ready")].status}']);
        return res.stdout.trim() === 'True';
      },
      { description: `node ${this.name} to be Ready`, timeoutMs: remaining(), intervalMs: 250, abortIf: () => this.died(...this.components()) },
    );
    if (dns) await this.startDns(remaining());
    // The signal was for the start only; stop() must not take an abort as a reason to give up.
    this.signal = undefined;
  }

  private pauseRef(): string {
    return `bucketoperator.local/pause:${this.versions.pauseTag}`;
  }

  private coreDnsRef(): string {
    return `bucketoperator.local/coredns:${this.versions.coredns}`;
  }

  private imageArchives(): Promise<[string, string]> {
    const dir = this.layout.imagesDir;
    return Promise.all([
      cachedArchive(dir, `pause-${this.versions.pauseTag}-${this.versions.kubernetes}.tar`, async () =>
        pauseImageSpec(this.pauseRef(), await readFile(this.binaries.pause)),
      ),
      cachedArchive(dir, `coredns-${this.versions.coredns}.tar`, async () =>
        coreDnsImageSpec(this.coreDnsRef(), await readFile(this.binaries.coredns)),
      ),
    ]);
  }

  private async startDns(timeoutMs: number): Promise<void> {
    this.log('starting CoreDNS');
    const manifests = coreDnsManifests({ network: this.network, image: this.coreDnsRef() });
    const applied = await this.cp.kubectl(['apply', '--server-side', '--field-manager=bucketoperator-node', '-f', '-'], {
      input: manifests.map((m) => stringify(m)).join('---\n'),
    });
    if (applied.code !== 0) throw new Error(`cannot apply the CoreDNS objects: ${applied.stderr.trim()}`);
    await eventually(
      async () => {
        const res = await this.cp.kubectl([
          '-n',
          COREDNS.namespace,
          'get',
          'deployment',
          COREDNS.deployment,
          '-o',
          'jsonpath={.status.availableReplicas}',
        ]);
        return res.stdout.trim() === '1';
      },
      { description: 'CoreDNS to be available', timeoutMs, intervalMs: 250, abortIf: () => this.died(...this.components()) },
    );
  }

  async importImage(tarPath: string): Promise<void> {
    await mustRun(this.binaries.ctr, ['--address', this.layout.containerdAddress, '-n', 'k8s.io', 'images', 'import', '--local', tarPath], {
      timeoutMs: 120_000,
    });
  }

  async egressDrops(): Promise<number> {
    const out = await mustRun(this.binaries.nft, ['-j', 'list', 'counter', GUARD_TABLE.family, GUARD_TABLE.name, GUARD_COUNTERS.egress]);
    return counterPackets(out, GUARD_COUNTERS.egress);
  }

  async memory(): Promise<ProcessMemory[]> {
    const dirs = await nodeCgroupDirs(cgroupHierarchies(await mounts()), NODE_CGROUP);
    const byCommand = new Map<string, { processes: number; rssBytes: number }>();
    for (const pid of await pidsIn(dirs)) {
      try {
        const status = await readFile(`/proc/${pid}/status`, 'utf8');
        const command = /^Name:\s+(.*)$/m.exec(status)?.[1] ?? String(pid);
        const rssKb = Number(/^VmRSS:\s+(\d+)\s+kB$/m.exec(status)?.[1] ?? 0);
        const entry = byCommand.get(command) ?? { processes: 0, rssBytes: 0 };
        byCommand.set(command, { processes: entry.processes + 1, rssBytes: entry.rssBytes + rssKb * 1024 });
      } catch {
        // exited meanwhile
      }
    }
    return [...byCommand.entries()].map(([command, v]) => ({ command, ...v })).sort((a, b) => b.rssBytes - a.rssBytes);
  }

  stop(): Promise<void> {
    this.stopping ??= this.stopAll();
    return this.stopping;
  }

  private async stopAll(): Promise<void> {
    try {
      // While the API server is still up, so a control plane that outlives the node shows no
      // stale Node.
      await this.drain().catch((err: unknown) =>
        this.log(`could not drain the node (${err instanceof Error ? err.message : String(err)}); its Pods are killed`),
      );
      await this.cp.kubectl(['delete', 'node', this.name, '--ignore-not-found', '--wait=false', '--request-timeout=5s']).catch(() => undefined);
      await Promise.all([this.scheduler.stop(5000), this.kubeProxy.stop(5000)]);
      await this.kubelet.stop(5000);
      // Containers outlive containerd (their shims own them); clean-up kills what is left in
      // the node's cgroups.
      await this.containerd.stop(5000);
      this.disarmWatchdog();
      process.off('exit', this.onExit);
      await cleanUp(this.journal, { nft: this.binaries.nft, kubeProxy: this.binaries.kubeProxy });
      await removeJournal(this.layout.journalFile);
    } finally {
      await this.lock.release();
    }
  }

  /**
   * Ends every Pod the way kubelet does (containers stopped, then the sandbox's network torn
   * down by a CNI DEL), so stop() leaves no CNI state behind: cordoned first, or their
   * controllers would place new ones here at once.
   */
  private async drain(): Promise<void> {
    if (!this.kubelet.running || !this.containerd.running) return;
    const kubectl = async (args: string[]): Promise<void> => {
      const res = await this.cp.kubectl([...args, '--request-timeout=5s']);
      if (res.code !== 0) throw new Error(`kubectl ${args[0]} failed: ${res.stderr.trim()}`);
    };
    await kubectl(['cordon', this.name]);
    await kubectl([
      'delete',
      'pods',
      '--all-namespaces',
      `--field-selector=spec.nodeName=${this.name}`,
      '--force',
      '--grace-period=0',
      '--wait=false',
    ]);
    await eventually(
      async () => {
        const veths = JSON.parse(await mustRun('ip', ['-j', 'link', 'show', 'master', this.network.bridge])) as unknown[];
        return veths.length === 0;
      },
      {
        description: 'every Pod network on the node to be torn down',
        timeoutMs: 20_000,
        intervalMs: 200,
        abortIf: () => this.died(this.kubelet, this.containerd),
      },
    );
  }

  /** Why a wait should end early: the start was aborted, or a daemon died. */
  private died(...components: Component[]): string | undefined {
    if (this.signal?.aborted) return 'the start was aborted';
    const dead = components.find((c) => !c.running && c.exited !== undefined);
    return dead ? `${dead.spec.name} ${dead.exited}` : undefined;
  }

  /** The last log lines of daemons that died, or of all when none did. */
  logTails(): string {
    const started = this.components().filter((c) => c.running || c.exited !== undefined);
    const dead = started.filter((c) => !c.running);
    return (dead.length > 0 ? dead : started)
      .map((c) => `==== ${c.spec.name} (${c.exited ?? 'running'}), last lines of ${c.spec.logFile}:\n${c.logTail()}`)
      .join('\n');
  }
}

/**
 * Starts a node that joins `controlPlane` (which must have been started with
 * {@link controlPlaneOptionsForNode}) and resolves once the Node is Ready and, unless
 * `dns: false`, CoreDNS answers. A failed start undoes everything it did before it throws.
 *
 * @throws Error when another node runs on this machine, when not root, when binaries are
 * missing (`npm run build:node`), or with the daemons' last log lines when one fails.
 */
export async function startNode(controlPlane: ControlPlane, opts: StartNodeOptions = {}): Promise<RunningNode> {
  const network = NODE_NETWORK;
  const facing = controlPlane.nodeFacing;
  if (!facing || facing.advertiseAddress !== network.gateway || facing.serviceClusterIpRange !== network.serviceCidr) {
    throw new Error('the control plane was not started for a node: pass controlPlaneOptionsForNode() to startControlPlane()');
  }
  const log = opts.log ?? (() => undefined);
  const [binaries, versions] = await Promise.all([resolveNodeBinaries(), nodeVersions()]);
  const layout = nodeLayout(cacheRoot());
  const lock = await acquireLock(layout.lockFile, opts.lockWaitMs ?? 0);
  const tools = { nft: binaries.nft, kubeProxy: binaries.kubeProxy };
  let journal: NodeJournal | undefined;
  try {
    const leftover = await readJournal(layout.journalFile);
    if (leftover) {
      log(`cleaning up after an earlier node (process ${leftover.ownerPid}, started ${leftover.startedAt})`);
      await cleanUp(leftover, tools);
      await removeJournal(layout.journalFile);
    }
    await preflight(binaries.nft, network);
    journal = await newJournal(layout, network);
    await writeJournal(layout.journalFile, journal);
    // Directories or cgroups of a run whose journal was lost: the journal now names them.
    await cleanUp(journal, tools);
    const procsFiles = await createNodeCgroup(cgroupHierarchies(await mounts()), NODE_CGROUP);
    const [kubelet, kubeletHealthz, proxyHealthz, proxyMetrics, scheduler] = (await freePorts(5)) as [number, number, number, number, number];
    const logDir = opts.logDir ?? join(layout.runDir, 'logs');
    const node = new LocalNode(opts.name ?? DEFAULT_NAME, network, binaries, logDir, versions, layout, journal, lock, controlPlane, log, procsFiles, {
      kubelet,
      kubeletHealthz,
      proxyHealthz,
      proxyMetrics,
      scheduler,
    });
    try {
      await node.start(opts.dns ?? true, opts.signal);
    } catch (err) {
      const logs = node.logTails();
      await node.stop().catch(() => undefined);
      const reason = err instanceof Error ? err.message : String(err);
      throw new Error(`cannot start the node: ${reason}\n${logs}`, { cause: err });
    }
    return node;
  } catch (err) {
    // node.stop() released the lock already when the node got that far; releasing twice is harmless.
    if (journal)
      await cleanUp(journal, tools)
        .then(() => removeJournal(layout.journalFile))
        .catch(() => undefined);
    await lock.release();
    throw err;
  }
}
