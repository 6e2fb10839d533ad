/**
 * `reconcile`, `pause`, `resume`, `adopt` and `orphan`: read the bucket, plan the edit
 * (cli/edits.ts, checked as the API server checks it), send it as one merge patch under the
 * field manager `kubectl-bucket`, and for `reconcile --wait` wait until the operator echoes
 * the request in `status.lastHandledReconcileAt`.
 */
import type { StorageBucket } from '../../operator/api/v1';
import type { KubeObject } from '../../operator/runtime/types';
import type { Options } from '../args';
import { planEdit, type EditCommand } from '../edits';
import { CliError, ExitCode } from '../exit-codes';
import { FIELD_MANAGER, apiFailure, readBucket, type Kube } from '../kube';
import type { Terminal } from '../terminal';

/** Runs the edit `opts.command`. */
export async function edit(kube: Kube, opts: Options, term: Terminal, signal: AbortSignal, now: () => Date = () => new Date()): Promise<ExitCode> {
  const ns = opts.namespace ?? kube.namespace;
  const name = opts.name ?? '';
  // The patch goes to the version the bucket was read in: served without the webhook, and the
  // fields it sets (annotations, spec.deletionPolicy) are the same in every version.
  const { bucket, kind } = await readBucket(kube, ns, name);
  const plan = planEdit(bucket, { command: opts.command as EditCommand, ...(opts.id !== undefined ? { id: opts.id } : {}), now: now() });
  if (plan.patch) {
    try {
      await kube.client.patch<StorageBucket & KubeObject>(kind, ns, name, plan.patch, 'merge', { fieldManager: FIELD_MANAGER });
    } catch (err) {
      throw apiFailure(err, kube.server);
    }
  }
  term.out(`${plan.summary}\n`);
  if (opts.command === 'reconcile' && opts.wait && plan.requestedAt) {
    await waitHandled(kube, ns, name, plan.requestedAt, opts.timeoutMs, signal);
    term.out(`storagebucket ${ns}/${name} reconciled (status.lastHandledReconcileAt ${plan.requestedAt})\n`);
  }
  return ExitCode.OK;
}

async function waitHandled(kube: Kube, ns: string, name: string, value: string, timeoutMs: number, signal: AbortSignal): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!signal.aborted) {
    const { bucket: b } = await readBucket(kube, ns, name);
    if (b.status?.lastHandledReconcileAt === value) return;
    if (Date.now() >= deadline) break;
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new CliError(
    ExitCode.ERROR,
    `timed out after ${timeoutMs / 1000}s waiting for the operator to handle the reconcile request of storagebucket ${ns}/${name}`,
  );
}
