/**
 * The value of {@link V2_SIZE_ANNOTATION} on a v1 StorageBucket, which carries through v1
 * what v1's integer `sizeGB` cannot hold.
 *
 * Two things may need carrying: the v2 spelling of the size when it is not `<sizeGB>G`, and a
 * value a v2 object has under the same key (to v2 it is an ordinary annotation, and a round
 * trip must give it back). Common case, a spelling alone: the value is the quantity, e.g.
 * `1500Mi`. Anything else that {@link decodeSizeAnnotation} would misread is wrapped as JSON,
 * `{"size":"1500Mi","annotation":"<the v2 object's value>"}`.
 *
 * A value is taken as conversion data only if encoding what it decodes to gives the same
 * string back, and a spelling only if it still rounds up to the object's `sizeGB`; any other
 * value (one written by hand, or left behind by an edit of `sizeGB` through v1) is the v2
 * object's own annotation. So encode and decode are inverse for every value: a v1 -> v2 -> v1
 * round trip returns every annotation as it was, and v2 -> v1 -> v2 too.
 */
import { canonicalSize, sizeToGB } from '../v2/size';

/** What a v1 annotation value stands for in the v2 form. */
export interface SizeAnnotationData {
  /** The v2 spelling of a size of `gb` GB that is not `<gb>G`. */
  readonly quantity?: string;
  /** The v2 object's own value under the annotation's key. */
  readonly userValue?: string;
}

/** True when `quantity` is a v2 size of `gb` GB that only the annotation can carry. */
function isCarriedSpelling(quantity: string, gb: number): boolean {
  return quantity !== canonicalSize(gb) && sizeToGB(quantity) === gb;
}

/** The annotation value for a v1 object of `gb` GB, or undefined for none. */
export function encodeSizeAnnotation(gb: number, data: SizeAnnotationData): string | undefined {
  const { quantity, userValue } = data;
  if (userValue === undefined) return quantity;
  if (quantity === undefined && decodeSizeAnnotation(gb, userValue).userValue === userValue) return userValue;
  return JSON.stringify({ ...(quantity !== undefined ? { size: quantity } : {}), annotation: userValue });
}

/** What the annotation value `value` of a v1 object of `gb` GB stands for in v2. */
export function decodeSizeAnnotation(gb: number, value: string | undefined): SizeAnnotationData {
  if (value === undefined) return {};
  if (isCarriedSpelling(value, gb)) return { quantity: value };
  const wrapped = parseWrapped(value);
  if (wrapped && (wrapped.quantity === undefined || isCarriedSpelling(wrapped.quantity, gb)) && encodeSizeAnnotation(gb, wrapped) === value) {
    return wrapped;
  }
  return { userValue: value };
}

/** The fields of a JSON-wrapped value, or undefined when `value` is not one. */
function parseWrapped(value: string): SizeAnnotationData | undefined {
  if (!value.startsWith('{')) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    return undefined;
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return undefined;
  const { size, annotation, ...rest } = parsed as Record<string, unknown>;
  if (Object.keys(rest).length > 0 || typeof annotation !== 'string' || (size !== undefined && typeof size !== 'string')) return undefined;
  return size === undefined ? { userValue: annotation } : { quantity: size, userValue: annotation };
}
