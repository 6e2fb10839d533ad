/**
 * Provider calls in flight per account (issue 32): a rate bounds how often calls start, not
 * how long they hold a socket, so each account also has seats. A slow account's calls wait
 * for a seat of their own; another account's calls at the same endpoint go straight through.
 */
import { expect } from 'chai';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ProviderClients } from '../../../operator/provider-client/client';
import { InFlightLimit } from '../../../operator/provider-client/rate-limiter';
import { eventually, IN_PROCESS } from '../../support/eventually';

/** Settles `p` into what happened to it, so a test can look at a promise without awaiting it. */
function track<T>(p: Promise<T>): { readonly state: () => 'pending' | 'resolved' | 'rejected'; readonly reason: () => unknown } {
  let state: 'pending' | 'resolved' | 'rejected' = 'pending';
  let reason: unknown;
  p.then(
    () => (state = 'resolved'),
    (err: unknown) => {
      state = 'rejected';
      reason = err;
    },
  );
  return { state: () => state, reason: () => reason };
}

const flush = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('InFlightLimit', () => {
  it('seats up to its limit at once; the others wait and are seated in arrival order', async () => {
    const seats = new InFlightLimit(2);
    const order: string[] = [];
    const a = seats.acquire().then(() => order.push('a'));
    const b = seats.acquire().then(() => order.push('b'));
    const c = track(seats.acquire().then(() => order.push('c')));
    const d = track(seats.acquire().then(() => order.push('d')));
    await Promise.all([a, b]);
    await flush();
    expect({ inFlight: seats.inFlight, waiting: seats.waiting, c: c.state(), d: d.state() }).to.deep.equal({
      inFlight: 2,
      waiting: 2,
      c: 'pending',
      d: 'pending',
    });
    seats.release();
    await flush();
    expect([c.state(), d.state()], 'the longest waiting caller took the seat').to.deep.equal(['resolved', 'pending']);
    seats.release();
    await flush();
    expect(order).to.deep.equal(['a', 'b', 'c', 'd']);
    expect(seats.inFlight).to.equal(2);
  });

  it('a caller whose signal aborts while waiting leaves the line with its reason and takes no seat', async () => {
    const seats = new InFlightLimit(1);
    await seats.acquire();
    const ac = new AbortController();
    const aborted = track(seats.acquire(ac.signal));
    const next = track(seats.acquire());
    const stop = new Error('reconcile timed out');
    ac.abort(stop);
    await flush();
    expect(aborted.state()).to.equal('rejected');
    expect(aborted.reason()).to.equal(stop);
    expect(seats.waiting).to.equal(1);
    seats.release();
    await flush();
    expect(next.state(), 'the seat went to the caller still waiting').to.equal('resolved');
    seats.release();
    expect({ inFlight: seats.inFlight, waiting: seats.waiting }).to.deep.equal({ inFlight: 0, waiting: 0 });
  });

  it('refuses an already aborted signal at once', async () => {
    const seats = new InFlightLimit(1);
    const ac = new AbortController();
    ac.abort(new Error('stopped'));
    let caught: unknown;
    await seats.acquire(ac.signal).catch((err: unknown) => (caught = err));
    expect((caught as Error).message).to.equal('stopped');
    expect(seats.inFlight).to.equal(0);
  });

  const invalid: Record<string, number> = { zero: 0, negative: -1, fraction: 1.5, NaN: Number.NaN };
  for (const [name, limit] of Object.entries(invalid)) {
    it(`refuses a limit that is not a positive integer: ${name}`, () => {
      expect(() => new InFlightLimit(limit)).to.throw(RangeError);
    });
  }
});

describe('ProviderClients: calls in flight per account', () => {
  const SLOW_KEY = 'slow-key-0123456789';
  const FAST_KEY = 'fast-key-0123456789';
  let server: Server;
  let url = '';
  /** Calls of the slow account the endpoint holds unanswered. */
  let held: ServerResponse[] = [];
  let maxHeld = 0;
  let slowArrived = 0;

  const answer = (res: ServerResponse): void => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ id: 'b-1', region: 'r', sizeGB: 1, encrypted: false, phase: 'Active', endpoint: 'e', tags: {} }));
  };

  before(async () => {
    server = createServer((req: IncomingMessage, res: ServerResponse) => {
      if (req.headers.authorization !== `Bearer ${SLOW_KEY}`) return answer(res);
      slowArrived++;
      held.push(res);
      maxHeld = Math.max(maxHeld, held.length);
      res.on('close', () => (held = held.filter((r) => r !== res)));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  beforeEach(() => {
    held = [];
    maxHeld = 0;
    slowArrived = 0;
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it('a slow account holds at most its seats at the endpoint; another account at the same endpoint is served meanwhile', async () => {
    const clients = new ProviderClients({ qps: 1000, burst: 1000, maxInFlightPerAccount: 2 });
    try {
      const slow = clients.client(url, SLOW_KEY);
      const fast = clients.client(url, FAST_KEY);
      const calls = Array.from({ length: 5 }, (_, i) => track(slow.getBucket(`b-${i}`)));
      await eventually(() => held.length === 2, { ...IN_PROCESS, description: 'two slow calls at the endpoint' });
      expect((await fast.getBucket('b-1'))?.id, 'the other account was served while the slow one held its seats').to.equal('b-1');
      // Answer the slow calls one at a time: each answer lets exactly one more in.
      for (let done = 0; done < 5; done++) {
        await eventually(() => held.length > 0, { ...IN_PROCESS, description: `slow call ${done + 1} at the endpoint` });
        answer(held[0] as ServerResponse);
        await eventually(() => calls.filter((c) => c.state() === 'resolved').length === done + 1, {
          ...IN_PROCESS,
          description: `slow call ${done + 1} answered`,
        });
      }
      expect(maxHeld, 'slow calls the endpoint held at once').to.equal(2);
      expect(slowArrived, 'every slow call went out in the end').to.equal(5);
    } finally {
      clients.close();
    }
  });

  it('a call waiting for a seat that its caller abandons never reaches the endpoint', async () => {
    const clients = new ProviderClients({ qps: 1000, burst: 1000, maxInFlightPerAccount: 1 });
    try {
      const slow = clients.client(url, SLOW_KEY);
      const first = track(slow.getBucket('b-0'));
      await eventually(() => held.length === 1, { ...IN_PROCESS, description: 'the first slow call at the endpoint' });
      const ac = new AbortController();
      const second = track(slow.getBucket('b-1', ac.signal));
      const timedOut = new Error('reconcile timed out');
      ac.abort(timedOut);
      await eventually(() => second.state() === 'rejected', { ...IN_PROCESS, description: 'the abandoned call rejected' });
      expect(second.reason(), "rejected with the caller's own reason, not as a provider failure").to.equal(timedOut);
      answer(held[0] as ServerResponse);
      await eventually(() => first.state() === 'resolved', { ...IN_PROCESS, description: 'the first call answered' });
      // Barrier: a third call takes the freed seat and is answered; the abandoned one never went out.
      const third = slow.getBucket('b-2');
      await eventually(() => held.length === 1, { ...IN_PROCESS, description: 'the third slow call at the endpoint' });
      answer(held[0] as ServerResponse);
      await third;
      expect(slowArrived, 'slow calls that reached the endpoint').to.equal(2);
    } finally {
      clients.close();
    }
  });
});
