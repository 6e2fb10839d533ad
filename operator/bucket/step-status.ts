/**
 * The status each step reports, as a pure mapping: the same step and facts give the same
 * {@link StatusFacts}, which nextStatus turns into the status to write (or none, when equal).
 */
import type { StorageBucket } from '../api/v1';
import { ADOPT_ANNOTATION } from '../api/v1';
import type { ProviderBucket } from '../provider-client';
import type { Step } from './plan';
import { Reason } from './reasons';
import { keepReady, type ConditionFacts, type StatusFacts } from './status';

const SYNCED: ConditionFacts = { status: 'True', reason: Reason.ReconcileSuccess };
const AVAILABLE: ConditionFacts = { status: 'True', reason: Reason.Available, message: '' };

/** What the orchestrator learned from the provider while executing the step. */
export interface StepFacts {
  /** The provider bucket as last seen: observed, or as a create or update answered. */
  readonly external?: ProviderBucket;
  /** The provider API the connection reached. */
  readonly providerEndpoint?: string;
}

/** The status `step` reports for `bucket`; undefined for steps that write none. */
export function stepStatus(bucket: StorageBucket, step: Step, facts: StepFacts = {}): StatusFacts | undefined {
  const seen = facts.external ? { observation: { exists: true as const, bucket: facts.external }, providerEndpoint: facts.providerEndpoint } : {};
  const pending = bucket.status?.phase ?? 'Pending';
  switch (step.type) {
    case 'paused': {
      const paused: ConditionFacts = { status: 'False', reason: Reason.ReconcilePaused, message: step.message };
      // The spec was not acted on: the old observed generation stays, as does Ready.
      return { phase: pending, ready: keepReady(bucket, paused), synced: paused, observedGeneration: bucket.status?.observedGeneration };
    }
    case 'blocked': {
      const blocked: ConditionFacts = { status: 'False', reason: step.reason, message: step.message };
      return { phase: 'Failed', ready: blocked, synced: blocked };
    }
    case 'waitForConfig': {
      const waiting: ConditionFacts = { status: 'False', reason: step.reason, message: step.message };
      return { phase: pending, ready: waiting, synced: waiting };
    }
    case 'create':
    case 'prepare':
    case 'rotateKey':
      // Only a create that was answered reports; its bucket is still provisioning.
      if (!facts.external) return undefined;
      return {
        ...seen,
        phase: facts.external.phase === 'Active' ? 'Active' : 'Provisioning',
        ready: { status: 'False', reason: Reason.Provisioning, message: 'the provider reports Provisioning' },
        synced: SYNCED,
      };
    case 'update':
      return {
        ...seen,
        phase: facts.external?.phase ?? pending,
        ready: { status: 'False', reason: step.grows ? Reason.Resizing : Reason.Updating, message: 'the provider is applying a change' },
        synced: SYNCED,
      };
    case 'wait':
      return {
        ...seen,
        phase: step.phase,
        ready: {
          status: 'False',
          reason: step.phase === 'Provisioning' ? Reason.Provisioning : Reason.Resizing,
          message: `the provider reports ${step.phase}`,
        },
        synced: SYNCED,
      };
    case 'ready':
    case 'upToDate':
      return { ...seen, phase: 'Active', ready: AVAILABLE, synced: SYNCED };
    case 'mirror': {
      const external = facts.external;
      if (!external) {
        const id = bucket.status?.id ?? bucket.metadata.annotations?.[ADOPT_ANNOTATION] ?? '';
        return {
          phase: 'Pending',
          ready: {
            status: 'False',
            reason: Reason.ObservedBucketNotFound,
            message: `provider bucket ${id} does not exist; checking again every drift interval`,
          },
          synced: SYNCED,
        };
      }
      const ready: ConditionFacts =
        external.phase === 'Active'
          ? { status: 'True', reason: Reason.Available, message: 'observed (managementPolicy Observe)' }
          : {
              status: 'False',
              reason: external.phase === 'Resizing' ? Reason.Resizing : Reason.Provisioning,
              message: `the provider reports ${external.phase}`,
            };
      return { ...seen, phase: external.phase, ready, synced: SYNCED };
    }
    case 'nothing':
    case 'delete':
    case 'removeFinalizer':
      // The object is about to go; a failed delete is reported by the failure policy.
      return undefined;
  }
}
