/**
 * The conversion webhook's HTTPS server: POST /convert answers a ConversionReview
 * (review.ts). Every replica serves it, leader or not: the API server may call any of them.
 *
 * - Certificates come from the webhook Secret and are swapped in place with
 *   `setSecureContext` when it changes: new handshakes get the new certificate, connections
 *   already open (and the requests on them) carry on with the old one, nothing restarts.
 * - Ready once a certificate is loaded ({@link ConversionServer.readyCheck}); not ready again
 *   while it drains before stopping ({@link ConversionServer.drain}).
 * - Idle keep-alive connections are kept longer than the API server's client keeps them (Go's
 *   90s), so the client, not the server, closes an idle connection: a server closing first
 *   races a request being sent on it, which the client sees as a failed conversion.
 * - The body is capped and a request must arrive within a deadline, so a slow or huge request
 *   cannot hold memory or a socket.
 * - Nothing of a request body reaches a log line: objects may be anything a user stored.
 */
import { createServer, type Server } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import type { ConversionMetricsSink, ConversionRequestResult } from './metrics';
import { reviewConversion, type ReviewOutcome, type VersionPair } from './review';

/** The path the CRDs' `conversion.webhook.clientConfig` points at. */
export const CONVERT_PATH = '/convert';

/** A serving certificate and its key, PEM. */
export interface ServingCertificate {
  readonly cert: string;
  /** Secret material: never logged. */
  readonly key: string;
}

/** Options of {@link ConversionServer}. */
export interface ConversionServerOptions {
  readonly metrics: ConversionMetricsSink;
  readonly logger: Logger;
  /**
   * Largest request body accepted, in bytes. A review carries the objects of one list call.
   * @default 32 MiB
   */
  readonly maxBodyBytes?: number;
  /**
   * Time for a whole request to arrive. The API server gives a conversion webhook 30s.
   * @default 30s
   */
  readonly requestTimeoutMs?: number;
  /**
   * How long an idle keep-alive connection stays open.
   * @default 120s, longer than the API server's client keeps one (90s)
   */
  readonly keepAliveTimeoutMs?: number;
  /** How to answer a body; a seam for tests. @default reviewConversion */
  readonly review?: (body: unknown) => ReviewOutcome;
}

const UNKNOWN_PAIR: VersionPair = { from: 'unknown', to: 'unknown' };

/** Thrown by reading a body past the cap. */
class BodyTooLarge extends Error {}

/** The HTTPS server of the conversion webhook. */
export class ConversionServer {
  private readonly server: Server;
  private readonly maxBodyBytes: number;
  private readonly review: (body: unknown) => ReviewOutcome;
  private loaded: string | undefined;
  private draining = false;

  constructor(private readonly opts: ConversionServerOptions) {
    this.maxBodyBytes = opts.maxBodyBytes ?? 32 * 1024 * 1024;
    this.review = opts.review ?? reviewConversion;
    // No certificate until the Secret is read: handshakes fail until then, and readiness says so.
    this.server = createServer({ minVersion: 'TLSv1.2' }, (req, res) => this.handle(req, res));
    this.server.requestTimeout = opts.requestTimeoutMs ?? 30_000;
    this.server.headersTimeout = Math.min(this.server.requestTimeout, 10_000);
    this.server.keepAliveTimeout = opts.keepAliveTimeoutMs ?? 120_000;
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
    const done = (pair: VersionPair, result: ConversionRequestResult) =>
      this.opts.metrics.observe(pair, result, (performance.now() - started) / 1000);
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
    this.readBody(req).then(
      (raw) => this.answer(raw, res, done),
      (err: unknown) => {
        if (err instanceof BodyTooLarge) {
          // The rest of the body is not read: close the connection rather than drain it.
          res.setHeader('connection', 'close');
          reply(res, 413, `request body exceeds ${this.maxBodyBytes} bytes\n`);
          done(UNKNOWN_PAIR, 'invalid');
          return;
        }
        // The client went away or the request timed out: nobody to answer.
        res.destroy();
        done(UNKNOWN_PAIR, 'error');
      },
    );
  }

  private answer(raw: Buffer, res: ServerResponse, done: (pair: VersionPair, result: ConversionRequestResult) => void): void {
    let body: unknown;
    try {
      body = JSON.parse(raw.toString('utf8'));
    } catch {
      reply(res, 400, 'request body is not JSON\n');
      done(UNKNOWN_PAIR, 'invalid');
      return;
    }
    let outcome: ReviewOutcome;
    try {
      outcome = this.review(body);
    } catch (err) {
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
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(outcome.review));
    done(outcome.pair, result.status === 'Success' ? 'success' : 'failure');
  }

  private readBody(req: IncomingMessage): Promise<Buffer> {
    const declared = Number(req.headers['content-length']);
    if (Number.isFinite(declared) && declared > this.maxBodyBytes) return Promise.reject(new BodyTooLarge());
    return new Promise((resolve, reject) => {
      const chunks: Buffer[] = [];
      let size = 0;
      req.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > this.maxBodyBytes) {
          req.removeAllListeners('data');
          req.pause();
          reject(new BodyTooLarge());
          return;
        }
        chunks.push(chunk);
      });
      req.on('end', () => resolve(Buffer.concat(chunks)));
      req.on('error', reject);
      req.on('aborted', () => reject(new Error('request aborted')));
    });
  }
}

function reply(res: ServerResponse, status: number, text: string): void {
  res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8' }).end(text);
}
