import { expect } from 'chai';
import { decodeSizeAnnotation, encodeSizeAnnotation, type SizeAnnotationData } from '../../../operator/api/convert';

/** The v2-size annotation: what v1 cannot hold, and a v2 object's own value of the key. */
describe('size annotation', () => {
  const encoded: Record<string, { args: { gb: number; data: SizeAnnotationData }; want: { value: string | undefined } }> = {
    'nothing to carry': { args: { gb: 10, data: {} }, want: { value: undefined } },
    'a spelling, as itself': { args: { gb: 2, data: { quantity: '1500Mi' } }, want: { value: '1500Mi' } },
    "the v2 object's own value, as itself": { args: { gb: 2, data: { userValue: 'set by hand' } }, want: { value: 'set by hand' } },
    "the v2 object's own value that reads as a spelling, wrapped": {
      args: { gb: 2, data: { userValue: '1500Mi' } },
      want: { value: '{"annotation":"1500Mi"}' },
    },
    'a spelling and an own value, wrapped': {
      args: { gb: 2, data: { quantity: '1500Mi', userValue: 'x' } },
      want: { value: '{"size":"1500Mi","annotation":"x"}' },
    },
    'an own value that reads as a wrapped value, wrapped again': {
      args: { gb: 2, data: { userValue: '{"size":"1500Mi","annotation":"x"}' } },
      want: { value: '{"annotation":"{\\"size\\":\\"1500Mi\\",\\"annotation\\":\\"x\\"}"}' },
    },
    'an own value that looks wrapped but would not be written so, as itself': {
      args: { gb: 2, data: { userValue: '{"annotation":"x"}' } },
      want: { value: '{"annotation":"x"}' },
    },
  };
  for (const [name, { args, want }] of Object.entries(encoded)) {
    it(`encodes ${name}, and decodes it back`, () => {
      const value = encodeSizeAnnotation(args.gb, args.data);
      expect(value).to.equal(want.value);
      expect(decodeSizeAnnotation(args.gb, value)).to.deep.equal(args.data);
    });
  }

  const decoded: Record<string, { args: { gb: number; value: string | undefined }; want: SizeAnnotationData }> = {
    'no annotation': { args: { gb: 2, value: undefined }, want: {} },
    'a spelling of the size': { args: { gb: 2, value: '1500Mi' }, want: { quantity: '1500Mi' } },
    'a spelling left behind by an edit of sizeGB through v1': { args: { gb: 3, value: '1500Mi' }, want: { userValue: '1500Mi' } },
    'the canonical spelling, which is never carried': { args: { gb: 2, value: '2G' }, want: { userValue: '2G' } },
    'a value that is no size': { args: { gb: 2, value: 'garbage' }, want: { userValue: 'garbage' } },
    'an empty value': { args: { gb: 2, value: '' }, want: { userValue: '' } },
    'a wrapped spelling and own value': {
      args: { gb: 2, value: '{"size":"1500Mi","annotation":"x"}' },
      want: { quantity: '1500Mi', userValue: 'x' },
    },
    'a wrapped own value that needed wrapping': { args: { gb: 2, value: '{"annotation":"1500Mi"}' }, want: { userValue: '1500Mi' } },
    'wrapped JSON in another key order': {
      args: { gb: 2, value: '{"annotation":"x","size":"1500Mi"}' },
      want: { userValue: '{"annotation":"x","size":"1500Mi"}' },
    },
    'wrapped JSON with spaces': {
      args: { gb: 2, value: '{"size": "1500Mi", "annotation": "x"}' },
      want: { userValue: '{"size": "1500Mi", "annotation": "x"}' },
    },
    'a wrapped spelling alone (written plain)': { args: { gb: 2, value: '{"size":"1500Mi"}' }, want: { userValue: '{"size":"1500Mi"}' } },
    'a wrapped spelling of another size': {
      args: { gb: 5, value: '{"size":"1500Mi","annotation":"x"}' },
      want: { userValue: '{"size":"1500Mi","annotation":"x"}' },
    },
    'wrapped JSON with another field': {
      args: { gb: 2, value: '{"size":"1500Mi","annotation":"x","more":1}' },
      want: { userValue: '{"size":"1500Mi","annotation":"x","more":1}' },
    },
    'JSON that is not an object': { args: { gb: 2, value: '["1500Mi"]' }, want: { userValue: '["1500Mi"]' } },
    'broken JSON': { args: { gb: 2, value: '{"size":' }, want: { userValue: '{"size":' } },
  };
  for (const [name, { args, want }] of Object.entries(decoded)) {
    it(`decodes ${name}, and encodes it back to the same value`, () => {
      const data = decodeSizeAnnotation(args.gb, args.value);
      expect(data).to.deep.equal(want);
      expect(encodeSizeAnnotation(args.gb, data)).to.equal(args.value);
    });
  }
});
