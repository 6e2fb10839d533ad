/**
 * The informer's store: objects by key, secondary indexes kept in step with every write, and
 * the pure diff a relist applies. Stored objects are shared with every reader and must be
 * treated as immutable (copy before changing), as with client-go's cache.
 */
import { keyOf, keyString, type Cache, type KubeObject, type ObjectKey } from './types';

/** Maps an object to the index values it is filed under. */
export type IndexFunc<T extends KubeObject> = (obj: T) => string[];

/** Options of an `IndexedCache`. */
export interface IndexedCacheOptions {
  /**
   * Told when an index function throws; the object is then filed under no value of that
   * index rather than failing the write, so one bad index cannot stall the informer.
   */
  readonly onIndexError?: (indexName: string, key: string, err: unknown) => void;
}

interface Index<T extends KubeObject> {
  readonly fn: IndexFunc<T>;
  readonly byValue: Map<string, Set<string>>;
}

/** A keyed store with namespace listing and named indexes. */
export class IndexedCache<T extends KubeObject> implements Cache<T> {
  private readonly items = new Map<string, T>();
  private readonly byNamespace = new Map<string, Set<string>>();
  private readonly indexes = new Map<string, Index<T>>();
  /** Index values each key is filed under, so removal does not rerun index functions. */
  private readonly filed = new Map<string, Map<string, string[]>>();
  private readonly onIndexError?: IndexedCacheOptions['onIndexError'];

  constructor(opts: IndexedCacheOptions = {}) {
    this.onIndexError = opts.onIndexError;
  }

  /** Number of stored objects. */
  get size(): number {
    return this.items.size;
  }

  get(key: ObjectKey): T | undefined {
    return this.items.get(keyString(key));
  }

  /** Looks an object up by its `namespace/name` string. */
  getByKey(key: string): T | undefined {
    return this.items.get(key);
  }

  list(namespace?: string): T[] {
    if (!namespace) return [...this.items.values()];
    return this.collect(this.byNamespace.get(namespace));
  }

  byIndex(indexName: string, value: string): T[] {
    const index = this.indexes.get(indexName);
    if (!index) throw new Error(`no index named ${indexName}`);
    return this.collect(index.byValue.get(value));
  }

  /**
   * Registers an index and files existing objects under it. Registering the same function
   * under the same name again is a no-op, so controllers sharing an informer may each
   * declare the index they rely on; a different function under a taken name is an error.
   */
  addIndex(indexName: string, fn: IndexFunc<T>): void {
    const existing = this.indexes.get(indexName);
    if (existing) {
      if (existing.fn === fn) return;
      throw new Error(`index ${indexName} is already registered with another function`);
    }
    const index: Index<T> = { fn, byValue: new Map() };
    this.indexes.set(indexName, index);
    for (const [key, obj] of this.items) this.fileUnder(indexName, index, key, obj);
  }

  /** Inserts or replaces an object; returns the one it replaced. */
  upsert(obj: T): T | undefined {
    const key = keyString(keyOf(obj));
    const old = this.items.get(key);
    if (old) this.unfile(key, old);
    this.items.set(key, obj);
    this.file(key, obj);
    return old;
  }

  /** Removes an object by key; returns it if it was present. */
  remove(key: ObjectKey): T | undefined {
    const k = keyString(key);
    const old = this.items.get(k);
    if (!old) return undefined;
    this.unfile(k, old);
    this.items.delete(k);
    return old;
  }

  /** Every stored `namespace/name` key. */
  keys(): string[] {
    return [...this.items.keys()];
  }

  private collect(keys: Set<string> | undefined): T[] {
    if (!keys) return [];
    const out: T[] = [];
    for (const k of keys) {
      const obj = this.items.get(k);
      if (obj) out.push(obj);
    }
    return out;
  }

  private file(key: string, obj: T): void {
    addTo(this.byNamespace, obj.metadata?.namespace ?? '', key);
    for (const [name, index] of this.indexes) this.fileUnder(name, index, key, obj);
  }

  private fileUnder(indexName: string, index: Index<T>, key: string, obj: T): void {
    let values: string[];
    try {
      values = [...new Set(index.fn(obj))];
    } catch (err) {
      this.onIndexError?.(indexName, key, err);
      values = [];
    }
    for (const v of values) addTo(index.byValue, v, key);
    let perIndex = this.filed.get(key);
    if (!perIndex) {
      perIndex = new Map();
      this.filed.set(key, perIndex);
    }
    perIndex.set(indexName, values);
  }

  private unfile(key: string, obj: T): void {
    removeFrom(this.byNamespace, obj.metadata?.namespace ?? '', key);
    const perIndex = this.filed.get(key);
    if (!perIndex) return;
    for (const [name, values] of perIndex) {
      const index = this.indexes.get(name);
      if (!index) continue;
      for (const v of values) removeFrom(index.byValue, v, key);
    }
    this.filed.delete(key);
  }
}

function addTo(map: Map<string, Set<string>>, value: string, key: string): void {
  let set = map.get(value);
  if (!set) {
    set = new Set();
    map.set(value, set);
  }
  set.add(key);
}

function removeFrom(map: Map<string, Set<string>>, value: string, key: string): void {
  const set = map.get(value);
  if (!set) return;
  set.delete(key);
  // Empty buckets are dropped so churn of short-lived index values cannot grow the map.
  if (set.size === 0) map.delete(value);
}

/** What a relist changes relative to the store. */
export interface RelistDiff<T extends KubeObject> {
  /** Listed objects the store did not have. */
  readonly added: T[];
  /** Listed objects whose resourceVersion differs from the stored copy. */
  readonly updated: Array<{ readonly oldObj: T; readonly newObj: T }>;
  /** Listed objects identical (same resourceVersion) to the stored copy. */
  readonly unchanged: T[];
  /** Stored objects absent from the list (or replaced by a new uid): deleted while unwatched. */
  readonly deleted: T[];
}

/**
 * Compares a fresh list with the stored objects. Pure, so what a relist emits (including the
 * deletes a broken watch missed) is table-testable.
 */
export function diffRelist<T extends KubeObject>(stored: Iterable<T>, listed: readonly T[]): RelistDiff<T> {
  const before = new Map<string, T>();
  for (const obj of stored) before.set(keyString(keyOf(obj)), obj);
  const added: T[] = [];
  const updated: Array<{ oldObj: T; newObj: T }> = [];
  const unchanged: T[] = [];
  const deleted: T[] = [];
  const seen = new Set<string>();
  for (const obj of listed) {
    const key = keyString(keyOf(obj));
    seen.add(key);
    const old = before.get(key);
    if (!old) {
      added.push(obj);
    } else if (old.metadata?.uid !== obj.metadata?.uid) {
      // Deleted and recreated under the same name while unwatched: two objects, so the
      // old one is reported gone and the new one new, never one as an update of the other.
      deleted.push(old);
      added.push(obj);
    } else if (old.metadata?.resourceVersion !== undefined && old.metadata.resourceVersion === obj.metadata?.resourceVersion) {
      unchanged.push(obj);
    } else {
      updated.push({ oldObj: old, newObj: obj });
    }
  }
  for (const [key, obj] of before) if (!seen.has(key)) deleted.push(obj);
  return { added, updated, unchanged, deleted };
}
