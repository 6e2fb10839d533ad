import { expect } from 'chai';
import { HttpError } from '../../../provider/http';
import { DEFAULT_REGIONS } from '../../../provider/types';
import { encodeContinue, parseAdminPatch, parseCreate, parseIdempotencyKey, parseListQuery, parseUpdate } from '../../../provider/validation';

/** The message of the 422 thrown by fn; fails when fn does not throw one. */
function rejection(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    if (err instanceof HttpError && err.status === 422 && err.code === 'ValidationFailed') return err.message;
    throw err;
  }
  throw new Error('expected a 422');
}

describe('provider/validation', () => {
  describe('parseCreate', () => {
    it('applies defaults', () => {
      expect(parseCreate({ region: 'eu-west-1', sizeGB: 1 }, DEFAULT_REGIONS)).to.deep.equal({
        region: 'eu-west-1',
        sizeGB: 1,
        encrypted: false,
        tags: {},
      });
    });

    const rejected: Record<string, [body: unknown, field: string]> = {
      'array body': [[], 'body'],
      'null body': [null, 'body'],
      'string body': ['x', 'body'],
      'missing region': [{ sizeGB: 1 }, 'region'],
      'missing sizeGB': [{ region: 'us-east-1' }, 'sizeGB'],
      'unknown region': [{ region: 'mars-1', sizeGB: 1 }, 'region'],
      'region not a string': [{ region: 1, sizeGB: 1 }, 'region'],
      'sizeGB zero': [{ region: 'us-east-1', sizeGB: 0 }, 'sizeGB'],
      'sizeGB too big': [{ region: 'us-east-1', sizeGB: 10001 }, 'sizeGB'],
      'sizeGB fraction': [{ region: 'us-east-1', sizeGB: 1.5 }, 'sizeGB'],
      'sizeGB string': [{ region: 'us-east-1', sizeGB: '10' }, 'sizeGB'],
      'encrypted string': [{ region: 'us-east-1', sizeGB: 1, encrypted: 'yes' }, 'encrypted'],
      'tags array': [{ region: 'us-east-1', sizeGB: 1, tags: ['a'] }, 'tags'],
      'tag value number': [{ region: 'us-east-1', sizeGB: 1, tags: { a: 1 } }, 'tags.a'],
      'tag key empty': [{ region: 'us-east-1', sizeGB: 1, tags: { '': 'x' } }, 'tags'],
      'too many tags': [{ region: 'us-east-1', sizeGB: 1, tags: Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`k${i}`, 'v'])) }, 'tags'],
      'unknown field': [{ region: 'us-east-1', sizeGB: 1, colour: 'red' }, 'colour'],
      'phase is not a client field': [{ region: 'us-east-1', sizeGB: 1, phase: 'Active' }, 'phase'],
    };
    for (const [name, [body, field]] of Object.entries(rejected)) {
      it(`rejects ${name}, naming ${field}`, () => {
        expect(rejection(() => parseCreate(body, DEFAULT_REGIONS))).to.match(new RegExp(`^${field.replace('.', '\\.')}: `));
      });
    }

    it('uses the configured regions', () => {
      expect(parseCreate({ region: 'moon-1', sizeGB: 1 }, ['moon-1']).region).to.equal('moon-1');
      expect(rejection(() => parseCreate({ region: 'us-east-1', sizeGB: 1 }, ['moon-1']))).to.match(/^region: /);
    });
  });

  describe('parseUpdate and parseAdminPatch', () => {
    it('accept any subset', () => {
      expect(parseUpdate({})).to.deep.equal({});
      expect(parseUpdate({ sizeGB: 5, encrypted: true, tags: { a: 'b' } })).to.deep.equal({ sizeGB: 5, encrypted: true, tags: { a: 'b' } });
      expect(parseAdminPatch({ phase: 'Resizing', sizeGB: 1 })).to.deep.equal({ phase: 'Resizing', sizeGB: 1 });
    });

    const rejected: Record<string, [fn: () => unknown, field: string]> = {
      'update with region': [() => parseUpdate({ region: 'us-east-1' }), 'region'],
      'update with phase': [() => parseUpdate({ phase: 'Active' }), 'phase'],
      'update sizeGB string': [() => parseUpdate({ sizeGB: 'big' }), 'sizeGB'],
      'admin unknown phase': [() => parseAdminPatch({ phase: 'Deleting' }), 'phase'],
      'admin unknown field': [() => parseAdminPatch({ region: 'x' }), 'region'],
    };
    for (const [name, [fn, field]] of Object.entries(rejected)) {
      it(`rejects ${name}`, () => {
        expect(rejection(fn)).to.match(new RegExp(`^${field}: `));
      });
    }
  });

  describe('parseIdempotencyKey', () => {
    it('accepts up to 255 characters and absence', () => {
      expect(parseIdempotencyKey(undefined)).to.equal(undefined);
      expect(parseIdempotencyKey('x'.repeat(255))).to.have.length(255);
    });
    for (const [name, value] of Object.entries({ empty: '', long: 'x'.repeat(256), repeated: ['a', 'b'] })) {
      it(`rejects ${name}`, () => {
        expect(rejection(() => parseIdempotencyKey(value))).to.match(/^Idempotency-Key: /);
      });
    }
  });

  describe('parseListQuery', () => {
    it('parses every parameter', () => {
      const token = encodeContinue('bucket-00000000000a');
      const q = parseListQuery(new URLSearchParams(`idempotencyKey=k&tag=a=b&tag=c=d%3De&limit=7&continue=${token}`));
      expect(q).to.deep.equal({
        idempotencyKey: 'k',
        tags: [
          ['a', 'b'],
          ['c', 'd=e'],
        ],
        limit: 7,
        after: 'bucket-00000000000a',
      });
      expect(parseListQuery(new URLSearchParams(''))).to.deep.equal({ tags: [], limit: 100 });
    });

    const rejected: Record<string, [query: string, field: string]> = {
      'limit 0': ['limit=0', 'limit'],
      'limit 1001': ['limit=1001', 'limit'],
      'limit text': ['limit=ten', 'limit'],
      'limit twice': ['limit=1&limit=2', 'limit'],
      'tag without =': ['tag=abc', 'tag'],
      'tag with empty key': ['tag==v', 'tag'],
      'foreign continue token': ['continue=bm9wZQ', 'continue'],
      'unknown parameter': ['colour=red', 'colour'],
    };
    for (const [name, [query, field]] of Object.entries(rejected)) {
      it(`rejects ${name}`, () => {
        expect(rejection(() => parseListQuery(new URLSearchParams(query)))).to.match(new RegExp(`^${field}: `));
      });
    }
  });
});
