/**
 * Fault injection: a switchable configuration and the decision it implies for one request.
 * Rates draw from a seeded generator and counts count down, so a test that sets the same
 * faults and sends the same requests sees the same answers.
 */
import { isAccountName } from './auth';
import { HttpError, type Reply } from './http';
import { invalid } from './validation';
import { ErrorCode, type FaultConfig, type FaultSettings, type FaultStatus, type FaultSwitch, type HugeAnswerStatus } from './types';

/** Largest accepted `latencyMs`, so a typo cannot hang a test suite for hours. */
export const LATENCY_MS_MAX = 60_000;
/**
 * Largest accepted `lateCommitOnCreate.delayMs`: long enough to outlast a client timeout and
 * the deletion that follows it, short enough that a typo cannot leave a commit due in hours.
 */
export const LATE_COMMIT_DELAY_MS_MAX = 600_000;
/** Largest accepted `retryAfterSeconds`. */
export const RETRY_AFTER_MAX = 3600;
/** Largest accepted `hugeAnswerBytes`: 64 GiB, far past any client's cap, streamed anyway. */
export const HUGE_ANSWER_BYTES_MAX = 64 * 1024 ** 3;
/** Largest accepted `trickleIntervalMs`. */
export const TRICKLE_INTERVAL_MS_MAX = 60_000;
/** Longest accepted `redirectTo`. */
const REDIRECT_TO_MAX = 2048;

const FAULT_STATUSES: readonly number[] = [429, 500, 502, 503, 504];
const HUGE_STATUSES: readonly number[] = [200, ...FAULT_STATUSES];
const ERROR_STATUSES: readonly number[] = [500, 502, 503, 504];

/** The configuration with every fault off. */
export function defaultFaults(): FaultConfig {
  return {
    latencyMs: 0,
    errorRate: 0,
    errorStatus: 503,
    throttleRate: 0,
    retryAfterSeconds: 1,
    dropAfterCommitOnCreate: 0,
    lateCommitOnCreate: null,
    outage: false,
    failNext: null,
    seed: 1,
    listErrorStatus: null,
    listEmptyObject: false,
    listNotJson: false,
    listRepeatContinue: false,
    listSlowBodyMs: 0,
    listFaultAccount: null,
    resetRate: 0,
    redirectTo: null,
    hugeAnswerBytes: 0,
    hugeAnswerChunked: false,
    hugeAnswerStatus: 200,
    malformedJson: false,
    trickleIntervalMs: 0,
  };
}

/**
 * What a request suffers from the hostile modes, in place of its handler; see
 * {@link FaultController.hostile}.
 */
export type HostileFault = Extract<Reply, { kind: 'reset' | 'huge' | 'empty' | 'raw' }>;

/** The body `malformedJson` answers: a bucket cut short, so JSON.parse fails at its end. */
export const MALFORMED_JSON_BODY = '{"id":"bucket-000000000000","region":"us-east-1","sizeGB":';

/** The JSON around a huge body's filler, for its status. */
function hugeFrame(status: HugeAnswerStatus): { prefix: string; suffix: string } {
  if (status === 200) return { prefix: '{"padding":"', suffix: '"}' };
  const { code } = injected(status, 0).body();
  return { prefix: `{"code":"${code}","message":"`, suffix: '"}' };
}

/** Smallest `hugeAnswerBytes` other than 0: the largest frame fits. */
export const HUGE_ANSWER_BYTES_MIN = 64;

/** What a list call suffers; see {@link FaultController.list}. */
export type ListFault =
  | { kind: 'none'; slowBodyMs: number }
  | { kind: 'error'; error: HttpError }
  | { kind: 'emptyObject' | 'notJson' | 'repeatContinue'; slowBodyMs: number };

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function int(value: unknown, field: string, min: number, max: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw invalid(field, `must be an integer between ${min} and ${max}`);
  }
  return value;
}

function rate(value: unknown, field: string): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0 || value > 1) {
    throw invalid(field, 'must be a number between 0 and 1');
  }
  return value;
}

function count(value: unknown, field: string): { count: number } {
  if (!isObject(value)) throw invalid(field, 'must be a rate (0..1) or { count }');
  for (const key of Object.keys(value)) if (key !== 'count') throw invalid(`${field}.${key}`, 'unknown field');
  return { count: int(value.count, `${field}.count`, 0, Number.MAX_SAFE_INTEGER) };
}

