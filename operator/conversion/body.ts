/**
 * A request body read with a cap, as Go's `http.MaxBytesReader` does for controller-runtime's
 * webhooks: the declared Content-Length is checked before a byte is read, and a body without
 * one (chunked) is counted as it arrives and given up as soon as it passes the cap, so a
 * client can never make the webhook buffer more than the cap.
 */
import type { IncomingMessage } from 'node:http';

/** The body is, or declares to be, larger than the cap. */
export class BodyTooLarge extends Error {
  constructor(readonly maxBytes: number) {
    super(`request body exceeds ${maxBytes} bytes`);
  }
}

/**
 * The length `req` declares, or undefined for a body without Content-Length (chunked). Node's
 * parser has already refused a malformed or repeated header.
 */
export function declaredLength(req: IncomingMessage): number | undefined {
  const header = req.headers['content-length'];
  if (header === undefined) return undefined;
  const length = Number(header);
  return Number.isSafeInteger(length) && length >= 0 ? length : undefined;
}

/**
 * The body of `req`, at most `maxBytes`. Rejects with {@link BodyTooLarge} when its declared
 * length is larger (nothing read) or as soon as what arrived passes the cap (reading stops
 * there: the caller answers and closes the connection); rejects with another error when the
 * client goes away or the request times out before the end.
 */
export function readCappedBody(req: IncomingMessage, maxBytes: number): Promise<Buffer> {
  const declared = declaredLength(req);
  if (declared !== undefined && declared > maxBytes) return Promise.reject(new BodyTooLarge(maxBytes));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    const settle = (err: Error | undefined) => {
      if (settled) return;
      settled = true;
      req.off('data', onData);
      if (err) {
        // Nothing more of this body is wanted: stop pulling it off the socket, and let go of
        // what was buffered.
        req.pause();
        chunks.length = 0;
        reject(err);
      } else {
        resolve(Buffer.concat(chunks, size));
      }
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) settle(new BodyTooLarge(maxBytes));
      else chunks.push(chunk);
    };
    req.on('data', onData);
    req.once('end', () => settle(undefined));
    req.once('error', (err) => settle(err));
    // A request timed out or its client gone ends with 'close' but no 'end'.
    req.once('close', () => settle(new Error('request closed before its body ended')));
  });
}
