/**
 * Where the plugin reads the operator's kinds, from the API server's discovery documents
 * (pure: cli/kube.ts fetches them). A kind is read in the group's preferred version when that
 * version serves it, else in the next version the server lists (kubectl's RESTMapper rule);
 * only versions this plugin can convert to v1 count. Discovery comes before any read, so a
 * cluster without the CRD (the usual wrong `--context`) is told apart from a missing object.
 */
import { GROUP } from '../operator/api/v1/group';
import { API_VERSIONS } from '../operator/api/version-names';
import type { ResourceKind } from '../operator/runtime/types';
import { CliError, ExitCode } from './exit-codes';

/** The discovery path of the operator's API group (an APIGroup document; 404 when no CRD of the group exists). */
export const GROUP_PATH = `/apis/${GROUP}`;

/** The kinds the plugin reads, by their `kind`. */
export const BUCKET_KIND = 'StorageBucket';
/** See {@link BUCKET_KIND}. */
export const CONFIG_KIND = 'BucketProviderConfig';

/** Each kind's served versions the plugin reads, best first: the first is where reads go. */
export interface ServedKinds {
  readonly buckets: readonly ResourceKind[];
  readonly configs: readonly ResourceKind[];
}

/** What the user is connected to, for messages: the kubeconfig context (or `in-cluster`) and the server URL. */
export interface Where {
  readonly context: string;
  readonly server: string;
}

type Doc = Record<string, unknown>;

function isDoc(value: unknown): value is Doc {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function docs(value: unknown): Doc[] {
  return Array.isArray(value) ? value.filter(isDoc) : [];
}

/** The group's versions in the server's priority order, its preferred version first. */
export function groupVersions(group: unknown): string[] {
  if (!isDoc(group)) return [];
  const listed = docs(group['versions']).flatMap((v) => (typeof v['version'] === 'string' ? [v['version']] : []));
  const preferred = isDoc(group['preferredVersion']) ? group['preferredVersion']['version'] : undefined;
  return typeof preferred === 'string' ? [preferred, ...listed.filter((v) => v !== preferred)] : listed;
}

/** The resource (plural name, namespaced) of `kind` in one version's APIResourceList, if that version serves it. */
function resourceIn(list: unknown, kind: string): { plural: string; namespaced: boolean } | undefined {
  const r = docs(isDoc(list) ? list['resources'] : undefined).find(
    (x) => x['kind'] === kind && typeof x['name'] === 'string' && !x['name'].includes('/'),
  );
  return r ? { plural: r['name'] as string, namespaced: r['namespaced'] !== false } : undefined;
}

/** `kind`'s versions among `versions` that this plugin reads, as ResourceKinds in that order. */
function kindsOf(kind: string, versions: readonly string[], lists: ReadonlyMap<string, unknown>): ResourceKind[] {
  return versions.flatMap((version) => {
    const r = (API_VERSIONS as readonly string[]).includes(version) ? resourceIn(lists.get(version), kind) : undefined;
    return r ? [{ group: GROUP, version, kind, plural: r.plural, namespaced: r.namespaced }] : [];
  });
}

/**
 * Where StorageBuckets and BucketProviderConfigs are read, from the APIGroup document
 * (`undefined`: the server answered 404) and each version's APIResourceList (by version;
 * absent when not served). Throws `CliError(NOT_SERVED)` naming the context and server when
 * either kind is not served in a version this plugin reads.
 */
export function servedKinds(group: unknown, lists: ReadonlyMap<string, unknown>, where: Where): ServedKinds {
  const versions = groupVersions(group);
  const buckets = kindsOf(BUCKET_KIND, versions, lists);
  const configs = kindsOf(CONFIG_KIND, versions, lists);
  if (buckets.length > 0 && configs.length > 0) return { buckets, configs };
  const missing = buckets.length === 0 ? BUCKET_KIND : CONFIG_KIND;
  const readable = versions.filter((v) => (API_VERSIONS as readonly string[]).includes(v));
  const why =
    group === undefined
      ? `no CustomResourceDefinition of the group is installed there`
      : readable.length === 0
        ? `it serves ${versions.join(', ')} and this plugin reads ${API_VERSIONS.join(', ')}: use the plugin of the operator's release`
        : `no CustomResourceDefinition of ${missing} is installed there`;
  return notServed(where, missing, why);
}

function notServed(where: Where, kind: string, why: string): never {
  throw new CliError(
    ExitCode.NOT_SERVED,
    `the ${kind} API (${GROUP}) is not served in context "${where.context}" (server ${where.server}): ${why}; pick the cluster with --context, or install BucketOperator there`,
  );
}

/**
 * True for the API server's answer when the CRD's conversion webhook could not convert an
 * object (down, unreachable or failing): reading the same object in another served version,
 * the one it is stored in, needs no webhook.
 */
export function isConversionFailure(err: unknown): err is Error {
  return err instanceof Error && 'status' in err && /conversion webhook for /i.test(err.message);
}

/** The error when `what` could be read in none of `versions` because the conversion webhook failed each time. */
export function conversionUnavailable(what: string, kind: ResourceKind, versions: readonly string[], serverMessage: string): CliError {
  return new CliError(
    ExitCode.ERROR,
    `cannot read ${what} in any served version (${versions.join(', ')}): the conversion webhook of ${kind.plural}.${kind.group} ` +
      `(the operator's) failed, and without it the API server cannot serve objects stored in another version; ` +
      `check the operator's Pods and its webhook Service. The API server said: ${serverMessage}`,
  );
}
