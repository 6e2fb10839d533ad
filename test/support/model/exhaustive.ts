/**
 * Exhaustive bounded search over the model (as TLC does for a spec, Kivi for controllers):
 * every sequence of up to `depth` actions from an alphabet, the operator run to quiescence
 * after each, breadth first. A world whose abstract state (abstract-state.ts) was reached
 * before is not explored again, so the work grows with the distinct states, not with the
 * sequences. Every new state is judged as the random model judges a run: each provider write
 * as it is made, the quiescent world, and a teardown from that state that deletes everything.
 * Breadth first, so the first violation found for an invariant comes with a shortest sequence.
 *
 * Each state is kept as a snapshot of the world (ModelWorld.snapshot) and explored from a newly
 * started operator, which lists every object again, as after a restart: at a quiescent point
 * the operator's memory holds nothing a decision depends on.
 */
import { describe as describeAction, type ModelAction, type ObjRef } from './actions';
import { abstractState } from './abstract-state';
import type { Violation } from './invariants';
import { ModelSession } from './sequence';
import { ModelWorld, type WorldSnapshot } from './world';

/** One explored state: how it was reached, and the world to go on from. */
interface Node {
  readonly actions: readonly ModelAction[];
  readonly trace: readonly string[];
  readonly world: WorldSnapshot;
  readonly released: readonly string[];
}

/** A broken invariant with the shortest sequence that reaches it. */
export interface ExhaustiveFinding {
  readonly violation: Violation;
  readonly actions: readonly ModelAction[];
  readonly trace: readonly string[];
}

/** What a search did. */
export interface ExhaustiveReport {
  readonly depth: number;
  /** Distinct abstract states reached (the start included). */
  readonly states: number;
  /** New states per depth, from depth 1. */
  readonly statesPerDepth: readonly number[];
  /** Sequences run one action further than a known state. */
  readonly expansions: number;
  /** Expansions whose action had nothing to act on (the state is unchanged). */
  readonly noOps: number;
  readonly reconciles: number;
  /** The first violation of each invariant, with its shortest sequence. */
  readonly findings: readonly ExhaustiveFinding[];
  readonly ms: number;
}

/** Options of {@link exhaustive}. */
export interface ExhaustiveOptions {
  readonly alphabet: readonly ModelAction[];
  readonly depth: number;
  /** Told after each depth. */
  readonly progress?: (depth: number, states: number, expansions: number) => void;
  /** A further property judged at every quiescent point (the search's own tests use one). @default none */
  readonly invariant?: (world: ModelWorld) => readonly Violation[];
}

const P: ObjRef = { ns: 'ns1', name: 'b1' };
/** Another namespace, the same name: a copy there differs from the original only in its namespace. */
const Q: ObjRef = { ns: 'ns2', name: 'b1' };

/**
 * The alphabet of issue 31: two objects (`ns1/b1` and a namesake in `ns2`), the copies a user
 * can make of one into the other (a whole manifest, a manifest that observes a bucket with its
 * key, the key annotation, the status), policy switches, the adopt-id removed, deletion, a
 * backup restored, a bucket of another cluster sharing the account, tags stripped at the
 * provider, and a lost answer. A restart needs no letter of its own: every state is explored
 * from a newly started operator, so one stands between any two actions.
 */
export const PROVENANCE_ALPHABET: readonly ModelAction[] = [
  { type: 'create', obj: P, sizeGB: 10, encrypted: false, deletionPolicy: 'Delete', policy: 'Full' },
  { type: 'copy', from: P, to: Q },
  { type: 'createWithKeyOf', obj: Q, adopt: 0, policy: 'Observe' },
  { type: 'copyValue', from: P, to: Q, what: 'key' },
  { type: 'copyValue', from: P, to: Q, what: 'status' },
  { type: 'setPolicy', obj: Q, policy: 'Full' },
  { type: 'setAdopt', obj: Q, adopt: null },
  { type: 'delete', obj: P },
  { type: 'delete', obj: Q },
  { type: 'restore', obj: P },
  { type: 'otherCluster', obj: Q },
  { type: 'providerChange', pick: 0, change: 'stripTags' },
  { type: 'loseNextAnswer' },
];

/** Explores every sequence of up to `depth` actions of `alphabet`, each state once. */
export async function exhaustive(opts: ExhaustiveOptions): Promise<ExhaustiveReport> {
  const started = Date.now();
  const first = new ModelWorld();
  const seen = new Set<string>([abstractState(first, new Set())]);
  let frontier: Node[] = [{ actions: [], trace: [], world: first.snapshot(), released: [] }];
  const statesPerDepth: number[] = [];
  const findings = new Map<string, ExhaustiveFinding>();
  let expansions = 0;
  let noOps = 0;
  let reconciles = 0;
  const found = (node: Node, a: ModelAction, session: ModelSession) => {
    for (const v of session.violations) {
      if (!findings.has(v.invariant))
        findings.set(v.invariant, { violation: v, actions: [...node.actions, a], trace: [...node.trace, ...session.trace] });
    }
  };
  for (let d = 1; d <= opts.depth; d++) {
    const next: Node[] = [];
    for (const node of frontier) {
      for (const a of opts.alphabet) {
        expansions++;
        const session = new ModelSession(ModelWorld.load(node.world), node.released);
        session.runner.restart();
        const line = await session.act(a, node.actions.length);
        if (line.includes('(no-op')) {
          noOps++;
          continue;
        }
        let settled = session.violations.length === 0 && (await session.settle(describeAction(a)));
        if (settled && opts.invariant) {
          session.violations.push(...opts.invariant(session.world));
          settled = session.violations.length === 0;
        }
        if (!settled) {
          reconciles += session.world.reconcileCount;
          found(node, a, session);
          continue;
        }
        const state = abstractState(session.world, session.runner.releasedUids);
        if (seen.has(state)) {
          reconciles += session.world.reconcileCount;
          continue;
        }
        seen.add(state);
        const child: Node = {
          actions: [...node.actions, a],
          trace: [...node.trace, line],
          world: session.world.snapshot(),
          released: [...session.runner.releasedUids],
        };
        next.push(child);
        // Deleting everything from here must leave nothing of ours.
        await session.teardown();
        reconciles += session.world.reconcileCount;
        if (session.violations.length > 0) found(node, a, session);
      }
    }
    statesPerDepth.push(next.length);
    opts.progress?.(d, seen.size, expansions);
    frontier = next;
    if (frontier.length === 0) break;
  }
  return {
    depth: opts.depth,
    states: seen.size,
    statesPerDepth,
    expansions,
    noOps,
    reconciles,
    findings: [...findings.values()],
    ms: Date.now() - started,
  };
}

/** A report in a few lines, each finding with its shortest sequence. */
export function formatExhaustive(r: ExhaustiveReport): string {
  const lines = [
    `depth ${r.depth}: ${r.states} distinct states (new per depth: ${r.statesPerDepth.join(', ')}), ${r.expansions} expansions (${r.noOps} no-ops), ${r.reconciles} reconciles, ${r.findings.length} violation(s), ${(r.ms / 1000).toFixed(1)} s`,
  ];
  for (const f of r.findings) {
    lines.push(
      '',
      `${f.violation.invariant}: shortest sequence (${f.actions.length} action(s)):`,
      ...f.trace.map((t, i) => `  ${String(i + 1).padStart(2)}. ${t}`),
    );
    lines.push(`  => ${f.violation.detail}`);
  }
  return lines.join('\n');
}
