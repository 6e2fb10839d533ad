/**
 * `BucketOperator`: everything a cluster needs to run the operator, as one construct a cdk8s
 * app adds to any chart. dist/ is this construct's default rendering (see app.ts), so the YAML
 * a GitOps user applies and the construct a cdk8s user adds cannot drift apart.
 */
import { apiVersionProblem, type ApiVersionName } from '../operator/api/version-names';
import { OperatorStorageMigration } from './storage-migration';
import {
  DEFAULT_KUBERNETES_VERSION,
  kubernetesVersionProblem,
  parseKubernetesVersion,
  storageMigrationPlan,
  type StorageMigrationPlan,
} from './kubernetes-versions';
import { WebhookCertificates, type CertManagerIssuerRef } from './cert-manager';
import { ApiObject, JsonPatch, type Duration } from 'cdk8s';
import { Construct } from 'constructs';
import { CLUSTER_ID_PATTERN } from '../operator/api/v1';
import { OperatorAdmissionPolicy } from './admission-policy';
import { OperatorCrds } from './crds';
import { MANAGER_SELECTOR } from './labels';
import { OperatorManager, WEBHOOK_SERVICE_PORT, type LogLevel, type OperatorResources } from './manager';
import { sourcesProblem, WebhookNetworkPolicy, type WebhookNetworkPolicyOptions } from './network-policy';
import { DEFAULT_WEBHOOK_SECRET, DEFAULT_WEBHOOK_SERVICE } from '../operator/conversion/rbac';
import { DEFAULT_OPERATOR_NAMESPACE, OperatorNamespace } from './namespace';
import { OperatorRbac, type RbacMode } from './rbac';

/** Where the operator watches: every namespace, or one. */
export type OperatorMode = RbacMode;

