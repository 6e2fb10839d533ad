/**
 * The conversion webhook's HTTPS server: POST /convert answers a ConversionReview
 * (review.ts). Every replica serves it, leader or not: the API server may call any of them.
 *
 * - Certificates come from the webhook Secret and are swapped in place with
 *   `setSecureContext` when it changes: new handshakes get the new certificate, connections
 *   already open (and the requests on them) carry on with the old one, nothing restarts.
 * - Ready once a certificate is loaded ({@link ConversionServer.readyCheck}); not ready again
 *   while it drains before stopping ({@link ConversionServer.drain}).
 * - No client can exhaust it (limits.ts has each bound and its reason): a body over the cap is
 *   refused (413) before it is read, or cut as it passes the cap (body.ts); reviews in flight
 *   are capped by count and by bytes, one more is answered 429 with `Retry-After`; connections
 *   are capped; a handshake, the headers, the whole request, and a silent connection each have
 *   a deadline.
 * - A review is converted and serialized in slices (slices.ts), so a large one never holds the
 *   event loop the Lease renewal runs on for longer than parsing its body.
 * - Nothing of a request body reaches a log line: objects may be anything a user stored.
 */
import { createServer, type Server } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import { BodyTooLarge, declaredLength, readCappedBody } from './body';
import { conversionLimits, InFlightReviews, RETRY_AFTER_SECONDS, type ConversionLimits } from './limits';
import type { ConversionMetricsSink, ConversionRequestResult } from './metrics';
import { reviewSteps, type ReviewOutcome, type VersionPair } from './review';
import { reviewJsonSteps, runInSlices, SlicedRunAborted } from './slices';

/** The path the CRDs' `conversion.webhook.clientConfig` points at. */
export const CONVERT_PATH = '/convert';

/** A serving certificate and its key, PEM. */
export interface ServingCertificate {
  readonly cert: string;
  /** Secret material: never logged. */
  readonly key: string;
}

/** How a body is answered: at once, or one object at a time (see review.ts's reviewSteps). */
export type ReviewFunction = (body: unknown) => ReviewOutcome | Iterator<void, ReviewOutcome, void>;

/** Options of {@link ConversionServer}. */
export interface ConversionServerOptions {
  readonly metrics: ConversionMetricsSink;
  readonly logger: Logger;
  /** Bounds on what a client may cost; unset fields keep their default. @default DEFAULT_CONVERSION_LIMITS */
  readonly limits?: Partial<ConversionLimits>;
  /** How to answer a body; a seam for tests. @default reviewSteps */
  readonly review?: ReviewFunction;
}

const UNKNOWN_PAIR: VersionPair = { from: 'unknown', to: 'unknown' };

/** What {@link ConversionServer}'s parse returns for a body that is not JSON (no JSON value is this symbol). */
const NOT_JSON = Symbol('not JSON');

type Done = (pair: VersionPair, result: ConversionRequestResult) => void;

/** The HTTPS server of the conversion webhook. */
export class ConversionServer {
  private readonly server: Server;
  private readonly limits: ConversionLimits;
  private readonly inFlight: InFlightReviews;
  private readonly review: ReviewFunction;
  private loaded: string | undefined;
  private draining = false;

  constructor(private readonly opts: ConversionServerOptions) {
    this.limits = conversionLimits(opts.limits);
    this.inFlight = new InFlightReviews(this.limits);
    this.review = opts.review ?? reviewSteps;
    // No certificate until the Secret is read: handshakes fail until then, and readiness says so.
    this.server = createServer(
      {
        minVersion: 'TLSv1.2',
        handshakeTimeout: this.limits.handshakeTimeoutMs,
        // Node checks the header and request deadlines only this often (30s by default).
        connectionsCheckingInterval: this.limits.deadlineCheckIntervalMs,
      },
      (req, res) => this.handle(req, res),
    );
    this.server.maxConnections = this.limits.maxConnections;
    this.server.requestTimeout = this.limits.requestTimeoutMs;
    this.server.headersTimeout = this.limits.headersTimeoutMs;
    this.server.keepAliveTimeout = this.limits.keepAliveTimeoutMs;
    // While a request is open; between requests the keep-alive timeout applies instead.
    this.server.timeout = this.limits.idleTimeoutMs;
  }

