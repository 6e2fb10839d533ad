/**
 * Cluster DNS: CoreDNS, built from the Go module proxy with only the plugins it needs, run as a
 * Deployment in kube-system behind the `kube-dns` Service at the fixed ClusterIP kubelet hands
 * to every Pod. It answers for the cluster domain and the reverse zones and nothing else: there
 * is no `forward`, so no query ever leaves the machine.
 */
import type { NodeNetwork } from './network';

/** Where and how cluster DNS runs. */
export interface CoreDnsInputs {
  readonly network: NodeNetwork;
  /** The locally imported CoreDNS image. */
  readonly image: string;
}

/** Namespace and names of the CoreDNS objects. */
export const COREDNS = { namespace: 'kube-system', deployment: 'coredns', service: 'kube-dns', serviceAccount: 'coredns' } as const;

const READY_PORT = 8181;
const HEALTH_PORT = 8080;

/** The Corefile: cluster names from the API (through the `kubernetes` Service), cached. */
export function corefile(network: NodeNetwork): string {
  return `.:53 {
    errors
    health :${HEALTH_PORT}
    ready :${READY_PORT}
    kubernetes ${network.clusterDomain} in-addr.arpa ip6.arpa {
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
        ttl 30
    }
    cache 30
    loadbalance
}
`;
}

/**
 * The objects that run CoreDNS, in apply order: its ServiceAccount and the read-only RBAC the
 * kubernetes plugin needs, the Corefile, the Deployment and the `kube-dns` Service.
 */
export function coreDnsManifests(inputs: CoreDnsInputs): Record<string, unknown>[] {
  const { namespace, deployment, service, serviceAccount } = COREDNS;
  const labels = { 'k8s-app': 'kube-dns' };
  return [
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: serviceAccount, namespace } },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: 'system:coredns' },
      rules: [
        { apiGroups: [''], resources: ['endpoints', 'services', 'pods', 'namespaces'], verbs: ['list', 'watch'] },
        { apiGroups: ['discovery.k8s.io'], resources: ['endpointslices'], verbs: ['list', 'watch'] },
      ],
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: 'system:coredns' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'system:coredns' },
      subjects: [{ kind: 'ServiceAccount', name: serviceAccount, namespace }],
    },
    { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'coredns', namespace }, data: { Corefile: corefile(inputs.network) } },
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: deployment, namespace, labels },
      spec: {
        replicas: 1,
        selector: { matchLabels: labels },
        template: {
          metadata: { labels },
          spec: {
            serviceAccountName: serviceAccount,
            priorityClassName: 'system-cluster-critical',
            // Its own resolver would be itself; it needs none (no `forward`).
            dnsPolicy: 'Default',
            securityContext: { runAsNonRoot: true, runAsUser: 65532, runAsGroup: 65532, seccompProfile: { type: 'RuntimeDefault' } },
            containers: [
              {
                name: 'coredns',
                image: inputs.image,
                imagePullPolicy: 'Never',
                args: ['-conf', '/etc/coredns/Corefile'],
                ports: [
                  { name: 'dns', containerPort: 53, protocol: 'UDP' },
                  { name: 'dns-tcp', containerPort: 53, protocol: 'TCP' },
                ],
                // Port 53 as a non-root user: containerd opens unprivileged ports in every Pod's
                // network namespace (enable_unprivileged_ports, its default).
                securityContext: { allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } },
                resources: { requests: { cpu: '50m', memory: '32Mi' }, limits: { memory: '128Mi' } },
                readinessProbe: { httpGet: { path: '/ready', port: READY_PORT }, periodSeconds: 1, failureThreshold: 3 },
                livenessProbe: { httpGet: { path: '/health', port: HEALTH_PORT }, periodSeconds: 10, failureThreshold: 5 },
                volumeMounts: [{ name: 'config', mountPath: '/etc/coredns', readOnly: true }],
              },
            ],
            volumes: [{ name: 'config', configMap: { name: 'coredns' } }],
          },
        },
      },
    },
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: service, namespace, labels },
      spec: {
        selector: labels,
        clusterIP: inputs.network.dnsServiceIp,
        ports: [
          { name: 'dns', port: 53, targetPort: 53, protocol: 'UDP' },
          { name: 'dns-tcp', port: 53, targetPort: 53, protocol: 'TCP' },
        ],
      },
    },
  ];
}
