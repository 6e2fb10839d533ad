import { expect } from 'chai';
import { BYTES_PER_JSON_VALUE, JsonValueCounter, jsonValueBudget } from '../../../operator/provider-client/json-budget';

/** Feeds `text` to a fresh counter in pieces of `piece` bytes; the count and whether it stayed within `budget`. */
function count(text: string, piece: number, budget = 1_000_000): { values: number; within: boolean } {
  const counter = new JsonValueCounter(budget);
  const bytes = Buffer.from(text, 'utf8');
  let within = true;
  for (let i = 0; i < bytes.length; i += piece) within = counter.add(bytes.subarray(i, i + piece)) && within;
  return { values: counter.values, within };
}

const cases: Record<string, { args: { text: string }; want: number }> = {
  'a scalar has no structure': { args: { text: '42' }, want: 0 },
  'an empty object': { args: { text: '{}' }, want: 1 },
  'an object of two members: the brace, two colons and a comma': { args: { text: '{"a":1,"b":[1,2]}' }, want: 6 },
  'structure inside strings is not counted': { args: { text: '{"k":"{[,:]}"}' }, want: 2 },
  'an escaped quote does not end a string': { args: { text: '{"k":"a\\",[{"}' }, want: 2 },
  'an escaped backslash before a closing quote does': { args: { text: '["a\\\\",[]]' }, want: 3 },
  'multi-byte characters never look like structure': { args: { text: '["é{","ключ,",{}]' }, want: 4 },
};

describe('JsonValueCounter', () => {
  for (const [name, { args, want }] of Object.entries(cases)) {
    it(`${name} (whole, and split at every byte)`, () => {
      expect(count(args.text, 1 << 20).values, 'in one piece').to.equal(want);
      expect(count(args.text, 1).values, 'a byte at a time').to.equal(want);
    });
  }

  it('says when the budget is passed, and not before', () => {
    expect(count('[[],[]]', 1, 4)).to.deep.equal({ values: 4, within: true });
    expect(count('[[],[],[]]', 1, 4)).to.deep.equal({ values: 6, within: false });
  });

  it('gives a byte cap one value per BYTES_PER_JSON_VALUE bytes', () => {
    expect(jsonValueBudget(1024 * 1024)).to.equal((1024 * 1024) / BYTES_PER_JSON_VALUE);
    expect(jsonValueBudget(1)).to.equal(1);
  });

  it('lets an honest bucket with the provider’s 50 longest tags through an answer’s budget', () => {
    const tags = Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`${i}`.padEnd(128, 'k'), 'v'.repeat(256)]));
    const bucket = { id: 'bucket-000000000001', region: 'us-east-1', sizeGB: 1, encrypted: false, phase: 'Active', endpoint: 'e', tags };
    const text = JSON.stringify(bucket);
    expect(count(text, 4096, jsonValueBudget(1024 * 1024)).within).to.equal(true);
  });
});
