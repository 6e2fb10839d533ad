import { expect } from 'chai';
import { CREDENTIALS_RETRY_MS, classifyFailure, isKeySpent, type FailurePolicy } from '../../../operator/bucket/failure';
import { ProviderError } from '../../../operator/provider-client';
import { ApiError, TerminalError } from '../../../operator/runtime';
import { bucket, readyStatus } from '../../support/fixtures';

type Kind = FailurePolicy['type'];

const cases: Record<
  string,
  { args: { err: unknown; ready?: boolean }; want: { type: Kind; reason?: string; readyStatus?: string; requeueAfterMs?: number } }
> = {
  'a conflict goes to the runner untouched (backoff, no status)': {
    args: { err: new ApiError(409, 'Conflict', 'modified') },
    want: { type: 'rethrow' },
  },
  'an unexpected error goes to the runner untouched': { args: { err: new Error('boom') }, want: { type: 'rethrow' } },
  'a terminal error stays terminal': { args: { err: new TerminalError('blocked') }, want: { type: 'rethrow' } },
  // A create's refusal of its key never gets here (the create path replans, see isKeySpent).
  '410 reaching the failure policy: rejected, terminal': {
    args: { err: new ProviderError('gone', { status: 410, code: 'BucketDeleted' }) },
    want: { type: 'terminal', reason: 'InvalidSpec', readyStatus: 'False' },
  },
  '401: credentials rejected, slow retry': {
    args: { err: new ProviderError('bad key', { status: 401, code: 'Unauthorized' }) },
    want: { type: 'retry', reason: 'CredentialsRejected', readyStatus: 'False', requeueAfterMs: CREDENTIALS_RETRY_MS },
  },
  '503 on a new bucket: unavailable, backoff, Ready False with a reason': {
    args: { err: new ProviderError('down', { status: 503, code: 'Unavailable' }) },
    want: { type: 'retry', reason: 'ProviderUnavailable', readyStatus: 'False' },
  },
  '503 on a Ready bucket: Ready kept': {
    args: { err: new ProviderError('down', { status: 503, code: 'Unavailable' }), ready: true },
    want: { type: 'retry', reason: 'ProviderUnavailable', readyStatus: 'True' },
  },
  '429 with Retry-After 2 s: requeue after it': {
    args: { err: new ProviderError('slow', { status: 429, code: 'Throttled', retryAfterMs: 2000 }) },
    want: { type: 'retry', reason: 'Throttled', readyStatus: 'False', requeueAfterMs: 2000 },
  },
  "429 with a sub-second Retry-After: the runner's backoff": {
    args: { err: new ProviderError('slow', { status: 429, code: 'Throttled', retryAfterMs: 200 }) },
    want: { type: 'retry', reason: 'Throttled', readyStatus: 'False' },
  },
  'network failure (status 0): unavailable, backoff': {
    args: { err: new ProviderError('ETIMEDOUT', { status: 0, code: 'ETIMEDOUT' }) },
    want: { type: 'retry', reason: 'ProviderUnavailable', readyStatus: 'False' },
  },
  '404 between observe and act: transient': {
    args: { err: new ProviderError('nf', { status: 404, code: 'BucketNotFound' }) },
    want: { type: 'retry', reason: 'ProviderUnavailable', readyStatus: 'False' },
  },
  '422: rejected by the provider, terminal': {
    args: { err: new ProviderError('bad region', { status: 422, code: 'ValidationFailed' }) },
    want: { type: 'terminal', reason: 'InvalidSpec', readyStatus: 'False' },
  },
};

describe('classifyFailure', () => {
  for (const [name, { args, want }] of Object.entries(cases)) {
    it(name, () => {
      const b = args.ready ? bucket().prepared().withStatus(readyStatus('http://p')).build() : bucket().prepared().build();
      const got = classifyFailure(args.err, b);
      expect(got.type).to.equal(want.type);
      if (got.type === 'retry' || got.type === 'terminal') {
        expect(got.status.synced.reason).to.equal(want.reason);
        expect(got.status.ready.status).to.equal(want.readyStatus);
      }
      if (got.type === 'retry') expect(got.requeueAfterMs).to.equal(want.requeueAfterMs);
    });
  }
});

describe('isKeySpent', () => {
  const cases: Record<string, { err: unknown; want: boolean }> = {
    '410 BucketDeleted': { err: new ProviderError('gone', { status: 410, code: 'BucketDeleted' }), want: true },
    '410 IdempotencyKeyRevoked': { err: new ProviderError('revoked', { status: 410, code: 'IdempotencyKeyRevoked' }), want: true },
    'another 410': { err: new ProviderError('gone', { status: 410, code: 'Gone' }), want: false },
    '409 IdempotencyKeyReused': { err: new ProviderError('reused', { status: 409, code: 'IdempotencyKeyReused' }), want: false },
    'not a provider error': { err: new Error('BucketDeleted'), want: false },
  };
  for (const [name, { err, want }] of Object.entries(cases)) it(name, () => expect(isKeySpent(err)).to.equal(want));
});
