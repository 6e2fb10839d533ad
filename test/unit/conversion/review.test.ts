import { expect } from 'chai';
import * as v1 from '../../../operator/api/v1';
import * as v2 from '../../../operator/api/v2';
import { reviewConversion, type ReviewOutcome } from '../../../operator/conversion/review';
import { deepFreeze } from '../../support/deep-freeze';

const UID = '705ab4f5-6393-11e8-b7cc-42010a800002';
const SENTINEL = 'sk-do-not-echo-0xdeadbeef';

const bucketV1: v1.StorageBucket = {
  apiVersion: v1.API_VERSION,
  kind: 'StorageBucket',
  metadata: { name: 'logs', namespace: 'team-a', uid: 'u-1', labels: { app: 'x' } },
  spec: { region: 'eu-west-1', sizeGB: 2, providerRef: { name: 'default' }, encrypted: true },
  status: { phase: 'Active', sizeGB: 2, observedGeneration: 1 },
};
const bucketV2: v2.StorageBucket = {
  apiVersion: v2.API_VERSION,
  kind: 'StorageBucket',
  metadata: { name: 'logs', namespace: 'team-a', uid: 'u-1', labels: { app: 'x' } },
  spec: { forProvider: { region: 'eu-west-1', size: '2G', encrypted: true }, providerConfigRef: { name: 'default' } },
  status: { phase: 'Active', atProvider: { size: '2G' }, observedGeneration: 1 },
};
const configV1: v1.BucketProviderConfig = {
  apiVersion: v1.API_VERSION,
  kind: 'BucketProviderConfig',
  metadata: { name: 'default', uid: 'u-2' },
  spec: { endpoint: 'https://storage.example.com', secretRef: { name: 'creds', key: 'apiKey' } },
};
const configV2 = { ...configV1, apiVersion: v2.API_VERSION };
/** A StorageBucket its schema refuses (no providerRef), with a value that must never be quoted. */
const broken = { ...bucketV1, metadata: { name: 'bad', namespace: 'team-b' }, spec: { region: SENTINEL, sizeGB: 1 } };

function review(request: Record<string, unknown>): unknown {
  return { apiVersion: 'apiextensions.k8s.io/v1', kind: 'ConversionReview', request };
}

function success(convertedObjects: unknown[]): { kind: 'review'; review: unknown } {
  return {
    kind: 'review',
    review: {
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'ConversionReview',
      response: { uid: UID, convertedObjects, result: { status: 'Success' } },
    },
  };
}

interface Want {
  readonly outcome?: unknown;
  readonly failure?: RegExp;
  readonly invalid?: RegExp;
  readonly pair: { from: string; to: string };
}

