import { expect } from 'chai';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { getUrlText } from '../../../cli/url-text';

/** A metrics endpoint as a port-forward serves it, with a redirect, a missing path and a large body. */
function endpoint(): Server {
  return createServer((req, res) => {
    switch (req.url ?? '') {
      case '/metrics':
        res.end('# HELP up\nup 1\n');
        return;
      case '/old':
        res.writeHead(302, { location: '/metrics' });
        res.end();
        return;
      case '/loop':
        res.writeHead(302, { location: '/loop' });
        res.end();
        return;
      case '/large':
        res.end('x'.repeat(100_000));
        return;
      case '/slow':
        // Never answers: the deadline must end the request.
        return;
      case '/stall':
        // Starts the body and never ends it.
        res.write('up 1\n');
        return;
      default:
        res.writeHead(404);
        res.end('not found');
    }
  });
}

describe('kubectl bucket: report --metrics-url reads the URL by node:http', () => {
  let server: Server;
  let base = '';

  before(async () => {
    server = endpoint();
    await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => {
    server.closeAllConnections();
    server.close();
  });

  const cases: Record<string, { path: string; opts?: Parameters<typeof getUrlText>[1]; want: { text: string } | { error: RegExp } }> = {
    'a 200 answer is its body': { path: '/metrics', want: { text: '# HELP up\nup 1\n' } },
    'a redirect is followed': { path: '/old', want: { text: '# HELP up\nup 1\n' } },
    'a redirect loop ends after the limit with the last status': { path: '/loop', opts: { maxRedirects: 3 }, want: { error: /^HTTP 302$/ } },
    'another status is an error naming it': { path: '/nothing', want: { error: /^HTTP 404$/ } },
    'a body is cut at maxBytes': { path: '/large', opts: { maxBytes: 1000 }, want: { text: 'x'.repeat(1000) } },
    'no answer within the deadline is an error': { path: '/slow', opts: { timeoutMs: 200 }, want: { error: /^timed out$/ } },
    'a body not ended within the deadline is an error': { path: '/stall', opts: { timeoutMs: 200 }, want: { error: /^timed out$/ } },
  };
  for (const [name, c] of Object.entries(cases)) {
    it(name, async () => {
      const got = await getUrlText(`${base}${c.path}`, c.opts).then(
        (text) => ({ text }),
        (err: Error) => ({ error: err.message }),
      );
      if ('text' in c.want) expect(got).to.deep.equal(c.want);
      else expect('error' in got ? got.error : `text ${JSON.stringify(got)}`).to.match(c.want.error);
    });
  }

  it('a refused connection is an error naming its code', async () => {
    const closed = createServer();
    await new Promise<void>((done) => closed.listen(0, '127.0.0.1', done));
    const { port } = closed.address() as AddressInfo;
    await new Promise((done) => closed.close(done));
    const err = await getUrlText(`http://127.0.0.1:${port}/metrics`).then(
      () => undefined,
      (e: Error) => e,
    );
    expect(err?.message).to.equal('ECONNREFUSED');
  });

  it('a scheme other than http and https is refused before any request', async () => {
    const err = await getUrlText('file:///etc/passwd').then(
      () => undefined,
      (e: Error) => e,
    );
    expect(err?.message).to.equal('unsupported URL scheme file:');
  });
});
