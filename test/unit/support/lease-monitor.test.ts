/** The rule by which tests and benchmarks count missed Lease renewals, seen from outside. */
import { expect } from 'chai';
import { summarizeRenewals, type LeaseReport } from '../../support/lease-monitor';

const PERIOD = 2000;
const cases: Record<string, { args: { times: number[]; holders: string[] }; want: LeaseReport }> = {
  'renewed every period: none missed': {
    args: { times: [0, 2000, 4000, 6100], holders: ['a', 'a', 'a', 'a'] },
    want: { renewals: 4, missed: 0, maxGapSeconds: 2.1, holderChanges: 0 },
  },
  'one renewal late by more than half a period counts as one missed': {
    args: { times: [0, 2000, 5100], holders: ['a', 'a', 'a'] },
    want: { renewals: 3, missed: 1, maxGapSeconds: 3.1, holderChanges: 0 },
  },
  'a ten-second silence is four renewals missed': {
    args: { times: [0, 10_000], holders: ['a', 'a'] },
    want: { renewals: 2, missed: 4, maxGapSeconds: 10, holderChanges: 0 },
  },
  'a new holder is counted': {
    args: { times: [0, 2000, 4000], holders: ['a', 'a', 'b'] },
    want: { renewals: 3, missed: 0, maxGapSeconds: 2, holderChanges: 1 },
  },
  'nothing seen': { args: { times: [], holders: [] }, want: { renewals: 0, missed: 0, maxGapSeconds: 0, holderChanges: 0 } },
};

describe('bench: summarizeRenewals', () => {
  for (const [name, { args, want }] of Object.entries(cases)) {
    it(name, () => expect(summarizeRenewals(args.times, args.holders, PERIOD)).to.deep.equal(want));
  }
});