/** Properties of {@link BucketOperator}. */
export interface BucketOperatorProps {
  /**
   * Ship the ValidatingAdmissionPolicy that confines the operator's ServiceAccount to the
   * Secrets and Services it owns (and the in-use finalizer on credential Secrets). Turn it
   * off only where admission policies are managed elsewhere.
   * @default true
   */
  readonly admissionPolicy?: boolean;
  /**
   * Namespace the operator runs in. The chart's namespace is deliberately not used: most of
   * what this construct renders is cluster-scoped, and a chart's namespace usually names the
   * users' namespace, not the operator's.
   * @default 'bucketoperator-system'
   */
  readonly namespace?: string;
  /**
   * Render the Namespace object (labelled for Pod Security `restricted`). Turn it off when the
   * namespace is created elsewhere.
   * @default true
   */
  readonly createNamespace?: boolean;
  /**
   * Operator image.
   * @default `bucketoperator:<package version>` (DEFAULT_IMAGE)
   */
  readonly image?: string;
  /**
   * Manager replicas; more than one needs `leaderElection`, since only the Lease holder may
   * reconcile.
   * @default 1
   */
  readonly replicas?: number;
  /**
   * `cluster`: watch all namespaces with a ClusterRole; `namespace`: watch only
   * `watchNamespace`, with a Role there.
   * @default 'cluster'
   */
  readonly mode?: OperatorMode;
  /**
   * The namespace to watch; required in `namespace` mode and refused in `cluster` mode.
   * @default undefined
   */
  readonly watchNamespace?: string;
  /**
   * Lease leader election.
   * @default true
   */
  readonly leaderElection?: boolean;
  /**
   * Requests and limits of the manager container; unset fields keep their default.
   * @default requests 50m CPU / 128Mi, limits 500m CPU / 256Mi
   */
  readonly resources?: OperatorResources;
  /**
   * Operator log level.
   * @default 'info'
   */
  readonly logLevel?: LogLevel;
  /**
   * Provider calls per second, per provider endpoint (a positive integer).
   * @default 20
   */
  readonly providerQps?: number;
  /**
   * Provider call burst, per provider endpoint (a positive integer).
   * @default 40
   */
  readonly providerBurst?: number;
  /**
   * How often a bucket is polled while Provisioning or Resizing.
   * @default Duration.seconds(3)
   */
  readonly pollInterval?: Duration;
  /**
   * How often an Active bucket is checked for drift at the provider.
   * @default Duration.minutes(1)
   */
  readonly driftInterval?: Duration;
  /**
   * Reconciles run in parallel (a positive integer).
   * @default 8
   */
  readonly maxConcurrentReconciles?: number;
  /**
   * Let BucketProviderConfigs point at link-local addresses (169.254.0.0/16, fe80::/10) and
   * cloud metadata services (169.254.169.254, metadata.google.internal, ...). Off, a config
   * cannot make the operator send its API key, or fetch, from the node's metadata service.
   * @default false
   */
  readonly allowLinkLocalEndpoints?: boolean;
  /**
   * This cluster's identity in the provider buckets' owner tags (`--cluster-id`). Unset, the
   * operator reads the uid of the `kube-system` namespace at start, through a ClusterRole
   * narrowed to that one object; set, that ClusterRole is not rendered (a namespace-mode
   * install then needs no cluster-scoped permission at all). A cluster that replaces one gone
   * for good sets the old cluster's identity to manage its buckets.
   * @default the kube-system namespace's uid
   */
  readonly clusterId?: string;
  /**
   * Also render the aggregated `bucketoperator-editor`/`-viewer` ClusterRoles, so namespace
   * admins, editors and viewers may use the custom resources.
   * @default true
   */
  readonly userRoles?: boolean;
  /**
   * Extra labels for every object and the manager's Pods. The selector keys
   * `app.kubernetes.io/name` and `app.kubernetes.io/component` are refused.
   * @default none
   */
  readonly labels?: Readonly<Record<string, string>>;
  /**
   * Serve v2 of both kinds beside v1 (v1 stays the storage version, so the upgrade can be
   * rolled back), converted by the operator's own webhook: every replica serves it over HTTPS
   * behind a Service, the operator makes and rotates its CA and serving certificate in a Secret
   * and injects the caBundle into the two CRDs. RBAC and the admission policy grant exactly
   * that. Replicas default to 2 and a PodDisruptionBudget keeps one serving: with the webhook
   * down, v2 reads fail (v1 and the operator's own work do not need it).
   * @default off: v1 only
   */
  readonly conversionWebhook?: ConversionWebhookProps;
  /**
   * The Kubernetes minor (`1.36`, or a release such as `v1.36.3`) of the cluster this rendering
   * is applied to; the oldest one when it goes to several. What a minor cannot serve is left out
   * or refused: below 1.37 no StorageVersionMigration is rendered (its API is in-tree from 1.37)
   * and the stored objects are rewritten as docs/v2.md describes, an explicit
   * `conversionWebhook.migrateStorage: true` is refused there, and so is a minor older than the
   * oldest supported one (docs/reference/kubernetes-versions.md).
   * @default '1.37' (DEFAULT_KUBERNETES_VERSION, the newest supported minor; dist/ is rendered for it)
   */
  readonly kubernetesVersion?: string;
}

