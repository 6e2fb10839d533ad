/**
 * Schema building blocks of the v2 API: v1's (conditions, enums, the definition types) plus the
 * bucket size, a Kubernetes quantity that TypeBox checks with the same bounds the CRD's CEL
 * rules give the API server.
 */
import { Kind, TypeRegistry, Type, type TUnsafe } from '@sinclair/typebox';
import { MAX_SIZE_GB } from '../v1/storagebucket';
import { SIZE_MAX_LENGTH, SIZE_PATTERN, isSizeWithin } from './size';

export {
  Condition,
  ConditionList,
  StringEnum,
  WRITTEN_WHOLE,
  type ApiDefinition,
  type ApiVersionDefinition,
  type PrinterColumn,
} from '../v1/schema-helpers';

/** Options of {@link BucketSize}. */
interface BucketSizeOptions {
  readonly description: string;
  /** Field path used in the CEL messages, e.g. `forProvider.size`. */
  readonly field: string;
}

// TypeBox checks a custom kind only through its registered function. Checking the pattern,
// the length and the bounds here keeps Value.Check as strict as the API server (pattern and
// maxLength in the schema, bounds in the CEL rule below).
if (!TypeRegistry.Has('BucketSize')) {
  TypeRegistry.Set(
    'BucketSize',
    (_schema, value) => typeof value === 'string' && value.length <= SIZE_MAX_LENGTH && isSizeWithin(value, MAX_SIZE_GB),
  );
}

/**
 * A bucket size: a quantity of {@link SIZE_PATTERN}, more than zero and at most v1's
 * {@link MAX_SIZE_GB} GB (so every v2 size has a v1 `sizeGB`),
 * that may grow but never shrink. The CEL rules use the Kubernetes quantity library
 * (`quantity()`), which compares exactly, as {@link isSizeWithin} does.
 */
export function BucketSize(options: BucketSizeOptions): TUnsafe<string> {
  return Type.Unsafe<string>({
    [Kind]: 'BucketSize',
    type: 'string',
    description: options.description,
    pattern: SIZE_PATTERN,
    maxLength: SIZE_MAX_LENGTH,
    'x-kubernetes-validations': [
      {
        rule: `isQuantity(self) && quantity(self).isGreaterThan(quantity('0')) && !quantity(self).isGreaterThan(quantity('${MAX_SIZE_GB}G'))`,
        message: `${options.field} must be more than 0 and at most ${MAX_SIZE_GB}G`,
      },
      { rule: '!quantity(self).isLessThan(quantity(oldSelf))', message: `${options.field} can only grow` },
    ],
  });
}
