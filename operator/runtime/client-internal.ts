/**
 * Small helpers the REST client modules (api-errors, watch-events, transport, client) share.
 * Not part of the runtime's API: index.ts does not re-export this module.
 */

const MAX_MESSAGE = 512;

/**
 * Flattens server text to one bounded line: log lines and error messages stay one line
 * (STYLE.md), and a huge Status message cannot bloat every log line that carries it.
 */
export function oneLine(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > MAX_MESSAGE ? `${flat.slice(0, MAX_MESSAGE)}...` : flat;
}

/** True for a plain JSON object (not null, not an array): the shape of Status and list bodies. */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
