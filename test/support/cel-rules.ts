/**
 * Evaluates CRD x-kubernetes-validations rules with cel-go (test/support/celeval), so a rule's
 * meaning is tested by the CEL implementation the API server uses rather than by reading its
 * text. The rules must keep to plain CEL: celeval has no Kubernetes library functions.
 */
import { execFileSync } from 'node:child_process';
import { celeval } from './test-tools';

/** One rule evaluated against the value of the schema node it sits on. */
export interface RuleCase {
  readonly rule: string;
  readonly self: unknown;
}

/** Whether each rule holds; throws when one fails to compile or evaluate. */
export function evaluateRules(cases: readonly RuleCase[]): boolean[] {
  const out = execFileSync(celeval(), [], { input: JSON.stringify({ rules: cases }), encoding: 'utf8' });
  return (JSON.parse(out) as Array<{ valid?: boolean; error?: string }>).map((r, i) => {
    if (r.valid === undefined) throw new Error(`CEL rule ${cases[i]?.rule ?? ''} failed: ${r.error ?? 'no result'}`);
    return r.valid;
  });
}
