/**
 * The trace tree of a StorageBucket (pure): the bucket, its BucketProviderConfig and that
 * config's credential Secret, the owned Secret and Service, and the provider bucket as status
 * records it, each with Ready/Synced, reason, message and creation time. The diagnosis
 * (cli/diagnose.ts) picks the root cause among these nodes.
 */
import type { Condition } from '../operator/api/v1';
import { PAUSED_ANNOTATION } from '../operator/api/v1/well-known';
import { ConditionType } from '../operator/bucket/reasons';
import type { OwnedFacts, Snapshot } from './snapshot';
import { timeText } from './snapshot';

/** A condition status as shown; `-` where the object has no such condition. */
export type Status = 'True' | 'False' | 'Unknown' | '-';

/** Which object of the trace a node is. */
export type NodeRole = 'bucket' | 'config' | 'credentials' | 'accessSecret' | 'service' | 'providerBucket';

/** One object of the trace. */
export interface TraceNode {
  readonly role: NodeRole;
  readonly kind: string;
  readonly name: string;
  /** What the object is to the bucket, e.g. `credentials`; shown after the name. */
  readonly note?: string;
  readonly ready: Status;
  readonly synced: Status;
  readonly reason: string;
  readonly message: string;
  /** RFC 3339 creation time, when the object exists. */
  readonly createdAt?: string;
  /** True when this node is not as it should be (whether or not it is the root cause). */
  readonly problem: boolean;
  readonly children: readonly TraceNode[];
}

function cond(conditions: readonly Condition[] | undefined, type: string): Condition | undefined {
  return conditions?.find((c) => c.type === type);
}

/** True when the bucket carries `paused: "true"`, as the operator reads it. */
export function isPaused(s: Snapshot): boolean {
  return s.bucket.metadata.annotations?.[PAUSED_ANNOTATION] === 'true';
}

/** True when Ready=True speaks for the bucket's current generation. */
export function isReadyNow(s: Snapshot): boolean {
  const b = s.bucket;
  return cond(b.status?.conditions, ConditionType.Ready)?.status === 'True' && b.status?.observedGeneration === b.metadata.generation;
}

function bucketNode(s: Snapshot, children: TraceNode[]): TraceNode {
  const b = s.bucket;
  const ready = cond(b.status?.conditions, ConditionType.Ready);
  const synced = cond(b.status?.conditions, ConditionType.Synced);
  const generation = b.metadata.generation;
  const stale = b.status?.observedGeneration !== undefined && generation !== undefined && b.status.observedGeneration < generation;
  const notes = [
    ...(b.metadata.deletionTimestamp ? ['deleting'] : []),
    ...(isPaused(s) ? ['paused'] : []),
    ...(b.spec.managementPolicy === 'Observe' ? ['Observe'] : []),
    ...(b.spec.deletionPolicy === 'Orphan' ? ['Orphan'] : []),
  ];
  let reason = ready?.reason ?? 'NoStatus';
  let message = ready?.message ?? 'the operator has not reported status yet';
  if (isPaused(s) && synced?.reason) {
    reason = synced.reason;
    message = synced.message;
  } else if (stale && ready?.status === 'True') {
    reason = 'Pending';
    message = `the operator has not yet acted on generation ${generation} (status speaks for ${b.status?.observedGeneration})`;
  }
  return {
    role: 'bucket',
    kind: 'StorageBucket',
    name: b.metadata.name ?? '',
    ...(notes.length > 0 ? { note: notes.join(', ') } : {}),
    ready: ready?.status ?? 'Unknown',
    synced: synced?.status ?? 'Unknown',
    reason,
    message,
    ...(b.metadata.creationTimestamp ? { createdAt: timeText(b.metadata.creationTimestamp) } : {}),
    problem: !isReadyNow(s) || isPaused(s),
    children,
  };
}

function configNode(s: Snapshot): TraceNode {
  const name = s.bucket.spec.providerRef.name;
  const ns = s.bucket.metadata.namespace ?? '';
  const children = s.credentials ? [credentialsNode(s)] : [];
  if (s.config.state === 'missing') {
    return {
      role: 'config',
      kind: 'BucketProviderConfig',
      name,
      ready: 'False',
      synced: '-',
      reason: 'NotFound',
      message: `BucketProviderConfig ${ns}/${name} not found`,
      problem: true,
      children,
    };
  }
  if (s.config.state === 'forbidden') {
    return {
      role: 'config',
      kind: 'BucketProviderConfig',
      name,
      ready: 'Unknown',
      synced: '-',
      reason: 'Forbidden',
      message: s.config.message,
      problem: false,
      children,
    };
  }
  const c = s.config.object;
  const ready = cond(c.status?.conditions, ConditionType.Ready);
  return {
    role: 'config',
    kind: 'BucketProviderConfig',
    name,
    ...(c.metadata.deletionTimestamp ? { note: 'deleting' } : {}),
    ready: ready?.status ?? 'Unknown',
    synced: '-',
    reason: ready?.reason ?? 'NoStatus',
    message: ready?.message ?? 'the operator has not reported status yet',
    ...(c.metadata.creationTimestamp ? { createdAt: timeText(c.metadata.creationTimestamp) } : {}),
    problem: ready?.status !== 'True' || c.metadata.deletionTimestamp !== undefined,
    children,
  };
}

