/**
 * classifyFailure for the provider client's own limits (issue 32): an answer too large or too
 * slow is reported on the tenant's own bucket with a reason that says so, retried with backoff,
 * and never flips a Ready bucket; an answer that is not JSON is retried rather than blamed on
 * the spec.
 */
import { expect } from 'chai';
import { classifyFailure } from '../../../operator/bucket/failure';
import { BUCKET_REASON_CLASS } from '../../../operator/bucket/reason-classes';
import { Reason } from '../../../operator/bucket/reasons';
import { NOT_JSON, ProviderAnswerTooLargeError, ProviderError, ProviderTimeoutError } from '../../../operator/provider-client';
import { bucket, readyStatus } from '../../support/fixtures';

const tooLarge = new ProviderAnswerTooLargeError({
  operation: 'get',
  host: 'evil.example:8443',
  limit: 1024 * 1024,
  limitKind: 'bytes',
  bytesRead: 0,
});
const trickled = new ProviderTimeoutError({ operation: 'get', host: 'evil.example:8443', timeoutKind: 'deadline', timeoutMs: 20_000 });
const silent = new ProviderTimeoutError({ operation: 'create', host: 'evil.example:8443', timeoutKind: 'idle', timeoutMs: 10_000 });
const notJson = new ProviderError('provider get answered 200 with a body that is not JSON', { status: 200, code: NOT_JSON, retryable: true });

const cases: Record<
  string,
  { args: { err: unknown; ready: boolean }; want: { type: string; reason: string; readyStatus: string; message: string } }
> = {
  'an answer over the byte cap: ProviderAnswerTooLarge, naming the cap and the host': {
    args: { err: tooLarge, ready: false },
    want: {
      type: 'retry',
      reason: Reason.ProviderAnswerTooLarge,
      readyStatus: 'False',
      message: 'provider get failed: the answer from evil.example:8443 is larger than 1 MiB (the answer size limit)',
    },
  },
  'an answer past the call deadline: ProviderTimeout, naming the deadline': {
    args: { err: trickled, ready: false },
    want: {
      type: 'retry',
      reason: Reason.ProviderTimeout,
      readyStatus: 'False',
      message: 'provider get failed: evil.example:8443 did not finish answering within 20 s (the call deadline)',
    },
  },
  'a silent endpoint: ProviderTimeout, naming the idle timeout': {
    args: { err: silent, ready: false },
    want: {
      type: 'retry',
      reason: Reason.ProviderTimeout,
      readyStatus: 'False',
      message: 'provider create failed: evil.example:8443 sent nothing for 10 s (the idle timeout)',
    },
  },
  'a Ready bucket stays Ready while its endpoint answers too much': {
    args: { err: tooLarge, ready: true },
    want: { type: 'retry', reason: Reason.ProviderAnswerTooLarge, readyStatus: 'True', message: tooLarge.message },
  },
  'a 200 that is not JSON: retried as ProviderUnavailable, not a rejected spec': {
    args: { err: notJson, ready: false },
    want: { type: 'retry', reason: Reason.ProviderUnavailable, readyStatus: 'False', message: notJson.message },
  },
};

describe('classifyFailure: the provider client limits', () => {
  for (const [name, { args, want }] of Object.entries(cases)) {
    it(name, () => {
      const b = args.ready ? bucket().prepared().withStatus(readyStatus('http://p')).build() : bucket().prepared().build();
      const got = classifyFailure(args.err, b);
      if (got.type !== 'retry') expect.fail(`want a retry, got ${got.type}`);
      expect({
        type: got.type,
        reason: got.status.synced.reason,
        readyStatus: got.status.ready.status,
        message: got.status.synced.message,
        requeueAfterMs: got.requeueAfterMs,
      }).to.deep.equal({ ...want, requeueAfterMs: undefined });
    });
  }

  it('classes both reasons as progressing (not terminal): nothing for a person to edit on the bucket', () => {
    expect([BUCKET_REASON_CLASS[Reason.ProviderAnswerTooLarge], BUCKET_REASON_CLASS[Reason.ProviderTimeout]]).to.deep.equal([
      'progressing',
      'progressing',
    ]);
  });
});
