/**
 * A pool of HTTP/2 sessions to one API server, as Go's http2 transport keeps them for
 * client-go: every request and watch is a stream; a session takes as many streams as the
 * server's SETTINGS allow (100 on kube-apiserver), and a full one makes the pool open
 * another, so nothing ever queues for a connection. Sessions that went quiet are pinged
 * (client-go's ReadIdleTimeout 30 s / PingTimeout 15 s) and dropped when the ping is not
 * answered; a GOAWAY or a session error moves new streams to a fresh session.
 */
import { createHash } from 'node:crypto';
import http2 from 'node:http2';
import type tls from 'node:tls';

/** The session Go's transport assumes before the server's SETTINGS arrive. */
const INITIAL_MAX_STREAMS = 100;

/** Options of `H2Pool`. */
export interface H2PoolOptions {
  /** `https://host:port` of the server. */
  readonly origin: string;
  /** Opens a TLS socket that negotiated h2, presenting `cert`/`key` when given. */
  readonly connect: (clientCert?: ClientCert) => Promise<tls.TLSSocket>;
  /** Ping a session when nothing was read from it this long. @default 30000 */
  readonly readIdleTimeoutMs?: number;
  /** Drop the session when a ping is not answered within this. @default 15000 */
  readonly pingTimeoutMs?: number;
  /** Close a session without streams after this long. @default 90000 */
  readonly idleCloseMs?: number;
  /** Called for every new session (a metric). */
  readonly onSession?: () => void;
}

/** A client certificate from an exec plugin; its fingerprint keys the sessions. */
export interface ClientCert {
  readonly cert: string;
  readonly key: string;
}

interface Entry {
  readonly session: http2.ClientHttp2Session;
  readonly certKey: string;
  active: number;
  /** Streams promised to callers still waiting for the session to connect. */
  reserved: number;
  maxStreams: number;
  usable: boolean;
  lastRead: number;
  lastUsed: number;
  timer?: NodeJS.Timeout;
}

interface Opening {
  readonly certKey: string;
  readonly promise: Promise<Entry>;
  reserved: number;
}

/** A stream slot on a session; `release` is called once the stream closed. */
export interface StreamSlot {
  readonly session: http2.ClientHttp2Session;
  /** Marks the session as having delivered data (health check). */
  read(): void;
  release(): void;
}

/** See the module comment. */
export class H2Pool {
  private entries: Entry[] = [];
  private openings: Opening[] = [];
  private closed = false;
  private readonly readIdleMs: number;
  private readonly pingTimeoutMs: number;
  private readonly idleCloseMs: number;

  constructor(private readonly opts: H2PoolOptions) {
    this.readIdleMs = opts.readIdleTimeoutMs ?? 30_000;
    this.pingTimeoutMs = opts.pingTimeoutMs ?? 15_000;
    this.idleCloseMs = opts.idleCloseMs ?? 90_000;
  }

  /** Number of live sessions (tests and metrics). */
  size(): number {
    return this.entries.filter((e) => e.usable).length;
  }

  /** A stream slot on a session with room, opening a session when none has any. */
  async acquire(clientCert?: ClientCert): Promise<StreamSlot> {
    if (this.closed) throw new Error('transport is closed');
    const certKey = clientCert ? createHash('sha256').update(clientCert.cert).digest('hex') : '';
    // A rotated client certificate: sessions with the old one finish their streams and go.
    for (const e of this.entries) if (e.certKey !== certKey) this.retire(e);
    const free = this.entries.find((e) => e.usable && e.active + e.reserved < e.maxStreams);
    if (free) return this.slot(free);
    let opening = this.openings.find((o) => o.certKey === certKey && o.reserved < INITIAL_MAX_STREAMS);
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
    let entry: Entry;
    try {
      entry = await opening.promise;
    } finally {
      opening.reserved--;
    }
    if (!entry.usable) throw new Error('HTTP/2 session closed before use');
    return this.slot(entry);
  }

  /** Closes every session gracefully: open streams (watches) finish, no new ones start. */
  close(): void {
    this.closed = true;
    for (const e of this.entries) this.retire(e);
  }

  private slot(e: Entry): StreamSlot {
    e.active++;
    e.lastUsed = Date.now();
    if (e.active === 1) e.session.ref();
    let released = false;
    return {
      session: e.session,
      read: () => {
        e.lastRead = Date.now();
      },
      release: () => {
        if (released) return;
        released = true;
        e.active--;
        e.lastUsed = Date.now();
        // An idle session must not keep the process alive, as idle HTTP/1.1 sockets do not.
        if (e.active === 0) e.session.unref();
      },
    };
  }

  private async open(certKey: string, clientCert?: ClientCert): Promise<Entry> {
    const socket = await this.opts.connect(clientCert);
    const session = http2.connect(this.opts.origin, {
      createConnection: () => socket,
      settings: { enablePush: false },
    });
    const now = Date.now();
    const e: Entry = { session, certKey, active: 0, reserved: 0, maxStreams: INITIAL_MAX_STREAMS, usable: true, lastRead: now, lastUsed: now };
    this.opts.onSession?.();
    session.on('remoteSettings', (s) => {
      if (typeof s.maxConcurrentStreams === 'number' && s.maxConcurrentStreams > 0) e.maxStreams = s.maxConcurrentStreams;
      e.lastRead = Date.now();
    });
    // GOAWAY: streams already open finish (Node fails those the server did not take); new ones go elsewhere.
    session.on('goaway', () => this.retire(e));
    session.on('error', () => this.drop(e));
    session.on('close', () => this.drop(e));
    session.unref();
    this.entries.push(e);
    e.timer = setInterval(() => this.check(e), Math.max(1000, Math.min(this.readIdleMs, this.idleCloseMs) / 2));
    e.timer.unref();
    if (this.closed) this.retire(e);
    return e;
  }

  /** Health check: close a long-idle session; ping one that went quiet; drop it when the ping fails. */
  private check(e: Entry): void {
    if (!e.usable) return;
    const now = Date.now();
    if (e.active === 0 && now - e.lastUsed >= this.idleCloseMs) {
      this.retire(e);
      return;
    }
    if (now - e.lastRead < this.readIdleMs) return;
    const timer = setTimeout(() => e.session.destroy(new Error(`HTTP/2 ping not answered within ${this.pingTimeoutMs}ms`)), this.pingTimeoutMs);
    timer.unref();
    const sent = e.session.ping((err) => {
      clearTimeout(timer);
      if (err) e.session.destroy(err);
      else e.lastRead = Date.now();
    });
    if (!sent) {
      clearTimeout(timer);
      e.session.destroy(new Error('HTTP/2 ping could not be sent'));
    }
  }

  /** No new streams on `e`; it closes once its streams ended. */
  private retire(e: Entry): void {
    e.usable = false;
    if (!e.session.closed && !e.session.destroyed) e.session.close();
    this.remove(e);
  }

  private drop(e: Entry): void {
    e.usable = false;
    this.remove(e);
  }

  private remove(e: Entry): void {
    if (e.timer) clearInterval(e.timer);
    this.entries = this.entries.filter((x) => x !== e);
  }
}
