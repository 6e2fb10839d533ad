/**
 * Redaction for the support bundle (pure): a Secret keeps its metadata, type and key names,
 * never a value; the last-applied-configuration annotation (which holds a Secret's data as
 * applied) is dropped from it; managedFields go from every object, as the operator's caches
 * drop them.
 */

/** What a redacted value reads as. */
export const REDACTED = '<redacted>';

/** kubectl's annotation that copies the applied manifest, data included. */
export const LAST_APPLIED_ANNOTATION = 'kubectl.kubernetes.io/last-applied-configuration';

type Obj = Record<string, unknown>;

function isRecord(value: unknown): value is Obj {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function redactValues(map: unknown): unknown {
  if (!isRecord(map)) return map;
  return Object.fromEntries(Object.keys(map).map((k) => [k, REDACTED]));
}

/**
 * A copy of `obj` fit for a support bundle. Secrets are recognised by `kind`, so list items
 * must carry it (the runtime's `list` fills it in).
 */
export function redact<T>(obj: T): T {
  if (!isRecord(obj)) return obj;
  const out: Obj = { ...obj };
  if (isRecord(out.metadata)) {
    const metadata: Obj = { ...out.metadata };
    delete metadata.managedFields;
    if (out.kind === 'Secret' && isRecord(metadata.annotations)) {
      const annotations: Obj = { ...metadata.annotations };
      delete annotations[LAST_APPLIED_ANNOTATION];
      metadata.annotations = annotations;
    }
    out.metadata = metadata;
  }
  if (out.kind === 'Secret') {
    if ('data' in out) out.data = redactValues(out.data);
    if ('stringData' in out) out.stringData = redactValues(out.stringData);
  }
  return out as T;
}
