import { expect } from 'chai';
import { ANNOTATIONS_SIZE_LIMIT, planEdit, type EditRequest } from '../../../cli/edits';
import { CliError, ExitCode } from '../../../cli/exit-codes';
import type { StorageBucket } from '../../../operator/api/v1';
import { NOW, pausedBucket, readyBucket, waitingBucket } from './fixtures';

const ADOPT = 'storage.avalonhosting.example/adopt-id';
const PAUSED = 'storage.avalonhosting.example/paused';
const RECONCILE = 'storage.avalonhosting.example/reconcile-requested-at';

function unadopted(): StorageBucket {
  return waitingBucket('Provisioning');
}

const cases: Record<string, { bucket: StorageBucket; req: Omit<EditRequest, 'now'>; want: { patch?: unknown; summary: string } }> = {
  'reconcile writes the request time into the annotation docs/using.md names': {
    bucket: readyBucket(),
    req: { command: 'reconcile' },
    want: {
      patch: { metadata: { annotations: { [RECONCILE]: NOW.toISOString() } } },
      summary: `storagebucket team-a/logs reconcile requested at ${NOW.toISOString()}`,
    },
  },
  'pause sets paused "true"': {
    bucket: readyBucket(),
    req: { command: 'pause' },
    want: { patch: { metadata: { annotations: { [PAUSED]: 'true' } } }, summary: 'storagebucket team-a/logs paused' },
  },
  'pause of a paused bucket sends nothing': {
    bucket: pausedBucket(),
    req: { command: 'pause' },
    want: { summary: 'storagebucket team-a/logs is already paused' },
  },
  'resume removes the annotation (null in a merge patch)': {
    bucket: pausedBucket(),
    req: { command: 'resume' },
    want: { patch: { metadata: { annotations: { [PAUSED]: null } } }, summary: 'storagebucket team-a/logs resumed' },
  },
  'resume of a bucket that is not paused sends nothing': {
    bucket: readyBucket(),
    req: { command: 'resume' },
    want: { summary: 'storagebucket team-a/logs is not paused' },
  },
  'adopt sets adopt-id on a bucket without status.id': {
    bucket: unadopted(),
    req: { command: 'adopt', id: 'bkt-9' },
    want: { patch: { metadata: { annotations: { [ADOPT]: 'bkt-9' } } }, summary: 'storagebucket team-a/logs adopts provider bucket bkt-9' },
  },
  'orphan sets spec.deletionPolicy': {
    bucket: readyBucket(),
    req: { command: 'orphan' },
    want: {
      patch: { spec: { deletionPolicy: 'Orphan' } },
      summary: 'storagebucket team-a/logs deletionPolicy set to Orphan: deleting it will keep the provider bucket',
    },
  },
};

const refused: Record<string, { bucket: StorageBucket; req: Omit<EditRequest, 'now'>; message: RegExp }> = {
  'an empty id': { bucket: unadopted(), req: { command: 'adopt', id: ' ' }, message: /^--id must not be empty$/ },
  'an id with whitespace': { bucket: unadopted(), req: { command: 'adopt', id: 'a b' }, message: /^--id must not contain whitespace$/ },
  'an id longer than status.id may be': {
    bucket: unadopted(),
    req: { command: 'adopt', id: 'x'.repeat(254) },
    message: /^--id: status\/id: Expected string length less or equal to 253$/,
  },
  'adopting over a managed bucket (the operator reads adopt-id only while status.id is empty)': {
    bucket: readyBucket(),
    req: { command: 'adopt', id: 'bkt-9' },
    message: /already manages provider bucket bkt-1/,
  },
  'annotations past the API server limit': {
    bucket: (() => {
      const b = readyBucket();
      b.metadata.annotations = { big: 'x'.repeat(ANNOTATIONS_SIZE_LIMIT) };
      return b;
    })(),
    req: { command: 'pause' },
    message: /^metadata.annotations: Too long: must have at most 262144 bytes$/,
  },
  'an orphan edit the schema refuses': {
    bucket: (() => {
      const b = readyBucket();
      (b.spec as { sizeGB: number }).sizeGB = 0;
      return b;
    })(),
    req: { command: 'orphan' },
    message: /^storagebucket team-a\/logs: spec\/sizeGB: Expected integer to be greater or equal to 1$/,
  },
};

describe('kubectl bucket: edits', () => {
  for (const [name, { bucket, req, want }] of Object.entries(cases)) {
    it(name, () => {
      const plan = planEdit(bucket, { ...req, now: NOW });
      expect(plan.patch).to.deep.equal(want.patch);
      expect(plan.summary).to.equal(want.summary);
    });
  }
  for (const [name, { bucket, req, message }] of Object.entries(refused)) {
    it(`refuses ${name}, before sending anything`, () => {
      let caught: unknown;
      try {
        planEdit(bucket, { ...req, now: NOW });
      } catch (err) {
        caught = err;
      }
      expect(caught).to.be.instanceOf(CliError);
      expect((caught as CliError).code).to.equal(ExitCode.USAGE);
      expect((caught as CliError).message).to.match(message);
    });
  }
});