  /** Reviews being read, converted or answered now. */
  get reviewsInFlight(): number {
    return this.inFlight.size;
  }

  /**
   * Serves `certificate` from the next handshake on; connections already open keep theirs.
   * Returns false (and changes nothing) when it is the one already loaded, so a Secret event
   * without a change costs nothing. Throws when the pair does not load, keeping the previous one.
   */
  setCertificate(certificate: ServingCertificate): boolean {
    if (this.loaded === certificate.cert) return false;
    try {
      this.server.setSecureContext({ cert: certificate.cert, key: certificate.key, minVersion: 'TLSv1.2' });
    } catch {
      // OpenSSL's message could quote nothing secret, but it names nothing useful either.
      throw new Error('conversion webhook: the serving certificate and key in the Secret do not load as a pair');
    }
    this.loaded = certificate.cert;
    return true;
  }

  /** A readiness check: passes once a certificate is loaded. */
  readonly readyCheck = (): void => {
    if (this.draining) throw new Error('shutting down');
    if (this.loaded === undefined) throw new Error('no serving certificate loaded yet');
  };

  /**
   * The first half of a graceful stop: reports not ready, so the replica leaves the Service's
   * endpoints, while it keeps answering whoever still calls it; every answer from now on
   * closes its connection, so a client's kept-alive connection is not reused for a request
   * the stopping server might no longer read. Serve on for as long as endpoints take to
   * update, then {@link stop}.
   */
  drain(): void {
    // Idle connections stay open: closing one races a client about to send on it, and the
    // request would fail. Each is closed after its next answer instead.
    this.draining = true;
  }

