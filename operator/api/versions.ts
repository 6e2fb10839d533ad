/**
 * Puts the versions of one kind, each defined in its own version folder (v1/, v2/), into the
 * one definition a CustomResourceDefinition is rendered from.
 */
import type { ApiDefinition } from './v1/schema-helpers';

/**
 * The definition of a kind serving every version of `defs`, in their order. `cdk8s import`
 * names the first version's classes without a suffix, so keeping v1 first keeps the generated
 * `StorageBucket` class what it is today. Throws when the definitions name different kinds,
 * repeat a version, or do not have exactly one storage version.
 */
export function combineVersions(defs: readonly ApiDefinition[]): ApiDefinition {
  const [first] = defs;
  if (!first) throw new Error('combineVersions: no definitions given');
  for (const d of defs) {
    if (d.group !== first.group || d.kind !== first.kind || d.plural !== first.plural) {
      throw new Error(`combineVersions: ${d.kind}.${d.group} cannot join ${first.kind}.${first.group}`);
    }
  }
  const versions = defs.flatMap((d) => d.versions);
  const names = versions.map((v) => v.name);
  const repeated = names.filter((n, i) => names.indexOf(n) !== i);
  if (repeated.length > 0) throw new Error(`combineVersions: ${first.kind} defines version ${repeated.join(', ')} twice`);
  const storage = versions.filter((v) => v.storage).map((v) => v.name);
  if (storage.length !== 1) {
    throw new Error(`combineVersions: ${first.kind} needs exactly one storage version, has ${storage.length ? storage.join(', ') : 'none'}`);
  }
  return { ...first, versions };
}

/**
 * `def` with `version` as its storage version and every other version served but not stored.
 * Throws when `def` has no such version.
 */
export function withStorageVersion(def: ApiDefinition, version: string): ApiDefinition {
  if (!def.versions.some((v) => v.name === version)) {
    throw new Error(`withStorageVersion: ${def.kind} has no version ${version} (has ${def.versions.map((v) => v.name).join(', ')})`);
  }
  return { ...def, versions: def.versions.map((v) => ({ ...v, storage: v.name === version })) };
}
