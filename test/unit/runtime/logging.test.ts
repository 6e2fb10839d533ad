import { expect } from 'chai';
import { captureLogger } from './fakes';

describe('logging', () => {
  it('redacts secret-bearing fields and keeps the rest', () => {
    const { logger, lines } = captureLogger();
    logger.info(
      {
        apiKey: 'k1',
        provider: { apiKey: 'k2', endpoint: 'http://p' },
        creds: { token: 't', password: 'p' },
        headers: { authorization: 'Bearer x' },
        req: { headers: { authorization: 'Bearer y' } },
      },
      'hello',
    );
    const line = lines[0] ?? {};
    expect(line).to.include({ msg: 'hello', apiKey: '[REDACTED]' });
    expect(line.provider).to.deep.equal({ apiKey: '[REDACTED]', endpoint: 'http://p' });
    expect(line.creds).to.deep.equal({ token: '[REDACTED]', password: '[REDACTED]' });
    expect(line.headers).to.deep.equal({ authorization: '[REDACTED]' });
    expect(line.req).to.deep.equal({ headers: { authorization: '[REDACTED]' } });
  });

  it('child loggers carry their bindings', () => {
    const { logger, lines } = captureLogger();
    logger.child({ controller: 'c', reconcileID: 'r' }).debug('x');
    expect(lines[0]).to.include({ controller: 'c', reconcileID: 'r', level: 20 });
  });
});
