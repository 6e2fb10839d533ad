/**
 * One pooled HTTP/2 session and its health, kept as Go's http2 transport keeps a ClientConn
 * for client-go (golang.org/x/net/http2/transport.go):
 * - receive windows as client-go's: 4 MiB per stream (transportDefaultStreamFlow) and 1 GiB
 *   per connection (transportDefaultConnFlow), so a large LIST answer arrives in one flight
 *   instead of 64 KiB per round trip;
 * - a health check (ReadIdleTimeout / PingTimeout): a session that read nothing for a while is
 *   pinged and destroyed when the ping is not answered. Retired sessions are checked until they
 *   close, so a dead peer cannot hold their streams forever;
 * - a ping when a stream is given up (deadline or abort) while nothing was read from the
 *   session since the stream was sent (Go: cleanupWriteRequest with pendingResets): the
 *   connection may be dead, so the session is handed out no more until the answer comes, and is
 *   destroyed without one. A Lease renewal after such a timeout gets a fresh connection instead
 *   of waiting out ReadIdleTimeout + PingTimeout;
 * - retirement before the client's stream IDs (odd, at most 2^31-1) run out, as Go stops using a
 *   ClientConn whose nextStreamID nears math.MaxInt32. Node would otherwise fail every later
 *   request on the session with ERR_HTTP2_OUT_OF_STREAMS.
 */
import http2 from 'node:http2';
import type tls from 'node:tls';

/** The per-stream receive window client-go announces in its SETTINGS (4 MiB). */
export const STREAM_WINDOW_BYTES = 4 * 1024 * 1024;

/** The connection-level receive window client-go opens with a WINDOW_UPDATE (1 GiB). */
export const CONNECTION_WINDOW_BYTES = 1024 * 1024 * 1024;

/** Client stream IDs are odd and at most 2^31-1: a connection carries this many streams. */
export const MAX_STREAMS_PER_SESSION = 2 ** 30;

/** The concurrency Go's transport assumes before the server's SETTINGS arrive. */
export const INITIAL_MAX_STREAMS = 100;

/** How a session checks its health and when it stops taking streams. */
export interface SessionLimits {
  /** Ping when nothing was read this long. */
  readonly readIdleMs: number;
  /** Destroy the session when a ping is not answered within this. */
  readonly pingTimeoutMs: number;
  /** Retire a session without streams after this long. */
  readonly idleCloseMs: number;
  /** Streams handed out before the session is retired (its stream IDs' budget). */
  readonly maxStreams: number;
}

/** A stream slot on a session; `release` is called once the stream closed. */
export interface StreamSlot {
  readonly session: http2.ClientHttp2Session;
  /** Marks the session as having delivered data (health check). */
  read(): void;
  /**
   * The caller gave up on the stream before it ended (its deadline passed or it was aborted).
   * Unless the session read something since the stream was sent, the session is pinged and
   * not handed out until the answer comes. May come before or after `release`.
   */
  cancelled(): void;
  release(): void;
}

/** `open` takes streams; `retired` drains (no new streams, closes once its streams ended). */
type State = 'open' | 'retired' | 'closed';

/** See the module comment. The pool decides which session a stream goes to; this, whether it may. */
export class PooledSession {
  readonly session: http2.ClientHttp2Session;
  private state: State = 'open';
  private active = 0;
  private handedOut = 0;
  private maxConcurrent = INITIAL_MAX_STREAMS;
  /** Counts reads (response heads, body chunks, SETTINGS, ping answers) to tell "read since". */
  private reads = 0;
  private lastRead = Date.now();
  private lastUsed = Date.now();
  /** A given-up stream's ping is unanswered: hand out no streams. */
  private probing = false;
  private pinging = false;
  private readonly timer: NodeJS.Timeout;

