/**
 * The provider writes the operator logged, with the reconcile that made them: the nearest a
 * real run gets to the in-process model's audit log. The operator logs each create, update and
 * delete of a provider bucket at info level with the StorageBucket's namespace and name and the
 * bucket id; a write it did not log (or a lost answer) is not seen here.
 */

/** One provider write as the operator logged it. */
export interface LoggedWrite {
  readonly op: 'create' | 'update' | 'delete';
  readonly namespace: string;
  readonly name: string;
  readonly id: string;
}

const OPS: Readonly<Record<string, LoggedWrite['op']>> = {
  'created provider bucket': 'create',
  'updating provider bucket': 'update',
  'deleted provider bucket': 'delete',
};

/** The writes in `text` (JSON lines); other lines are skipped. */
export function loggedWrites(text: string): LoggedWrite[] {
  const out: LoggedWrite[] = [];
  for (const line of text.split('\n')) {
    if (!line.includes('provider bucket')) continue;
    let entry: unknown;
    try {
      entry = JSON.parse(line);
    } catch {
      continue;
    }
    if (typeof entry !== 'object' || entry === null) continue;
    const e = entry as Record<string, unknown>;
    const op = typeof e['msg'] === 'string' ? OPS[e['msg']] : undefined;
    const { namespace, name, bucketID } = e;
    if (op && typeof namespace === 'string' && typeof name === 'string' && typeof bucketID === 'string')
      out.push({ op, namespace, name, id: bucketID });
  }
  return out;
}
