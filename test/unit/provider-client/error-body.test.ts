import { expect } from 'chai';
import { createServer } from 'node:http';
import { ProviderClients } from '../../../operator/provider-client/client';
import {
  MAX_PROVIDER_MESSAGE,
  NOT_A_PROVIDER_ERROR,
  readProviderErrorBody,
  REDIRECT_NOT_FOLLOWED,
} from '../../../operator/provider-client/error-body';

const cases: Record<string, { args: { status: number; text: string; truncated?: boolean }; want: { code: string; detail: string } }> = {
  'a contract error keeps its code and message': {
    args: { status: 422, text: '{"code":"ValidationFailed","message":"region: unknown region"}' },
    want: { code: 'ValidationFailed', detail: 'region: unknown region' },
  },
  'JSON with a code outside the contract is not shown': {
    args: { status: 500, text: '{"code":"DatabaseDown","message":"db password=hunter2 rejected at 10.0.0.7"}' },
    want: { code: 'HTTP500', detail: NOT_A_PROVIDER_ERROR },
  },
  'JSON with a message but no code (another service reflected) is not shown': {
    args: { status: 400, text: '{"message":"internal admin page: users alice, bob"}' },
    want: { code: 'HTTP400', detail: NOT_A_PROVIDER_ERROR },
  },
  'an HTML page is not shown': {
    args: { status: 502, text: '<html><body>Bad gateway: upstream 10.1.2.3</body></html>' },
    want: { code: 'HTTP502', detail: NOT_A_PROVIDER_ERROR },
  },
  'a JSON array or string is not shown': {
    args: { status: 500, text: '["NotFound"]' },
    want: { code: 'HTTP500', detail: NOT_A_PROVIDER_ERROR },
  },
  'an empty body gives the status alone': {
    args: { status: 503, text: '' },
    want: { code: 'HTTP503', detail: '' },
  },
  'a body cut at the read limit is no contract error, even when its start reads as one': {
    args: { status: 503, text: '{"code":"ServiceUnavailable","message":"xxxx', truncated: true },
    want: { code: 'HTTP503', detail: NOT_A_PROVIDER_ERROR },
  },
  'an error body never read (too long) gives the status and the fixed text': {
    args: { status: 500, text: '', truncated: true },
    want: { code: 'HTTP500', detail: NOT_A_PROVIDER_ERROR },
  },
  'a redirect says it is not followed, whatever its body': {
    args: { status: 302, text: '{"code":"NotFound","message":"moved to http://elsewhere/?token=abc"}' },
    want: { code: 'HTTP302', detail: REDIRECT_NOT_FOLLOWED },
  },
  'a contract message is cut to its first line and printable characters': {
    args: { status: 409, text: JSON.stringify({ code: 'NotReady', message: 'still provisioning\u0007\nsecond line' }) },
    want: { code: 'NotReady', detail: 'still provisioning' },
  },
};

describe('readProviderErrorBody', () => {
  for (const [name, { args, want }] of Object.entries(cases)) {
    it(name, () => {
      expect(readProviderErrorBody(args.status, args.text, args.truncated)).to.deep.equal(want);
    });
  }

  it('bounds a long contract message', () => {
    const got = readProviderErrorBody(422, JSON.stringify({ code: 'ValidationFailed', message: 'x'.repeat(1000) }));
    expect(got.detail.length).to.equal(MAX_PROVIDER_MESSAGE);
    expect(got.detail.endsWith('...')).to.equal(true);
  });
});

describe('ProviderClients error answers', () => {
  it('never puts a reflected body of a non-provider endpoint into the error message', async () => {
    const server = createServer((_req, res) => {
      res.writeHead(400, { 'content-type': 'application/json' });
      res.end('{"message":"internal admin page: token=abc123"}');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const clients = new ProviderClients();
    try {
      const { port } = server.address() as { port: number };
      const err = await clients
        .client(`http://127.0.0.1:${port}`, 'k')
        .getBucket('b1')
        .then(
          () => undefined,
          (e: unknown) => e as Error,
        );
      expect(err?.message).to.equal(`provider get failed: 400 HTTP400: ${NOT_A_PROVIDER_ERROR}`);
    } finally {
      clients.close();
      await new Promise((r) => server.close(r));
    }
  });
});
