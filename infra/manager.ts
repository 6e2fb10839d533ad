/**
 * The operator's runtime footprint: its ServiceAccount, Deployment and metrics Service (the
 * Namespace is a separate part so RBAC can be applied into it before the Deployment). Uses the
 * L1 classes so every security field is explicit; cdk8s-plus defaults (2 replicas, token
 * automount off, 1 CPU requests) do not fit an operator.
 */
import type { CertificateKeeperKind } from '../operator/conversion/rbac';
import { apiVersionProblem, type ApiVersionName } from '../operator/api/version-names';
import type { Duration } from 'cdk8s';
import { Construct } from 'constructs';
import { k8s } from 'cdk8s-plus-28';
import { COMMON_LABELS, MANAGER_SELECTOR } from './labels';
import { DEFAULT_OPERATOR_NAMESPACE } from './namespace';
import { DEFAULT_IMAGE } from './version';

/** Log levels the operator's `--log-level` flag accepts. */
export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

/** CPU and memory as Kubernetes quantities, e.g. `{ cpu: '100m', memory: '128Mi' }`. */
export interface ResourceQuantities {
  /** CPU quantity. */
  readonly cpu?: string;
  /** Memory quantity. */
  readonly memory?: string;
}

/** Requests and limits of the manager container; unset fields keep their default. */
export interface OperatorResources {
  /**
   * Requests.
   * @default { cpu: '50m', memory: '128Mi' }
   */
  readonly requests?: ResourceQuantities;
  /**
   * Limits.
   * @default { cpu: '500m', memory: '256Mi' }
   */
  readonly limits?: ResourceQuantities;
}

/** Default requests and limits: sized from the measured footprint, not the cdk8s-plus defaults. */
export const DEFAULT_RESOURCES = {
  requests: { cpu: '50m', memory: '128Mi' },
  limits: { cpu: '500m', memory: '256Mi' },
} as const;

/** Properties of {@link OperatorManager}. */
export interface OperatorManagerProps {
  /**
   * Namespace to run in; must exist (see OperatorNamespace).
   * @default 'bucketoperator-system'
   */
  readonly namespace?: string;
  /**
   * ServiceAccount name.
   * @default 'bucketoperator-controller-manager'
   */
  readonly serviceAccountName?: string;
  /**
   * Operator image.
   * @default `bucketoperator:<package version>` (DEFAULT_IMAGE)
   */
  readonly image?: string;
  /**
   * Replicas; more than one is safe because only the Lease holder reconciles. More than one are
   * spread over nodes and zones where the cluster has them.
   * @default 1
   */
  readonly replicas?: number;
  /**
   * Namespace to watch; all namespaces when unset (must match the RBAC mode).
   * @default undefined
   */
  readonly watchNamespace?: string;
  /**
   * `--cluster-id`: this cluster's identity in provider buckets' owner tags.
   * @default the operator reads the kube-system namespace's uid
   */
  readonly clusterId?: string;
  /**
   * Port of the Prometheus endpoint.
   * @default 8080
   */
  readonly metricsPort?: number;
  /**
   * Port of /healthz and /readyz.
   * @default 8081
   */
  readonly healthPort?: number;
  /**
   * Reconciles run in parallel per controller.
   * @default 8
   */
  readonly maxConcurrentReconciles?: number;
  /**
   * Run Lease leader election (required for more than one replica).
   * @default true
   */
  readonly leaderElection?: boolean;
  /**
   * Container requests and limits.
   * @default see {@link DEFAULT_RESOURCES}
   */
  readonly resources?: OperatorResources;
  /**
   * Operator log level.
   * @default 'info'
   */
  readonly logLevel?: LogLevel;
  /**
   * Provider calls per second per provider account (endpoint plus API key).
   * @default 20
   */
  readonly providerQps?: number;
  /**
   * Provider call burst per provider account.
   * @default 40
   */
  readonly providerBurst?: number;
  /**
   * Poll interval while a bucket is Provisioning or Resizing.
   * @default Duration.seconds(3)
   */
  readonly pollInterval?: Duration;
  /**
   * Drift check interval once a bucket is Active.
   * @default Duration.minutes(1)
   */
  readonly driftInterval?: Duration;
  /**
   * Allow provider endpoints at link-local and cloud metadata addresses.
   * @default false
   */
  readonly allowLinkLocalEndpoints?: boolean;
  /**
   * Extra labels of the manager's Pods (object labels are set by the caller).
   * @default none
   */
  readonly podLabels?: Readonly<Record<string, string>>;
  /**
   * Serve the CRDs' conversion webhook on every replica: the container port `webhook`, the
   * flags, and a Service `serviceName` (port 443) in front of it; with more than one replica a
   * PodDisruptionBudget keeps one serving through voluntary disruptions.
   * @default off
   */
  readonly conversionWebhook?: ManagerConversionWebhook;
  /**
   * The version of StorageBucket and BucketProviderConfig the operator reads and writes: the
   * CRDs' storage version, so its own work never needs the conversion webhook.
   * @default 'v1'
   */
  readonly apiVersion?: ApiVersionName;
}

