import { expect } from 'chai';
import fc from 'fast-check';
import * as v1 from '../../../operator/api/v1';
import * as v2 from '../../../operator/api/v2';
import { bucketV1ToV2, bucketV2ToV1, convert, decodeSizeAnnotation, encodeSizeAnnotation } from '../../../operator/api/convert';
import * as arb from '../../support/api-arbitraries';
import { evaluateRules, rulesOf, type RuleCase } from '../../support/cel-rules';
import { deepFreeze } from '../../support/deep-freeze';

/** Enough to meet every kind of annotation value and size spelling many times; about a second each. */
const NUM_RUNS = 1000;

function errorsOf(schemaName: string, errors: readonly v1.FieldError[]): string {
  return errors.map((e) => `${schemaName}${e.path}: ${e.message}`).join('; ');
}

function expectValidV1(bucket: v1.StorageBucket): void {
  expect(errorsOf('spec', v1.validate(v1.StorageBucketSpec, bucket.spec))).to.equal('');
  if (bucket.status) expect(errorsOf('status', v1.validate(v1.StorageBucketStatus, bucket.status))).to.equal('');
}

function expectValidV2(bucket: v2.StorageBucket): void {
  expect(errorsOf('spec', v2.validate(v2.StorageBucketSpec, bucket.spec))).to.equal('');
  if (bucket.status) expect(errorsOf('status', v2.validate(v2.StorageBucketStatus, bucket.status))).to.equal('');
}

describe('conversion properties (fast-check)', function () {
  this.timeout(30_000);

  it('v1 -> v2 -> v1 is the identity for every StorageBucket v1 accepts, and the v2 form is valid', () => {
    fc.assert(
      fc.property(arb.bucketV1(), (bucket) => {
        expectValidV1(bucket);
        const input = deepFreeze(structuredClone(bucket));
        const there = bucketV1ToV2(input);
        expectValidV2(there);
        expect(bucketV2ToV1(deepFreeze(there))).to.deep.equal(bucket);
      }),
      { numRuns: NUM_RUNS },
    );
  });

  it('v2 -> v1 -> v2 is the identity for every StorageBucket v2 accepts, and the v1 form is valid', () => {
    fc.assert(
      fc.property(arb.bucketV2(), (bucket) => {
        expectValidV2(bucket);
        const input = deepFreeze(structuredClone(bucket));
        const there = bucketV2ToV1(input);
        expectValidV1(there);
        expect(bucketV1ToV2(deepFreeze(there))).to.deep.equal(bucket);
      }),
      { numRuns: NUM_RUNS },
    );
  });

  it('convert() round trips both kinds through the other version and never fails on them', () => {
    const any = fc.oneof(arb.bucketV1(), arb.bucketV2(), arb.providerConfig(v1.API_VERSION), arb.providerConfig(v2.API_VERSION));
    fc.assert(
      fc.property(any, (object) => {
        const from = object.apiVersion === v1.API_VERSION ? v1.API_VERSION : v2.API_VERSION;
        const other = from === v1.API_VERSION ? v2.API_VERSION : v1.API_VERSION;
        const there = convert(deepFreeze(structuredClone(object)), other);
        if (!there.ok) expect.fail(there.message);
        expect(there.object.apiVersion).to.equal(other);
        expect(there.object.metadata.finalizers).to.deep.equal(object.metadata.finalizers);
        const back = convert(deepFreeze(there.object), from);
        expect(back).to.deep.equal({ ok: true, object });
      }),
      { numRuns: NUM_RUNS },
    );
  });

  it('a v2 size that grows never makes v1 sizeGB shrink (the two grow-only rules agree)', () => {
    fc.assert(
      fc.property(arb.size(), arb.size(), (a, b) => {
        const [pa, pb] = [v2.parseSize(a)!, v2.parseSize(b)!];
        if (pa.numerator * pb.denominator <= pb.numerator * pa.denominator) {
          expect(v2.sizeToGB(a)).to.be.at.most(v2.sizeToGB(b)!);
        }
      }),
      { numRuns: NUM_RUNS },
    );
  });

  it('size annotation: decode then encode gives every value back, for any size', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: v1.MAX_SIZE_GB }), fc.string(), (gb, text) => {
        expect(encodeSizeAnnotation(gb, decodeSizeAnnotation(gb, text))).to.equal(text);
      }),
      { numRuns: NUM_RUNS },
    );
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: v1.MAX_SIZE_GB }).chain((gb) => fc.tuple(fc.constant(gb), arb.sizeAnnotationValue(gb))),
        ([gb, value]) => {
          expect(encodeSizeAnnotation(gb, decodeSizeAnnotation(gb, value))).to.equal(value);
        },
      ),
      { numRuns: NUM_RUNS },
    );
  });

  describe('the generated objects pass the CEL rules cel-go can evaluate', () => {
    // cel-go runs plain CEL only: the size rule's Kubernetes quantity library is stood in for by
    // the TypeBox check of the BucketSize kind, which every sample passes above.
    const needsKubernetesLibrary = (c: RuleCase) => /\b(isQuantity|quantity)\(/.test(c.rule);
    const objectRules = (def: v1.ApiDefinition, object: unknown): RuleCase[] => (def.validations ?? []).map((r) => ({ rule: r.rule, self: object }));
    const draws: Record<string, () => RuleCase[]> = {
      'StorageBucket v1': () =>
        fc
          .sample(arb.bucketV1(), 200)
          .flatMap((b) => [
            ...objectRules(v1.StorageBucketDefinition, b),
            ...rulesOf(v1.StorageBucketSpec, b.spec),
            ...rulesOf(v1.StorageBucketStatus, b.status),
          ]),
      'StorageBucket v2': () =>
        fc
          .sample(arb.bucketV2(), 200)
          .flatMap((b) => [
            ...objectRules(v2.StorageBucketDefinition, b),
            ...rulesOf(v2.StorageBucketSpec, b.spec),
            ...rulesOf(v2.StorageBucketStatus, b.status),
          ]),
      BucketProviderConfig: () =>
        fc
          .sample(arb.providerConfig(v1.API_VERSION), 200)
          .flatMap((c) => [...rulesOf(v1.BucketProviderConfigSpec, c.spec), ...rulesOf(v1.BucketProviderConfigStatus, c.status)]),
    };
    const names = Object.keys(draws);
    const cases: RuleCase[][] = [];
    let results: boolean[][] = [];
    before(function () {
      this.timeout(30_000);
      for (const name of names) cases.push(draws[name]!().filter((c) => !needsKubernetesLibrary(c)));
      const flat = evaluateRules(cases.flat());
      let at = 0;
      results = cases.map((list) => flat.slice(at, (at += list.length)));
    });
    names.forEach((name, i) => {
      it(name, () => {
        expect(results[i]!.length, 'rules evaluated').to.be.greaterThan(0);
        const failed = cases[i]!.filter((_, j) => !results[i]![j]);
        expect(failed.slice(0, 3)).to.deep.equal([]);
      });
    });
  });
});
