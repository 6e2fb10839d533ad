/**
 * Where a stored object's bytes go (pure): the JSON kube-apiserver keeps in etcd for one object,
 * split by top-level field and, inside metadata, by annotation and by field manager. Every read,
 * write and watch event of the object walks all of it, so this is the table to cut from.
 */

/** Bytes of one stored object, by part. */
export interface ByteBreakdown {
  /** The whole stored value. */
  readonly total: number;
  /** Each top-level field (`spec`, `status`, ...) and each `metadata.<field>` but managedFields. */
  readonly fields: Readonly<Record<string, number>>;
  /** `metadata.annotations`, one entry per key. */
  readonly annotations: Readonly<Record<string, number>>;
  /** `metadata.managedFields`, one entry per `manager operation [subresource]`. */
  readonly managers: Readonly<Record<string, number>>;
}

const size = (v: unknown): number => Buffer.byteLength(JSON.stringify(v), 'utf8');

interface ManagedFieldsEntry {
  manager?: string;
  operation?: string;
  subresource?: string;
}

/** Splits `stored` (the bytes etcd holds for one object, JSON) into its parts. */
export function byteBreakdown(stored: string): ByteBreakdown {
  const obj = JSON.parse(stored) as Record<string, unknown> & { metadata?: Record<string, unknown> };
  const fields: Record<string, number> = {};
  for (const [k, v] of Object.entries(obj)) if (k !== 'metadata') fields[k] = size(v);
  const meta = obj.metadata ?? {};
  for (const [k, v] of Object.entries(meta)) if (k !== 'managedFields') fields[`metadata.${k}`] = size(v);
  const annotations: Record<string, number> = {};
  for (const [k, v] of Object.entries((meta['annotations'] as Record<string, string> | undefined) ?? {})) annotations[k] = size(k) + size(v) + 2;
  const managers: Record<string, number> = {};
  for (const entry of (meta['managedFields'] as ManagedFieldsEntry[] | undefined) ?? []) {
    const key = [entry.manager ?? '?', entry.operation ?? '?', entry.subresource].filter(Boolean).join(' ');
    managers[key] = (managers[key] ?? 0) + size(entry);
  }
  return { total: Buffer.byteLength(stored, 'utf8'), fields, annotations, managers };
}

/** The breakdown as figures (`stored bytes <part>`), largest first. */
export function breakdownFigures(b: ByteBreakdown, prefix = 'stored bytes'): Record<string, number> {
  const rows: Array<[string, number]> = [
    ...Object.entries(b.fields).map(([k, v]): [string, number] => [k, v]),
    ...Object.entries(b.managers).map(([k, v]): [string, number] => [`managedFields ${k}`, v]),
  ].sort((x, y) => y[1] - x[1]);
  return Object.fromEntries([[prefix, b.total], ...rows.map(([k, v]): [string, number] => [`${prefix} ${k}`, v])]);
}

/**
 * The fields one managedFields entry's `fieldsV1` names, as dotted paths (`status.conditions[
 * {"type":"Ready"}].message`, `metadata.finalizers["..."]`): what a manager's entry holds, so a
 * field the object could do without shows up with its bookkeeping too. Only leaves are listed;
 * the `.` markers of their parents cost bytes but say nothing more.
 */
export function managedPaths(fieldsV1: unknown, prefix = ''): string[] {
  if (typeof fieldsV1 !== 'object' || fieldsV1 === null) return [];
  const out: string[] = [];
  for (const [k, v] of Object.entries(fieldsV1 as Record<string, unknown>)) {
    if (k === '.') continue;
    const name = k.slice(2);
    const path = k.startsWith('f:') ? (prefix ? `${prefix}.${name}` : name) : `${prefix}[${name}]`;
    const below = managedPaths(v, path);
    out.push(...(below.length > 0 ? below : [path]));
  }
  return out;
}
