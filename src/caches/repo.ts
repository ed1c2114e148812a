/** Cache entries of every tier, keyed per tenant, tier and key (exact-response now; tool-result, som... later). */
import { setImmediate } from 'node:timers/promises';
import { DictionaryMap } from '../core/dictionary-map.ts';
import type { Store } from '../store/store.ts';
import { erasing, placeholders, textBytes, type AlsoStep, type Sql, type SqlValue } from '../store/sql.ts';
import { KeyIndex } from './key-index.ts';
import { ByteLru } from './lru.ts';

export interface CacheEntry {
  tenantId: string;
  cacheType: string;
  key: string;
  /** The app whose request stored it (part of the exact cache's key): what an app-pinned key's stats count. */
  appId: string | null;
  value: unknown;
  sourceRunId: string | null;
  /** What producing the entry cost: the saving a hit credits. */
  costUsd: number;
  latencyMs: number;
  hits: number;
  createdAt: number;
  lastHitAt: number | null;
}

export interface CacheRepository {
  get(tenantId: string, cacheType: string, key: string): Promise<CacheEntry | null>;
  /**
   * Insert or replace (a refresh resets the hit counter's source but keeps counting hits). `valueJson` is the value
   * written out as JSON (UTF-8) when the caller has it already (the gateway's answer, as its client was sent it): it is
   * stored as it is instead of written out again.
   */
  putDeferred(entry: Omit<CacheEntry, 'hits' | 'lastHitAt'>, valueJson?: Uint8Array): void;
  /**
   * Drop one entry: lookups miss it at once, its row goes with the next group commit. An entry stored under the key
   * after the call stays; one put before it, still unwritten, is dropped with it.
   */
  dropDeferred(tenantId: string, cacheType: string, key: string): void;
  recordHitDeferred(tenantId: string, cacheType: string, key: string, at: number): void;
  /** Entries and hits per tier of the tenant, or of its app `appId` (an app-pinned caller's) when given. */
  stats(tenantId: string, appId: string | null): Promise<Array<{ cacheType: string; entries: number; hits: number }>>;
  /**
   * Settles once the index of stored entries has been loaded from the data file (after a start, in small batches
   * between requests). Until then a lookup finds only the entries the index has already seen.
   */
  loaded(): Promise<void>;
  /** Delete entries; `cacheType` null means every tier; `keyPrefix` needs a type. Returns rows deleted. */
  /**
   * Delete the tenant's matching entries, in writes of a bounded size; `also(invalidated)` (the audit row, given the
   * total) runs in the last of them, so the row commits with the deletion that completes the invalidation.
   */
  invalidate(
    tenantId: string,
    options: { cacheType: string | null; keyPrefix: string | null },
    also?: (invalidated: number) => AlsoStep,
  ): Promise<number>;
  pruneTenant(tenantId: string, cutoff: number, batch: number): Promise<number>;
  /** Whether the tenant has any entry stored (a deleted organization's purge is done once it has none). */
  hasEntries(tenantId: string): Promise<boolean>;
}

interface EntryRow {
  id: number;
  tenant_id: string;
  cache_type: string;
  key: string;
  app_id: string | null;
  value_json: string;
  source_run_id: string | null;
  cost_usd: number;
  latency_ms: number;
  hits: number;
  created_at: number;
  last_hit_at: number | null;
}

/** The columns that say which entry a row holds, and where it is. */
type StoredKey = Pick<EntryRow, 'id' | 'tenant_id' | 'cache_type' | 'key'>;

export interface CacheRepositoryOptions {
  /**
   * Budget of the in-memory copy of recent entries, in estimated bytes (the stored JSON's length, doubled for the
   * parsed object, plus the key). 0 turns it off.
   */
  memoryBytes?: number;
}

/**
 * 8 MiB holds a few thousand typical answers. Only answers asked for again are kept (see `recent` below), so the
 * budget goes to the repeated traffic a hit serves; anything else is one read by row id away.
 */
export const DEFAULT_CACHE_MEMORY_BYTES = 8 * 1024 * 1024;

/** Rough in-memory size of an entry whose value serialises to `jsonLength` characters. */
function estimatedBytes(entry: CacheEntry, jsonLength: number): number {
  return 2 * jsonLength + 2 * (entry.tenantId.length + entry.cacheType.length + entry.key.length) + 256;
}