const cases: Record<string, { body: unknown; want: Want }> = {
  'a StorageBucket v1 read as v2': {
    body: review({ uid: UID, desiredAPIVersion: v2.API_VERSION, objects: [bucketV1] }),
    want: { outcome: success([bucketV2]), pair: { from: 'v1', to: 'v2' } },
  },
  'a StorageBucket v2 written, stored as v1': {
    body: review({ uid: UID, desiredAPIVersion: v1.API_VERSION, objects: [bucketV2] }),
    want: { outcome: success([bucketV1]), pair: { from: 'v2', to: 'v1' } },
  },
  'both kinds, several objects: converted in the order given': {
    body: review({ uid: UID, desiredAPIVersion: v2.API_VERSION, objects: [configV1, bucketV1, { ...bucketV1, metadata: { name: 'b2' } }] }),
    want: {
      outcome: success([configV2, bucketV2, { ...bucketV2, metadata: { name: 'b2' } }]),
      pair: { from: 'v1', to: 'v2' },
    },
  },
  'objects already in the desired version come back as they are': {
    body: review({ uid: UID, desiredAPIVersion: v2.API_VERSION, objects: [bucketV2, configV1] }),
    want: { outcome: success([bucketV2, configV2]), pair: { from: 'mixed', to: 'v2' } },
  },
  'no objects (the API server omits an empty list): success with none': {
    body: review({ uid: UID, desiredAPIVersion: v1.API_VERSION }),
    want: { outcome: success([]), pair: { from: 'none', to: 'v1' } },
  },
  'one object its schema refuses fails the whole review, naming it and quoting no value': {
    body: review({ uid: UID, desiredAPIVersion: v2.API_VERSION, objects: [bucketV1, broken] }),
    want: { failure: /^conversion webhook: object 1 \(team-b\/bad\): cannot convert StorageBucket /, pair: { from: 'v1', to: 'v2' } },
  },
  'a desired version the webhook does not know': {
    body: review({ uid: UID, desiredAPIVersion: `${v1.GROUP}/v3`, objects: [bucketV1] }),
    want: { failure: /object 0 \(team-a\/logs\): .*unknown version$/, pair: { from: 'v1', to: 'unknown' } },
  },
  'an object of another kind': {
    body: review({ uid: UID, desiredAPIVersion: v2.API_VERSION, objects: [{ ...configV1, kind: 'Secret', data: { k: SENTINEL } }] }),
    want: { failure: /object 0 \(default\): .*unknown kind$/, pair: { from: 'v1', to: 'v2' } },
  },
  'not a JSON object': { body: [review({})], want: { invalid: /^body is not a JSON object$/, pair: { from: 'unknown', to: 'unknown' } } },
  'another kind of review': {
    body: { apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', request: { uid: UID } },
    want: { invalid: /not a ConversionReview/, pair: { from: 'unknown', to: 'unknown' } },
  },
  'a v1beta1 ConversionReview (the CRDs ask for v1 only)': {
    body: { apiVersion: 'apiextensions.k8s.io/v1beta1', kind: 'ConversionReview', request: { uid: UID, desiredAPIVersion: v2.API_VERSION } },
    want: { invalid: /must be apiextensions\.k8s\.io\/v1$/, pair: { from: 'unknown', to: 'unknown' } },
  },
  'no request': {
    body: { apiVersion: 'apiextensions.k8s.io/v1', kind: 'ConversionReview' },
    want: { invalid: /has no request$/, pair: { from: 'unknown', to: 'unknown' } },
  },
  'no uid': {
    body: review({ desiredAPIVersion: v2.API_VERSION, objects: [] }),
    want: { invalid: /no uid$/, pair: { from: 'unknown', to: 'unknown' } },
  },
  'no desiredAPIVersion': {
    body: review({ uid: UID, objects: [] }),
    want: { invalid: /no desiredAPIVersion$/, pair: { from: 'unknown', to: 'unknown' } },
  },
  'objects not a list': {
    body: review({ uid: UID, desiredAPIVersion: v2.API_VERSION, objects: { 0: bucketV1 } }),
    want: { invalid: /objects is not a list$/, pair: { from: 'unknown', to: 'unknown' } },
  },
  'a version label is never taken from the body unless the webhook converts it': {
    body: review({ uid: UID, desiredAPIVersion: `${v1.GROUP}/${'x'.repeat(100)}`, objects: [{ ...bucketV1, apiVersion: `${v1.GROUP}/v2beta1` }] }),
    want: { failure: /unknown version$/, pair: { from: 'unknown', to: 'unknown' } },
  },
};

describe('conversion review', () => {
  for (const [name, { body, want }] of Object.entries(cases)) {
    it(name, () => {
      const outcome: ReviewOutcome = reviewConversion(deepFreeze(structuredClone(body)));
      expect(outcome.pair).to.deep.equal(want.pair);
      if (want.outcome) {
        const { pair: _pair, ...rest } = outcome;
        expect(rest).to.deep.equal(want.outcome);
      } else if (want.failure) {
        if (outcome.kind !== 'review') throw new Error(`expected a review, got ${outcome.kind}`);
        const { response } = outcome.review;
        // The uid is echoed and no objects are returned: a partial list would be matched up by position.
        expect(response.uid).to.equal(UID);
        expect(response.convertedObjects).to.deep.equal([]);
        expect(response.result.status).to.equal('Failure');
        const message = 'message' in response.result ? response.result.message : '';
        expect(message).to.match(want.failure);
        expect(message).to.not.include(SENTINEL);
        expect(message).to.not.include('\n');
      } else {
        expect(outcome.kind).to.equal('invalid');
        if (outcome.kind === 'invalid') expect(outcome.message).to.match(want.invalid ?? /^$/);
      }
    });
  }

  it('the objects of a success keep every field through a v1 -> v2 -> v1 round trip', () => {
    const there = reviewConversion(review({ uid: UID, desiredAPIVersion: v2.API_VERSION, objects: [bucketV1, configV1] }));
    if (there.kind !== 'review') throw new Error('expected a review');
    const back = reviewConversion(review({ uid: UID, desiredAPIVersion: v1.API_VERSION, objects: there.review.response.convertedObjects }));
    if (back.kind !== 'review') throw new Error('expected a review');
    expect(back.review.response.convertedObjects).to.deep.equal([bucketV1, configV1]);
  });
});
