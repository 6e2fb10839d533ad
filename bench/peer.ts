/**
 * A second operator measured beside ours: any process given as a start command, such as the
 * controller-runtime peer in ../shared/peers/seed-go. The harness cannot know its flags, so the
 * command is a template whose placeholders it fills per start (see {@link fillTemplate}); the
 * process runs under its own ServiceAccount with the RBAC the peer's README lists, because our
 * admission policy binds only ours.
 */
import { provenancePolicyName } from '../infra/admission-policy';
import type { StorageBucket } from '../operator/api/v1';
import type { ControlPlane } from '../test/support/control-plane';
import { apply, kubectlOk } from '../test/support/kube';
import { startLoggedProcess, type OperatorProcess } from '../test/support/operator-process';
import { freePort } from '../test/support/ports';

/** The values a start command's placeholders stand for. */
export interface PeerPlaceholders {
  readonly kubeconfig: string;
  readonly 'metrics-port': string;
  readonly 'health-port': string;
  readonly 'provider-url': string;
  readonly 'provider-key': string;
  readonly workers: string;
  readonly 'provider-qps': string;
  readonly 'provider-burst': string;
}

/**
 * The seed-go peer's start command: flags from its README, cluster-wide like ours (the
 * Deployment watches every namespace), leader election on like ours, info logs.
 */
export const SEED_GO_TEMPLATE =
  'env PROVIDER_API_KEY={provider-key} {binary} --kubeconfig {kubeconfig} ' +
  '--metrics-bind-address 127.0.0.1:{metrics-port} --health-probe-bind-address 127.0.0.1:{health-port} ' +
  '--leader-elect --leader-election-id bench-peer --leader-election-namespace bench-peer-system ' +
  '--provider-endpoint {provider-url} --provider-qps {provider-qps} --provider-burst {provider-burst} ' +
  '--max-concurrent-reconciles {workers}';

/**
 * Fills `{name}` placeholders; an unknown one is an error, so a typo in a command line fails
 * before anything starts instead of reaching the peer as a literal.
 */
export function fillTemplate(template: string, values: Readonly<Record<string, string>>): string {
  return template.replace(/\{([a-z-]+)\}/g, (whole, name: string) => {
    const v = values[name];
    if (v === undefined) throw new Error(`unknown placeholder ${whole} in the peer command; known: ${Object.keys(values).join(', ')}`);
    return v;
  });
}

/** How a bucket counts as ready for an operator: its Ready condition, or a status.phase value. */
export type ReadyRule = { readonly condition: string } | { readonly phase: string };

/** Parses `condition=Ready` or `phase=Active`. */
export function parseReadyRule(s: string): ReadyRule {
  const m = /^(condition|phase)=(\w+)$/.exec(s.trim());
  if (!m?.[2]) throw new Error(`--peer-ready takes condition=<Type> or phase=<Phase>, not ${JSON.stringify(s)}`);
  return m[1] === 'condition' ? { condition: m[2] } : { phase: m[2] };
}

/** True when `b` is ready by `rule`. */
export function isReady(rule: ReadyRule, b: StorageBucket): boolean {
  if ('phase' in rule) return b.status?.phase === rule.phase;
  return b.status?.conditions?.some((c) => c.type === rule.condition && c.status === 'True') === true;
}

export const PEER_NAMESPACE = 'bench-peer-system';
const PEER_SA = 'peer-operator';

/**
 * The peer's ServiceAccount with the rules its README lists (seed-go: buckets read and
 * updated, status and finalizers updated, configs read, Secrets and Services read, created and
 * patched, Leases and Events for leader election); returns a kubeconfig of it.
 */
export async function peerServiceAccount(cp: ControlPlane): Promise<string> {
  const group = 'storage.avalonhosting.example';
  const manifests = [
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: PEER_NAMESPACE } },
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: PEER_SA, namespace: PEER_NAMESPACE } },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: 'bench-peer' },
      rules: [
        { apiGroups: [group], resources: ['storagebuckets'], verbs: ['get', 'list', 'watch', 'update'] },
        { apiGroups: [group], resources: ['storagebuckets/status', 'storagebuckets/finalizers'], verbs: ['update'] },
        { apiGroups: [group], resources: ['bucketproviderconfigs'], verbs: ['get', 'list', 'watch'] },
        { apiGroups: [''], resources: ['secrets', 'services'], verbs: ['get', 'list', 'watch', 'create', 'patch'] },
        { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'create', 'update'] },
        { apiGroups: ['', 'events.k8s.io'], resources: ['events'], verbs: ['create', 'patch'] },
      ],
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: 'bench-peer' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'bench-peer' },
      subjects: [{ kind: 'ServiceAccount', name: PEER_SA, namespace: PEER_NAMESPACE }],
    },
  ];
  for (const m of manifests) await apply(cp, m);
  // dist/'s provenance policy lets no one but our operator write StorageBucket status or its
  // provenance annotations; the peer is a second operator of the same kinds, so it goes.
  await kubectlOk(cp, ['delete', 'validatingadmissionpolicybinding', provenancePolicyName('bucketoperator-system'), '--ignore-not-found']);
  return cp.serviceAccountKubeconfig(PEER_NAMESPACE, PEER_SA, { expirationSeconds: 86_400 });
}

/**
 * Starts the peer from its command template (through `sh -c exec`, so the pid measured is the
 * peer's own) and waits for its /readyz.
 */
export async function startPeerProcess(
  template: string,
  values: Omit<PeerPlaceholders, 'metrics-port' | 'health-port'>,
  logFile: string,
): Promise<OperatorProcess> {
  const metricsPort = await freePort();
  const healthPort = await freePort();
  const command = fillTemplate(template, { ...values, 'metrics-port': String(metricsPort), 'health-port': String(healthPort) });
  // Through `sh -c exec`, so the pid measured is the peer's own.
  return startLoggedProcess({
    file: '/bin/sh',
    argv: ['-c', `exec ${command}`],
    env: { PATH: process.env['PATH'] ?? '' },
    logFile,
    metricsPort,
    healthPort,
    what: 'the peer',
  });
}