/**
 * The row with this id, if it still holds this key (parameters: id, tenant, tier, key). A row id from the index is
 * trusted only with its key: another key sharing the fingerprint (key-index.ts), or an id left by a write that rolled
 * back, must never reach another entry's row.
 */
const KEYS_ROW = 'id = ? AND tenant_id = ? AND cache_type = ? AND key = ?';

/** SQLite's message when an INSERT's row id is already in the table. */
const ID_TAKEN = /UNIQUE constraint failed: cache_entries\.id\b/;

/** Entries an invalidation looks at per write (its own commit): a few milliseconds of work. */
export const INVALIDATE_BATCH = 1_000;

/**
 * Bytes of stored values one deleting write (an invalidation's or a retention pass's) lets go at most, though always
 * at least one entry: SQLite reads every overflow page of a value it deletes, ~0.4-1 ms per MB here, so a write of
 * 200 answers of ~1 MB each held the event loop 80-220 ms, and one of 1,000 for up to a second.
 */
export const DELETE_BYTES_PER_WRITE = 4 * 1024 * 1024;

/** How many of `rows`, from the first, fit in `budget` bytes: always the first. */
function withinBytes(rows: ReadonlyArray<{ bytes: number }>, budget: number): number {
  let take = Math.min(1, rows.length);
  for (let bytes = rows[0]?.bytes ?? 0; take < rows.length && bytes + rows[take]!.bytes <= budget; take++) bytes += rows[take]!.bytes;
  return take;
}

/** Stored keys read per event-loop turn while the index is loaded: about a millisecond of work. */
const INDEX_LOAD_BATCH = 1_000;

/** The caches' deferred writes, as a failed commit's report names them (see Store.writeDeferred's `kind`). */
const ENTRY_WRITE = { kind: 'cache entries' } as const;
const ENTRY_WRITE_EARLY = { early: true, kind: 'cache entries' } as const;
const HITS_WRITE = { kind: 'cache hit counts' } as const;

interface PendingHits {
  tenantId: string;
  cacheType: string;
  key: string;
  count: number;
  lastHitAt: number;
}

