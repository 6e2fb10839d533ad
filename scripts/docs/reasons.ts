/**
 * docs/reference/conditions.md's tables: every condition reason with its class (what Argo CD,
 * Flux and kstatus make of it, from reason-classes.ts) and what it means and fixes (from
 * reason-guide.ts).
 */
import { BUCKET_REASON_CLASS, CONFIG_TERMINAL_REASONS, type ReasonClass } from '../../operator/bucket/reason-classes';
import { CONFIG_REASON_GUIDE, REASON_GUIDE } from '../../operator/bucket/reason-guide';
import { Reason } from '../../operator/bucket/reasons';
import { table } from './markdown';

/** How each class reads to a person and to the tools that judge health. */
const CLASS_TEXT: Readonly<Record<ReasonClass, string>> = {
  ready: 'ready',
  progressing: 'progressing (Argo CD Progressing, Flux InProgress)',
  terminal: 'terminal: waits for a person (kstatus Stalled, Argo CD Degraded, Flux Failed)',
  paused: 'paused (Argo CD Suspended)',
};

const ORDER: readonly ReasonClass[] = ['ready', 'progressing', 'terminal', 'paused'];

/** The StorageBucket reasons, by class then name. */
export function bucketReasonsTable(): string {
  const reasons = (Object.values(Reason) as Reason[]).sort(
    (a, b) => ORDER.indexOf(BUCKET_REASON_CLASS[a]) - ORDER.indexOf(BUCKET_REASON_CLASS[b]) || a.localeCompare(b),
  );
  const rows = reasons.map((r) => [`\`${r}\``, CLASS_TEXT[BUCKET_REASON_CLASS[r]], REASON_GUIDE[r].meaning, REASON_GUIDE[r].fix]);
  return [
    '_Rendered by `npm run docs` from `operator/bucket/reasons.ts`, `reason-classes.ts` and `reason-guide.ts`; do not edit._',
    '',
    table(['reason', 'class on a StorageBucket', 'what it means', 'what to do'], rows),
  ].join('\n');
}

/** The BucketProviderConfig reasons, in the order of the guide. */
export function configReasonsTable(): string {
  const classOf = (reason: string, condition: string): string => {
    if (!condition.startsWith('Ready')) return 'none: the health checks read Ready only';
    if (condition === 'Ready=True') return CLASS_TEXT.ready;
    return (CONFIG_TERMINAL_REASONS as readonly string[]).includes(reason) ? CLASS_TEXT.terminal : CLASS_TEXT.progressing;
  };
  const rows = Object.entries(CONFIG_REASON_GUIDE).map(([r, g]) => [`\`${r}\``, g.condition, classOf(r, g.condition), g.meaning, g.fix]);
  return [
    '_Rendered by `npm run docs` from `operator/bucket/reason-classes.ts` and `reason-guide.ts`; do not edit._',
    '',
    table(['reason', 'condition', 'class on a BucketProviderConfig', 'what it means', 'what to do'], rows),
  ].join('\n');
}
