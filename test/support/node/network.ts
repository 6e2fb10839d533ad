/**
 * The addresses of the local node and the CNI configuration that puts Pods on its bridge.
 * Pods and Services live in 100.64.0.0/10 (shared address space): not a private range, so they
 * never collide with a LAN the machine sits on, and any packet from or to them is recognisably
 * the node's own.
 */

/** Where Pods, Services and the node itself sit. */
export interface NodeNetwork {
  /** The Linux bridge every Pod's veth joins (at most 15 characters). */
  readonly bridge: string;
  /** Pod addresses, handed out by the host-local IPAM plugin. */
  readonly podCidr: string;
  /** The bridge's own address: the Pods' gateway, the node IP and the API server's advertised address. */
  readonly gateway: string;
  /** Prefix length of {@link podCidr}, for the bridge's address. */
  readonly prefixLength: number;
  /** Service ClusterIPs (the API server's `--service-cluster-ip-range`). */
  readonly serviceCidr: string;
  /** ClusterIP of the `kubernetes` Service: the first address of {@link serviceCidr}. */
  readonly kubernetesServiceIp: string;
  /** ClusterIP of the cluster DNS Service (kubelet's `clusterDNS`). */
  readonly dnsServiceIp: string;
  /** The DNS domain of Services (`<svc>.<ns>.svc.<clusterDomain>`). */
  readonly clusterDomain: string;
}

/** The one network a node on this machine uses. */
export const NODE_NETWORK: NodeNetwork = {
  bridge: 'bucketop0',
  podCidr: '100.64.0.0/24',
  gateway: '100.64.0.1',
  prefixLength: 24,
  serviceCidr: '100.65.0.0/16',
  kubernetesServiceIp: '100.65.0.1',
  dnsServiceIp: '100.65.0.10',
  clusterDomain: 'cluster.local',
};

/** The name of the CNI network (also the name of its conflist). */
export const CNI_NETWORK_NAME = 'bucketoperator';

/**
 * The CNI conflist containerd hands to the bridge plugin for every Pod sandbox. No `ipMasq`
 * and no `portmap`: nothing may leave the machine, so there is nothing to masquerade towards,
 * and the node offers no host ports. `hairpinMode` lets a Pod reach itself through a Service.
 * IPAM state goes to `ipamDataDir`, inside the node's own directory, instead of /var/lib/cni.
 */
export function cniConfList(network: NodeNetwork, ipamDataDir: string): Record<string, unknown> {
  return {
    cniVersion: '1.0.0',
    name: CNI_NETWORK_NAME,
    plugins: [
      {
        type: 'bridge',
        bridge: network.bridge,
        isGateway: true,
        ipMasq: false,
        hairpinMode: true,
        ipam: {
          type: 'host-local',
          ranges: [[{ subnet: network.podCidr, gateway: network.gateway }]],
          routes: [{ dst: '0.0.0.0/0' }],
          dataDir: ipamDataDir,
        },
      },
    ],
  };
}
