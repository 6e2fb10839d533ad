/**
 * Wire-level helpers: the error type handlers throw, the reply shape they return, and the
 * bounded JSON body reader. Handlers return data; only the server writes to sockets.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ErrorCode, type ErrorBody } from './types';

/** An error that maps to an HTTP status and a JSON `{ code, message }` body. */
export class HttpError extends Error {
  /**
   * @param status HTTP status to answer with.
   * @param code Stable error code of the body.
   * @param message One line, safe to show to any client.
   * @param headers Extra response headers, e.g. `Allow` or `Retry-After`.
   */
  constructor(
    readonly status: number,
    readonly code: ErrorCode,
    message: string,
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(message);
    this.name = 'HttpError';
  }

  /** The JSON body for this error. */
  body(): ErrorBody {
    return { code: this.code, message: this.message };
  }
}

/** What a handler asks the server to do. */
export type Reply =
  /** `dripMs` > 0 sends the body in pieces spread over that many ms (a slow server). */
  | { kind: 'json'; status: number; body: unknown; headers?: Record<string, string>; dripMs?: number }
  /** A body sent as is, e.g. one that is deliberately not JSON. */
  | { kind: 'raw'; status: number; contentType: string; body: string; headers?: Record<string, string>; dripMs?: number }
  | { kind: 'empty'; status: number; headers?: Record<string, string> }
  /**
   * A JSON body of exactly `bytes` bytes, `prefix` + filler + `suffix`, streamed as the client
   * reads it (never held in memory), with or without Content-Length.
   */
  | { kind: 'huge'; status: number; bytes: number; chunked: boolean; prefix: string; suffix: string }
  /** Destroy the socket without answering: the client cannot know whether work was done. */
  | { kind: 'drop' }
  /** Reset the connection (TCP RST) without answering. */
  | { kind: 'reset' };

/** Replies that write an answer (headers at least). */
export type AnsweringReply = Exclude<Reply, { kind: 'drop' | 'reset' | 'huge' }>;

/** A JSON reply. */
export function json(status: number, body: unknown, headers?: Record<string, string>): Reply {
  return headers === undefined ? { kind: 'json', status, body } : { kind: 'json', status, body, headers };
}

/** A reply without body, e.g. 204. */
export function empty(status: number): Reply {
  return { kind: 'empty', status };
}

/** Pieces a dripped body is cut into, at most. */
const DRIP_PIECES = 20;

/** Writes a reply that is not a drop. Returns the status written. */
export function writeReply(res: ServerResponse, reply: AnsweringReply): number {
  const payload = start(res, reply);
  res.end(payload);
  return reply.status;
}

/**
 * Writes a reply whose body is sent in pieces over `dripMs` (headers at once, the last piece
 * at the end), and resolves with the status once it is sent or the client has gone away.
 */
export function writeReplySlowly(res: ServerResponse, reply: AnsweringReply, dripMs: number): Promise<number> {
  const payload = Buffer.from(start(res, reply) ?? '', 'utf8');
  const pieces = Math.max(1, Math.min(DRIP_PIECES, payload.length));
  const size = Math.ceil(payload.length / pieces);
  res.flushHeaders();
  return new Promise((resolve) => {
    let sent = 0;
    let timer: NodeJS.Timeout | undefined;
    const done = (): void => {
      if (timer !== undefined) clearTimeout(timer);
      res.off('close', done);
      resolve(reply.status);
    };
    const next = (): void => {
      sent += 1;
      if (sent >= pieces) {
        res.end(payload.subarray((sent - 1) * size));
        done();
        return;
      }
      res.write(payload.subarray((sent - 1) * size, sent * size));
      timer = setTimeout(next, dripMs / pieces);
    };
    // A client that gives up (its deadline) ends the drip; nothing is left scheduled.
    res.once('close', done);
    timer = setTimeout(next, dripMs / pieces);
  });
}

/**
 * Writes a reply one byte per `intervalMs` after sending the headers at once, and resolves with
 * the status once it is sent or the client has gone away (then nothing is left scheduled).
 */
export function writeReplyTrickled(res: ServerResponse, reply: AnsweringReply, intervalMs: number): Promise<number> {
  const payload = Buffer.from(start(res, reply) ?? '', 'utf8');
  res.flushHeaders();
  return new Promise((resolve) => {
    let sent = 0;
    let timer: NodeJS.Timeout | undefined;
    const done = (): void => {
      clearTimeout(timer);
      res.off('close', done);
      resolve(reply.status);
    };
    const next = (): void => {
      if (sent >= payload.length) {
        res.end();
        done();
        return;
      }
      res.write(payload.subarray(sent, sent + 1));
      sent += 1;
      timer = setTimeout(next, intervalMs);
    };
    res.once('close', done);
    timer = setTimeout(next, intervalMs);
  });
}