function credentialsNode(s: Snapshot): TraceNode {
  const f = s.credentials!;
  const base = { role: 'credentials' as const, kind: 'Secret', name: f.name, note: 'credentials', synced: '-' as const, children: [] };
  const created = f.createdAt ? { createdAt: f.createdAt } : {};
  if (f.lookup === 'forbidden' || (!f.verdict.ok && f.verdict.reason === 'Forbidden')) {
    return { ...base, ready: 'Unknown', reason: 'Forbidden', message: f.verdict.ok ? '' : f.verdict.message, problem: false };
  }
  if (f.verdict.ok) {
    return {
      ...base,
      ...created,
      ready: 'True',
      reason: 'Labelled',
      message: `labelled as provider credentials; key ${f.key} is set`,
      problem: false,
    };
  }
  return { ...base, ...created, ready: 'False', reason: f.verdict.reason, message: f.verdict.message, problem: true };
}

function ownedNode(s: Snapshot, f: OwnedFacts, role: 'accessSecret' | 'service', note: string): TraceNode {
  const base = { role, kind: f.kind, name: f.name, note, synced: '-' as const, children: [], ...(f.createdAt ? { createdAt: f.createdAt } : {}) };
  const ns = s.bucket.metadata.namespace ?? '';
  const owner = `StorageBucket ${ns}/${s.bucket.metadata.name ?? ''}`;
  switch (f.lookup) {
    case 'forbidden':
      return { ...base, ready: 'Unknown', reason: 'Forbidden', message: `not allowed to read ${f.kind} ${ns}/${f.name}`, problem: false };
    case 'missing': {
      // The operator writes them once the bucket is Active: missing before that is expected.
      const due = isReadyNow(s);
      return {
        ...base,
        ready: due ? 'False' : '-',
        reason: due ? 'NotFound' : 'NotCreatedYet',
        message: due ? `${f.kind} ${ns}/${f.name} not found; the operator recreates it on its next reconcile` : 'written once the bucket is Active',
        problem: due,
      };
    }
    case 'found':
      if (!f.controlled) {
        return {
          ...base,
          ready: 'False',
          reason: 'NotControlled',
          message: `${f.kind} ${ns}/${f.name} exists but is not controlled by ${owner}: the operator leaves it alone; delete or rename it to let the operator create its own`,
          problem: true,
        };
      }
      return { ...base, ready: 'True', reason: 'Present', message: `controlled by ${owner}`, problem: false };
  }
}

function providerBucketNode(s: Snapshot): TraceNode {
  const st = s.bucket.status ?? {};
  const id = st.id;
  if (!id) {
    return {
      role: 'providerBucket',
      kind: 'ProviderBucket',
      name: '-',
      note: 'per status',
      ready: '-',
      synced: '-',
      reason: 'NotRecorded',
      message: 'status records no provider bucket yet',
      problem: false,
      children: [],
    };
  }
  const facts = [
    st.sizeGB !== undefined ? `${st.sizeGB} GB` : undefined,
    st.region,
    st.encrypted ? 'encrypted' : undefined,
    st.endpoint ? `at ${st.endpoint}` : undefined,
  ].filter((x): x is string => x !== undefined);
  return {
    role: 'providerBucket',
    kind: 'ProviderBucket',
    name: id,
    note: 'per status',
    ready: st.phase === 'Active' ? 'True' : 'False',
    synced: '-',
    reason: st.phase ?? 'Unknown',
    message: facts.join(', '),
    problem: false,
    children: [],
  };
}

/** The trace tree of `s`: the bucket at the root, then config (with its Secret), owned objects and provider bucket. */
export function buildTree(s: Snapshot): TraceNode {
  return bucketNode(s, [
    configNode(s),
    ownedNode(s, s.accessSecret, 'accessSecret', 'connection'),
    ownedNode(s, s.service, 'service', 'in-cluster DNS'),
    providerBucketNode(s),
  ]);
}

/** Every node of `root`, depth first (a node before its children). */
export function nodes(root: TraceNode): TraceNode[] {
  return [root, ...root.children.flatMap(nodes)];
}
