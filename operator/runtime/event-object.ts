/**
 * The events.k8s.io/v1 Event as the recorder (events.ts) writes it and readers list it: the
 * kind and the object's shape, with none of the recorder's machinery, so a reader of Events
 * (the kubectl plugin) loads neither the recorder nor the metrics behind its failure reports.
 */
import type { KubeObject, ResourceKind } from './types';

/** The events.k8s.io/v1 Event kind. */
export const EVENT_KIND: ResourceKind = { group: 'events.k8s.io', version: 'v1', kind: 'Event', plural: 'events', namespaced: true };

/** Event type, as the API allows it. */
export type EventType = 'Normal' | 'Warning';

/** A minimal events.k8s.io/v1 Event, as the recorder writes it. */
export interface EventObject extends KubeObject {
  eventTime?: string;
  type?: EventType;
  reason?: string;
  action?: string;
  note?: string;
  reportingController?: string;
  reportingInstance?: string;
  regarding?: Record<string, string | undefined>;
  related?: Record<string, string | undefined>;
  series?: { count: number; lastObservedTime: string };
}
