/**
 * Counters on a caller's registry, shared by whoever registers the same name. Apart from
 * metrics.ts because the API client (transport.ts) counts its requests with one: a client made
 * without a registry, as the kubectl plugin makes it, must not load prom-client at all.
 */
import type * as PromClient from 'prom-client';

/**
 * The counter `name` on `registry`: the one registered there already (several clients or
 * reporters may share a registry), or a new one. prom-client refuses a second registration.
 */
export function registeredCounter<L extends string>(
  registry: PromClient.Registry,
  name: string,
  help: string,
  labelNames: readonly L[],
): PromClient.Counter<L> {
  const existing = registry.getSingleMetric(name);
  if (existing) return existing as PromClient.Counter<L>;
  // Required here, not imported: whoever made `registry` has loaded prom-client already, and a
  // process without a registry never pays for it.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { Counter } = require('prom-client') as typeof PromClient;
  return new Counter({ name, help, labelNames, registers: [registry] });
}
