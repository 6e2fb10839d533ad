/**
 * A kept-alive socket that the provider closes just as the next request goes out on it (the
 * race every HTTP client with keep-alive meets at the server's idle timeout): the client sends
 * the request again on a new socket instead of failing the call. A reset on a fresh socket is
 * a real failure and is not repeated.
 */
import { expect } from 'chai';
import { createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { Registry } from 'prom-client';
import { ProviderClients } from '../../../operator/provider-client/client';
import { ProviderError } from '../../../operator/provider-client/errors';

const BUCKET = { id: 'b-1', region: 'us-east-1', sizeGB: 1, encrypted: false, status: 'Active', tags: {} };

/**
 * A raw HTTP server that answers the first `answered` requests on each connection and resets
 * the connection at the next one, without a response. Counts connections and requests.
 */
function resettingServer(answered: number): { server: Server; seen: { connections: number; requests: number } } {
  const seen = { connections: 0, requests: 0 };
  const server = createServer((socket: Socket) => {
    seen.connections++;
    let onThisSocket = 0;
    let buffered = '';
    socket.on('error', () => undefined);
    socket.on('data', (chunk) => {
      buffered += chunk.toString('latin1');
      // The client's requests here have no body: each ends with an empty line.
      while (buffered.includes('\r\n\r\n')) {
        buffered = buffered.slice(buffered.indexOf('\r\n\r\n') + 4);
        seen.requests++;
        if (++onThisSocket > answered) {
          socket.resetAndDestroy();
          return;
        }
        const body = JSON.stringify(BUCKET);
        socket.write(
          `HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: keep-alive\r\n\r\n${body}`,
        );
      }
    });
  });
  return { server, seen };
}

async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

describe('provider client on a kept-alive socket the provider closed', () => {
  let server: Server | undefined;
  let clients: ProviderClients | undefined;
  afterEach(async () => {
    clients?.close();
    await new Promise((resolve) => server?.close(resolve));
  });

  it('sends the request again on a new socket, and the call succeeds', async () => {
    const s = resettingServer(1);
    server = s.server;
    clients = new ProviderClients({ qps: 1000, burst: 1000, registry: new Registry(), timeoutMs: 2_000 });
    const client = clients.client(await listen(server), 'key');
    expect(await client.getBucket('b-1')).to.deep.equal(BUCKET);
    // The agent hands the idle socket to the next call, whose request the server resets.
    expect(await client.getBucket('b-1')).to.deep.equal(BUCKET);
    expect(s.seen).to.deep.equal({ connections: 2, requests: 3 });
  });

  it('fails a call whose fresh socket is reset, without sending it again', async () => {
    const s = resettingServer(0);
    server = s.server;
    clients = new ProviderClients({ qps: 1000, burst: 1000, registry: new Registry(), timeoutMs: 2_000 });
    const client = clients.client(await listen(server), 'key');
    const err = await client.getBucket('b-1').then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).to.be.instanceOf(ProviderError);
    expect({ status: (err as ProviderError).status, code: (err as ProviderError).code, retryable: (err as ProviderError).retryable }).to.deep.equal({
      status: 0,
      code: 'ECONNRESET',
      retryable: true,
    });
    expect(s.seen).to.deep.equal({ connections: 1, requests: 1 });
  });
});
