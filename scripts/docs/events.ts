/** docs/reference/events.md's table, from operator/bucket/event-guide.ts. */
import { EVENT_GUIDE, type AnyEventReason } from '../../operator/bucket/event-guide';
import { table } from './markdown';

/** Every Event reason: its type, what it is about and when it comes. */
export function eventsTable(): string {
  const reasons = (Object.keys(EVENT_GUIDE) as AnyEventReason[]).sort(
    (a, b) => EVENT_GUIDE[a].regarding.localeCompare(EVENT_GUIDE[b].regarding) || a.localeCompare(b),
  );
  const rows = reasons.map((r) => [`\`${r}\``, EVENT_GUIDE[r].type, EVENT_GUIDE[r].regarding, EVENT_GUIDE[r].when]);
  return [
    '_Rendered by `npm run docs` from `operator/bucket/event-guide.ts`; do not edit._',
    '',
    table(['reason', 'type', 'regarding', 'when'], rows),
  ].join('\n');
}
