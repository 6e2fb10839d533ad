/**
 * Objects read in another served version, converted to v1 in process, by the very converters
 * the operator's conversion webhook runs (operator/api/convert): the plugin judges v1, so it
 * reads whatever the server prefers without asking the webhook. The converters (and the v2
 * schemas under them) are loaded only when an object is not v1 already.
 */
import type * as Convert from '../operator/api/convert';
import type { BucketProviderConfig, StorageBucket } from '../operator/api/v1';
import { API_VERSION } from '../operator/api/v1/group';
import { CliError, ExitCode } from './exit-codes';

/** The converters, required when first asked for (the shipped plugin has them in a file of their own, scripts/bundle-plugin.ts). */
function converters(): typeof Convert {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return require('../operator/api/convert') as typeof Convert;
}

/** A StorageBucket or BucketProviderConfig of any version the plugin reads. */
interface Versioned {
  readonly apiVersion?: string;
  readonly kind?: string;
  readonly metadata?: { readonly namespace?: string; readonly name?: string };
}

/** `object` as v1; an object that is v1 already comes back as it is. Throws `CliError(ERROR)` when it cannot be converted. */
export async function asV1<T extends StorageBucket | BucketProviderConfig>(object: Versioned): Promise<T> {
  if (object.apiVersion === API_VERSION) return object as T;
  const result = converters().convert(object, API_VERSION);
  if (!result.ok) {
    const m = object.metadata ?? {};
    throw new CliError(
      ExitCode.ERROR,
      `cannot read ${object.kind ?? 'object'} ${m.namespace ?? ''}/${m.name ?? ''} as ${API_VERSION}: ${result.message}`,
    );
  }
  return result.object as T;
}

/** Every object of `objects` as v1 (see {@link asV1}). */
export function allAsV1<T extends StorageBucket | BucketProviderConfig>(objects: readonly Versioned[]): Promise<T[]> {
  return Promise.all(objects.map((o) => asV1<T>(o)));
}
