import { expect } from 'chai';
import { ADMIN_TOKEN, API_KEY, call, captureLogger, create, start } from './helpers';

describe('provider access logs', () => {
  it('logs one JSON line per request with method, path, status, duration and request id', async () => {
    const { logger, lines } = captureLogger();
    const p = await start({ logger });
    try {
      await call(p.url, '/buckets?limit=5', { headers: { 'x-request-id': 'req-1' } });
      await call(p.url, '/nope');
    } finally {
      await p.close();
    }
    const access = lines()
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .filter((l) => l.msg === 'request');
    expect(access).to.have.length(2);
    expect(access[0]).to.include({ reqId: 'req-1', method: 'GET', path: '/buckets', status: 200 });
    expect(access[0]?.durationMs).to.be.a('number');
    expect(access[1]).to.include({ method: 'GET', path: '/nope', status: 404 });
    expect(access[1]?.reqId).to.be.a('string');
  });

  it('never writes keys, tokens or Authorization headers to logs or error bodies', async () => {
    const { logger, lines } = captureLogger();
    const wrongKey = 'wrong-secret-key-5f3a';
    const p = await start({ logger });
    const bodies: string[] = [];
    try {
      for (const auth of [`Bearer ${API_KEY}`, `Bearer ${wrongKey}`, `Bearer ${ADMIN_TOKEN}`, `Basic ${wrongKey}`, null]) {
        bodies.push((await call(p.url, '/buckets', { auth })).text);
        bodies.push((await call(p.url, '/admin/faults', { auth })).text);
      }
      bodies.push((await create(p.url, 'k')).text);
      // An internal error is logged with its stack; it must not carry the request's headers.
      p.store.get = (): never => {
        throw new Error('boom');
      };
      bodies.push((await call(p.url, '/buckets/bucket-000000000000')).text);
    } finally {
      await p.close();
    }
    const text = lines().join('\n');
    expect(text).to.include('boom');
    for (const secret of [API_KEY, ADMIN_TOKEN, wrongKey]) {
      expect(text).to.not.include(secret);
      for (const body of bodies) expect(body).to.not.include(secret);
    }
    expect(text.toLowerCase()).to.not.include('authorization');
  });
});
