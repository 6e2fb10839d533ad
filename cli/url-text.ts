/**
 * One GET of a URL outside the API server (report's `--metrics-url`, typically a port-forward to
 * the operator's /metrics), by node:http and node:https. Not `fetch`: Node loads its HTTP client
 * (undici) on the first call, tens of milliseconds of modules for one request, and the plugin
 * then ships one HTTP stack instead of two.
 */
import http from 'node:http';
import https from 'node:https';

/** Options of {@link getUrlText}. */
export interface UrlTextOptions {
  /** For the whole exchange, redirects included. @default 10000 */
  readonly timeoutMs?: number;
  /** The body is cut here. @default 8 MiB */
  readonly maxBytes?: number;
  /** Redirects followed before giving up. @default 5 */
  readonly maxRedirects?: number;
}

/**
 * The body of `url` as text: a 2xx answer after at most `maxRedirects` redirects. Any other
 * status rejects with `HTTP <status>`; a connection failure with its error code.
 */
export async function getUrlText(url: string, opts: UrlTextOptions = {}): Promise<string> {
  const signal = AbortSignal.timeout(opts.timeoutMs ?? 10_000);
  const maxBytes = opts.maxBytes ?? 8 * 1024 * 1024;
  let target = new URL(url);
  for (let redirects = 0; ; redirects++) {
    const res = await get(target, signal);
    const status = res.statusCode ?? 0;
    const location = res.headers.location;
    if (status >= 300 && status < 400 && location && redirects < (opts.maxRedirects ?? 5)) {
      res.resume();
      target = new URL(location, target);
      continue;
    }
    if (status < 200 || status >= 300) {
      res.resume();
      throw new Error(`HTTP ${status}`);
    }
    return readText(res, maxBytes, signal);
  }
}

function get(url: URL, signal: AbortSignal): Promise<http.IncomingMessage> {
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return Promise.reject(new Error(`unsupported URL scheme ${url.protocol}`));
  const client = url.protocol === 'https:' ? https : http;
  return new Promise((resolve, reject) => {
    const req = client.get(url, { signal }, resolve);
    req.on('error', (err: NodeJS.ErrnoException) =>
      reject(signal.aborted ? new Error('timed out') : new Error(err.code ?? err.message, { cause: err })),
    );
  });
}

function readText(res: http.IncomingMessage, maxBytes: number, signal: AbortSignal): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const done = (): void => resolve(Buffer.concat(chunks).subarray(0, maxBytes).toString('utf8'));
    res.on('data', (c: Buffer) => {
      chunks.push(c);
      size += c.length;
      if (size >= maxBytes) {
        res.destroy();
        done();
      }
    });
    res.on('end', done);
    res.on('error', (err: NodeJS.ErrnoException) =>
      reject(signal.aborted ? new Error('timed out') : new Error(err.code ?? err.message, { cause: err })),
    );
  });
}