/** Settings of the conversion webhook (see {@link BucketOperatorProps.conversionWebhook}). */
export interface ConversionWebhookProps {
  /**
   * Container port of the webhook's HTTPS server.
   * @default 9443
   */
  readonly port?: number;
  /**
   * The Service in front of the webhook, in the operator namespace.
   * @default 'bucketoperator-webhook'
   */
  readonly serviceName?: string;
  /**
   * The Secret, in the operator namespace, holding the CA and serving certificate.
   * @default 'bucketoperator-webhook-cert'
   */
  readonly secretName?: string;
  /**
   * The version the API server stores. v1 keeps a rollback to v1 alone possible; v2 also
   * switches the operator to reading and writing v2 (`--api-version`), so its own work never
   * goes through the webhook. See docs/v2.md, "Storing v2", for the order.
   * @default 'v1'
   */
  readonly storageVersion?: ApiVersionName;
  /**
   * Render a StorageVersionMigration per CRD (named after `storageVersion`), which rewrites
   * every stored object in `storageVersion` and trims the CRDs' `status.storedVersions`. Needs
   * Kubernetes 1.37 (`kubernetesVersion`): on older minors the default renders none, and `true`
   * is refused.
   * @default true when storageVersion is v2 and kubernetesVersion is 1.37 or later, else false
   */
  readonly migrateStorage?: boolean;
  /**
   * Let cert-manager keep the certificates instead of the operator: renders a serving
   * Certificate for the webhook Secret (and, without `issuerRef`, a CA of its own from a
   * self-signed Issuer), annotates the CRDs for cert-manager's cainjector, and the operator
   * then only reads the Secret (RBAC: get/list/watch of it, nothing on the CRDs, no webhook
   * admission policy). Needs cert-manager with its cainjector in the cluster.
   * @default off: the operator makes, rotates and injects them
   */
  readonly certManager?: { readonly issuerRef?: CertManagerIssuerRef };
  /**
   * The NetworkPolicy in front of the manager's Pods: the webhook port only from
   * `apiServerSources`, the metrics port only from `metricsSources`, no other ingress (the
   * kubelet's probes are admitted by the CNI, not by the policy). `false` renders none, where
   * policies are kept elsewhere.
   * @default rendered, with the defaults of WebhookNetworkPolicyOptions (the webhook port from
   * every address: narrow `apiServerSources` to where your API server calls from)
   */
  readonly networkPolicy?: false | WebhookNetworkPolicyOptions;
}

/** Kinds without a namespace; cdk8s would otherwise stamp the chart's namespace onto them. */
const CLUSTER_SCOPED_KINDS: ReadonlySet<string> = new Set([
  'CustomResourceDefinition',
  'Namespace',
  'ClusterRole',
  'ClusterRoleBinding',
  'ValidatingAdmissionPolicy',
  'ValidatingAdmissionPolicyBinding',
  'StorageVersionMigration',
]);

/** ServiceAccount of the manager; fixed, since RoleBindings and docs name it. */
const DEFAULT_SERVICE_ACCOUNT = 'bucketoperator-controller-manager';

