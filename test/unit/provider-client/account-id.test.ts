/**
 * `accountId()` asks the provider which account a key belongs to once per account: concurrent
 * first callers share the one request, and a failure is not kept.
 */
import { expect } from 'chai';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ProviderClients } from '../../../operator/provider-client/client';

describe('ProviderClient.accountId', () => {
  let server: Server;
  let url = '';
  let asked = 0;
  let failNext = 0;
  before(async () => {
    server = createServer((req, res) => {
      if (req.url !== '/account') {
        res.writeHead(404).end();
        return;
      }
      asked++;
      if (failNext > 0) {
        failNext--;
        res.writeHead(503, { 'content-type': 'application/json' }).end('{"code":"ServiceUnavailable","message":"down"}');
        return;
      }
      // Answered a little later, so concurrent callers overlap.
      setTimeout(
        () =>
          res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ account: `acct-of-${req.headers.authorization ?? ''}` })),
        20,
      );
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  beforeEach(() => {
    asked = 0;
    failNext = 0;
  });

  it('asks once per account, however many reconciles ask at once', async () => {
    const clients = new ProviderClients();
    const answers = await Promise.all(Array.from({ length: 6 }, () => clients.client(url, 'key-a').accountId()));
    expect(new Set(answers)).to.deep.equal(new Set(['acct-of-Bearer key-a']));
    expect(await clients.client(url, 'key-a').accountId()).to.equal('acct-of-Bearer key-a');
    expect(asked).to.equal(1);
    // Another key is another account, asked on its own.
    expect(await clients.client(url, 'key-b').accountId()).to.equal('acct-of-Bearer key-b');
    expect(asked).to.equal(2);
    clients.close();
  });

  it('does not keep a failure: the next caller asks again', async () => {
    const clients = new ProviderClients();
    failNext = 1;
    const first = await clients
      .client(url, 'key-c')
      .accountId()
      .catch((e: Error) => e.message);
    expect(first).to.match(/503/);
    expect(await clients.client(url, 'key-c').accountId()).to.equal('acct-of-Bearer key-c');
    expect(asked).to.equal(2);
    clients.close();
  });
});
