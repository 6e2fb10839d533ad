/**
 * Redaction for the support bundle (pure), the same for every kind it holds: a Secret keeps
 * its metadata, type and key names, never a value; every container `env` entry keeps its name
 * and loses its `value` (`HTTPS_PROXY` with credentials, tokens passed as env); the userinfo
 * of every URL in any string (`args`, annotations, Event notes, logs) is replaced; the
 * last-applied-configuration annotation (a copy of the applied manifest, a Secret's data or
 * an env value included) keeps its key and loses its value; managedFields go, as the
 * operator's caches drop them. Names are kept everywhere, so the bundle still says what was set.
 */

/** What a redacted value reads as. */
export const REDACTED = '<redacted>';

/** kubectl's annotation that copies the applied manifest, data included. */
export const LAST_APPLIED_ANNOTATION = 'kubectl.kubernetes.io/last-applied-configuration';

type Obj = Record<string, unknown>;

function isRecord(value: unknown): value is Obj {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** `scheme://userinfo@` in a URL; the userinfo is whatever precedes `@` before the host's end. */
const URL_USERINFO = /\b([a-z][a-z0-9+.-]*:\/\/)[^\s/?#@'"]+@/gi;

/** `text` with the userinfo of every URL in it (`https://user:pass@proxy:3128`) replaced by {@link REDACTED}. */
export function redactUserinfo(text: string): string {
  return text.replace(URL_USERINFO, `$1${REDACTED}@`);
}

function redactValues(map: unknown): unknown {
  if (!isRecord(map)) return map;
  return Object.fromEntries(Object.keys(map).map((k) => [k, REDACTED]));
}

/** A container's `env`: each entry keeps `name` (and `valueFrom`, a reference, not a value); `value` is replaced. */
function redactEnv(env: unknown[]): unknown[] {
  return env.map((e) => (isRecord(e) && 'value' in e ? { ...(walk(e) as Obj), value: REDACTED } : walk(e)));
}

function walk(value: unknown): unknown {
  if (typeof value === 'string') return redactUserinfo(value);
  if (Array.isArray(value)) return value.map(walk);
  if (!isRecord(value)) return value;
  const out: Obj = {};
  for (const [k, v] of Object.entries(value)) {
    if (k === 'env' && Array.isArray(v)) out[k] = redactEnv(v);
    else if (k === 'annotations' && isRecord(v) && LAST_APPLIED_ANNOTATION in v)
      out[k] = { ...(walk(v) as Obj), [LAST_APPLIED_ANNOTATION]: REDACTED };
    else out[k] = walk(v);
  }
  return out;
}

/**
 * A copy of `obj` fit for a support bundle (see the module comment); applying it twice changes
 * nothing more. Secrets are recognised by `kind`, so list items must carry it (the runtime's
 * `list` fills it in).
 */
export function redact<T>(obj: T): T {
  if (!isRecord(obj)) return obj;
  const out = walk(obj) as Obj;
  if (isRecord(out.metadata)) {
    const metadata: Obj = { ...out.metadata };
    delete metadata.managedFields;
    out.metadata = metadata;
  }
  if (out.kind === 'Secret') {
    if ('data' in out) out.data = redactValues(out.data);
    if ('stringData' in out) out.stringData = redactValues(out.stringData);
  }
  return out as T;
}
