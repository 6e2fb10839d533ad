/**
 * Turns a TypeBox schema into a Kubernetes structural schema. TypeBox output is already close;
 * this strips the JSON Schema keywords Kubernetes ignores and refuses the ones it rejects, so a
 * schema change that would break `kubectl apply` of the CRD fails at synth time instead.
 */
import type { TSchema } from '@sinclair/typebox';

/** Keywords that carry no meaning for Kubernetes and are dropped. */
const STRIPPED = new Set(['$id', '$schema', 'examples', '$comment']);

/** Keywords Kubernetes rejects in a CRD schema, with what to use instead. */
const REJECTED: Record<string, string> = {
  const: 'use enum',
  patternProperties: 'use additionalProperties with a schema',
  $ref: 'inline the schema',
  definitions: 'inline the schema',
  $defs: 'inline the schema',
  uniqueItems: "use x-kubernetes-list-type: 'set'",
};

/** A JSON value as produced by JSON.parse. */
type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** Returns a plain-JSON structural copy of `schema`, throwing on constructs Kubernetes rejects. */
export function toStructuralSchema(schema: TSchema, path = '#'): Record<string, Json> {
  // The JSON round trip drops TypeBox's symbol-keyed metadata.
  const plain = JSON.parse(JSON.stringify(schema)) as Json;
  const out = clean(plain, path);
  if (out === null || typeof out !== 'object' || Array.isArray(out)) {
    throw new Error(`schema at ${path} must be an object`);
  }
  return out;
}

function clean(node: Json, path: string): Json {
  if (Array.isArray(node)) return node.map((n, i) => clean(n, `${path}/${i}`));
  if (node === null || typeof node !== 'object') return node;
  const out: { [key: string]: Json } = {};
  for (const [key, value] of Object.entries(node)) {
    if (STRIPPED.has(key)) continue;
    const hint = REJECTED[key];
    if (hint !== undefined) throw new Error(`schema at ${path} uses '${key}', which Kubernetes rejects: ${hint}`);
    if (key === 'type' && value === 'null') throw new Error(`schema at ${path} uses type null: use nullable: true`);
    // Enum values, defaults and CEL rule lists are data, not schemas: copy them untouched.
    out[key] = key === 'enum' || key === 'default' || key === 'x-kubernetes-validations' ? value : clean(value, `${path}/${key}`);
  }
  if (isSchemaNode(path) && out['type'] === undefined && out['x-kubernetes-preserve-unknown-fields'] !== true) {
    throw new Error(`schema at ${path} has no type: every node of a structural schema needs one`);
  }
  if (out['additionalProperties'] === false && out['properties'] !== undefined) {
    // Kubernetes prunes unknown fields anyway; `false` next to properties is rejected.
    delete out['additionalProperties'];
  }
  return out;
}

/** True for paths that denote a schema (not the `properties` map or a `required` list). */
function isSchemaNode(path: string): boolean {
  const last = path.split('/').pop() ?? '';
  const parent = path.split('/').slice(-2, -1)[0] ?? '';
  if (last === 'properties' || last === 'required' || last === 'x-kubernetes-list-map-keys') return false;
  if (parent === 'required' || parent === 'x-kubernetes-list-map-keys') return false;
  return true;
}
