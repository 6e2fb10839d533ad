/**
 * Freezes a value and everything it holds, so a function that changes its input throws (in
 * strict-mode code) instead of passing a test by accident.
 */
export function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}
