/**
 * The ingress the manager's Pods take once they serve the conversion webhook: the webhook port
 * from where the API server calls it, the metrics port from the scrapers, nothing else. Without
 * it any Pod of any tenant can reach the webhook, which parses what it is sent.
 *
 * Where the API server's calls come from is cluster-specific, so it is a prop: self-hosted
 * control planes call from the control-plane nodes' addresses, managed ones from a range of the
 * provider's (GKE's control-plane range, EKS's ENIs in the cluster's subnets), and some through
 * an agent Pod (AKS's konnectivity-agent in kube-system). The default admits every address as
 * an ipBlock: a policy that misses the API server fails every v2 read, and a wrong guess is
 * worse than a wide default one prop narrows. How an ipBlock matches depends on the CNI: on
 * most (Calico, kube-router, Antrea, kindnet) it matches any address, Pods included; on Cilium
 * it matches no Pod and, unless `policy-cidr-match-mode: nodes` is set, no node either, so a
 * self-hosted API server there needs that mode (or a CiliumNetworkPolicy `fromEntities:
 * [kube-apiserver]`). NetworkPolicies add up, so another policy can always admit more.
 *
 * The health port gets no rule: the kubelet's probes come from the Pod's own node, which
 * every common CNI (Calico, Cilium, Antrea, OVN-Kubernetes, kube-router) admits whatever the
 * policy says, although the NetworkPolicy API leaves it undefined. Egress is not restricted:
 * the operator calls the API server and every tenant's provider endpoint.
 */
import { isIP } from 'node:net';
import { Construct } from 'constructs';
import { k8s } from 'cdk8s-plus-28';
import { COMMON_LABELS, MANAGER_SELECTOR } from './labels';

/**
 * Where traffic may come from: an address range (with ranges cut out of it), or the Pods a pair
 * of label selectors picks (all Pods of the namespaces `namespaceSelector` picks, narrowed by
 * `podSelector`; `{}` picks every namespace).
 */
export type NetworkPolicySource =
  | { readonly cidr: string; readonly except?: readonly string[] }
  | { readonly namespaceSelector: Readonly<Record<string, string>>; readonly podSelector?: Readonly<Record<string, string>> };

/** Who may reach the manager's Pods once the webhook is on. */
export interface WebhookNetworkPolicyOptions {
  /**
   * Where the API server calls the webhook from; only these reach the webhook port. E.g. the
   * control-plane nodes' range `[{ cidr: '10.0.0.0/24' }]`, GKE's control-plane range, or
   * `[{ namespaceSelector: { 'kubernetes.io/metadata.name': 'kube-system' }, podSelector: {
   * app: 'konnectivity-agent' } }]` where the API server calls through konnectivity.
   * @default every address (`0.0.0.0/0`, `::/0`): see the top of network-policy.ts
   */
  readonly apiServerSources?: readonly NetworkPolicySource[];
  /**
   * Who may scrape `/metrics`. E.g. `[{ namespaceSelector: { 'kubernetes.io/metadata.name':
   * 'monitoring' } }]`.
   * @default every Pod of every namespace (`namespaceSelector: {}`)
   */
  readonly metricsSources?: readonly NetworkPolicySource[];
}

/** Properties of {@link WebhookNetworkPolicy}. */
export interface WebhookNetworkPolicyProps extends WebhookNetworkPolicyOptions {
  /** The operator namespace, where the manager's Pods run. */
  readonly namespace: string;
}

/** The sources admitted to the webhook when none are given: every address. */
export const DEFAULT_API_SERVER_SOURCES: readonly NetworkPolicySource[] = [{ cidr: '0.0.0.0/0' }, { cidr: '::/0' }];

/** The sources admitted to the metrics port when none are given: every Pod. */
export const DEFAULT_METRICS_SOURCES: readonly NetworkPolicySource[] = [{ namespaceSelector: {} }];

