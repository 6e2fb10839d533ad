import { expect } from 'chai';
import {
  conditionsEqual,
  findCondition,
  formatConditionTime,
  isFalse,
  isTrue,
  removeCondition,
  setCondition,
  type Condition,
} from '../../../operator/runtime/conditions';

const t0 = new Date('2024-05-01T10:00:00.123Z');
const t1 = new Date('2024-05-01T11:30:00.999Z');
const ready = (status: Condition['status'], reason = 'Available', message = ''): Condition => ({
  type: 'Ready',
  status,
  reason,
  message,
  lastTransitionTime: '2024-05-01T10:00:00Z',
  observedGeneration: 1,
});

describe('conditions', () => {
  it('formats times like metav1.Time: whole seconds, UTC', () => {
    expect(formatConditionTime(t0)).to.equal('2024-05-01T10:00:00Z');
  });

  const cases: Record<string, { before: Condition[] | undefined; input: Parameters<typeof setCondition>[1]; expected: Condition[] }> = {
    'appends a new type with the current time': {
      before: undefined,
      input: { type: 'Ready', status: 'True', reason: 'Available', observedGeneration: 1 },
      expected: [{ ...ready('True'), lastTransitionTime: '2024-05-01T11:30:00Z' }],
    },
    'keeps lastTransitionTime when the status is unchanged, updating the rest': {
      before: [ready('True')],
      input: { type: 'Ready', status: 'True', reason: 'StillAvailable', message: 'fine', observedGeneration: 2 },
      expected: [{ ...ready('True', 'StillAvailable', 'fine'), observedGeneration: 2 }],
    },
    'moves lastTransitionTime when the status flips': {
      before: [ready('True')],
      input: { type: 'Ready', status: 'False', reason: 'Unavailable', observedGeneration: 1 },
      expected: [{ ...ready('False', 'Unavailable'), lastTransitionTime: '2024-05-01T11:30:00Z' }],
    },
    'replaces in place, keeping the order of other types': {
      before: [{ ...ready('True'), type: 'Synced' }, ready('Unknown'), { ...ready('True'), type: 'Other' }],
      input: { type: 'Ready', status: 'Unknown', reason: 'Available', observedGeneration: 1 },
      expected: [{ ...ready('True'), type: 'Synced' }, ready('Unknown'), { ...ready('True'), type: 'Other' }],
    },
  };
  for (const [name, tc] of Object.entries(cases)) {
    it(`setCondition ${name}`, () => {
      const frozen = tc.before ? structuredClone(tc.before) : undefined;
      const got = setCondition(tc.before, tc.input, t1);
      expect(got).to.deep.equal(tc.expected);
      expect(tc.before, 'input not modified').to.deep.equal(frozen);
      if (tc.before) expect(got).to.not.equal(tc.before);
    });
  }

  it('an unchanged status produces an equal list, so nothing needs writing', () => {
    const before = [ready('True'), { ...ready('False'), type: 'Degraded' }];
    const after = setCondition(before, { type: 'Ready', status: 'True', reason: 'Available', observedGeneration: 1 }, t1);
    expect(conditionsEqual(before, after)).to.equal(true);
  });

  const eq: Record<string, { a: Condition[] | undefined; b: Condition[] | undefined; equal: boolean }> = {
    'order does not matter': {
      a: [ready('True'), { ...ready('True'), type: 'X' }],
      b: [{ ...ready('True'), type: 'X' }, ready('True')],
      equal: true,
    },
    'undefined equals empty': { a: undefined, b: [], equal: true },
    'message differs': { a: [ready('True')], b: [ready('True', 'Available', 'x')], equal: false },
    'reason differs': { a: [ready('True')], b: [ready('True', 'Other')], equal: false },
    'observedGeneration differs': { a: [ready('True')], b: [{ ...ready('True'), observedGeneration: 2 }], equal: false },
    'transition time differs': {
      a: [ready('True')],
      b: [{ ...ready('True'), lastTransitionTime: '2024-05-01T10:00:01Z' }],
      equal: false,
    },
    'same instant written differently': {
      a: [ready('True')],
      b: [{ ...ready('True'), lastTransitionTime: '2024-05-01T12:00:00+02:00' }],
      equal: true,
    },
    'a Date from the API client equals its string': {
      a: [ready('True')],
      b: [{ ...ready('True'), lastTransitionTime: new Date('2024-05-01T10:00:00Z') as unknown as string }],
      equal: true,
    },
    'different lengths': { a: [ready('True')], b: [], equal: false },
    'duplicate types never equal a set': {
      a: [ready('True'), { ...ready('True'), type: 'X' }],
      b: [ready('True'), ready('True')],
      equal: false,
    },
  };
  for (const [name, tc] of Object.entries(eq)) {
    it(`conditionsEqual: ${name}`, () => {
      expect(conditionsEqual(tc.a, tc.b)).to.equal(tc.equal);
      expect(conditionsEqual(tc.b, tc.a), 'symmetric').to.equal(tc.equal);
    });
  }

  it('finds, tests and removes conditions', () => {
    const list = [ready('True'), { ...ready('False'), type: 'Degraded' }];
    expect(findCondition(list, 'Degraded')?.status).to.equal('False');
    expect(findCondition(undefined, 'Ready')).to.equal(undefined);
    expect(isTrue(list, 'Ready')).to.equal(true);
    expect(isTrue(list, 'Degraded')).to.equal(false);
    expect(isFalse(list, 'Degraded')).to.equal(true);
    expect(isTrue(list, 'Missing')).to.equal(false);
    expect(removeCondition(list, 'Ready').map((c) => c.type)).to.deep.equal(['Degraded']);
  });
});
