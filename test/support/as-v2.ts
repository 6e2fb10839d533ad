/** Test objects written in v1, as the same objects read in v2. */
import { convert } from '../../operator/api/convert';
import * as v2 from '../../operator/api/v2';

/** `obj` (a v1 StorageBucket or BucketProviderConfig) converted to v2; throws when it cannot be. */
export function asV2<T extends object>(obj: T): T {
  const result = convert(obj, v2.API_VERSION);
  if (!result.ok) throw new Error(result.message);
  if ((result.object as { apiVersion: string }).apiVersion !== v2.API_VERSION) throw new Error('not converted to v2');
  return result.object as unknown as T;
}
