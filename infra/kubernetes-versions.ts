/**
 * The Kubernetes minors BucketOperator supports and what the construct renders for each: the
 * support matrix as data, and the pure decisions that read it. Everything rendered is served on
 * every supported minor except StorageVersionMigrations, in-tree (`storagemigration.k8s.io/v1`)
 * only from 1.37: on 1.35 and 1.36 the API is a beta that is off by default, so there the stored
 * objects are rewritten by the documented `kubectl` procedure instead (docs/v2.md).
 */
import type { ApiVersionName } from '../operator/api/version-names';

/** A Kubernetes minor, `{ major: 1, minor: 36 }` for 1.36. */
export interface KubernetesMinor {
  readonly major: number;
  readonly minor: number;
}

/** One supported minor and the release its smoke suite runs (`npm run test:matrix`). */
export interface SupportedKubernetes {
  /** `1.36`. */
  readonly minor: string;
  /** The patch release tested: the newest of the minor on the Go module proxy. */
  readonly tested: string;
}

/** The supported minors, oldest first, each with the release tested (test/support/control-plane/matrix.env). */
export const SUPPORTED_KUBERNETES: readonly SupportedKubernetes[] = [
  { minor: '1.35', tested: 'v1.35.4' },
  { minor: '1.36', tested: 'v1.36.3' },
  { minor: '1.37', tested: 'v1.37.2' },
];

/** The newest supported minor: what dist/ and the construct render for by default. */
export const DEFAULT_KUBERNETES_VERSION = '1.37';

/** The API group and version of the in-tree StorageVersionMigration. */
export const STORAGE_MIGRATION_API_VERSION = 'storagemigration.k8s.io/v1';

/** What the rendered objects need from the API server, and the first minor that serves it by default. */
export interface ApiFeature {
  /** What it is, as Kubernetes names it. */
  readonly name: string;
  /** The first minor that serves it without feature gates or runtime config. */
  readonly since: string;
  /** What of the rendering uses it. */
  readonly usedBy: string;
  /** True when the construct leaves it out below `since` instead of refusing the minor. */
  readonly optional: boolean;
}

/** The in-tree StorageVersionMigration: the one feature the construct leaves out where it is missing. */
export const STORAGE_VERSION_MIGRATION: ApiFeature = {
  name: `StorageVersionMigration (${STORAGE_MIGRATION_API_VERSION})`,
  since: '1.37',
  usedBy: "the storage migration of dist/v2-stored/ and dist/v2-back-to-v1/ (conversionWebhook's migrateStorage)",
  optional: true,
};

/**
 * Every API feature the rendering relies on that is younger than Kubernetes 1.25. Each `since`
 * is read from that release's sources (feature gates in pkg/features, CEL libraries in
 * k8s.io/apiserver/pkg/cel/environment/base.go), not from memory.
 */
export const API_FEATURES: readonly ApiFeature[] = [
  {
    name: 'the CEL quantity library in CRD validation rules',
    since: '1.29',
    usedBy: "v2 StorageBucket's spec.forProvider.size rules",
    optional: false,
  },
  {
    name: 'ValidatingAdmissionPolicy (admissionregistration.k8s.io/v1)',
    since: '1.30',
    usedBy: 'the admission policies that confine the operator',
    optional: false,
  },
  {
    name: 'CRD selectableFields',
    since: '1.32',
    usedBy: 'the CRDs (field selectors on the config a bucket names)',
    optional: false,
  },
  STORAGE_VERSION_MIGRATION,
];

/**
 * Parses `1.36`, `v1.36`, `1.36.3` or `v1.36.3` (a minor, or a release of it); undefined for
 * anything else.
 */
export function parseKubernetesVersion(value: unknown): KubernetesMinor | undefined {
  if (typeof value !== 'string') return undefined;
  const m = /^v?(\d+)\.(\d+)(\.\d+)?$/.exec(value);
  if (!m?.[1] || !m[2]) return undefined;
  return { major: Number(m[1]), minor: Number(m[2]) };
}

/** `1.36` for `{ major: 1, minor: 36 }`. */
export function formatMinor(v: KubernetesMinor): string {
  return `${v.major}.${v.minor}`;
}

/** Negative when `a` is older than `b`, zero when equal. */
export function compareMinors(a: KubernetesMinor, b: KubernetesMinor): number {
  return a.major - b.major || a.minor - b.minor;
}

