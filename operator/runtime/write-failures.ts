/**
 * Makes failed writes to the API server visible without flooding the log. Best-effort writes
 * (Events; later status patches) must not fail their caller, and used to be logged at debug
 * only, so a missing RBAC verb went unnoticed for the life of a deployment. Each failure is
 * counted; the first of each kind is a `warn` that names the likely missing permission or
 * condition, and repeats drop to debug so a hot loop cannot flood the log.
 */
import type { Logger } from 'pino';
import type { Counter } from 'prom-client';
import { BucketMetric } from '../api/metric-names';
import { ApiError } from './api-errors';
import { registeredCounter, type Metrics } from './metrics';
import type { ResourceKind } from './types';

/** Options of a `WriteFailureReporter`. */
export interface WriteFailureReporterOptions {
  readonly logger: Logger;
  /**
   * Registers (or reuses) `bucketoperator_write_failures_total{resource,verb,code}` on this
   * registry. @default not counted
   */
  readonly metrics?: Metrics;
}

/** The write that failed, in RBAC terms, so the warning can name the missing permission. */
export interface WriteTarget {
  /** `resource[.group][/subresource]`, as `resourceLabel` makes it, e.g. `events.events.k8s.io`. */
  readonly resource: string;
  /** The RBAC verb: `create`, `patch`, `update`, `delete`. */
  readonly verb: string;
}

/**
 * The resource as RBAC and the API server's Forbidden messages name it: `plural.group`
 * (plain `plural` for the core group), with `/subresource` when given.
 */
export function resourceLabel(kind: ResourceKind, subresource?: string): string {
  const resource = kind.group === '' ? kind.plural : `${kind.plural}.${kind.group}`;
  return subresource ? `${resource}/${subresource}` : resource;
}

/** The `code` label of a failure: the HTTP status of an API answer, else `network`. */
export function failureCode(err: unknown): string {
  return err instanceof ApiError && err.status > 0 ? String(err.status) : 'network';
}

/**
 * What is likely missing, from the status code alone: server messages are not repeated
 * here, since an admission denial may quote the object it refused (a Secret, say).
 */
export function failureHint(code: string, what: WriteTarget): string {
  switch (code) {
    case '401':
      return "unauthorized: the API server rejected the operator's credentials (expired or revoked token?)";
    case '403':
      return `forbidden: check the operator's RBAC (it needs ${what.verb} on ${what.resource}), or the namespace is being terminated`;
    case '404':
      return 'not found: the namespace or object is gone, or the API is not served (CRD not installed?)';
    case '409':
      return 'conflict: another writer changed the object, or it already exists';
    case '422':
      return 'invalid: the API server or an admission policy refused the object';
    case '429':
      return 'throttled: the API server is rate-limiting the operator (API Priority and Fairness)';
    case 'network':
      return 'network: the API server could not be reached (connection refused or reset, timeout, TLS)';
    default:
      return Number(code) >= 500
        ? `server error ${code}: the API server, etcd or an admission webhook failed`
        : `HTTP ${code}: the API server refused the request`;
  }
}

type Labels = 'resource' | 'verb' | 'code';

function failureCounter(metrics: Metrics): Counter<Labels> {
  const help = 'Writes to the Kubernetes API server that failed, by resource, RBAC verb and HTTP status (or network).';
  return registeredCounter(metrics.registry, BucketMetric.writeFailures, help, ['resource', 'verb', 'code']);
}

/** Counts failed writes and warns once per (resource, verb, code); share one per process. */
export class WriteFailureReporter {
  private readonly logger: Logger;
  private readonly counter?: Counter<Labels>;
  /** Failures seen per kind; the key set is bounded by the callers' resources and verbs. */
  private readonly seen = new Map<string, number>();

  constructor(opts: WriteFailureReporterOptions) {
    this.logger = opts.logger;
    this.counter = opts.metrics ? failureCounter(opts.metrics) : undefined;
  }

  /** Records one failed write; never throws, so callers on a best-effort path can ignore it. */
  report(what: WriteTarget, err: unknown): void {
    const code = failureCode(err);
    this.counter?.inc({ resource: what.resource, verb: what.verb, code });
    const key = JSON.stringify([what.resource, what.verb, code]);
    const count = (this.seen.get(key) ?? 0) + 1;
    this.seen.set(key, count);
    // Only fixed tokens are logged: never the error's message, which for a network failure
    // may come from a credential plugin and for an admission denial may quote the object.
    const fields = {
      resource: what.resource,
      verb: what.verb,
      code,
      ...(err instanceof ApiError ? { reason: err.reason } : socketCode(err)),
    };
    const msg = `cannot ${what.verb} ${what.resource}: ${failureHint(code, what)}`;
    if (count === 1) this.logger.warn(fields, msg);
    else this.logger.debug({ ...fields, failures: count }, msg);
  }
}

/** `{ errno: 'ECONNREFUSED' }` when the error (or its cause) carries a Node socket code. */
function socketCode(err: unknown): { errno?: string } {
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 4; e = e.cause, depth++) {
    const code = (e as NodeJS.ErrnoException).code;
    if (typeof code === 'string' && /^E[A-Z0-9_]+$/.test(code)) return { errno: code };
  }
  return {};
}