const MODES: readonly OperatorMode[] = ['cluster', 'namespace'];
const LOG_LEVELS: readonly LogLevel[] = ['debug', 'info', 'warn', 'error'];
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const QUANTITY = /^(\d+(\.\d+)?|\.\d+)(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$/;
// Kubernetes label syntax: an optional DNS-subdomain prefix, a name of up to 63 characters.
const LABEL_KEY = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;
const LABEL_VALUE = /^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$/;

/**
 * The operator, installed: CRDs, Namespace, RBAC, ServiceAccount, Deployment and metrics
 * Service. Works in a chart with or without a namespace: cluster-scoped objects never get one.
 */
export class BucketOperator extends Construct {
  /** Namespace the operator runs in. */
  public readonly namespace: string;
  /** ServiceAccount the operator runs as. */
  public readonly serviceAccountName: string;
  // The parts are typed as plain Constructs on purpose: the part classes' props name the
  // operator's API types, and exposing them would pull @kubernetes/client-node's declarations
  // into every consumer's compile. Construct is enough to place a part or depend on it.
  /** The CustomResourceDefinitions. */
  public readonly crds: Construct;
  /** The Namespace, unless `createNamespace` is false. */
  public readonly operatorNamespace?: Construct;
  /** Roles, ClusterRoles and their bindings. */
  public readonly rbac: Construct;
  /** The ValidatingAdmissionPolicy and its binding, unless `admissionPolicy` is false. */
  public readonly admissionPolicy?: Construct;
  /** ServiceAccount, Deployment and metrics Service (and the webhook's Service, budget and NetworkPolicy when it is on). */
  public readonly manager: Construct;
  /** The NetworkPolicy of the manager's Pods (in the manager part), when the conversion webhook is on. */
  public readonly networkPolicy?: Construct;
  /** The StorageVersionMigrations, when `conversionWebhook.migrateStorage` is on. */
  public readonly storageMigration?: Construct;

  constructor(scope: Construct, id: string, props: BucketOperatorProps = {}) {
    super(scope, id);
    validate(props);
    this.namespace = props.namespace ?? DEFAULT_OPERATOR_NAMESPACE;
    const mode = props.mode ?? 'cluster';
    this.serviceAccountName = DEFAULT_SERVICE_ACCOUNT;

    const webhook = props.conversionWebhook
      ? {
          port: props.conversionWebhook.port ?? 9443,
          serviceName: props.conversionWebhook.serviceName ?? DEFAULT_WEBHOOK_SERVICE,
          secretName: props.conversionWebhook.secretName ?? DEFAULT_WEBHOOK_SECRET,
          certificates: props.conversionWebhook.certManager ? ('external' as const) : ('operator' as const),
        }
      : undefined;
    const certificates =
      webhook && props.conversionWebhook?.certManager
        ? new WebhookCertificates(this, 'webhook-certificates', {
            namespace: this.namespace,
            serviceName: webhook.serviceName,
            secretName: webhook.secretName,
            issuerRef: props.conversionWebhook.certManager.issuerRef,
          })
        : undefined;
    const storageVersion = props.conversionWebhook?.storageVersion ?? 'v1';
    this.crds = new OperatorCrds(
      this,
      'crds',
      webhook
        ? {
            conversionWebhook: { service: { namespace: this.namespace, name: webhook.serviceName, port: WEBHOOK_SERVICE_PORT } },
            storageVersion,
            ...(certificates ? { injectCaFrom: certificates.injectCaFrom } : {}),
          }
        : {},
    );
    if (migrationPlanOf(props).kind === 'storage-version-migration') {
      this.storageMigration = new OperatorStorageMigration(this, 'storage-migration', {
        version: storageVersion,
        ...(props.kubernetesVersion === undefined ? {} : { kubernetesVersion: props.kubernetesVersion }),
      });
    }
    if (props.createNamespace ?? true) {
      this.operatorNamespace = new OperatorNamespace(this, 'namespace', { name: this.namespace });
    }
    // RBAC before the manager, so a single-file rendering applies the permissions first.
    this.rbac = new OperatorRbac(this, 'rbac', {
      operatorNamespace: this.namespace,
      serviceAccountName: this.serviceAccountName,
      mode,
      watchNamespace: props.watchNamespace,
      userRoles: props.userRoles,
      // With the identity given, nothing cluster-scoped is read.
      readsClusterIdentity: props.clusterId === undefined,
      ...(webhook ? { conversionWebhook: { secretName: webhook.secretName, certificates: webhook.certificates } } : {}),
    });
    // In force before the manager starts, so the operator never runs unconfined.
    if (props.admissionPolicy ?? true) {
      this.admissionPolicy = new OperatorAdmissionPolicy(this, 'admission-policy', {
        operatorNamespace: this.namespace,
        serviceAccountName: this.serviceAccountName,
        watchNamespace: props.watchNamespace,
        // With cert-manager keeping them the operator writes neither the Secret nor the CRDs,
        // so the main policy covers that Secret like any other.
        ...(webhook?.certificates === 'operator' ? { conversionWebhook: { secretName: webhook.secretName } } : {}),
      });
    }
    this.manager = new OperatorManager(this, 'manager', {
      namespace: this.namespace,
      serviceAccountName: this.serviceAccountName,
      image: props.image,
      replicas: replicasOf(props),
      ...(webhook ? { conversionWebhook: webhook } : {}),
      apiVersion: storageVersion,
      watchNamespace: props.watchNamespace,
      leaderElection: props.leaderElection,
      resources: props.resources,
      logLevel: props.logLevel,
      providerQps: props.providerQps,
      providerBurst: props.providerBurst,
      pollInterval: props.pollInterval,
      driftInterval: props.driftInterval,
      maxConcurrentReconciles: props.maxConcurrentReconciles,
      allowLinkLocalEndpoints: props.allowLinkLocalEndpoints,
      clusterId: props.clusterId,
      podLabels: props.labels,
    });
    const policy = props.conversionWebhook?.networkPolicy;
    if (webhook && policy !== false) {
      // Under the manager, so it is rendered with (and applied beside) the Pods it guards.
      this.networkPolicy = new WebhookNetworkPolicy(this.manager, 'network-policy', { namespace: this.namespace, ...policy });
    }

    // Done once over the whole subtree rather than in each part, so a part added later
    // (and parts whose internals belong to other files) get the same treatment.
    for (const obj of this.node.findAll().filter(ApiObject.isApiObject)) {
      for (const [key, value] of Object.entries(props.labels ?? {})) obj.metadata.addLabel(key, value);
      if (CLUSTER_SCOPED_KINDS.has(obj.kind) && obj.metadata.namespace !== undefined) {
        obj.addJsonPatch(JsonPatch.remove('/metadata/namespace'));
      }
    }
  }
}

/** Manager replicas: as given, else two with the conversion webhook (one can go while the other answers), else one. */
function replicasOf(props: BucketOperatorProps): number {
  return props.replicas ?? (props.conversionWebhook ? 2 : 1);
}

/** How the stored objects are rewritten after a storage flip, for the props' Kubernetes minor (props already validated). */
function migrationPlanOf(props: BucketOperatorProps): StorageMigrationPlan {
  const kubernetes = parseKubernetesVersion(props.kubernetesVersion ?? DEFAULT_KUBERNETES_VERSION);
  if (!kubernetes) throw new Error(`BucketOperator: props.kubernetesVersion '${String(props.kubernetesVersion)}' is not a Kubernetes version`);
  return storageMigrationPlan({
    kubernetes,
    storageVersion: props.conversionWebhook?.storageVersion ?? 'v1',
    migrateStorage: props.conversionWebhook?.migrateStorage,
  });
}

/** Refuses props the operator or the API server would reject, naming the prop. */
function validate(props: BucketOperatorProps): void {
  const fail = (message: string): never => {
    throw new Error(`BucketOperator: ${message}`);
  };
  const badKubernetes =
    props.kubernetesVersion === undefined ? undefined : kubernetesVersionProblem('props.kubernetesVersion', props.kubernetesVersion);
  if (badKubernetes) fail(badKubernetes);
  const mode = props.mode ?? 'cluster';
  if (!MODES.includes(mode)) fail(`props.mode must be 'cluster' or 'namespace', got '${String(mode)}'`);
  const namespace = props.namespace ?? DEFAULT_OPERATOR_NAMESPACE;
  if (!isDnsLabel(namespace)) fail(`props.namespace must be a DNS label, got '${namespace}'`);
  if (mode === 'namespace') {
    if (!props.watchNamespace) fail("props.watchNamespace is required when props.mode is 'namespace'");
    else if (!isDnsLabel(props.watchNamespace)) fail(`props.watchNamespace must be a DNS label, got '${props.watchNamespace}'`);
  } else if (props.watchNamespace !== undefined) {
    fail("props.watchNamespace is only valid when props.mode is 'namespace'");
  }
  if (props.image !== undefined && props.image.trim() === '') fail('props.image must not be empty');
  if (props.clusterId !== undefined && !CLUSTER_ID_PATTERN.test(props.clusterId)) {
    fail(`props.clusterId must be 1-63 characters of A-Za-z0-9._- starting with a letter or digit, got '${props.clusterId}'`);
  }

  const replicas = replicasOf(props);
  positiveInteger('props.replicas', replicas, fail);
  const webhook = props.conversionWebhook;
  if (webhook) {
    if (
      webhook.port !== undefined &&
      (!Number.isInteger(webhook.port) || webhook.port < 1024 || webhook.port > 65535 || [8080, 8081].includes(webhook.port))
    ) {
      fail(`props.conversionWebhook.port must be an integer from 1024 to 65535 other than 8080 and 8081 (metrics, health), got ${webhook.port}`);
    }
    for (const key of ['serviceName', 'secretName'] as const) {
      const v = webhook[key];
      if (v !== undefined && !isDnsLabel(v)) fail(`props.conversionWebhook.${key} must be a DNS label, got '${v}'`);
    }
    const issuer = webhook.certManager?.issuerRef;
    if (
      issuer &&
      (!isDnsSubdomain(issuer.name) ||
        (issuer.kind !== undefined && !['Issuer', 'ClusterIssuer'].includes(issuer.kind) && issuer.group === undefined))
    ) {
      fail(
        `props.conversionWebhook.certManager.issuerRef must name an Issuer or ClusterIssuer (or give the group of another kind), got ${JSON.stringify(issuer)}`,
      );
    }
    const badStorage =
      webhook.storageVersion === undefined ? undefined : apiVersionProblem('props.conversionWebhook.storageVersion', webhook.storageVersion);
    if (badStorage) fail(badStorage);
    const plan = migrationPlanOf(props);
    if (plan.kind === 'refused') fail(plan.reason);
    const policy = webhook.networkPolicy;
    if (policy !== undefined && policy !== false && (typeof policy !== 'object' || policy === null)) {
      fail(`props.conversionWebhook.networkPolicy must be false or an object, got ${JSON.stringify(policy)}`);
    }
    for (const key of ['apiServerSources', 'metricsSources'] as const) {
      const sources = policy ? policy[key] : undefined;
      const problem = sources === undefined ? undefined : sourcesProblem(`props.conversionWebhook.networkPolicy.${key}`, sources);
      if (problem) fail(problem);
    }
  }
  if (replicas > 1 && props.leaderElection === false) {
    fail(`props.replicas is ${replicas}, which needs props.leaderElection: without it every replica would reconcile`);
  }
  positiveInteger('props.providerQps', props.providerQps ?? 20, fail);
  positiveInteger('props.providerBurst', props.providerBurst ?? 40, fail);
  positiveInteger('props.maxConcurrentReconciles', props.maxConcurrentReconciles ?? 8, fail);
  if (props.logLevel !== undefined && !LOG_LEVELS.includes(props.logLevel)) {
    fail(`props.logLevel must be one of ${LOG_LEVELS.join(', ')}, got '${String(props.logLevel)}'`);
  }
  for (const name of ['pollInterval', 'driftInterval'] as const) interval(`props.${name}`, props[name], fail);

  for (const kind of ['requests', 'limits'] as const) {
    for (const [resource, quantity] of Object.entries(props.resources?.[kind] ?? {})) {
      if (typeof quantity !== 'string' || !QUANTITY.test(quantity)) {
        fail(`props.resources.${kind}.${resource} must be a Kubernetes quantity such as '100m' or '128Mi', got '${String(quantity)}'`);
      }
    }
  }

  for (const [key, value] of Object.entries(props.labels ?? {})) {
    if (key in MANAGER_SELECTOR) fail(`props.labels must not set '${key}': the operator's selectors use it`);
    if (!LABEL_KEY.test(key) || key.length > 317) fail(`props.labels has an invalid key '${key}'`);
    if (typeof value !== 'string' || !LABEL_VALUE.test(value)) fail(`props.labels['${key}'] has an invalid value '${String(value)}'`);
  }
}

function isDnsSubdomain(name: string): boolean {
  return name.length <= 253 && name.split('.').every(isDnsLabel);
}

function isDnsLabel(name: string): boolean {
  return DNS_LABEL.test(name) && name.length <= 63;
}

function positiveInteger(name: string, value: number, fail: (message: string) => never): void {
  if (!Number.isInteger(value) || value < 1) fail(`${name} must be a positive integer, got ${String(value)}`);
}

function interval(name: string, value: Duration | undefined, fail: (message: string) => never): void {
  if (value === undefined) return;
  // Duck-typed rather than instanceof: an app may load a second copy of cdk8s.
  if (typeof (value as Partial<Duration>).toMilliseconds !== 'function') {
    fail(`${name} must be a cdk8s Duration such as Duration.seconds(3), got ${JSON.stringify(value)}`);
  }
  const ms = value.toMilliseconds({ integral: false });
  if (!Number.isInteger(ms) || ms < 1) fail(`${name} must be a whole number of milliseconds, at least 1, got ${ms}ms`);
}
