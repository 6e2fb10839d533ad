/**
 * The size of a v2 StorageBucket: a Kubernetes quantity such as `50G`, `1500Mi` or `1.5T`,
 * read exactly (BigInt arithmetic, no floating point) so the API server's CEL `quantity()`
 * and the operator always agree on which GB a size falls into.
 *
 * The provider counts whole GB (10^9 bytes: the unit v1's `sizeGB` names and the quantity
 * suffix `G` means), so a size that is not a whole number of GB is served rounded up, as a
 * PersistentVolumeClaim's request is: `1500Mi` (1.57 GB) is a 2 GB bucket. `<n>G` is the
 * canonical v2 spelling of v1's `sizeGB: n`.
 */

/**
 * The quantities a size may be written as: a Kubernetes quantity without sign or exponent,
 * with a unit from k to P (decimal) or Ki to Pi (binary). The unit is required, so `"10"` is
 * refused rather than read as ten bytes by someone who meant 10 GB.
 */
export const SIZE_PATTERN = '^(0|[1-9][0-9]*)(\\.[0-9]+)?([kMGTP]|[KMGTP]i)$';

/** Longest size string: bounds the cost of the CEL rules the API server estimates. */
export const SIZE_MAX_LENGTH = 32;

/**
 * The provider's sizes as v2 status shows them: whole GB, canonical spelling, at most 15
 * digits so every value is an exact JavaScript number in v1's integer `sizeGB`.
 */
export const REPORTED_SIZE_PATTERN = '^(0|[1-9][0-9]{0,14})G$';

/** Bytes in the provider's unit, the GB. */
export const BYTES_PER_GB = 1_000_000_000n;

const MULTIPLIERS: Readonly<Record<string, bigint>> = {
  k: 10n ** 3n,
  M: 10n ** 6n,
  G: 10n ** 9n,
  T: 10n ** 12n,
  P: 10n ** 15n,
  Ki: 2n ** 10n,
  Mi: 2n ** 20n,
  Gi: 2n ** 30n,
  Ti: 2n ** 40n,
  Pi: 2n ** 50n,
};

const SIZE_REGEXP = new RegExp(SIZE_PATTERN);

/** A number of bytes as an exact fraction (sizes like `0.5k` or `1.1Ki` are not whole bytes). */
export interface ExactBytes {
  readonly numerator: bigint;
  readonly denominator: bigint;
}

/** The bytes `text` denotes, or undefined when it is not a size of {@link SIZE_PATTERN}. */
export function parseSize(text: string): ExactBytes | undefined {
  if (text.length > SIZE_MAX_LENGTH) return undefined;
  const m = SIZE_REGEXP.exec(text);
  if (!m) return undefined;
  const whole = m[1] ?? '';
  const digits = m[2]?.slice(1) ?? '';
  const multiplier = MULTIPLIERS[m[3] ?? ''];
  if (multiplier === undefined) return undefined;
  return { numerator: BigInt(whole + digits) * multiplier, denominator: 10n ** BigInt(digits.length) };
}

/** Whole GB a size is served as (rounded up), or undefined when `text` is not a size. */
export function sizeToGB(text: string): number | undefined {
  const bytes = parseSize(text);
  if (!bytes) return undefined;
  const per = BYTES_PER_GB * bytes.denominator;
  return Number((bytes.numerator + per - 1n) / per);
}

/** True when `text` is a size more than zero and at most `maxGB` GB. */
export function isSizeWithin(text: string, maxGB: number): boolean {
  const bytes = parseSize(text);
  if (!bytes) return false;
  return bytes.numerator > 0n && bytes.numerator <= BigInt(maxGB) * BYTES_PER_GB * bytes.denominator;
}

/** The one spelling of `gb` whole GB that maps to v1 without an annotation, e.g. `50G`. */
export function canonicalSize(gb: number): string {
  return `${gb}G`;
}