/** Validates fault settings from JSON or code; throws a 422 HttpError naming the field. */
export function parseFaultSettings(input: unknown): FaultSettings {
  if (!isObject(input)) throw invalid('body', 'must be a JSON object');
  const out: FaultSettings = {};
  for (const [key, value] of Object.entries(input)) {
    if (value === undefined) continue;
    switch (key) {
      case 'latencyMs':
        out.latencyMs = int(value, key, 0, LATENCY_MS_MAX);
        break;
      case 'errorRate':
        out.errorRate = rate(value, key);
        break;
      case 'errorStatus':
        if (typeof value !== 'number' || !ERROR_STATUSES.includes(value)) {
          throw invalid(key, `must be one of ${ERROR_STATUSES.join(', ')}`);
        }
        out.errorStatus = value as FaultConfig['errorStatus'];
        break;
      case 'throttleRate':
        out.throttleRate = rate(value, key);
        break;
      case 'retryAfterSeconds':
        out.retryAfterSeconds = int(value, key, 0, RETRY_AFTER_MAX);
        break;
      case 'dropAfterCommitOnCreate':
        out.dropAfterCommitOnCreate = typeof value === 'number' ? rate(value, key) : count(value, key);
        break;
      case 'lateCommitOnCreate': {
        if (value === null) {
          out.lateCommitOnCreate = null;
          break;
        }
        if (!isObject(value)) throw invalid(key, 'must be { count, delayMs } or null');
        for (const k of Object.keys(value)) if (k !== 'count' && k !== 'delayMs') throw invalid(`${key}.${k}`, 'unknown field');
        out.lateCommitOnCreate = {
          count: int(value.count, `${key}.count`, 0, Number.MAX_SAFE_INTEGER),
          delayMs: int(value.delayMs, `${key}.delayMs`, 0, LATE_COMMIT_DELAY_MS_MAX),
        };
        break;
      }
      case 'outage':
        if (typeof value !== 'boolean') throw invalid(key, 'must be a boolean');
        out.outage = value;
        break;
      case 'failNext': {
        if (value === null) {
          out.failNext = null;
          break;
        }
        if (!isObject(value)) throw invalid(key, 'must be { status, count } or null');
        for (const k of Object.keys(value)) if (k !== 'status' && k !== 'count') throw invalid(`${key}.${k}`, 'unknown field');
        if (typeof value.status !== 'number' || !FAULT_STATUSES.includes(value.status)) {
          throw invalid(`${key}.status`, `must be one of ${FAULT_STATUSES.join(', ')}`);
        }
        out.failNext = { status: value.status as FaultStatus, count: int(value.count, `${key}.count`, 0, Number.MAX_SAFE_INTEGER) };
        break;
      }
      case 'seed':
        out.seed = int(value, key, 0, 0xffffffff);
        break;
      case 'listErrorStatus':
        if (value !== null && (typeof value !== 'number' || !FAULT_STATUSES.includes(value))) {
          throw invalid(key, `must be one of ${FAULT_STATUSES.join(', ')} or null`);
        }
        out.listErrorStatus = value as FaultStatus | null;
        break;
      case 'listEmptyObject':
      case 'listNotJson':
      case 'listRepeatContinue':
        if (typeof value !== 'boolean') throw invalid(key, 'must be a boolean');
        out[key] = value;
        break;
      case 'listSlowBodyMs':
        out.listSlowBodyMs = int(value, key, 0, LATENCY_MS_MAX);
        break;
      case 'resetRate':
        out.resetRate = rate(value, key);
        break;
      case 'redirectTo':
        if (value !== null && !isRedirectTarget(value))
          throw invalid(key, `must be an absolute http(s) URL of at most ${REDIRECT_TO_MAX} characters, or null`);
        out.redirectTo = value;
        break;
      case 'hugeAnswerBytes': {
        const n = int(value, key, 0, HUGE_ANSWER_BYTES_MAX);
        if (n !== 0 && n < HUGE_ANSWER_BYTES_MIN) throw invalid(key, `must be 0 or at least ${HUGE_ANSWER_BYTES_MIN}`);
        out.hugeAnswerBytes = n;
        break;
      }
      case 'hugeAnswerStatus':
        if (typeof value !== 'number' || !HUGE_STATUSES.includes(value)) throw invalid(key, `must be one of ${HUGE_STATUSES.join(', ')}`);
        out.hugeAnswerStatus = value as HugeAnswerStatus;
        break;
      case 'hugeAnswerChunked':
      case 'malformedJson':
        if (typeof value !== 'boolean') throw invalid(key, 'must be a boolean');
        out[key] = value;
        break;
      case 'trickleIntervalMs':
        out.trickleIntervalMs = int(value, key, 0, TRICKLE_INTERVAL_MS_MAX);
        break;
      case 'listFaultAccount':
        if (value !== null && (typeof value !== 'string' || !isAccountName(value))) {
          throw invalid(key, 'must be an account name or null');
        }
        out.listFaultAccount = value;
        break;
      default:
        throw invalid(key, 'unknown field');
    }
  }
  return out;
}

function isRedirectTarget(value: unknown): value is string {
  if (typeof value !== 'string' || value.length > REDIRECT_TO_MAX || !URL.canParse(value)) return false;
  const { protocol } = new URL(value);
  return protocol === 'http:' || protocol === 'https:';
}

