/**
 * The diagnosis of a trace (pure): which node is the root cause, whether it is terminal, the
 * command that fixes it when there is one, and the one paragraph `why` prints. Reason classes
 * come from the operator's own table (operator/bucket/reason-classes.ts) and commands from its
 * own helpers, so the plugin says what the operator's status, Argo CD and Flux say.
 */
import { ADOPT_ANNOTATION, PAUSED_ANNOTATION } from '../operator/api/v1/well-known';
import { labelCommand } from '../operator/bucket/credentials';
import { BUCKET_REASON_CLASS, CONFIG_TERMINAL_REASONS, type ReasonClass } from '../operator/bucket/reason-classes';
import { Reason } from '../operator/bucket/reasons';
import { ExitCode } from './exit-codes';
import type { Snapshot } from './snapshot';
import { buildTree, isPaused, isReadyNow, nodes, type TraceNode } from './trace';

/** The diagnosis of one StorageBucket. */
export interface Diagnosis {
  /** The node that explains the bucket's state (the bucket itself when nothing deeper does). */
  readonly cause: TraceNode;
  /** ready, progressing (the operator retries or waits on its own), terminal (a person must act) or paused. */
  readonly class: ReasonClass;
  /** Commands that fix it, to run in order; empty when none does (wait, or read the message). */
  readonly fix: readonly string[];
  /** What a person should do when no single command does it; empty otherwise. */
  readonly advice: string;
}

function classOf(reason: string): ReasonClass {
  return (BUCKET_REASON_CLASS as Readonly<Record<string, ReasonClass>>)[reason] ?? 'progressing';
}

/**
 * The root cause: the bucket when it is paused or Ready; otherwise the deepest object along
 * bucket -> config -> credential Secret that is not as it should be, so a missing Secret is
 * named as itself, not as the bucket's reason; then an owned object the operator cannot
 * write; else the bucket's own Ready reason.
 */
export function rootCause(s: Snapshot, tree: TraceNode = buildTree(s)): TraceNode {
  if (isPaused(s)) return tree;
  const config = tree.children.find((n) => n.role === 'config');
  const credentials = config?.children.find((n) => n.role === 'credentials');
  if (!isReadyNow(s)) {
    if (credentials?.problem) return credentials;
    if (config?.problem) return config;
    return tree;
  }
  return nodes(tree).find((n) => n.role !== 'bucket' && n.problem) ?? tree;
}

function bucketRef(s: Snapshot): { ns: string; name: string } {
  return { ns: s.bucket.metadata.namespace ?? '', name: s.bucket.metadata.name ?? '' };
}

/** Diagnoses `s`. */
export function diagnose(s: Snapshot, tree: TraceNode = buildTree(s)): Diagnosis {
  const cause = rootCause(s, tree);
  const { ns, name } = bucketRef(s);
  const plugin = (cmd: string) => `kubectl bucket ${cmd} ${name} -n ${ns}`;
  const none = { fix: [], advice: '' };
  switch (cause.role) {
    case 'credentials': {
      const f = s.credentials!;
      const setKey = `kubectl patch secret ${f.name} -n ${ns} --type=merge -p '{"stringData":{"${f.key}":"<API key>"}}'`;
      if (f.lookup === 'missing') {
        return {
          cause,
          class: classOf(Reason.SecretNotFound),
          fix: [`kubectl create secret generic ${f.name} -n ${ns} --from-literal=${f.key}=<API key>`, labelCommand(ns, f.name)],
          advice: '',
        };
      }
      if (cause.reason === Reason.SecretNotLabeled) return { cause, class: 'terminal', fix: [labelCommand(ns, f.name)], advice: '' };
      return { cause, class: classOf(Reason.SecretNotFound), fix: [setKey], advice: '' };
    }
    case 'config': {
      const cfg = s.bucket.spec.providerRef.name;
      if (s.config.state === 'missing') {
        return {
          cause,
          class: classOf(Reason.ProviderConfigNotFound),
          fix: [],
          advice: `create BucketProviderConfig ${cfg} in namespace ${ns} (spec.endpoint and spec.secretRef), or point a new StorageBucket at an existing one: spec.providerRef is immutable`,
        };
      }
      if (s.config.state === 'found' && s.config.object.metadata.deletionTimestamp) {
        return { cause, class: 'terminal', fix: [], advice: `BucketProviderConfig ${ns}/${cfg} is being deleted: nothing new is made through it` };
      }
      if (cause.reason === Reason.CredentialsRejected) {
        const f = s.credentials;
        return {
          cause,
          class: 'terminal',
          fix: [],
          advice: f
            ? `put an API key the provider accepts into key ${f.key} of Secret ${ns}/${f.name}`
            : `put an API key the provider accepts into the config's Secret`,
        };
      }
      const terminal = (CONFIG_TERMINAL_REASONS as readonly string[]).includes(cause.reason);
      return {
        cause,
        class: terminal ? 'terminal' : 'progressing',
        fix: terminal ? [`kubectl edit bucketproviderconfig ${cfg} -n ${ns}`] : [],
        advice: '',
      };
    }
    case 'accessSecret':
    case 'service':
      if (cause.reason === 'NotControlled')
        return { cause, class: 'terminal', fix: [], advice: `delete or rename ${cause.kind} ${ns}/${cause.name}` };
      return { cause, class: 'progressing', fix: [plugin('reconcile')], advice: '' };
    case 'providerBucket':
      return { cause, class: 'progressing', ...none };
    case 'bucket':
      break;
  }
  if (isPaused(s)) return { cause, class: 'paused', fix: [plugin('resume')], advice: '' };
  if (isReadyNow(s)) return { cause, class: 'ready', ...none };
  const reason = cause.reason;
  const cls = classOf(reason);
  switch (reason) {
    case Reason.InvalidSpec:
      return { cause, class: cls, fix: [`kubectl edit sbucket ${name} -n ${ns}`], advice: '' };
    case Reason.AdoptTargetNotFound:
      return {
        cause,
        class: cls,
        fix: [],
        advice: `name an existing provider bucket (kubectl bucket adopt ${name} -n ${ns} --id <id>) or remove the annotation (kubectl annotate sbucket ${name} -n ${ns} ${ADOPT_ANNOTATION}-)`,
      };
    case Reason.ProviderUnavailable:
    case Reason.Throttled:
      return {
        cause,
        class: cls,
        fix: [plugin('reconcile')],
        advice: 'the operator retries with backoff; ask for a reconcile once the provider answers again',
      };
    case Reason.ProviderChanged:
    case Reason.BucketOwnedElsewhere:
    case Reason.BucketOwnedByOtherCluster:
    case Reason.ProviderConfigDeleting:
      return { cause, class: cls, fix: [], advice: 'the message says what to change' };
    default:
      return { cause, class: cls, ...none };
  }
}

