import { expect } from 'chai';
import {
  checkCertPolicy,
  DEFAULT_CERT_POLICY,
  planRotation,
  type CaFacts,
  type CertFacts,
  type CertPolicy,
  type RotationStep,
  type ServingFacts,
} from '../../../operator/conversion/rotation';

const H = 3_600_000;
const DAY = 24 * H;
/** Small numbers that make the arithmetic readable: CA 300 days, serving 90 days, renew at 2/3, overlap 1 hour. */
const policy: CertPolicy = { caValidityMs: 300 * DAY, servingValidityMs: 90 * DAY, renewFraction: 2 / 3, overlapMs: H };

const ca = (issuedDay: number, more: Partial<CaFacts> = {}): CaFacts => ({
  issuedAt: issuedDay * DAY,
  notAfter: (issuedDay + 300) * DAY,
  signing: true,
  ...more,
});
const serving = (issuedAt: number, more: Partial<ServingFacts> = {}): ServingFacts => ({
  issuedAt,
  notAfter: issuedAt + 90 * DAY,
  issuer: 0,
  namesMatch: true,
  keyMatches: true,
  ...more,
});
const present = (cas: CaFacts[], s?: ServingFacts): CertFacts => ({ kind: 'present', cas, ...(s ? { serving: s } : {}) });

const cases: Record<string, { facts: CertFacts; now: number; want: RotationStep }> = {
  'no Secret: create': { facts: { kind: 'absent' }, now: 0, want: { kind: 'create', reason: 'no certificates yet' } },
  'unusable data: create, saying why': {
    facts: { kind: 'unusable', reason: 'ca.key is missing' },
    now: 0,
    want: { kind: 'create', reason: 'ca.key is missing' },
  },
  'no CA matches the key: create': {
    facts: present([ca(0, { signing: false })], serving(0)),
    now: DAY,
    want: { kind: 'create', reason: 'no CA in the bundle matches the CA key' },
  },
  'an expired CA: create (nothing trusted to overlap with)': {
    facts: present([ca(0)], serving(0)),
    now: 300 * DAY,
    want: { kind: 'create', reason: 'the CA has expired' },
  },
  'fresh: keep until the serving certificate is due at 2/3 of its life': {
    facts: present([ca(0)], serving(0)),
    now: DAY,
    want: { kind: 'keep', recheckAt: 60 * DAY },
  },
  'serving renewal due: issue from the same CA, no overlap needed': {
    facts: present([ca(0)], serving(0)),
    now: 60 * DAY,
    want: { kind: 'issueServing', reason: 'renewal due' },
  },
  'renewed serving: keep until the CA is due at 2/3 of its life': {
    facts: present([ca(0)], serving(180 * DAY)),
    now: 181 * DAY,
    want: { kind: 'keep', recheckAt: 200 * DAY },
  },
  'no serving certificate: issue one': { facts: present([ca(0)]), now: DAY, want: { kind: 'issueServing', reason: 'no serving certificate' } },
  'serving key does not match: issue': {
    facts: present([ca(0)], serving(0, { keyMatches: false })),
    now: DAY,
    want: { kind: 'issueServing', reason: 'the serving key does not match the serving certificate' },
  },
  'serving names other hosts (Service renamed): issue': {
    facts: present([ca(0)], serving(0, { namesMatch: false })),
    now: DAY,
    want: { kind: 'issueServing', reason: 'the serving certificate names other hosts' },
  },
  'serving signed by no CA of the bundle: issue': {
    facts: present([ca(0)], serving(0, { issuer: -1 })),
    now: DAY,
    want: { kind: 'issueServing', reason: 'the serving certificate is signed by no CA in the bundle' },
  },
  'CA due: add a new CA beside it, serving untouched': { facts: present([ca(0)], serving(180 * DAY)), now: 200 * DAY, want: { kind: 'addCa' } },
  'CA due and serving due at once: the CA first (a serving certificate from a CA about to leave would be wasted)': {
    facts: present([ca(0)], serving(130 * DAY)),
    now: 200 * DAY,
    want: { kind: 'addCa' },
  },
  'new CA just added: serving stays on the old CA until the overlap is over': {
    facts: present([ca(0, { signing: false }), ca(200)], serving(180 * DAY, { issuer: 0 })),
    now: 200 * DAY + 10 * 60_000,
    want: { kind: 'keep', recheckAt: 200 * DAY + H },
  },
  'overlap over: switch serving to the new CA': {
    facts: present([ca(0, { signing: false }), ca(200)], serving(180 * DAY, { issuer: 0 })),
    now: 200 * DAY + H,
    want: { kind: 'issueServing', reason: 'switching to the new CA' },
  },
  'serving from the old CA expired during the overlap: replace now': {
    facts: present([ca(0, { signing: false }), ca(200)], serving(100 * DAY, { issuer: 0 })),
    now: 200 * DAY + 1,
    want: { kind: 'issueServing', reason: 'the serving certificate has expired' },
  },
  'serving from the old CA merely due during the overlap: still waits for the new CA to be trusted': {
    facts: present([ca(0, { signing: false }), ca(200)], serving(140 * DAY, { issuer: 0 })),
    now: 200 * DAY + 1,
    want: { kind: 'keep', recheckAt: 200 * DAY + H },
  },
  'serving switched: the old CA stays until every replica serves the new certificate': {
    facts: present([ca(0, { signing: false }), ca(200)], serving(200 * DAY + H, { issuer: 1 })),
    now: 200 * DAY + H + 1,
    want: { kind: 'keep', recheckAt: 200 * DAY + 2 * H },
  },
  'rolled out: drop the old CA': {
    facts: present([ca(0, { signing: false }), ca(200)], serving(200 * DAY + H, { issuer: 1 })),
    now: 200 * DAY + 2 * H,
    want: { kind: 'dropOldCas' },
  },
  'after the drop: steady again on the new CA': {
    facts: present([ca(200)], serving(200 * DAY + H)),
    now: 200 * DAY + 2 * H,
    want: { kind: 'keep', recheckAt: 200 * DAY + H + 60 * DAY },
  },
};

describe('certificate rotation planner', () => {
  for (const [name, { facts, now, want }] of Object.entries(cases)) it(name, () => expect(planRotation(facts, now, policy)).to.deep.equal(want));

  describe('policy check', () => {
    it('accepts the defaults', () => expect(() => checkCertPolicy(DEFAULT_CERT_POLICY)).to.not.throw());
    const bad: Record<string, { policy: CertPolicy; want: RegExp }> = {
      'renewFraction 1': { policy: { ...policy, renewFraction: 1 }, want: /renewFraction must be between 0 and 1/ },
      'renewFraction 0': { policy: { ...policy, renewFraction: 0 }, want: /renewFraction/ },
      'no overlap': { policy: { ...policy, overlapMs: 0 }, want: /overlapMs must be positive/ },
      'an overlap that outlasts the remaining life': { policy: { ...policy, overlapMs: 16 * DAY }, want: /2 \* overlapMs must be shorter/ },
    };
    for (const [name, tc] of Object.entries(bad)) it(`refuses ${name}`, () => expect(() => checkCertPolicy(tc.policy)).to.throw(tc.want));
  });
});
