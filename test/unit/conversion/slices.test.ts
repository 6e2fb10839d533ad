/**
 * A large review converted without holding the event loop: timers and I/O callbacks that fall
 * due while it is converted (the Lease renewal is a timer) run before it is finished. The
 * all-at-once case is how the server converted before slicing, and shows the check tells the
 * two apart. Nothing here measures time: each case asks only what ran first.
 */
import { expect } from 'chai';
import * as v1 from '../../../operator/api/v1';
import * as v2 from '../../../operator/api/v2';
import { reviewConversion, reviewSteps, type ReviewOutcome } from '../../../operator/conversion/review';
import { reviewJsonSteps, runInSlices, SlicedRunAborted } from '../../../operator/conversion/slices';

function bucket(i: number): v1.StorageBucket {
  return {
    apiVersion: v1.API_VERSION,
    kind: 'StorageBucket',
    metadata: { name: `b-${i}`, namespace: `team-${i % 7}`, labels: { app: 'x' } },
    spec: { region: 'eu-west-1', sizeGB: 1 + (i % 50), providerRef: { name: 'default' } },
    status: { phase: 'Active', sizeGB: 1 + (i % 50), observedGeneration: 1 },
  };
}

function reviewOf(objects: unknown[], desired = v2.API_VERSION): unknown {
  return { apiVersion: 'apiextensions.k8s.io/v1', kind: 'ConversionReview', request: { uid: 'u-1', desiredAPIVersion: desired, objects } };
}

const big = reviewOf(Array.from({ length: 2000 }, (_, i) => bucket(i)));

type Schedule = (f: () => void) => void;
const schedules: Record<string, Schedule> = {
  'a timer (setTimeout 0)': (f) => setTimeout(f, 0),
  'an I/O turn (setImmediate)': (f) => setImmediate(f),
};
const drivers: Record<string, { run: (body: unknown) => Promise<ReviewOutcome>; want: boolean }> = {
  'converted in slices (the server now)': { run: (body) => runInSlices(reviewSteps(body), 64), want: true },
  'converted all at once (the server before)': { run: (body) => Promise.resolve(reviewConversion(body)), want: false },
};

describe('conversion in slices', () => {
  for (const [driverName, driver] of Object.entries(drivers)) {
    for (const [scheduleName, schedule] of Object.entries(schedules)) {
      it(`${driverName}: ${scheduleName} due as a review of 2,000 objects starts ${driver.want ? 'runs' : 'does not run'} before it is finished`, async () => {
        let fired = false;
        schedule(() => (fired = true));
        let firedWhenDone: boolean | undefined;
        const outcome = await driver.run(big).then((o) => {
          firedWhenDone = fired;
          return o;
        });
        expect(outcome.kind).to.equal('review');
        expect(firedWhenDone).to.equal(driver.want);
      });
    }
  }

  const bodies: Record<string, unknown> = {
    'a large review': big,
    'a review with a refused object in its middle': reviewOf([
      ...Array.from({ length: 150 }, (_, i) => bucket(i)),
      { ...bucket(150), spec: {} },
      bucket(151),
    ]),
    'an empty review': reviewOf([]),
    'not a review': { kind: 'AdmissionReview' },
  };
  for (const [name, body] of Object.entries(bodies)) {
    it(`${name}: answers exactly what the review at once answers, and serializes to the same text`, async () => {
      const sliced = await runInSlices(reviewSteps(body), 64);
      const whole = reviewConversion(body);
      expect(sliced).to.deep.equal(whole);
      if (sliced.kind === 'review')
        expect(await runInSlices(reviewJsonSteps(sliced.review), 64)).to.equal(JSON.stringify(whole.kind === 'review' ? whole.review : undefined));
    });
  }

  it('a refused object is named by its index in the whole review, not in its slice', async () => {
    const body = reviewOf([...Array.from({ length: 150 }, (_, i) => bucket(i)), { ...bucket(150), spec: {} }]);
    const outcome = await runInSlices(reviewSteps(body), 64);
    expect(outcome.kind === 'review' && outcome.review.response.result).to.include({ status: 'Failure' });
    expect(JSON.stringify(outcome)).to.match(/object 150 \(team-3\/b-150\)/);
  });

  it('stops between slices once abandoned, and passes on what a step throws', async () => {
    let steps = 0;
    function* endless(): Generator<void, never, void> {
      for (;;) {
        steps++;
        yield;
      }
    }
    const err = await runInSlices(endless(), 10, () => steps >= 30).catch((e: unknown) => e);
    expect(err).to.be.instanceOf(SlicedRunAborted);
    expect(steps).to.equal(30);
    function* broken(): Generator<void, void, void> {
      yield;
      throw new Error('boom');
    }
    expect(await runInSlices(broken(), 10).catch((e: unknown) => (e as Error).message)).to.equal('boom');
  });
});