/** Where the manager serves the conversion webhook. */
export interface ManagerConversionWebhook {
  /** Container port of the webhook's HTTPS server. */
  readonly port: number;
  /** The Service in front of it (named in the serving certificate). */
  readonly serviceName: string;
  /** The Secret holding the webhook's CA and serving certificate. */
  readonly secretName: string;
  /** Who keeps the Secret and the CRDs' caBundle. @default 'operator' */
  readonly certificates?: CertificateKeeperKind;
}

/** Port of the webhook Service, as the CRDs' clientConfig names it. */
export const WEBHOOK_SERVICE_PORT = 443;

/** ServiceAccount, Deployment and metrics Service of the operator. */
export class OperatorManager extends Construct {
  /** Namespace the operator runs in. */
  public readonly namespace: string;
  /** ServiceAccount the operator runs as. */
  public readonly serviceAccountName: string;

  constructor(scope: Construct, id: string, props: OperatorManagerProps = {}) {
    super(scope, id);
    this.namespace = props.namespace ?? DEFAULT_OPERATOR_NAMESPACE;
    this.serviceAccountName = props.serviceAccountName ?? 'bucketoperator-controller-manager';
    const replicas = props.replicas ?? 1;
    const metricsPort = props.metricsPort ?? 8080;
    const healthPort = props.healthPort ?? 8081;
    const maxConcurrent = props.maxConcurrentReconciles ?? 8;
    const webhook = props.conversionWebhook;
    const apiVersion = props.apiVersion ?? 'v1';
    const badApiVersion = apiVersionProblem('props.apiVersion', apiVersion);
    if (badApiVersion) throw new Error(`OperatorManager: ${badApiVersion}`);
    if (
      webhook &&
      (!Number.isInteger(webhook.port) || webhook.port < 1 || webhook.port > 65535 || [metricsPort, healthPort].includes(webhook.port))
    ) {
      throw new Error(`OperatorManager: props.conversionWebhook.port must be a free port number (not metrics or health), got ${webhook.port}`);
    }
    if (!Number.isInteger(replicas) || replicas < 1) throw new Error(`OperatorManager: props.replicas must be an integer >= 1, got ${replicas}`);
    if (metricsPort === healthPort) throw new Error(`OperatorManager: props.metricsPort and props.healthPort must differ, both are ${metricsPort}`);
    if (!Number.isInteger(maxConcurrent) || maxConcurrent < 1) {
      throw new Error(`OperatorManager: props.maxConcurrentReconciles must be an integer >= 1, got ${maxConcurrent}`);
    }
    const name = 'bucketoperator-controller-manager';
    const labels = { ...COMMON_LABELS, ...MANAGER_SELECTOR };
    const requests = { ...DEFAULT_RESOURCES.requests, ...props.resources?.requests };
    const limits = { ...DEFAULT_RESOURCES.limits, ...props.resources?.limits };

    new k8s.KubeServiceAccount(this, 'service-account', {
      metadata: { name: this.serviceAccountName, namespace: this.namespace, labels: { ...COMMON_LABELS } },
      automountServiceAccountToken: true,
    });

    // Every setting is rendered, defaults included, so the manifest alone tells what runs.
    const args = [
      `--leader-elect=${props.leaderElection ?? true}`,
      `--leader-election-namespace=${this.namespace}`,
      `--metrics-bind-address=0.0.0.0:${metricsPort}`,
      `--health-probe-bind-address=0.0.0.0:${healthPort}`,
      `--max-concurrent-reconciles=${maxConcurrent}`,
      `--poll-interval=${durationFlag(props.pollInterval, 3000)}`,
      `--drift-interval=${durationFlag(props.driftInterval, 60_000)}`,
      `--provider-qps=${props.providerQps ?? 20}`,
      `--provider-burst=${props.providerBurst ?? 40}`,
      `--log-level=${props.logLevel ?? 'info'}`,
      `--allow-link-local-endpoints=${props.allowLinkLocalEndpoints ?? false}`,
      `--api-version=${apiVersion}`,
      ...(props.watchNamespace ? [`--watch-namespace=${props.watchNamespace}`] : []),
      ...(props.clusterId ? [`--cluster-id=${props.clusterId}`] : []),
      ...(webhook
        ? [
            `--conversion-webhook-port=${webhook.port}`,
            `--conversion-webhook-service=${webhook.serviceName}`,
            `--conversion-webhook-secret=${webhook.secretName}`,
            `--conversion-webhook-certificates=${webhook.certificates ?? 'operator'}`,
          ]
        : []),
    ];

    new k8s.KubeDeployment(this, 'deployment', {
      metadata: { name, namespace: this.namespace, labels },
      spec: {
        replicas,
        selector: { matchLabels: { ...MANAGER_SELECTOR } },
        strategy: {
          type: 'RollingUpdate',
          rollingUpdate: { maxUnavailable: k8s.IntOrString.fromNumber(0), maxSurge: k8s.IntOrString.fromNumber(1) },
        },
        template: {
          metadata: { labels: { ...props.podLabels, ...labels }, annotations: { 'kubectl.kubernetes.io/default-container': 'manager' } },
          spec: {
            serviceAccountName: this.serviceAccountName,
            automountServiceAccountToken: true,
            terminationGracePeriodSeconds: 40,
            ...(replicas > 1 ? { topologySpreadConstraints: spreadReplicas() } : {}),
            securityContext: {
              runAsNonRoot: true,
              runAsUser: 65532,
              runAsGroup: 65532,
              fsGroup: 65532,
              seccompProfile: { type: 'RuntimeDefault' },
            },
            containers: [
              {
                name: 'manager',
                image: props.image ?? DEFAULT_IMAGE,
                imagePullPolicy: 'IfNotPresent',
                args,
                env: [
                  { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
                  { name: 'POD_NAMESPACE', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
                  // Node's heap otherwise sizes itself from the host, not the container limit.
                  // A 4 MiB semi-space (V8's default is up to 16 MiB) cuts the converge peak at
                  // 1,000 buckets by 8-10 MiB against 8 MiB on Node 26, as it did on Node 20;
                  // 1 MiB costs 40 % more CPU at 3,000 for no lower peak (bench/README.md). The
                  // old space holds 10,000 buckets at 192.
                  { name: 'NODE_OPTIONS', value: '--max-old-space-size=192 --max-semi-space-size=4' },
                ],
                ports: [
                  { name: 'metrics', containerPort: metricsPort, protocol: 'TCP' },
                  { name: 'health', containerPort: healthPort, protocol: 'TCP' },
                  ...(webhook ? [{ name: 'webhook', containerPort: webhook.port, protocol: 'TCP' }] : []),
                ],
                // Liveness is the process itself (its event loop answers in time), never the API
                // server or the Lease: a restart cures neither. Readiness, /readyz, is what the
                // Services need: with the webhook on, the webhook serving (a certificate loaded,
                // listening, not draining) and nothing of the controller, whose own readiness
                // (informers synced, Lease renewed) is /readyz/controller; without it, the controller's.
                livenessProbe: {
                  httpGet: { path: '/healthz', port: k8s.IntOrString.fromString('health') },
                  initialDelaySeconds: 15,
                  periodSeconds: 20,
                },
                readinessProbe: {
                  httpGet: { path: '/readyz', port: k8s.IntOrString.fromString('health') },
                  initialDelaySeconds: 5,
                  periodSeconds: 10,
                },
                resources: {
                  requests: { cpu: k8s.Quantity.fromString(requests.cpu), memory: k8s.Quantity.fromString(requests.memory) },
                  limits: { cpu: k8s.Quantity.fromString(limits.cpu), memory: k8s.Quantity.fromString(limits.memory) },
                },
                securityContext: {
                  allowPrivilegeEscalation: false,
                  readOnlyRootFilesystem: true,
                  runAsNonRoot: true,
                  capabilities: { drop: ['ALL'] },
                  seccompProfile: { type: 'RuntimeDefault' },
                },
                volumeMounts: [{ name: 'tmp', mountPath: '/tmp' }],
              },
            ],
            volumes: [{ name: 'tmp', emptyDir: { sizeLimit: k8s.Quantity.fromString('64Mi') } }],
          },
        },
      },
    });

    new k8s.KubeService(this, 'metrics-service', {
      metadata: { name: `${name}-metrics`, namespace: this.namespace, labels },
      spec: {
        selector: { ...MANAGER_SELECTOR },
        ports: [{ name: 'metrics', port: metricsPort, targetPort: k8s.IntOrString.fromString('metrics'), protocol: 'TCP' }],
      },
    });

    if (webhook) {
      // Every ready replica serves: /readyz is the webhook's readiness, so a replica without a
      // loaded certificate, or draining at shutdown, gets no conversions, and one whose
      // controller waits for its caches or the Lease still gets them.
      new k8s.KubeService(this, 'webhook-service', {
        metadata: { name: webhook.serviceName, namespace: this.namespace, labels },
        spec: {
          selector: { ...MANAGER_SELECTOR },
          ports: [{ name: 'webhook', port: WEBHOOK_SERVICE_PORT, targetPort: k8s.IntOrString.fromString('webhook'), protocol: 'TCP' }],
        },
      });
      // With one replica a budget of one would block every node drain; with more, the API
      // server keeps a webhook to call while nodes are drained one by one.
      if (replicas > 1) {
        new k8s.KubePodDisruptionBudget(this, 'webhook-pdb', {
          metadata: { name, namespace: this.namespace, labels },
          spec: { minAvailable: k8s.IntOrString.fromNumber(1), selector: { matchLabels: { ...MANAGER_SELECTOR } } },
        });
      }
    }
  }
}

/**
 * Spreads the replicas over nodes and zones, softly (ScheduleAnyway: a one-node cluster still
 * runs them all): one node or zone going away leaves a replica to serve the webhook and take
 * the Lease. `pod-template-hash` counts one revision's Pods only, so a rolling update spreads
 * the new replicas among themselves instead of around the old ones it is about to remove.
 */
function spreadReplicas(): k8s.TopologySpreadConstraint[] {
  return ['kubernetes.io/hostname', 'topology.kubernetes.io/zone'].map((topologyKey) => ({
    topologyKey,
    maxSkew: 1,
    whenUnsatisfiable: 'ScheduleAnyway',
    labelSelector: { matchLabels: { ...MANAGER_SELECTOR } },
    matchLabelKeys: ['pod-template-hash'],
  }));
}

/**
 * A Duration as the operator's duration flag syntax (`500ms`, `3s`, `2m`), in the largest unit
 * that represents it exactly.
 */
export function durationFlag(value: Duration | undefined, fallbackMs: number): string {
  const ms = value === undefined ? fallbackMs : value.toMilliseconds({ integral: false });
  if (ms % 60_000 === 0) return `${ms / 60_000}m`;
  if (ms % 1000 === 0) return `${ms / 1000}s`;
  return `${ms}ms`;
}