  /**
   * Starts HTTP/2 on `socket` (connected, ALPN h2). `certKey` names the client certificate the
   * socket presented, so the pool can retire sessions of a rotated one.
   */
  constructor(
    socket: tls.TLSSocket,
    origin: string,
    readonly certKey: string,
    private readonly limits: SessionLimits,
  ) {
    const session = http2.connect(origin, {
      createConnection: () => socket,
      settings: { enablePush: false, initialWindowSize: STREAM_WINDOW_BYTES },
    });
    this.session = session;
    // The connection window is no SETTINGS value: a WINDOW_UPDATE on stream 0 raises it, which
    // Node can send only once the session has its handle.
    const grow = (): void => {
      if (!session.destroyed) session.setLocalWindowSize(CONNECTION_WINDOW_BYTES);
    };
    if (session.connecting) session.once('connect', grow);
    else grow();
    session.on('remoteSettings', (s) => {
      if (typeof s.maxConcurrentStreams === 'number' && s.maxConcurrentStreams > 0) this.maxConcurrent = s.maxConcurrentStreams;
      this.markRead();
    });
    // GOAWAY: streams already open finish (Node fails those the server did not take); new ones go elsewhere.
    session.on('goaway', () => this.retire());
    session.on('error', () => this.closed());
    session.on('close', () => this.closed());
    session.unref();
    this.timer = setInterval(() => this.check(), Math.max(1000, Math.min(limits.readIdleMs, limits.idleCloseMs) / 2));
    this.timer.unref();
  }

  /** Not retired or closed: may still be chosen for new streams. */
  isOpen(): boolean {
    return this.state === 'open';
  }

  /** Gone: destroyed or closed by either side. */
  isClosed(): boolean {
    return this.state === 'closed';
  }

  /** In rotation: open and not waiting for a ping after a given-up stream. */
  inRotation(): boolean {
    return this.state === 'open' && !this.probing;
  }

  /** In rotation with room for one more stream under the server's concurrency limit. */
  canTake(): boolean {
    return this.inRotation() && this.active < this.maxConcurrent;
  }

  /** A stream slot; the caller opens its stream on `session` at once. */
  slot(): StreamSlot {
    this.active++;
    this.handedOut++;
    this.lastUsed = Date.now();
    if (this.active === 1) this.session.ref();
    // This stream takes the session's last ID of its budget: no more hand-outs, and the
    // session closes once its streams ended (retire waits for this one to be opened).
    if (this.handedOut >= this.limits.maxStreams) this.retire();
    const readsAtOpen = this.reads;
    let released = false;
    return {
      session: this.session,
      read: () => this.markRead(),
      cancelled: () => this.cancelled(readsAtOpen),
      release: () => {
        if (released) return;
        released = true;
        this.active--;
        this.lastUsed = Date.now();
        if (this.active > 0) return;
        // An idle session must not keep the process alive, as idle HTTP/1.1 sockets do not.
        this.session.unref();
        if (this.state === 'retired') this.closeGracefully();
      },
    };
  }

  /**
   * No new streams; the session closes once its streams ended. Node's `close()` refuses new
   * streams at once, so it waits for the last one: a slot handed out with the last stream ID
   * must still be able to open its stream.
   */
  retire(): void {
    if (this.state !== 'open') return;
    this.state = 'retired';
    if (this.active === 0) this.closeGracefully();
  }

  private closeGracefully(): void {
    if (!this.session.closed && !this.session.destroyed) this.session.close();
  }

  private closed(): void {
    this.state = 'closed';
    clearInterval(this.timer);
  }

  private markRead(): void {
    this.reads++;
    this.lastRead = Date.now();
  }

  private cancelled(readsAtOpen: number): void {
    // Something read after the stream was sent shows the peer alive (Go: readBeforeStreamID).
    if (this.state === 'closed' || this.reads > readsAtOpen) return;
    this.probing = true;
    this.ping();
  }

  /** Health check: retire a long-idle session; ping one (open or draining) that went quiet. */
  private check(): void {
    const now = Date.now();
    if (this.state === 'open' && this.active === 0 && now - this.lastUsed >= this.limits.idleCloseMs) {
      this.retire();
      return;
    }
    if (now - this.lastRead >= this.limits.readIdleMs) this.ping();
  }

  /** One ping at a time; its answer puts the session back in rotation, its absence destroys it. */
  private ping(): void {
    if (this.pinging || this.state === 'closed') return;
    this.pinging = true;
    const ms = this.limits.pingTimeoutMs;
    const timer = setTimeout(() => this.session.destroy(new Error(`HTTP/2 ping not answered within ${ms}ms`)), ms);
    timer.unref();
    const answered = (err: Error | null): void => {
      clearTimeout(timer);
      this.pinging = false;
      if (err) {
        this.session.destroy(err);
        return;
      }
      this.markRead();
      this.probing = false;
    };
    let sent: boolean;
    try {
      sent = this.session.ping(answered);
    } catch {
      // A session destroyed under us (or one Node refuses to ping): the same as unanswered.
      sent = false;
    }
    if (!sent) {
      clearTimeout(timer);
      this.pinging = false;
      this.session.destroy(new Error('HTTP/2 ping could not be sent'));
    }
  }
}
