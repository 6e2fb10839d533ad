import { expect } from 'chai';
import { Type, type TSchema } from '@sinclair/typebox';
import { toStructuralSchema } from '../../../infra/structural-schema';

describe('toStructuralSchema', () => {
  it('keeps CEL rules, list-map keys, enums and defaults', () => {
    const out = toStructuralSchema(
      Type.Object({
        a: Type.Integer({ default: 1, 'x-kubernetes-validations': [{ rule: 'self >= oldSelf' }] }),
        b: Type.Array(Type.Object({ type: Type.String() }), {
          'x-kubernetes-list-type': 'map',
          'x-kubernetes-list-map-keys': ['type'],
        }),
      }),
    );
    expect(out).to.deep.equal({
      type: 'object',
      required: ['a', 'b'],
      properties: {
        a: { type: 'integer', default: 1, 'x-kubernetes-validations': [{ rule: 'self >= oldSelf' }] },
        b: {
          type: 'array',
          'x-kubernetes-list-type': 'map',
          'x-kubernetes-list-map-keys': ['type'],
          items: { type: 'object', required: ['type'], properties: { type: { type: 'string' } } },
        },
      },
    });
  });

  it('strips $id and examples', () => {
    const out = toStructuralSchema(Type.String({ $id: 'x', examples: ['a'] }));
    expect(out).to.deep.equal({ type: 'string' });
  });

  const rejected: Record<string, [TSchema, RegExp]> = {
    'const (from a literal)': [Type.Object({ a: Type.Literal('x') }), /'const'.*use enum/],
    'patternProperties (from a record)': [Type.Record(Type.String(), Type.String()), /patternProperties/],
    'a node without type': [Type.Object({ a: Type.Any() }), /has no type/],
    uniqueItems: [Type.Array(Type.String(), { uniqueItems: true }), /uniqueItems/],
    'type null': [Type.Object({ a: Type.Null() }), /type null/],
  };
  for (const [name, [schema, message]] of Object.entries(rejected)) {
    it(`refuses ${name}`, () => {
      expect(() => toStructuralSchema(schema)).to.throw(message);
    });
  }
});