const parsed = (text: string): KubernetesMinor => {
  const v = parseKubernetesVersion(text);
  if (!v) throw new Error(`not a Kubernetes minor: ${text}`);
  return v;
};

/** The oldest supported minor. */
export const OLDEST_SUPPORTED = parsed(SUPPORTED_KUBERNETES[0]?.minor ?? '');
/** The newest supported minor. */
export const NEWEST_SUPPORTED = parsed(SUPPORTED_KUBERNETES[SUPPORTED_KUBERNETES.length - 1]?.minor ?? '');

/** True when the minor `v` serves `feature` by default. */
export function serves(v: KubernetesMinor, feature: ApiFeature): boolean {
  return compareMinors(v, parsed(feature.since)) >= 0;
}

/**
 * Why `value`, given as `field`, cannot be rendered for, or undefined when it can. Refused: what
 * is not a 1.x version, and minors older than the oldest supported one (naming what they lack).
 * Minors newer than the newest tested one are accepted: every API used is GA there and stays.
 */
export function kubernetesVersionProblem(field: string, value: unknown): string | undefined {
  const v = parseKubernetesVersion(value);
  if (!v || v.major !== 1) return `${field} must be a Kubernetes version such as '1.36' or 'v1.36.3', got '${String(value)}'`;
  if (compareMinors(v, OLDEST_SUPPORTED) >= 0) return undefined;
  const lacks = API_FEATURES.filter((f) => !f.optional && !serves(v, f)).map((f) => `${f.name} (from ${f.since})`);
  const supported = `${formatMinor(OLDEST_SUPPORTED)} to ${formatMinor(NEWEST_SUPPORTED)}`;
  return `${field} is ${formatMinor(v)}, older than the oldest supported Kubernetes minor (supported: ${supported})${
    lacks.length > 0 ? `; it lacks ${lacks.join(', ')}` : ''
  }`;
}

/** What the construct is asked about the stored objects. */
export interface StorageMigrationRequest {
  /** The cluster's minor (already checked by {@link kubernetesVersionProblem}). */
  readonly kubernetes: KubernetesMinor;
  /** The version the CRDs store. */
  readonly storageVersion: ApiVersionName;
  /** `conversionWebhook.migrateStorage` as given; undefined means "as the storage version asks". */
  readonly migrateStorage: boolean | undefined;
}

/**
 * How the objects stored before a storage flip get rewritten:
 * - `none`: nothing to rewrite (v1 stored and no migration asked for, or `migrateStorage: false`);
 * - `storage-version-migration`: StorageVersionMigrations in `apiVersion`, run by
 *   kube-controller-manager;
 * - `rewrite-documented`: the cluster has no in-tree StorageVersionMigration, so nothing is
 *   rendered and docs/v2.md's `kubectl` procedure rewrites them;
 * - `refused`: a migration was asked for explicitly where the API is missing.
 */
export type StorageMigrationPlan =
  | { readonly kind: 'none' }
  | { readonly kind: 'storage-version-migration'; readonly apiVersion: string }
  | { readonly kind: 'rewrite-documented' }
  | { readonly kind: 'refused'; readonly reason: string };

/**
 * The plan for `req`. By default a migration follows a flip to v2 (going back to v1 asks for
 * one with `migrateStorage: true`); below 1.37 the default adapts to the documented rewrite,
 * while an explicit `migrateStorage: true` is refused: it asks for objects the cluster cannot
 * serve, and a rendering that only half applies is worse than an error at synth.
 */
export function storageMigrationPlan(req: StorageMigrationRequest): StorageMigrationPlan {
  const wanted = req.migrateStorage ?? req.storageVersion !== 'v1';
  if (!wanted) return { kind: 'none' };
  if (serves(req.kubernetes, STORAGE_VERSION_MIGRATION)) return { kind: 'storage-version-migration', apiVersion: STORAGE_MIGRATION_API_VERSION };
  if (req.migrateStorage === undefined) return { kind: 'rewrite-documented' };
  return {
    kind: 'refused',
    reason:
      `props.conversionWebhook.migrateStorage asks for StorageVersionMigrations, which Kubernetes ${formatMinor(req.kubernetes)} ` +
      `does not serve (${STORAGE_MIGRATION_API_VERSION} is in-tree from ${STORAGE_VERSION_MIGRATION.since}): leave it unset and rewrite the ` +
      "stored objects as docs/v2.md, 'Storage migration before Kubernetes 1.37', describes",
  };
}
