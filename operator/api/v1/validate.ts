/**
 * Runtime validation of specs against the same schemas the CRDs are rendered from. The API
 * server already enforces them; the operator checks again so an object admitted under an
 * older CRD surfaces as an InvalidSpec condition instead of a confusing provider error.
 */
import { Value } from '@sinclair/typebox/value';
import type { TSchema } from '@sinclair/typebox';

/** One problem found in an object, with the JSON path of the field. */
export interface FieldError {
  readonly path: string;
  readonly message: string;
}

/** Validates `value` against `schema`; an empty array means valid. */
export function validate(schema: TSchema, value: unknown): FieldError[] {
  return [...Value.Errors(schema, value)].map((e) => ({ path: e.path || '/', message: e.message }));
}

const checked = new WeakMap<TSchema, WeakMap<object, readonly FieldError[]>>();

/**
 * {@link validate}, remembered per object: a reconcile decides several times on the one cached
 * spec (before connecting, after observing, after each step), and the interpreted check was
 * the largest share of those decisions in a CPU profile. Objects from the cache are never
 * changed in place (a watch event replaces them), so the answer for an object holds.
 */
export function validateCached(schema: TSchema, value: object): readonly FieldError[] {
  let bySchema = checked.get(schema);
  if (!bySchema) checked.set(schema, (bySchema = new WeakMap()));
  let errors = bySchema.get(value);
  if (!errors) bySchema.set(value, (errors = validate(schema, value)));
  return errors;
}

/** Formats field errors as one stable line, e.g. `spec/sizeGB: Expected integer`. */
export function formatFieldErrors(prefix: string, errors: readonly FieldError[]): string {
  return errors.map((e) => `${prefix}${e.path}: ${e.message}`).join('; ');
}
