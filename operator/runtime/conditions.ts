/**
 * metav1.Condition helpers. Writing a condition whose status did not change keeps its
 * lastTransitionTime, and equality is order-insensitive, so a reconcile that finds nothing
 * new produces an identical status and can skip the write.
 */

/** Status of a condition, as in metav1.ConditionStatus. */
export type ConditionStatus = 'True' | 'False' | 'Unknown';

/** A metav1.Condition as stored in an object's status. */
export interface Condition {
  readonly type: string;
  readonly status: ConditionStatus;
  /** RFC 3339, second precision, like metav1.Time. */
  readonly lastTransitionTime: string;
  /** CamelCase, machine-readable. */
  readonly reason: string;
  /** Human-readable; must not carry timestamps, or every write would be a change. */
  readonly message: string;
  readonly observedGeneration?: number;
}

/** The fields a caller sets; lastTransitionTime is derived. */
export interface ConditionInput {
  readonly type: string;
  readonly status: ConditionStatus;
  readonly reason: string;
  readonly message?: string;
  readonly observedGeneration?: number;
}

/** Formats `date` as metav1.Time does (RFC 3339, whole seconds, UTC). */
export function formatConditionTime(date: Date): string {
  return date.toISOString().replace(/\.\d+Z$/, 'Z');
}

/**
 * Returns a new list with `input` set: replaced in place when its type exists (keeping
 * lastTransitionTime if the status is unchanged), appended otherwise. `conditions` is not
 * modified.
 */
export function setCondition(conditions: readonly Condition[] | undefined, input: ConditionInput, now: Date): Condition[] {
  const list = conditions ?? [];
  const existing = list.find((c) => c.type === input.type);
  const next: Condition = {
    type: input.type,
    status: input.status,
    lastTransitionTime: existing && existing.status === input.status ? timeString(existing.lastTransitionTime) : formatConditionTime(now),
    reason: input.reason,
    message: input.message ?? '',
    ...(input.observedGeneration !== undefined ? { observedGeneration: input.observedGeneration } : {}),
  };
  return existing ? list.map((c) => (c.type === input.type ? next : c)) : [...list, next];
}

/** Returns a new list without the condition of `type`. */
export function removeCondition(conditions: readonly Condition[] | undefined, type: string): Condition[] {
  return (conditions ?? []).filter((c) => c.type !== type);
}

/** The condition of `type`, if present. */
export function findCondition(conditions: readonly Condition[] | undefined, type: string): Condition | undefined {
  return conditions?.find((c) => c.type === type);
}

/** True when the condition of `type` is present with status True. */
export function isTrue(conditions: readonly Condition[] | undefined, type: string): boolean {
  return findCondition(conditions, type)?.status === 'True';
}

/** True when the condition of `type` is present with status False. */
export function isFalse(conditions: readonly Condition[] | undefined, type: string): boolean {
  return findCondition(conditions, type)?.status === 'False';
}

/**
 * True when both lists hold the same conditions with all fields equal, in any order. Times
 * are compared as instants, because the API client may hand back a Date where a string was
 * written.
 */
export function conditionsEqual(a: readonly Condition[] | undefined, b: readonly Condition[] | undefined): boolean {
  const x = a ?? [];
  const y = b ?? [];
  if (x.length !== y.length) return false;
  const byType = new Map(y.map((c) => [c.type, c]));
  // Duplicate types would let a multiset compare equal to a different one.
  if (byType.size !== y.length || new Set(x.map((c) => c.type)).size !== x.length) return false;
  return x.every((c) => {
    const d = byType.get(c.type);
    return (
      d !== undefined &&
      c.status === d.status &&
      c.reason === d.reason &&
      c.message === d.message &&
      c.observedGeneration === d.observedGeneration &&
      timeString(c.lastTransitionTime) === timeString(d.lastTransitionTime)
    );
  });
}

function timeString(value: unknown): string {
  if (value instanceof Date) return formatConditionTime(value);
  if (typeof value === 'string') {
    const parsed = new Date(value);
    return Number.isNaN(parsed.getTime()) ? value : formatConditionTime(parsed);
  }
  return String(value);
}
