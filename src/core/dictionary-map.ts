/**
 * A string-keyed map for long-lived collections whose entries come and go on every request (the runs in flight, the
 * cache entries waiting for their commit), kept in a null-prototype object instead of a `Map`.
 *
 * Why not a `Map`: V8 (Node 20) keeps a Map's entries in a hash table that it replaces by a new one whenever the
 * table's entry area is full, deleted entries included; the old table keeps its entries and a pointer to its
 * successor (for iterators still walking it). A Map that lives long and sees an insert and a delete per request gets
 * a new table every few requests, and once one table is in the old generation (after a full collection the current
 * one is), every later table, and every entry one of them held, stays reachable for the young generation's
 * collections: dead, yet copied and promoted until the next full collection. An object whose properties are deleted
 * is a V8 dictionary, whose rehash leaves no such chain (test/core/dictionary-map.test.ts measures both). Keys are
 * strings only; with no prototype, `__proto__` and `constructor` are ordinary keys.
 */
export class DictionaryMap<V> {
  private entries: Record<string, V> = Object.create(null) as Record<string, V>;
  private count = 0;

  get size(): number {
    return this.count;
  }

  get(key: string): V | undefined {
    return this.entries[key];
  }

  has(key: string): boolean {
    return key in this.entries;
  }

  set(key: string, value: V): this {
    if (!(key in this.entries)) this.count += 1;
    this.entries[key] = value;
    return this;
  }

  /** Remove `key`; whether it was there. */
  delete(key: string): boolean {
    if (!(key in this.entries)) return false;
    delete this.entries[key];
    this.count -= 1;
    return true;
  }

  clear(): void {
    this.entries = Object.create(null) as Record<string, V>;
    this.count = 0;
  }

  /** The entries as a snapshot: deleting while iterating is safe. */
  *[Symbol.iterator](): IterableIterator<[string, V]> {
    for (const key of Object.keys(this.entries)) yield [key, this.entries[key]!];
  }
}
