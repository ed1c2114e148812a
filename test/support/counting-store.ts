/** A store wrapper for tests that count how often a repository reaches SQLite. */
import type { Sql, SqlParams } from '../../src/store/sql.ts';
import type { Store } from '../../src/store/store.ts';

/** The real in-memory store, with its reads and deferred writes counted. */
export function countingStore(store: Store) {
  const counts = { reads: 0, deferred: 0 };
  const wrapped: Store = {
    read: (fn) => {
      counts.reads += 1;
      return store.read(fn);
    },
    write: (fn) => store.write(fn),
    writeDeferred: (fn, options) => {
      counts.deferred += 1;
      store.writeDeferred(fn, options);
    },
    writeDeferredSteps: (plan, kind) => store.writeDeferredSteps(plan, kind),
    tellDropped: (kind, error) => store.tellDropped(kind, error),
    commitIfOverdue: () => store.commitIfOverdue(),
    committed: () => store.committed(),
    flush: () => store.flush(),
    flushToDisk: () => store.flushToDisk(),
    close: () => store.close(),
    get schemaVersion() {
      return store.schemaVersion;
    },
    get filePath() {
      return store.filePath;
    },
    get isOpen() {
      return store.isOpen;
    },
    get writeGeneration() {
      return store.writeGeneration;
    },
    get answersWaitForCommit() {
      return store.answersWaitForCommit;
    },
  };
  return { store: wrapped, counts };
}

/**
 * The real store, its writes watched: `perWrite` gets how many rows of `table` each write deleted (by DELETE
 * statements' changes, or their RETURNING rows), one entry per write that deleted any. Tests of work split into
 * bounded writes assert on it.
 */
export function deletesPerWrite(store: Store, table: string) {
  const perWrite: number[] = [];
  const deletes = new RegExp(`^\\s*DELETE FROM ${table}\\b`);
  const watched = (sql: Sql, count: (rows: number) => void): Sql => ({
    secureDelete: (on) => sql.secureDelete(on),
    run: (text, params) => {
      const result = sql.run(text, params);
      if (deletes.test(text)) count(result.changes);
      return result;
    },
    get: (text, params) => sql.get(text, params),
    all: <T>(text: string, params?: SqlParams) => {
      const rows = sql.all<T>(text, params);
      if (deletes.test(text)) count(rows.length);
      return rows;
    },
  });
  const wrapped = overriding(store, {
    write: (inner) => (fn) =>
      inner.write((sql) => {
        let deleted = 0;
        const result = fn(watched(sql, (rows) => (deleted += rows)));
        if (deleted > 0) perWrite.push(deleted);
        return result;
      }),
  });
  return { store: wrapped, perWrite };
}

/**
 * The store as it is, but for `read`, `write` and `writeDeferredSteps`, which `overrides` may replace (each given the
 * store itself, to call through): tests watch, hold or fail a repository's reads and writes this way.
 */
export function overriding(
  store: Store,
  overrides: {
    read?: (inner: Store) => Store['read'];
    write?: (inner: Store) => Store['write'];
    writeDeferredSteps?: (inner: Store) => Store['writeDeferredSteps'];
  },
): Store {
  return new Proxy(store, {
    get(target, prop) {
      if (prop === 'read' && overrides.read) return overrides.read(target);
      if (prop === 'write' && overrides.write) return overrides.write(target);
      if (prop === 'writeDeferredSteps' && overrides.writeDeferredSteps) return overrides.writeDeferredSteps(target);
      const value: unknown = Reflect.get(target, prop, target);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}

/** A statement the services read through the store, with its parameters. */
export interface Read {
  text: string;
  params: SqlParams | undefined;
}

/** The store as the services see it, recording every statement they read while `reads` is not null. */
export function recording(): { wrap: (store: Store) => Store; start: () => void; stop: () => Read[] } {
  let reads: Read[] | null = null;
  const watched = (sql: Sql): Sql => ({
    secureDelete: (on) => sql.secureDelete(on),
    run: (text, params) => sql.run(text, params),
    get: (text, params) => {
      reads?.push({ text, params });
      return sql.get(text, params);
    },
    all: (text, params) => {
      reads?.push({ text, params });
      return sql.all(text, params);
    },
  });
  return {
    wrap: (inner) => overriding(inner, { read: (store) => (fn) => store.read((sql) => fn(watched(sql))) }),
    start: () => {
      reads = [];
    },
    stop: () => {
      const done = reads ?? [];
      reads = null;
      return done;
    },
  };
}

/**
 * The store, with a racing step to commit right after the next read whose statements match `when` (armed with
 * `arm`): tests land another request's write at the exact moment a request has read what it then writes on.
 */
export function afterRead(when: (read: Read) => boolean): { wrap: (store: Store) => Store; arm: (then: () => Promise<unknown>) => void; fired: () => boolean } {
  let armed: (() => Promise<unknown>) | null = null;
  let fired = false;
  const read =
    (store: Store): Store['read'] =>
    async (fn) => {
      if (!armed) return store.read(fn);
      let hit = false;
      const spy = (sql: Sql): Sql => ({
        secureDelete: (on) => sql.secureDelete(on),
        run: (text, params) => sql.run(text, params),
        get: (text, params) => ((hit ||= when({ text, params })), sql.get(text, params)),
        all: (text, params) => ((hit ||= when({ text, params })), sql.all(text, params)),
      });
      const result = await store.read((sql) => fn(spy(sql)));
      const then = armed;
      if (hit && then) {
        armed = null;
        fired = true;
        await then();
      }
      return result;
    };
  return {
    wrap: (inner) => overriding(inner, { read }),
    arm: (then) => {
      armed = then;
      fired = false;
    },
    fired: () => fired,
  };
}
