/**
 * The Events the bucket controllers record, for a reader: their type, the object they are
 * about and when they come. `npm run docs` renders docs/reference/events.md from this table; a
 * `Record` over every Event reason, so a new one does not compile until it is described here.
 * The operator itself never loads this module.
 */
import { ScanEventReason } from './drift-scanner';
import { EventReason } from './reasons';

/** Every Event reason the operator records under a name of its own. */
export type AnyEventReason = EventReason | (typeof ScanEventReason)[keyof typeof ScanEventReason];

/** One Event reason, for a reader. */
export interface EventGuide {
  readonly type: 'Normal' | 'Warning';
  /** The kind of the object the Event is about. */
  readonly regarding: 'StorageBucket' | 'BucketProviderConfig';
  /** When it is recorded. */
  readonly when: string;
}

/** What each Event means. */
export const EVENT_GUIDE: Readonly<Record<AnyEventReason, EventGuide>> = {
  [EventReason.CreatedBucket]: {
    type: 'Normal',
    regarding: 'StorageBucket',
    when: 'the provider created the bucket (its id in the note); Ready follows with no Event of its own',
  },
  [EventReason.AdoptedBucket]: {
    type: 'Normal',
    regarding: 'StorageBucket',
    when: 'an existing provider bucket was adopted (`adopt-id`, or `managementPolicy` switched from Observe to Full)',
  },
  [EventReason.BucketReady]: {
    type: 'Normal',
    regarding: 'StorageBucket',
    when: 'a bucket under `managementPolicy: Observe` was first seen Active (it has no CreatedBucket)',
  },
  [EventReason.ResizingBucket]: {
    type: 'Normal',
    regarding: 'StorageBucket',
    when: 'the spec changed and the provider bucket is being updated to it',
  },
  [EventReason.CorrectedDrift]: { type: 'Normal', regarding: 'StorageBucket', when: 'a change made at the provider is being put back to the spec' },
  [EventReason.BucketMissing]: {
    type: 'Warning',
    regarding: 'StorageBucket',
    when: 'the provider bucket the status names no longer exists, or the provider refused the idempotency key; a new key is minted (and a new bucket made)',
  },
  [EventReason.ForeignIdempotencyKey]: {
    type: 'Warning',
    regarding: 'StorageBucket',
    when: "the idempotency key made another object's bucket (a copied manifest); a new key is minted",
  },
  [EventReason.InvalidSpec]: {
    type: 'Warning',
    regarding: 'StorageBucket',
    when: 'the provider refused the bucket as specified (terminal until the spec changes)',
  },
  [EventReason.CredentialsRejected]: { type: 'Warning', regarding: 'StorageBucket', when: 'the provider refused the API key' },
  [EventReason.OwnedObjectConflict]: {
    type: 'Warning',
    regarding: 'StorageBucket',
    when: 'a Secret `<name>-access` or Service `<name>` exists that the bucket does not control; it is left untouched',
  },
  [ScanEventReason.DriftScanFailed]: {
    type: 'Warning',
    regarding: 'BucketProviderConfig',
    when: "the drift scan of the config's provider account failed (once per change of the failure)",
  },
  [ScanEventReason.DriftScanRecovered]: { type: 'Normal', regarding: 'BucketProviderConfig', when: 'the drift scan of that account works again' },
};