/** Filler of a huge body, written again and again; one piece is all it ever holds. */
const HUGE_PIECE = Buffer.alloc(64 * 1024, 'x');

/** Resolves on the next 'drain' or once the client is gone. */
function drainedOrGone(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.once('drain', done);
    res.once('close', done);
  });
}

/**
 * Streams a huge reply as fast as the client reads it (waiting for 'drain', so the provider
 * holds one piece at a time), and stops as soon as the client goes away. Resolves with the
 * status.
 */
export async function writeHugeReply(res: ServerResponse, reply: Extract<Reply, { kind: 'huge' }>): Promise<number> {
  res.statusCode = reply.status;
  res.setHeader('Cache-Control', 'no-store');
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  // Without a Content-Length, Node sends HTTP/1.1 chunked: the size shows only by reading.
  if (!reply.chunked) res.setHeader('Content-Length', reply.bytes);
  let gone = false;
  res.once('close', () => {
    gone = true;
  });
  const write = async (piece: Buffer | string): Promise<void> => {
    if (!res.write(piece)) await drainedOrGone(res);
  };
  await write(reply.prefix);
  let left = reply.bytes - Buffer.byteLength(reply.prefix) - Buffer.byteLength(reply.suffix);
  while (left > 0 && !gone) {
    const piece = left >= HUGE_PIECE.length ? HUGE_PIECE : HUGE_PIECE.subarray(0, left);
    left -= piece.length;
    await write(piece);
  }
  if (!gone) res.end(reply.suffix);
  return reply.status;
}

/** Sets status and headers; returns the body to send, if any. */
function start(res: ServerResponse, reply: AnsweringReply): string | undefined {
  for (const [name, value] of Object.entries(reply.headers ?? {})) res.setHeader(name, value);
  res.setHeader('Cache-Control', 'no-store');
  res.statusCode = reply.status;
  if (reply.kind === 'empty') return undefined;
  const payload = reply.kind === 'json' ? JSON.stringify(reply.body) : reply.body;
  res.setHeader('Content-Type', reply.kind === 'json' ? 'application/json; charset=utf-8' : reply.contentType);
  res.setHeader('Content-Length', Buffer.byteLength(payload));
  return payload;
}

/**
 * Never answers: resolves with a drop once the client has gone away (its timeout, or the
 * provider closing connections on shutdown). Models an answer that never arrives, so the
 * client sees its own timeout rather than any status.
 */
export function holdUntilClientGoesAway(req: IncomingMessage): Promise<Reply> {
  const socket = req.socket;
  if (socket.destroyed) return Promise.resolve({ kind: 'drop' });
  return new Promise((resolve) => socket.once('close', () => resolve({ kind: 'drop' })));
}

/** The reply for an error. */
export function errorReply(err: HttpError): Reply {
  return json(err.status, err.body(), { ...err.headers });
}

/** True when the media type is `application/json`, parameters such as charset allowed. */
function isJsonContentType(header: string | undefined): boolean {
  if (header === undefined) return false;
  const mediaType = header.split(';', 1)[0]?.trim().toLowerCase();
  return mediaType === 'application/json';
}

/**
 * Reads and parses a JSON request body of at most `maxBytes`.
 *
 * An oversized body is rejected as soon as it is known to be too large (from
 * `Content-Length` or while streaming) so a huge upload never sits in memory; the rest of
 * the upload is discarded by the HTTP server after the reply.
 */
export async function readJsonBody(req: IncomingMessage, maxBytes: number): Promise<unknown> {
  if (!isJsonContentType(req.headers['content-type'])) {
    throw new HttpError(415, ErrorCode.UnsupportedMediaType, 'Content-Type must be application/json');
  }
  const tooLarge = (): HttpError => new HttpError(413, ErrorCode.PayloadTooLarge, `request body exceeds ${maxBytes} bytes`);
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > maxBytes) throw tooLarge();

  const raw = await new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size > maxBytes) {
        cleanup();
        reject(tooLarge());
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = (): void => {
      cleanup();
      resolve(Buffer.concat(chunks, size));
    };
    const onError = (err: Error): void => {
      cleanup();
      reject(err);
    };
    // 'close' before 'end' means the client went away mid-body.
    const onClose = (): void => {
      cleanup();
      reject(new Error('request aborted by client'));
    };
    const cleanup = (): void => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('close', onClose);
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    req.on('close', onClose);
  });

  if (raw.length === 0) throw new HttpError(400, ErrorCode.MalformedJSON, 'request body is empty');
  try {
    // fatal: true so invalid UTF-8 is a client error, not silently replaced characters.
    const text = new TextDecoder('utf-8', { fatal: true }).decode(raw);
    return JSON.parse(text) as unknown;
  } catch {
    throw new HttpError(400, ErrorCode.MalformedJSON, 'request body is not valid JSON');
  }
}
