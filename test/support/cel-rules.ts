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

/** A rule of a schema node, as written in `x-kubernetes-validations`. */
interface SchemaRule {
  readonly rule: string;
  readonly message?: string;
}

/**
 * Every rule of `schema` paired with the value `self` binds to in `value`, as the API server
 * evaluates them on a create: rules of absent fields do not run, and transition rules (those
 * naming `oldSelf`) only run on updates, so both are left out.
 */
export function rulesOf(schema: unknown, value: unknown): RuleCase[] {
  if (value === undefined || typeof schema !== 'object' || schema === null) return [];
  const node = schema as Record<string, unknown>;
  const own = ((node['x-kubernetes-validations'] as SchemaRule[] | undefined) ?? [])
    .filter((r) => !/\boldSelf\b/.test(r.rule))
    .map((r) => ({ rule: r.rule, self: value }));
  const children: RuleCase[] = [];
  if (Array.isArray(value)) {
    for (const item of value) children.push(...rulesOf(node['items'], item));
  } else if (typeof value === 'object' && value !== null) {
    const properties = (node['properties'] as Record<string, unknown> | undefined) ?? {};
    for (const [key, child] of Object.entries(properties)) children.push(...rulesOf(child, (value as Record<string, unknown>)[key]));
  }
  return [...own, ...children];
}