/** The exit code of `trace` and `why` for a diagnosis. */
export function exitCodeOf(d: Diagnosis): ExitCode {
  switch (d.class) {
    case 'ready':
      return ExitCode.OK;
    case 'progressing':
      return ExitCode.NOT_READY;
    case 'terminal':
    case 'paused':
      return ExitCode.STALLED;
  }
}

const CLASS_TEXT: Readonly<Record<ReasonClass, string>> = {
  ready: '',
  progressing: 'Not terminal: the operator keeps working on it and goes on by itself once the cause is gone.',
  terminal: 'Terminal: nothing changes until a person acts.',
  paused: 'Paused: the operator makes no provider calls for this bucket until it is resumed.',
};

function sentence(text: string): string {
  const t = text.trim();
  return t === '' || /[.!?]$/.test(t) ? t : `${t}.`;
}

/** The one paragraph `why` prints: what is wrong, whether it is terminal, the fix. */
export function whyParagraph(s: Snapshot, d: Diagnosis = diagnose(s)): string {
  const { ns, name } = bucketRef(s);
  const subject = `StorageBucket ${ns}/${name}`;
  if (d.class === 'ready') {
    const st = s.bucket.status ?? {};
    const where = st.id
      ? ` provider bucket ${st.id} is ${st.phase ?? 'Active'}${st.sizeGB !== undefined ? ` (${st.sizeGB} GB${st.region ? `, ${st.region}` : ''})` : ''}`
      : '';
    return `${subject} is Ready:${where || ' nothing is wrong'}.`;
  }
  const bucketReady = s.bucket.status?.conditions?.find((c) => c.type === 'Ready');
  const state =
    d.class === 'paused'
      ? `${subject} is paused (annotation ${PAUSED_ANNOTATION} is "true")`
      : isReadyNow(s)
        ? `${subject} is Ready, but ${d.cause.kind} ${ns}/${d.cause.name} is not as it should be`
        : `${subject} is not Ready (${bucketReady ? `${bucketReady.reason}` : 'no status yet'})`;
  const where =
    d.cause.role === 'bucket'
      ? sentence(d.cause.message)
      : `Root cause: ${d.cause.kind} ${ns}/${d.cause.name}${d.cause.note ? ` (${d.cause.note})` : ''}: ${sentence(d.cause.message)}`;
  const fix = d.fix.length > 0 ? `Fix: ${d.fix.join(' && ')}` : d.advice ? `To fix it, ${sentence(d.advice)}` : '';
  const progressNote =
    d.class === 'progressing' && d.fix.length === 0 && !d.advice ? ' Nothing to do but wait; follow it with kubectl bucket trace -w.' : '';
  return [`${sentence(state)} ${where}`, `${CLASS_TEXT[d.class]}${progressNote}`, fix].filter((x) => x !== '').join(' ');
}