export function createCacheRepository(store: Store, options: CacheRepositoryOptions = {}): CacheRepository {
  // Entries written but not yet committed (deferred writes join the next group commit): lookups see them at once,
  // so two identical requests a few milliseconds apart still share the answer. Each leaves the map as soon as its
  // write ran on the connection, after which the row is there for a read (and `recent` keeps it if it was asked for).
  // (Not a Map: an entry per live answer, in and out; core/dictionary-map.ts says why.)
  const pending = new DictionaryMap<CacheEntry>();
  // Entries asked for again, so that a hit does no SQL read and no JSON.parse of the stored answer: read from the
  // table, or asked for while pending (`askedWhilePending`). A new answer is not copied here: every live answer is
  // stored and most are never asked for again; copied, they filled the budget (~7,000 entries, 9 MB of live heap in
  // the bench's soak), and V8 lets the old generation grow to a multiple of what is live: ~50 MB of RSS at the soak's
  // end. A first repeat after the commit reads the row once. svc is the only process with the data file open (the
  // store's exclusive lock; the CLI goes through svc's socket), so every change to cache_entries passes through this
  // repository: invalidation and pruning drop the copies too. The copies are shared, never mutated: the adapters
  // build a fresh answer from a stored one (fromCache). Their `hits`/`lastHitAt` are not kept current; `stats`
  // reads the table.
  const memoryBytes = options.memoryBytes ?? DEFAULT_CACHE_MEMORY_BYTES;
  const recent = memoryBytes > 0 ? new ByteLru<CacheEntry>(memoryBytes) : null;
  // Ids of pending entries looked up before their write: the write keeps them in `recent`.
  const askedWhilePending = new DictionaryMap<true>();
  // Bumped by every delete: a read that started before one must not put what it read back into `recent`.
  let generation = 0;
  // Hits counted since their last write: many hits of one key in a commit window become one UPDATE.
  const hitCounts = new DictionaryMap<PendingHits>();
  const idOf = (tenantId: string, cacheType: string, key: string) => `${tenantId}\u0000${cacheType}\u0000${key}`;

  // Where each stored entry's row is (key-index.ts): `cache_entries` has no index on the key, so a lookup, a
  // refresh and a hit count go through this map to the row id, and the row's own identity is checked there. It is
  // loaded from the table after start-up in small batches between requests; meanwhile a lookup misses unless the
  // entry is already loaded (or pending, or in `recent`). Rows written meanwhile are added as they are written, and
  // the load reads on to the table's end, so it sees them too. A key stored again before the load reached its older
  // row gets a second row: the newer row wins, in the index and on disk (`dropOlder`).
  const index = new KeyIndex();
  const identityOf = (row: Pick<EntryRow, 'tenant_id' | 'cache_type' | 'key'>) => idOf(row.tenant_id, row.cache_type, row.key);
  /**
   * Delete a row that lost its key's place in the index to a newer one, if it is a copy of the same key (the place is
   * the newer row's by then, which `deleteRows` leaves to it).
   */
  const dropOlder = (sql: Sql, rowId: number, tenantId: string, cacheType: string, key: string) =>
    deleteRows(sql, KEYS_ROW, [rowId, tenantId, cacheType, key]);
  // The id of a new row is given here, not read back from its INSERT: `INSERT ... RETURNING id` took ~4 µs more per
  // entry than a plain INSERT (node-sqlite3-wasm steps the statement as a query and builds the returned row), on
  // every live answer. As SQLite would, the next id is one past the largest; an id whose write rolled back is not
  // given again (KEYS_ROW guards rows against such ids either way). The largest is read from the table at the first
  // insert, and again when the id was taken: a row added behind this repository's back may hold the id it counted
  // on (a failed constraint undoes only its statement, so the insert is tried once more with the id after it). Any
  // other failure is left to the store, which drops this write alone.
  let lastRowId: number | null = null;
  const insertRow = (sql: Sql, entry: Omit<CacheEntry, 'hits' | 'lastHitAt'>, valueJson: string | Uint8Array): number => {
    for (let attempt = 1; ; attempt++) {
      lastRowId ??= sql.get<{ id: number | null }>('SELECT MAX(id) AS id FROM cache_entries')?.id ?? 0;
      const rowId = lastRowId + 1;
      try {
        sql.run(
          `INSERT INTO cache_entries (id, tenant_id, cache_type, key, app_id, value_json, source_run_id, cost_usd, latency_ms, hits, created_at)
           VALUES (?, ?, ?, ?, ?, CAST(? AS TEXT), ?, ?, ?, 0, ?)`,
          [rowId, entry.tenantId, entry.cacheType, entry.key, entry.appId, valueJson, entry.sourceRunId, entry.costUsd, entry.latencyMs, entry.createdAt],
        );
      } catch (error) {
        lastRowId = null;
        if (attempt === 2 || !ID_TAKEN.test((error as Error).message)) throw error;
        continue;
      }
      lastRowId = rowId;
      return rowId;
    }
  };
  // Entries dropped (`dropDeferred`) while the index is still being loaded, each with the last row id it may have had:
  // a row the load had not reached yet must not be found again once it does. Null once the load is done.
  let droppedWhileLoading: DictionaryMap<number> | null = new DictionaryMap<number>();
  const loading = (async () => {
    try {
      for (let after = 0; ; ) {
        await setImmediate();
        const rows = await store.read((sql) => {
          const batch = sql.all<StoredKey>(
            'SELECT id, tenant_id, cache_type, key FROM cache_entries WHERE id > ? ORDER BY id LIMIT ?',
            [after, INDEX_LOAD_BATCH],
          );
          // In the read's synchronous step: no write can come between the rows read and the index.
          for (const row of batch) {
            const identity = identityOf(row);
            if (droppedWhileLoading!.size > 0 && row.id <= (droppedWhileLoading!.get(identity) ?? 0)) {
              store.writeDeferred((inner) => dropOlder(inner, row.id, row.tenant_id, row.cache_type, row.key), ENTRY_WRITE);
              continue;
            }
            const older = index.setUnlessNewer(identity, row.id);
            if (older !== undefined) store.writeDeferred((inner) => dropOlder(inner, older, row.tenant_id, row.cache_type, row.key), ENTRY_WRITE);
          }
          return batch;
        });
        if (rows.length < INDEX_LOAD_BATCH) return;
        after = rows[rows.length - 1]!.id;
      }
    } catch {
      // The store closed during the load: there is nothing left to answer.
    } finally {
      droppedWhileLoading = null;
    }
  })();

  /**
   * Delete the rows `where` matches, and their places in the index; returns how many. Should the transaction roll
   * back after this, the rows stay but their keys are forgotten until the next start: misses, never wrong answers.
   */
  function deleteRows(sql: Sql, where: string, params: SqlValue[]): number {
    const deleted = sql.all<StoredKey>(
      `DELETE FROM cache_entries WHERE ${where} RETURNING id, tenant_id, cache_type, key`,
      params,
    );
    for (const row of deleted) index.delete(identityOf(row), row.id);
    return deleted.length;
  }

  /** Forget copies of deleted rows (matching the SQL delete that runs beside it). */
  function forget(predicate: (entry: CacheEntry) => boolean): void {
    generation += 1;
    recent?.deleteWhere((_id, entry) => predicate(entry));
    for (const [id, entry] of pending) {
      if (predicate(entry)) {
        pending.delete(id);
        askedWhilePending.delete(id);
      }
    }
  }

  return {
    get(tenantId, cacheType, key) {
      const id = idOf(tenantId, cacheType, key);
      const waiting = pending.get(id);
      if (waiting) {
        if (recent) askedWhilePending.set(id, true);
        return Promise.resolve(waiting);
      }
      const known = recent?.get(id);
      if (known) return Promise.resolve(known);
      if (index.get(id) === undefined) return Promise.resolve(null);
      const startedIn = generation;
      return store.read((sql) => {
        const unwritten = pending.get(id);
        if (unwritten) return unwritten;
        // Looked up again: a delete may have run since.
        const rowId = index.get(id);
        if (rowId === undefined) return null;
        // A fingerprint shared with another key (key-index.ts) finds that key's row: a miss.
        const row = sql.get<EntryRow>(`SELECT * FROM cache_entries WHERE ${KEYS_ROW}`, [rowId, tenantId, cacheType, key]);
        if (!row) return null;
        const entry: CacheEntry = {
          tenantId: row.tenant_id,
          cacheType: row.cache_type,
          key: row.key,
          appId: row.app_id,
          value: JSON.parse(row.value_json) as unknown,
          sourceRunId: row.source_run_id,
          costUsd: row.cost_usd,
          latencyMs: row.latency_ms,
          hits: row.hits,
          createdAt: row.created_at,
          lastHitAt: row.last_hit_at,
        };
        // A newer copy (a refresh stored meanwhile) or a delete since the read began wins over what was read.
        if (recent && startedIn === generation && !recent.has(id)) recent.set(id, entry, estimatedBytes(entry, row.value_json.length));
        return entry;
      });
    },

    putDeferred(entry, valueJson) {
      const id = idOf(entry.tenantId, entry.cacheType, entry.key);
      // Field by field: a spread followed by new keys (`{ ...entry, hits: 0 }`) is a slow, promoting path on Node 20
      // (docs/performance-notes.md, "Object spreads that add keys").
      const overlay: CacheEntry = {
        tenantId: entry.tenantId,
        cacheType: entry.cacheType,
        key: entry.key,
        appId: entry.appId,
        value: entry.value,
        sourceRunId: entry.sourceRunId,
        costUsd: entry.costUsd,
        latencyMs: entry.latencyMs,
        hits: 0,
        createdAt: entry.createdAt,
        lastHitAt: null,
      };
      pending.set(id, overlay);
      // Decided once: the store may run a deferred write a second time (alone, after its batch's savepoint failed).
      let current: boolean | undefined;
      let dropped = false;
      let asked = false;
      store.writeDeferred((sql) => {
        if (current === undefined) {
          const waiting = pending.get(id);
          current = waiting === overlay;
          // Gone from `pending` with no later put of the key there: dropped (dropDeferred, an invalidation) before
          // its write, which must not bring it back.
          dropped = waiting === undefined;
          if (current) {
            pending.delete(id);
            asked = askedWhilePending.delete(id);
          }
        }
        if (dropped) return;
        const stored = valueJson ?? textBytes(JSON.stringify(entry.value));
        const { tenantId, cacheType, key } = entry;
        const rowId = index.get(id);
        // A refresh keeps the row (and its hit count); a new key, or one whose row is gone, appends a row.
        const refreshed =
          rowId !== undefined &&
          sql.run(
            `UPDATE cache_entries SET value_json = CAST(? AS TEXT), app_id = ?, source_run_id = ?, cost_usd = ?, latency_ms = ?, created_at = ?
             WHERE ${KEYS_ROW}`,
            [stored, entry.appId, entry.sourceRunId, entry.costUsd, entry.latencyMs, entry.createdAt, rowId, tenantId, cacheType, key],
          ).changes === 1;
        if (!refreshed) {
          const older = index.set(id, insertRow(sql, entry, stored));
          if (older !== undefined) dropOlder(sql, older, tenantId, cacheType, key);
        }
        // Only the latest put of a key moves on to `recent`, and only if the key was asked for (a copy there is
        // replaced, an entry looked up while pending kept); an overlay dropped by invalidation stays dropped.
        if (current && recent && (asked || recent.has(id))) {
          recent.set(id, overlay, estimatedBytes(overlay, stored.length));
        }
      }, ENTRY_WRITE_EARLY);
    },

    dropDeferred(tenantId, cacheType, key) {
      const id = idOf(tenantId, cacheType, key);
      // At once, in memory: no lookup finds the entry from here on (and a read already under way keeps its copy out
      // of `recent`); a put of the key still waiting for its write sees it was dropped.
      generation += 1;
      recent?.delete(id);
      pending.delete(id);
      askedWhilePending.delete(id);
      const rowId = index.get(id);
      if (rowId !== undefined) index.delete(id, rowId);
      droppedWhileLoading?.set(id, Number.MAX_SAFE_INTEGER);
      store.writeDeferred((sql) => {
        if (rowId !== undefined) dropOlder(sql, rowId, tenantId, cacheType, key);
        // Rows the index load has not reached yet are the dropped entry's up to the last id written so far; a put of
        // the key after the drop is written after this, with a higher id.
        droppedWhileLoading?.set(id, sql.get<{ id: number | null }>('SELECT MAX(id) AS id FROM cache_entries')?.id ?? 0);
      }, ENTRY_WRITE_EARLY);
    },

    recordHitDeferred(tenantId, cacheType, key, at) {
      const id = idOf(tenantId, cacheType, key);
      const counted = hitCounts.get(id);
      if (counted) {
        counted.count += 1;
        if (at > counted.lastHitAt) counted.lastHitAt = at;
        return;
      }
      hitCounts.set(id, { tenantId, cacheType, key, count: 1, lastHitAt: at });
      // Taken once: the store may run a deferred write a second time (alone, after its batch's savepoint failed).
      let hits: PendingHits | undefined;
      store.writeDeferred((sql) => {
        if (!hits) {
          hits = hitCounts.get(id);
          hitCounts.delete(id);
        }
        const rowId = index.get(id);
        if (!hits || rowId === undefined) return;
        sql.run(`UPDATE cache_entries SET hits = hits + ?, last_hit_at = ? WHERE ${KEYS_ROW}`, [
          hits.count,
          hits.lastHitAt,
          rowId,
          tenantId,
          cacheType,
          key,
        ]);
      }, HITS_WRITE);
    },

    loaded: () => loading,

    stats: async (tenantId, appId) => {
      await store.flush();
      // From the counts triggers keep beside the entries (migration 17): a few rows per tenant, however large its
      // cache. Counted from cache_entries, 100,000 entries cost ~300 ms of CPU a call (docs/performance-notes.md).
      return store.read((sql) =>
        sql.all<{ cacheType: string; entries: number; hits: number }>(
          `SELECT cache_type AS cacheType, SUM(entries) AS entries, SUM(hits) AS hits FROM cache_counts
           WHERE tenant_id = ? ${appId === null ? '' : 'AND app_id = ?'} GROUP BY cache_type HAVING SUM(entries) > 0 ORDER BY cache_type`,
          appId === null ? [tenantId] : [tenantId, appId],
        ),
      );
    },

    invalidate: async (tenantId, { cacheType, keyPrefix }, also) => {
      // Literally and case-sensitively, in the table as in memory (LIKE ignores ASCII case: with it,
      // 'CHAT_COMPLETIONS:' deleted the rows while their copies in memory went on being served).
      const matches = (entry: Pick<CacheEntry, 'tenantId' | 'cacheType' | 'key'>) =>
        entry.tenantId === tenantId &&
        (cacheType === null || entry.cacheType === cacheType) &&
        (keyPrefix === null || entry.key.startsWith(keyPrefix));
      // Commit queued entries first, so none lands after the delete and resurrects what was invalidated.
      await store.flush();
      // The tenant's entries are gone through in writes of `INVALIDATE_BATCH`, in the order of their index, each its
      // own short commit: one delete of a large cache held the event loop, so every tenant's requests, for seconds
      // (~2 s for 300,000 entries). The answer comes after the last of them.
      let invalidated = 0;
      for (let after = { createdAt: Number.MIN_SAFE_INTEGER, id: 0 }; ; ) {
        const { deleted, next } = await store.write((sql) => {
          // Beside the SQL delete, in the same synchronous step: no lookup can see a copy the table no longer has; a
          // copy read from a row still to be deleted between two writes goes with the next one.
          forget(matches);
          // octet_length is read from the record's header, without loading the value.
          const rows = sql.all<StoredKey & { created_at: number; bytes: number }>(
            'SELECT id, tenant_id, cache_type, key, created_at, octet_length(value_json) AS bytes FROM cache_entries WHERE tenant_id = ? AND (created_at, id) > (?, ?) ORDER BY created_at, id LIMIT ?',
            [tenantId, after.createdAt, after.id, INVALIDATE_BATCH],
          );
          let count = 0;
          let bytes = 0;
          let seen = 0;
          // The answers deleted are overwritten in the file, not left in its free space (`erasing`).
          erasing(sql, () => {
            for (const row of rows) {
              if (!matches({ tenantId: row.tenant_id, cacheType: row.cache_type, key: row.key })) {
                seen += 1;
                continue;
              }
              if (count > 0 && bytes + row.bytes > DELETE_BYTES_PER_WRITE) break;
              count += deleteRows(sql, 'id = ?', [row.id]);
              bytes += row.bytes;
              seen += 1;
            }
          });
          const last = rows[seen - 1];
          const exhausted = seen === rows.length && rows.length < INVALIDATE_BATCH;
          const next = exhausted || !last ? null : { createdAt: last.created_at, id: last.id };
          if (next === null) also?.(invalidated + count)(sql);
          return { deleted: count, next };
        });
        invalidated += deleted;
        if (next === null) return invalidated;
        after = next;
      }
    },

    pruneTenant: async (tenantId, cutoff, batch) => {
      let pruned = 0;
      while (pruned < batch) {
        const { count, cut } = await store.write((sql) => {
          // Every copy past the cutoff goes at once; the rows follow batch by batch.
          forget((entry) => entry.tenantId === tenantId && entry.createdAt < cutoff);
          const rows = sql.all<{ id: number; bytes: number }>(
            'SELECT id, octet_length(value_json) AS bytes FROM cache_entries WHERE tenant_id = ? AND created_at < ? ORDER BY created_at, id LIMIT ?',
            [tenantId, cutoff, batch - pruned],
          );
          // The entries whose values fit in one write's budget (always the first), the rest in the next write.
          const take = withinBytes(rows, DELETE_BYTES_PER_WRITE);
          const ids = rows.slice(0, take).map((row) => row.id);
          const count = ids.length === 0 ? 0 : erasing(sql, () => deleteRows(sql, `id IN (${placeholders(ids.length)})`, ids));
          return { count, cut: take < rows.length };
        });
        pruned += count;
        if (!cut) break;
      }
      return pruned;
    },

    hasEntries: (tenantId) => store.read((sql) => sql.get('SELECT 1 AS found FROM cache_entries WHERE tenant_id = ? LIMIT 1', [tenantId]) !== undefined),
  };
}
