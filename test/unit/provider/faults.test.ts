import { expect } from 'chai';
import { BearerAuth } from '../../../provider/auth';
import { defaultFaults, FaultController, parseFaultSettings } from '../../../provider/faults';
import { HttpError } from '../../../provider/http';

/** Status of each of n decisions (0 when the request goes through). */
function decisions(faults: FaultController, n: number): number[] {
  return Array.from({ length: n }, () => faults.decide()?.status ?? 0);
}

describe('provider/faults', () => {
  it('is all off by default', () => {
    const faults = new FaultController();
    expect(faults.get()).to.deep.equal(defaultFaults());
    expect(decisions(faults, 50).every((s) => s === 0)).to.equal(true);
    expect(faults.dropAfterCreate()).to.equal(false);
  });

  it('fails exactly the next count requests, then recovers', () => {
    const faults = new FaultController({ failNext: { status: 503, count: 3 } });
    expect(decisions(faults, 5)).to.deep.equal([503, 503, 503, 0, 0]);
    expect(faults.get().failNext).to.deep.equal({ status: 503, count: 0 });
  });

  it('answers 429 with Retry-After from failNext and throttleRate', () => {
    const faults = new FaultController({ failNext: { status: 429, count: 1 }, retryAfterSeconds: 7 });
    const err = faults.decide();
    expect(err?.status).to.equal(429);
    expect(err?.code).to.equal('Throttled');
    expect(err?.headers['Retry-After']).to.equal('7');
    faults.set({ throttleRate: 1 });
    expect(faults.decide()?.headers['Retry-After']).to.equal('1');
  });

  it('puts outage before counts, so a count survives an outage', () => {
    const faults = new FaultController({ outage: true, failNext: { status: 500, count: 1 } });
    expect(decisions(faults, 2)).to.deep.equal([503, 503]);
    expect(faults.get().failNext?.count).to.equal(1);
  });

  it('repeats the same sequence for the same seed and differs for another', () => {
    const run = (seed: number): number[] => decisions(new FaultController({ errorRate: 0.5, errorStatus: 500, seed }), 64);
    const a = run(42);
    expect(run(42)).to.deep.equal(a);
    expect(run(43)).to.not.deep.equal(a);
    const failures = a.filter((s) => s === 500).length;
    expect(failures).to.be.within(16, 48);
  });

  it('reseeds on set, so the same settings replay the same answers', () => {
    const faults = new FaultController({ throttleRate: 0.3, seed: 9 });
    const first = decisions(faults, 20);
    faults.set({ throttleRate: 0.3, seed: 9 });
    expect(decisions(faults, 20)).to.deep.equal(first);
  });

  it('drops a counted number of creates', () => {
    const faults = new FaultController({ dropAfterCommitOnCreate: { count: 2 } });
    expect([faults.dropAfterCreate(), faults.dropAfterCreate(), faults.dropAfterCreate()]).to.deep.equal([true, true, false]);
    faults.set({ dropAfterCommitOnCreate: 1 });
    expect([faults.dropAfterCreate(), faults.dropAfterCreate()]).to.deep.equal([true, true]);
  });

  it('set replaces the whole configuration and clear turns everything off', () => {
    const faults = new FaultController({ outage: true });
    faults.set({ latencyMs: 5 });
    expect(faults.get()).to.include({ outage: false, latencyMs: 5 });
    faults.clear();
    expect(faults.get()).to.deep.equal(defaultFaults());
  });

  const invalid: Record<string, [settings: unknown, field: string]> = {
    'rate above 1': [{ errorRate: 1.5 }, 'errorRate'],
    'negative rate': [{ throttleRate: -0.1 }, 'throttleRate'],
    'status 404 for errors': [{ errorStatus: 404 }, 'errorStatus'],
    'status 200 for failNext': [{ failNext: { status: 200, count: 1 } }, 'failNext.status'],
    'failNext extra field': [{ failNext: { status: 503, count: 1, x: 1 } }, 'failNext.x'],
    'latency fraction': [{ latencyMs: 1.5 }, 'latencyMs'],
    'latency too long': [{ latencyMs: 3_600_000 }, 'latencyMs'],
    'drop count negative': [{ dropAfterCommitOnCreate: { count: -1 } }, 'dropAfterCommitOnCreate.count'],
    'drop as string': [{ dropAfterCommitOnCreate: 'always' }, 'dropAfterCommitOnCreate'],
    'outage as string': [{ outage: 'yes' }, 'outage'],
    'unknown fault': [{ chaos: true }, 'chaos'],
    'not an object': [[1], 'body'],
  };
  for (const [name, [settings, field]] of Object.entries(invalid)) {
    it(`rejects ${name}`, () => {
      expect(() => parseFaultSettings(settings))
        .to.throw(HttpError)
        .with.property('message')
        .that.matches(new RegExp(`^${field.replace('.', '\\.')}: `));
    });
  }
});

describe('provider/auth', () => {
  const auth = new BearerAuth(['alpha-key', 'beta-key'], 'API key');
  const cases: Record<string, [header: string | undefined, status: number | undefined]> = {
    'first key': ['Bearer alpha-key', undefined],
    'second key': ['Bearer beta-key', undefined],
    'scheme in any case': ['bearer alpha-key', undefined],
    'missing header': [undefined, 401],
    'basic scheme': ['Basic YWxwaGEta2V5Og==', 401],
    'no token': ['Bearer ', 401],
    'two tokens': ['Bearer a b', 401],
    'wrong key': ['Bearer gamma-key', 403],
    'prefix of a key': ['Bearer alpha', 403],
  };
  for (const [name, [header, status]] of Object.entries(cases)) {
    it(`${name} -> ${status ?? 'ok'}`, () => {
      if (status === undefined) {
        expect(() => auth.check(header)).to.not.throw();
        return;
      }
      try {
        auth.check(header);
        expect.fail('expected a rejection');
      } catch (err) {
        expect(err).to.be.instanceOf(HttpError);
        const e = err as HttpError;
        expect(e.status).to.equal(status);
        expect(e.message).to.not.include('key-');
        if (status === 401) expect(e.headers['WWW-Authenticate']).to.equal('Bearer');
      }
    });
  }

  it('refuses to guard with no secret or an empty one', () => {
    expect(() => new BearerAuth([], 'API key')).to.throw(/at least one API key/);
    expect(() => new BearerAuth([''], 'API key')).to.throw(/empty/);
  });
});