  /** Starts listening; resolves with the bound address (port 0 picks one). */
  listen(port: number, host?: string): Promise<AddressInfo> {
    return new Promise((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, host, () => {
        this.server.off('error', reject);
        resolve(this.server.address() as AddressInfo);
      });
    });
  }

  /**
   * Stops accepting connections and lets requests in flight finish; after `graceMs` the
   * remaining connections are closed.
   */
  async stop(graceMs = 10_000): Promise<void> {
    if (!this.server.listening) return;
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    this.server.closeIdleConnections();
    const timer = setTimeout(() => this.server.closeAllConnections(), graceMs);
    timer.unref();
    await closed;
    clearTimeout(timer);
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const started = performance.now();
    if (this.draining) res.setHeader('connection', 'close');
    const done: Done = (pair, result) => this.opts.metrics.observe(pair, result, (performance.now() - started) / 1000);
    const path = (req.url ?? '').split('?')[0];
    if (path !== CONVERT_PATH) {
      reply(res, 404, `not found; the conversion webhook serves POST ${CONVERT_PATH}\n`);
      return;
    }
    if (req.method !== 'POST') {
      res.setHeader('allow', 'POST');
      reply(res, 405, `${CONVERT_PATH} takes POST\n`);
      return;
    }
    const type = req.headers['content-type'];
    if (type !== undefined && !/^application\/json\b/i.test(type)) {
      reply(res, 415, 'a ConversionReview is sent as application/json\n');
      done(UNKNOWN_PAIR, 'invalid');
      return;
    }
    const declared = declaredLength(req);
    if (declared !== undefined && declared > this.limits.maxBodyBytes) {
      this.tooLarge(req, res, done);
      return;
    }
    // A body of unknown length is charged the most it may grow to.
    const release = this.inFlight.tryAcquire(declared ?? this.limits.maxBodyBytes);
    if (!release) {
      // Node reads and drops a declared body (at most the cap) after the answer, which keeps
      // the connection for the retry; a body of unknown length could go on, so that one closes.
      if (declared === undefined) res.setHeader('connection', 'close');
      res.setHeader('retry-after', String(RETRY_AFTER_SECONDS));
      reply(res, 429, `too many conversion reviews in flight; retry after ${RETRY_AFTER_SECONDS}s\n`);
      done(UNKNOWN_PAIR, 'throttled');
      return;
    }
    // 'close' comes once the answer is written or the connection is gone, whichever path ends it.
    res.once('close', release);
    readCappedBody(req, this.limits.maxBodyBytes)
      .then(
        (raw) => {
          const body = this.parse(raw, res, done);
          // Parsed before the async part, so the raw bytes are not kept while it converts.
          return body === NOT_JSON ? undefined : this.answer(body, res, done);
        },
        (err: unknown) => {
          if (err instanceof BodyTooLarge) {
            this.tooLarge(req, res, done);
            return;
          }
          // The client went away or the request timed out: nobody to answer.
          res.destroy();
          done(UNKNOWN_PAIR, 'error');
        },
      )
      .catch((err: unknown) => {
        // answer() answers every outcome itself; reaching this is a bug. Log the error, not the body.
        this.opts.logger.error({ err }, 'Conversion webhook failed to answer a review');
        res.destroy();
      });
  }

  /** 413, then the connection is closed: the rest of the body is never read. */
  private tooLarge(req: IncomingMessage, res: ServerResponse, done: Done): void {
    res.setHeader('connection', 'close');
    res.writeHead(413, { 'content-type': 'text/plain; charset=utf-8' });
    res.end(`request body exceeds ${this.limits.maxBodyBytes} bytes\n`, () => req.socket.destroy());
    done(UNKNOWN_PAIR, 'invalid');
  }

  /** The JSON of `raw`, or {@link NOT_JSON} once answered 400. */
  private parse(raw: Buffer, res: ServerResponse, done: Done): unknown {
    try {
      // The one step not sliced; the body cap bounds it (slices.ts).
      return JSON.parse(raw.toString('utf8'));
    } catch {
      reply(res, 400, 'request body is not JSON\n');
      done(UNKNOWN_PAIR, 'invalid');
      return NOT_JSON;
    }
  }

  private async answer(body: unknown, res: ServerResponse, done: Done): Promise<void> {
    // Between slices: stop working for a client that is gone.
    const abandoned = () => res.destroyed;
    let outcome: ReviewOutcome;
    try {
      const answered = this.review(body);
      outcome = isIterator(answered) ? await runInSlices(answered, this.limits.objectsPerSlice, abandoned) : answered;
    } catch (err) {
      if (err instanceof SlicedRunAborted) {
        done(UNKNOWN_PAIR, 'error');
        return;
      }
      // review() is total; reaching this is a bug. Log the error, not the body.
      this.opts.logger.error({ err }, 'Conversion webhook failed to answer a review');
      reply(res, 500, 'internal error\n');
      done(UNKNOWN_PAIR, 'error');
      return;
    }
    if (outcome.kind === 'invalid') {
      reply(res, 400, `${outcome.message}\n`);
      done(outcome.pair, 'invalid');
      return;
    }
    const { result, uid } = outcome.review.response;
    if (result.status === 'Failure') {
      // The message names the object and the reason and quotes no value (review.ts).
      this.opts.logger.info({ uid, from: outcome.pair.from, to: outcome.pair.to, reason: result.message }, 'Conversion refused');
    }
    let json: string;
    try {
      json = await runInSlices(reviewJsonSteps(outcome.review), this.limits.objectsPerSlice, abandoned);
    } catch {
      // Serializing plain JSON cannot fail, so only an abandoned run ends here.
      done(outcome.pair, 'error');
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end(json);
    done(outcome.pair, result.status === 'Success' ? 'success' : 'failure');
  }
}

function isIterator(value: ReviewOutcome | Iterator<void, ReviewOutcome, void>): value is Iterator<void, ReviewOutcome, void> {
  return typeof (value as Partial<Iterator<void, ReviewOutcome, void>>).next === 'function';
}

function reply(res: ServerResponse, status: number, text: string): void {
  res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8' }).end(text);
}