/**
 * Container port names of the manager (infra/manager.ts), referred to by name as its Services
 * do, so a port number set by a prop needs no second place to change.
 */
const PORT = { webhook: 'webhook', metrics: 'metrics' } as const;

// Kubernetes label syntax: an optional DNS-subdomain prefix, a name of up to 63 characters.
const LABEL_KEY = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;
const LABEL_VALUE = /^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$/;

/** A NetworkPolicy admitting the webhook and metrics ports to the manager's Pods, and nothing else. */
export class WebhookNetworkPolicy extends Construct {
  constructor(scope: Construct, id: string, props: WebhookNetworkPolicyProps) {
    super(scope, id);
    const apiServerSources = props.apiServerSources ?? DEFAULT_API_SERVER_SOURCES;
    const metricsSources = props.metricsSources ?? DEFAULT_METRICS_SOURCES;
    for (const [name, sources] of [
      ['props.apiServerSources', apiServerSources],
      ['props.metricsSources', metricsSources],
    ] as const) {
      const problem = sourcesProblem(name, sources);
      if (problem) throw new Error(`WebhookNetworkPolicy: ${problem}`);
    }
    const tcp = (name: string): k8s.NetworkPolicyPort => ({ port: k8s.IntOrString.fromString(name), protocol: 'TCP' });
    new k8s.KubeNetworkPolicy(this, 'policy', {
      metadata: { name: 'bucketoperator-controller-manager', namespace: props.namespace, labels: { ...COMMON_LABELS } },
      spec: {
        podSelector: { matchLabels: { ...MANAGER_SELECTOR } },
        // Ingress only: listing it closes every port not named below to other Pods.
        policyTypes: ['Ingress'],
        ingress: [
          { from: apiServerSources.map(peer), ports: [tcp(PORT.webhook)] },
          { from: metricsSources.map(peer), ports: [tcp(PORT.metrics)] },
        ],
      },
    });
  }
}

/**
 * Why `sources` (the prop `name`) cannot be rendered, or undefined when it can: a CIDR that
 * does not parse, a selector entry that is not a label, or no source at all.
 */
export function sourcesProblem(name: string, sources: readonly NetworkPolicySource[]): string | undefined {
  // A rule with an empty `from` admits every source: the opposite of what an empty list says.
  if (sources.length === 0) return `${name} must name at least one source (an empty list would admit every source)`;
  for (const [i, source] of sources.entries()) {
    if ('cidr' in source) {
      const bad = [source.cidr, ...(source.except ?? [])].find((cidr) => !isCidr(cidr));
      if (bad !== undefined) return `${name}[${i}] has an invalid CIDR '${bad}'`;
      continue;
    }
    for (const selector of [source.namespaceSelector, source.podSelector ?? {}]) {
      for (const [key, value] of Object.entries(selector)) {
        if (!LABEL_KEY.test(key) || key.length > 317 || typeof value !== 'string' || !LABEL_VALUE.test(value)) {
          return `${name}[${i}] has an invalid label selector entry '${key}: ${String(value)}'`;
        }
      }
    }
  }
  return undefined;
}

function peer(source: NetworkPolicySource): k8s.NetworkPolicyPeer {
  if ('cidr' in source) return { ipBlock: { cidr: source.cidr, ...(source.except?.length ? { except: [...source.except] } : {}) } };
  return {
    namespaceSelector: { matchLabels: { ...source.namespaceSelector } },
    ...(source.podSelector ? { podSelector: { matchLabels: { ...source.podSelector } } } : {}),
  };
}

/** An IPv4 or IPv6 address with a prefix length in range, e.g. `10.0.0.0/8`. */
function isCidr(value: string): boolean {
  const [address, prefix, ...rest] = value.split('/');
  if (address === undefined || prefix === undefined || rest.length > 0 || !/^\d{1,3}$/.test(prefix)) return false;
  const family = isIP(address);
  return family !== 0 && Number(prefix) <= (family === 4 ? 32 : 128);
}
