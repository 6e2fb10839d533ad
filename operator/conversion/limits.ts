/**
 * What one client may cost the conversion webhook, and why each default is what it is. The
 * webhook listens on every replica, so whatever reaches its port (the API server, or anything
 * a NetworkPolicy fails to keep out) must not be able to take memory, sockets or the event
 * loop from the controllers and the Lease renewal they share the process with.
 *
 * Sizes, measured on our objects: a StorageBucket with a Ready status and its managedFields is
 * about 2.5 KB of JSON, a review wraps its objects in some 200 bytes, and the API server sends
 * one object per review for a read or a watch event (bench/README.md, "conversion through the
 * webhook": 20,003 reviews for 20,000 writes). The largest object it can store is bounded by
 * etcd's request limit (1.5 MiB by default), so a one-object review is below 2 MiB however
 * large a user makes an object; a review of a list costs 1.7 to 2.5 KB per object, about
 * 1.3 MiB for a page of 500 (kubectl's and client-go's pagers' default chunk). 7 MiB,
 * controller-runtime's cap for webhook bodies, holds the largest object with room to spare and
 * some 2,800 to 4,200 of ours in one list; a review beyond it gets 413 and the API server
 * reports that the conversion failed.
 */

/** Limits of {@link ConversionServer} (server.ts); every field has a default. */
export interface ConversionLimits {
  /**
   * Largest request body accepted, in bytes: a larger declared Content-Length is answered 413
   * before any of the body is read, and a body without one is cut when it grows past this.
   * @default 7 MiB (see the top of this file)
   */
  readonly maxBodyBytes: number;
  /**
   * Reviews being read, converted or answered at once; one more is answered 429 with
   * `Retry-After`, which the API server's client waits out and retries.
   * @default 16
   */
  readonly maxInFlight: number;
  /**
   * Bytes of the reviews in flight, each counted at its declared Content-Length (at
   * `maxBodyBytes` when it declares none) from its arrival until it is answered: what bounds
   * the memory of conversions. A review that does not fit is answered 429 like one over
   * `maxInFlight`; one review alone always fits. A review costs about four times its size
   * while it is converted (parsed body, converted objects, the answer; a 7 MiB review of 4,213
   * StorageBuckets took RSS up by 28 MiB), so 16 MiB costs at most some 64 MiB beside the
   * operator's heap, in a pod limited to 256 MiB.
   * @default 16 MiB: two of the largest reviews, or hundreds of ordinary ones
   */
  readonly maxInFlightBytes: number;
  /**
   * Open connections; one more is closed as it is accepted. Each review needs a connection of
   * its own (HTTP/1.1), and kept-alive idle ones count too.
   * @default 64: every review in flight from a few API servers, plus their idle connections
   */
  readonly maxConnections: number;
  /**
   * Time for a TLS handshake to complete; Node's default is 120s.
   * @default 10s
   */
  readonly handshakeTimeoutMs: number;
  /**
   * Time for a request's headers to arrive from its first byte; a client that never finishes
   * them (slowloris) is answered 408 and closed.
   * @default 10s
   */
  readonly headersTimeoutMs: number;
  /**
   * Time for a whole request, body included, to arrive. The API server gives a conversion
   * webhook 30s for the whole call and sends its body at once.
   * @default 30s
   */
  readonly requestTimeoutMs: number;
  /**
   * Time a connection may go without a byte moving either way while a request is open: a
   * client that stops reading its answer cannot hold the socket and the answer's memory.
   * @default 30s
   */
  readonly idleTimeoutMs: number;
  /**
   * How long an idle keep-alive connection stays open between requests.
   * @default 120s: longer than the API server's client keeps one (Go's 90s), so the client,
   * not the server, closes an idle connection; a server closing first races a request being
   * sent on it, which the client sees as a failed conversion
   */
  readonly keepAliveTimeoutMs: number;
  /**
   * How often the server checks the header and request deadlines of open connections, so a
   * deadline is kept to within this much (Node's default is 30s).
   * @default 1s
   */
  readonly deadlineCheckIntervalMs: number;
  /**
   * Objects converted (and serialized) between two turns of the event loop. A review of many
   * objects is converted this many at a time, with timers and I/O (the Lease renewal among
   * them) run in between; the parse of the body is the one step not sliced, and the body cap
   * bounds it.
   * @default 64 (0.4 ms of work on our objects, median, measured on a shared 2-core machine)
   */
  readonly objectsPerSlice: number;
}

const MiB = 1024 * 1024;

/** The defaults of {@link ConversionLimits}; the reasons are on each field. */
export const DEFAULT_CONVERSION_LIMITS: ConversionLimits = {
  maxBodyBytes: 7 * MiB,
  maxInFlight: 16,
  maxInFlightBytes: 16 * MiB,
  maxConnections: 64,
  handshakeTimeoutMs: 10_000,
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  idleTimeoutMs: 30_000,
  keepAliveTimeoutMs: 120_000,
  deadlineCheckIntervalMs: 1_000,
  objectsPerSlice: 64,
};

/** Seconds the API server's client is asked to wait before it retries a review answered 429. */
export const RETRY_AFTER_SECONDS = 1;

/**
 * `overrides` over the defaults, checked: every field a positive integer, the in-flight byte
 * budget at least one body, the header deadline within the request deadline (Node refuses
 * otherwise). Throws naming the field.
 */
export function conversionLimits(overrides: Partial<ConversionLimits> = {}): ConversionLimits {
  const limits: ConversionLimits = { ...DEFAULT_CONVERSION_LIMITS, ...overrides };
  for (const [name, value] of Object.entries(limits)) {
    if (!Number.isInteger(value) || (value as number) < 1)
      throw new Error(`conversion webhook: limits.${name} must be a positive integer, got ${String(value)}`);
  }
  if (limits.maxInFlightBytes < limits.maxBodyBytes) {
    throw new Error(
      `conversion webhook: limits.maxInFlightBytes (${limits.maxInFlightBytes}) must hold at least one body of limits.maxBodyBytes (${limits.maxBodyBytes})`,
    );
  }
  if (limits.headersTimeoutMs > limits.requestTimeoutMs) {
    throw new Error(
      `conversion webhook: limits.headersTimeoutMs (${limits.headersTimeoutMs}) must not exceed limits.requestTimeoutMs (${limits.requestTimeoutMs})`,
    );
  }
  return limits;
}

/**
 * The reviews in flight, by count and by bytes: a seat is taken as a review arrives and given
 * back when it is answered or abandoned. Pure bookkeeping, no I/O.
 */
export class InFlightReviews {
  private count = 0;
  private bytes = 0;

  constructor(private readonly limits: Pick<ConversionLimits, 'maxInFlight' | 'maxInFlightBytes'>) {}

  /** Reviews holding a seat now. */
  get size(): number {
    return this.count;
  }

  /**
   * A seat for a review of `bytes`, or undefined when it does not fit. The returned release
   * gives the seat back; calling it again does nothing, so every path that ends a review may.
   */
  tryAcquire(bytes: number): (() => void) | undefined {
    if (this.count >= this.limits.maxInFlight) return undefined;
    // A review alone always fits, so a budget below one body can never refuse everything.
    if (this.count > 0 && this.bytes + bytes > this.limits.maxInFlightBytes) return undefined;
    this.count++;
    this.bytes += bytes;
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      this.count--;
      this.bytes -= bytes;
    };
  }
}
