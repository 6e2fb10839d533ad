/**
 * The edits `reconcile`, `pause`, `resume`, `adopt` and `orphan` make (pure): the merge patch
 * the README documents for each, checked first as the API server would check it (the CRD
 * schema the spec is rendered from, the annotation size limit), so a refused edit is refused
 * here with the field named and nothing is sent.
 */
import type * as V1 from '../operator/api/v1';
import type { StorageBucket } from '../operator/api/v1';
import { ADOPT_ANNOTATION, PAUSED_ANNOTATION, RECONCILE_REQUESTED_ANNOTATION } from '../operator/api/v1/well-known';
import { CliError, ExitCode } from './exit-codes';

/**
 * The API's schemas and their validator, for the edits that check a value against them (adopt,
 * orphan). Required when first asked for, not imported: the schemas are built as their modules
 * load, a start-up cost that pause, resume and reconcile (annotations only) need not pay.
 */
function schemas(): Pick<typeof V1, 'StorageBucketSpec' | 'StorageBucketStatus' | 'formatFieldErrors' | 'validate'> {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return require('../operator/api/v1') as typeof V1;
}

/** The edit commands. */
export type EditCommand = 'reconcile' | 'pause' | 'resume' | 'adopt' | 'orphan';

/** One edit as asked on the command line. */
export interface EditRequest {
  readonly command: EditCommand;
  /** `adopt --id`. */
  readonly id?: string;
  /** Time of the request; `reconcile` writes it as the annotation's value. */
  readonly now: Date;
}

/** What to send: a JSON merge patch, or nothing because the object already is as asked. */
export interface EditPlan {
  /** Undefined when there is nothing to change. */
  readonly patch?: Record<string, unknown>;
  /** One line for the user, e.g. `storagebucket team-a/logs paused`. */
  readonly summary: string;
  /** The annotation value `reconcile` asked for, to wait for in status.lastHandledReconcileAt. */
  readonly requestedAt?: string;
}

/** apimachinery's TotalAnnotationSizeLimitB: keys plus values of all annotations. */
export const ANNOTATIONS_SIZE_LIMIT = 256 * 1024;

function refuse(message: string): never {
  throw new CliError(ExitCode.USAGE, message);
}

/** The annotations after the edit, checked against the API server's size limit. */
function withAnnotation(bucket: StorageBucket, key: string, value: string | null): Record<string, string | null> {
  const next: Record<string, string> = { ...(bucket.metadata.annotations ?? {}) };
  if (value === null) delete next[key];
  else next[key] = value;
  const size = Object.entries(next).reduce((n, [k, v]) => n + Buffer.byteLength(k) + Buffer.byteLength(v), 0);
  if (size > ANNOTATIONS_SIZE_LIMIT) refuse(`metadata.annotations: Too long: must have at most ${ANNOTATIONS_SIZE_LIMIT} bytes`);
  return { [key]: value };
}

/** The provider id as `adopt` accepts it: what status.id may hold (the operator records it there). */
export function adoptIdProblem(id: string): string | undefined {
  if (id.trim() === '') return '--id must not be empty';
  if (/\s/.test(id)) return '--id must not contain whitespace';
  const { StorageBucketStatus, formatFieldErrors, validate } = schemas();
  const errors = validate(StorageBucketStatus, { id });
  return errors.length > 0 ? `--id: ${formatFieldErrors('status', errors)}` : undefined;
}

/** Plans `req` on `bucket` (as read from the API server); throws `CliError(USAGE)` when the API would refuse it. */
export function planEdit(bucket: StorageBucket, req: EditRequest): EditPlan {
  const ref = `storagebucket ${bucket.metadata.namespace ?? ''}/${bucket.metadata.name ?? ''}`;
  const annotations = bucket.metadata.annotations ?? {};
  const meta = (a: Record<string, string | null>) => ({ metadata: { annotations: a } });
  switch (req.command) {
    case 'reconcile': {
      const value = req.now.toISOString();
      return {
        patch: meta(withAnnotation(bucket, RECONCILE_REQUESTED_ANNOTATION, value)),
        summary: `${ref} reconcile requested at ${value}`,
        requestedAt: value,
      };
    }
    case 'pause':
      if (annotations[PAUSED_ANNOTATION] === 'true') return { summary: `${ref} is already paused` };
      return { patch: meta(withAnnotation(bucket, PAUSED_ANNOTATION, 'true')), summary: `${ref} paused` };
    case 'resume':
      if (annotations[PAUSED_ANNOTATION] === undefined) return { summary: `${ref} is not paused` };
      return { patch: meta(withAnnotation(bucket, PAUSED_ANNOTATION, null)), summary: `${ref} resumed` };
    case 'adopt': {
      const id = req.id ?? '';
      const problem = adoptIdProblem(id);
      if (problem) refuse(problem);
      if (bucket.metadata.deletionTimestamp) refuse(`${ref} is being deleted`);
      const current = bucket.status?.id;
      if (current && current !== id) {
        refuse(`${ref} already manages provider bucket ${current}; ${ADOPT_ANNOTATION} is read only while status.id is empty`);
      }
      if (annotations[ADOPT_ANNOTATION] === id) return { summary: `${ref} already adopts ${id}` };
      return { patch: meta(withAnnotation(bucket, ADOPT_ANNOTATION, id)), summary: `${ref} adopts provider bucket ${id}` };
    }
    case 'orphan': {
      if (bucket.spec.deletionPolicy === 'Orphan') return { summary: `${ref} already has deletionPolicy Orphan` };
      const spec = { ...bucket.spec, deletionPolicy: 'Orphan' };
      const { StorageBucketSpec, formatFieldErrors, validate } = schemas();
      const errors = validate(StorageBucketSpec, spec);
      if (errors.length > 0) refuse(`${ref}: ${formatFieldErrors('spec', errors)}`);
      return {
        patch: { spec: { deletionPolicy: 'Orphan' } },
        summary: `${ref} deletionPolicy set to Orphan: deleting it will keep the provider bucket`,
      };
    }
  }
}
