/**
 * KubeClient over a loopback node:http server: what the verbs, the transport and watch
 * decoding do together on a real socket, with answers scripted per request.
 */
import { expect } from 'chai';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Registry } from 'prom-client';
import { ApiError, isGone } from '../../../operator/runtime/api-errors';
import { KubeClient } from '../../../operator/runtime/client';
import { staticToken } from '../../../operator/runtime/rest-config';
import type { KubeObject, ResourceKind } from '../../../operator/runtime/types';
import type { WatchEvent } from '../../../operator/runtime/watch-events';

const ConfigMaps: ResourceKind = { group: '', version: 'v1', kind: 'ConfigMap', plural: 'configmaps', namespaced: true };

type Handler = (req: http.IncomingMessage, res: http.ServerResponse) => void;

/** A loopback server answering each request with `handler`, and a client pointed at it. */
async function serve(
  handler: Handler,
): Promise<{ client: KubeClient; registry: Registry; seen: http.IncomingHttpHeaders[]; close(): Promise<void> }> {
  const seen: http.IncomingHttpHeaders[] = [];
  const server = http.createServer((req, res) => {
    seen.push(req.headers);
    handler(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const registry = new Registry();
  const client = new KubeClient({
    restConfig: { server: `http://127.0.0.1:${port}`, tls: {}, credentials: staticToken('tok'), source: 'test' },
    registry,
    requestTimeoutMs: 5_000,
  });
  return {
    client,
    registry,
    seen,
    close: async () => {
      client.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function status(res: http.ServerResponse, code: number, reason: string, headers: http.OutgoingHttpHeaders = {}): void {
  res.writeHead(code, { 'Content-Type': 'application/json', ...headers });
  res.end(JSON.stringify({ kind: 'Status', code, reason, message: `${reason} here` }));
}

async function collect<T extends KubeObject>(events: AsyncIterable<WatchEvent<T>>): Promise<Array<[string, string | undefined]>> {
  const out: Array<[string, string | undefined]> = [];
  for await (const ev of events) out.push([ev.type, ev.object.metadata?.name]);
  return out;
}

describe('KubeClient over loopback', () => {
  it('sends the bearer token and counts the request by verb and code', async () => {
    const s = await serve((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify({ metadata: { name: 'a', namespace: 'ns' } }));
    });
    try {
      const got = await s.client.get(ConfigMaps, 'ns', 'a');
      expect(got.metadata?.name).to.equal('a');
      expect(s.seen[0]?.authorization).to.equal('Bearer tok');
      const counted = (await s.registry.getSingleMetric('rest_client_requests_total')?.get())?.values ?? [];
      expect(counted.map((v) => [v.labels.verb, v.labels.code, v.value])).to.deep.equal([['GET', '200', 1]]);
    } finally {
      await s.close();
    }
  });

  it('turns an error status into an ApiError, with Retry-After from the header', async () => {
    const s = await serve((_req, res) => status(res, 429, 'TooManyRequests', { 'Retry-After': '7' }));
    try {
      const err: unknown = await s.client.create(ConfigMaps, { metadata: { name: 'a', namespace: 'ns' } }).catch((e: unknown) => e);
      expect(err).to.be.instanceOf(ApiError);
      expect(err).to.include({ status: 429, reason: 'TooManyRequests', retryAfterSeconds: 7 });
    } finally {
      await s.close();
    }
  });

  it('streams watch events split across chunks and ends when the server closes', async () => {
    const s = await serve((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      const frames =
        [
          { type: 'ADDED', object: { metadata: { name: 'a' } } },
          { type: 'MODIFIED', object: { metadata: { name: 'é' } } },
        ]
          .map((f) => JSON.stringify(f))
          .join('\n') + '\n';
      const bytes = Buffer.from(frames);
      // Cut inside the multi-byte character, so decoding must span chunks.
      const cut = bytes.indexOf(Buffer.from('é')) + 1;
      res.write(bytes.subarray(0, cut));
      setImmediate(() => res.end(bytes.subarray(cut)));
    });
    try {
      expect(await collect(s.client.watch(ConfigMaps, { namespace: 'ns' }))).to.deep.equal([
        ['ADDED', 'a'],
        ['MODIFIED', 'é'],
      ]);
    } finally {
      await s.close();
    }
  });

  it('throws an ERROR frame as the ApiError itself (410 Expired), not as a connection failure', async () => {
    const s = await serve((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify({ type: 'ERROR', object: { kind: 'Status', code: 410, reason: 'Expired', message: 'too old' } }) + '\n');
    });
    try {
      const err: unknown = await collect(s.client.watch(ConfigMaps)).catch((e: unknown) => e);
      expect(isGone(err), String(err)).to.equal(true);
    } finally {
      await s.close();
    }
  });

  it('throws an ApiError when the watch is refused', async () => {
    const s = await serve((_req, res) => status(res, 403, 'Forbidden'));
    try {
      const err: unknown = await collect(s.client.watch(ConfigMaps)).catch((e: unknown) => e);
      expect(err).to.be.instanceOf(ApiError);
      expect(err).to.include({ status: 403, reason: 'Forbidden' });
    } finally {
      await s.close();
    }
  });

  it('returns cleanly from a watch whose signal aborts mid-stream', async () => {
    const s = await serve((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.write(JSON.stringify({ type: 'ADDED', object: { metadata: { name: 'a' } } }) + '\n');
    });
    try {
      const abort = new AbortController();
      const names: Array<string | undefined> = [];
      for await (const ev of s.client.watch(ConfigMaps, { signal: abort.signal })) {
        names.push(ev.object.metadata?.name);
        abort.abort();
      }
      expect(names).to.deep.equal(['a']);
    } finally {
      await s.close();
    }
  });

  it('reports an unreachable server as a plain Error naming the request, with the socket error as cause', async () => {
    const s = await serve(() => undefined);
    await s.close();
    const err: unknown = await s.client.get(ConfigMaps, 'ns', 'a').catch((e: unknown) => e);
    expect(err).to.be.instanceOf(Error).and.not.instanceOf(ApiError);
    expect((err as Error).message).to.match(/^GET \/api\/v1\/namespaces\/ns\/configmaps\/a failed: ECONNREFUSED$/);
    expect(((err as Error).cause as NodeJS.ErrnoException).code).to.equal('ECONNREFUSED');
  });
});