/** mulberry32: tiny, fast and good enough to spread faults; not for anything secret. */
function generator(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The error answer for an injected status. */
function injected(status: number, retryAfterSeconds: number): HttpError {
  if (status === 429) {
    return new HttpError(429, ErrorCode.Throttled, 'request throttled (injected fault)', {
      'Retry-After': String(retryAfterSeconds),
    });
  }
  if (status === 500) return new HttpError(500, ErrorCode.InternalError, 'internal error (injected fault)');
  return new HttpError(status, ErrorCode.ServiceUnavailable, 'service unavailable (injected fault)');
}

/** Holds the fault configuration in force and decides what each request suffers. */
export class FaultController implements FaultSwitch {
  private config: FaultConfig = defaultFaults();
  private random = generator(this.config.seed);

  /** @param initial faults in force at start. */
  constructor(initial: FaultSettings = {}) {
    this.set(initial);
  }

  /** The configuration in force, with remaining counts. */
  get(): FaultConfig {
    return structuredClone(this.config);
  }

  /** Replaces the whole configuration and reseeds; throws a 422 HttpError when invalid. */
  set(settings: FaultSettings): FaultConfig {
    this.config = { ...defaultFaults(), ...parseFaultSettings(settings) };
    this.random = generator(this.config.seed);
    return this.get();
  }

  /** Turns every fault off. */
  clear(): void {
    this.set({});
  }

  /** Delay to add before handling a request. */
  latencyMs(): number {
    return this.config.latencyMs;
  }

  /** The injected failure for this request, or undefined to handle it normally. */
  decide(): HttpError | undefined {
    const c = this.config;
    if (c.outage) return new HttpError(503, ErrorCode.ServiceUnavailable, 'service unavailable (injected outage)');
    if (c.failNext !== null && c.failNext.count > 0) {
      c.failNext.count -= 1;
      return injected(c.failNext.status, c.retryAfterSeconds);
    }
    if (this.draw(c.throttleRate)) return injected(429, c.retryAfterSeconds);
    if (this.draw(c.errorRate)) return injected(c.errorStatus, c.retryAfterSeconds);
    return undefined;
  }

  /**
   * What a list call (`GET /buckets` without `idempotencyKey`) made for `account` suffers,
   * after {@link decide} let it through. Fixed for the settings in force: no draw, no count.
   */
  list(account: string): ListFault {
    const c = this.config;
    if (c.listFaultAccount !== null && c.listFaultAccount !== account) return { kind: 'none', slowBodyMs: 0 };
    if (c.listErrorStatus !== null) return { kind: 'error', error: injected(c.listErrorStatus, c.retryAfterSeconds) };
    const slowBodyMs = c.listSlowBodyMs;
    if (c.listEmptyObject) return { kind: 'emptyObject', slowBodyMs };
    if (c.listNotJson) return { kind: 'notJson', slowBodyMs };
    if (c.listRepeatContinue) return { kind: 'repeatContinue', slowBodyMs };
    return { kind: 'none', slowBodyMs };
  }

  /**
   * The hostile mode answering this request (made to `pathAndQuery`) in place of its handler,
   * or undefined to go on; see {@link FaultConfig} for the order. Only `resetRate` draws.
   */
  hostile(pathAndQuery: string): HostileFault | undefined {
    const c = this.config;
    if (this.draw(c.resetRate)) return { kind: 'reset' };
    if (c.redirectTo !== null) {
      return { kind: 'empty', status: 307, headers: { Location: `${c.redirectTo.replace(/\/$/, '')}${pathAndQuery}` } };
    }
    if (c.hugeAnswerBytes > 0) {
      return { kind: 'huge', status: c.hugeAnswerStatus, bytes: c.hugeAnswerBytes, chunked: c.hugeAnswerChunked, ...hugeFrame(c.hugeAnswerStatus) };
    }
    if (c.malformedJson) return { kind: 'raw', status: 200, contentType: 'application/json; charset=utf-8', body: MALFORMED_JSON_BODY };
    return undefined;
  }

  /** Milliseconds between the bytes of every answer's body; 0 sends it at once. */
  trickleIntervalMs(): number {
    return this.config.trickleIntervalMs;
  }

  /** Whether to destroy the socket after a create has been committed. */
  dropAfterCreate(): boolean {
    const drop = this.config.dropAfterCommitOnCreate;
    if (typeof drop === 'number') return this.draw(drop);
    if (drop.count <= 0) return false;
    drop.count -= 1;
    return true;
  }

  /**
   * The commit delay when this create, which would make a new bucket, is to be held and
   * committed late; undefined to handle it normally. Counts down.
   */
  lateCommit(): number | undefined {
    const late = this.config.lateCommitOnCreate;
    if (late === null || late.count <= 0) return undefined;
    late.count -= 1;
    return late.delayMs;
  }

  /** Rates of 0 and 1 draw nothing, so they never shift the sequence of other rates. */
  private draw(rateValue: number): boolean {
    if (rateValue <= 0) return false;
    if (rateValue >= 1) return true;
    return this.random() < rateValue;
  }
}
