/**
 * A pool of HTTP/2 sessions to one API server, as Go's http2 transport keeps them for
 * client-go: every request and watch is a stream; a session takes as many streams as the
 * server's SETTINGS allow (100 on kube-apiserver), and a full one makes the pool open
 * another, so nothing ever queues for a connection. A session leaves the rotation on GOAWAY,
 * on error, before its stream IDs run out, and while a ping after a given-up stream is
 * unanswered; its health check (h2-session.ts) runs until it closed.
 */
import { createHash } from 'node:crypto';
import type tls from 'node:tls';
import { INITIAL_MAX_STREAMS, MAX_STREAMS_PER_SESSION, PooledSession, type SessionLimits, type StreamSlot } from './h2-session';

export type { StreamSlot } from './h2-session';

/** Options of `H2Pool`. */
export interface H2PoolOptions {
  /** `https://host:port` of the server. */
  readonly origin: string;
  /** Opens a TLS socket that negotiated h2, presenting `cert`/`key` when given. */
  readonly connect: (clientCert?: ClientCert) => Promise<tls.TLSSocket>;
  /** Ping a session when nothing was read from it this long. @default 30000 */
  readonly readIdleTimeoutMs?: number;
  /**
   * Destroy the session when a ping (health check, or after a given-up stream) is not answered
   * within this. @default 15000
   */
  readonly pingTimeoutMs?: number;
  /** Close a session without streams after this long. @default 90000 */
  readonly idleCloseMs?: number;
  /** Streams one session carries before it is retired. @default MAX_STREAMS_PER_SESSION */
  readonly maxStreamsPerSession?: number;
  /** Called for every new session (a metric). */
  readonly onSession?: () => void;
}

/** A client certificate from an exec plugin; its fingerprint keys the sessions. */
export interface ClientCert {
  readonly cert: string;
  readonly key: string;
}

interface Opening {
  readonly certKey: string;
  readonly promise: Promise<PooledSession>;
  reserved: number;
}

/** See the module comment. */
export class H2Pool {
  /** Open sessions; retired ones drop out here and drain on their own. */
  private sessions: PooledSession[] = [];
  private openings: Opening[] = [];
  private closed = false;
  private readonly limits: SessionLimits;
  /** Callers one opening session is promised to: never more than its stream budget. */
  private readonly perOpening: number;

  constructor(private readonly opts: H2PoolOptions) {
    this.limits = {
      readIdleMs: opts.readIdleTimeoutMs ?? 30_000,
      pingTimeoutMs: opts.pingTimeoutMs ?? 15_000,
      idleCloseMs: opts.idleCloseMs ?? 90_000,
      maxStreams: opts.maxStreamsPerSession ?? MAX_STREAMS_PER_SESSION,
    };
    this.perOpening = Math.min(INITIAL_MAX_STREAMS, this.limits.maxStreams);
  }

  /** Number of sessions new streams may go to (tests and metrics). */
  size(): number {
    return this.sessions.filter((s) => s.inRotation()).length;
  }

  /** A stream slot on a session with room, opening a session when none has any. */
  async acquire(clientCert?: ClientCert): Promise<StreamSlot> {
    if (this.closed) throw new Error('transport is closed');
    const certKey = clientCert ? createHash('sha256').update(clientCert.cert).digest('hex') : '';
    // A rotated client certificate: sessions with the old one finish their streams and go.
    for (const s of this.sessions) if (s.certKey !== certKey) s.retire();
    this.sessions = this.sessions.filter((s) => s.isOpen());
    const free = this.sessions.find((s) => s.canTake());
    if (free) return free.slot();
    let opening = this.openings.find((o) => o.certKey === certKey && o.reserved < this.perOpening);
    if (!opening) {
      const o: Opening = { certKey, reserved: 0, promise: this.open(certKey, clientCert) };
      this.openings.push(o);
      const forget = (): void => {
        this.openings = this.openings.filter((x) => x !== o);
      };
      o.promise.then(forget, forget);
      opening = o;
    }
    opening.reserved++;
    let session: PooledSession;
    try {
      session = await opening.promise;
    } finally {
      opening.reserved--;
    }
    if (!session.isOpen()) throw new Error('HTTP/2 session closed before use');
    return session.slot();
  }

  /** Closes every session gracefully: open streams (watches) finish, no new ones start. */
  close(): void {
    this.closed = true;
    for (const s of this.sessions) s.retire();
    this.sessions = [];
  }

  private async open(certKey: string, clientCert?: ClientCert): Promise<PooledSession> {
    const socket = await this.opts.connect(clientCert);
    const session = new PooledSession(socket, this.opts.origin, certKey, this.limits);
    this.opts.onSession?.();
    if (this.closed) session.retire();
    else this.sessions.push(session);
    return session;
  }
}
