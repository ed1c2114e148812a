/** Cache entries of every tier, keyed per tenant, tier and key (exact-response now; tool-result, som... later). */
import { setImmediate } from 'node:timers/promises';
import type { Store } from '../store/store.ts';
import { textBytes } from '../store/sql.ts';
import { KeyFilter } from './key-filter.ts';
import { ByteLru } from './lru.ts';

export interface CacheEntry {
  tenantId: string;
  cacheType: string;
  key: string;
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
  /** Insert or replace (a refresh resets the hit counter's source but keeps counting hits). */
  putDeferred(entry: Omit<CacheEntry, 'hits' | 'lastHitAt'>): void;
  recordHitDeferred(tenantId: string, cacheType: string, key: string, at: number): void;
  stats(tenantId: string): Promise<Array<{ cacheType: string; entries: number; hits: number }>>;
  /** Delete entries; `cacheType` null means every tier; `keyPrefix` needs a type. Returns rows deleted. */
  invalidate(tenantId: string, options: { cacheType: string | null; keyPrefix: string | null }): Promise<number>;
  pruneTenant(tenantId: string, cutoff: number, batch: number): Promise<number>;
}

interface EntryRow {
  tenant_id: string;
  cache_type: string;
  key: string;
  value_json: string;
  source_run_id: string | null;
  cost_usd: number;
  latency_ms: number;
  hits: number;
  created_at: number;
  last_hit_at: number | null;
}

/** Escape LIKE wildcards so a key prefix matches literally. */
function likePrefix(prefix: string): string {
  return `${prefix.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

export interface CacheRepositoryOptions {
  /**
   * Starting size, in keys, of the filter that answers lookups of never-stored keys without reading the data file
   * (key-filter.ts; it doubles when full). 0 turns it off.
   */
  keyFilterKeys?: number;
  /**
   * Budget of the in-memory copy of recent entries, in estimated bytes (the stored JSON's length, doubled for the
   * parsed object, plus the key). 0 turns it off.
   */
  memoryBytes?: number;
}

/**
 * 8 MiB holds a few thousand typical answers. Only answers asked for again are kept (see `recent` below), so the
 * budget goes to the repeated traffic a hit serves; anything else is one indexed read away.
 */
export const DEFAULT_CACHE_MEMORY_BYTES = 8 * 1024 * 1024;

/** Rough in-memory size of an entry whose value serialises to `jsonLength` characters. */
function estimatedBytes(entry: CacheEntry, jsonLength: number): number {
  return 2 * jsonLength + 2 * (entry.tenantId.length + entry.cacheType.length + entry.key.length) + 256;
}

/** The smallest filter: 64 Ki keys in 80 KiB. */
export const DEFAULT_FILTER_KEYS = 65_536;
/** Stored keys read per event-loop turn while a filter is loaded: about a millisecond of work. */
const FILTER_LOAD_BATCH = 1_000;

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
  const pending = new Map<string, CacheEntry>();
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
  const askedWhilePending = new Set<string>();
  // Bumped by every delete: a read that started before one must not put what it read back into `recent`.
  let generation = 0;
  // Hits counted since their last write: many hits of one key in a commit window become one UPDATE.
  const hitCounts = new Map<string, PendingHits>();
  const idOf = (tenantId: string, cacheType: string, key: string) => `${tenantId}\u0000${cacheType}\u0000${key}`;

  // Which keys are stored at all (key-filter.ts). A filter answers only once it has seen every stored key: it is
  // loaded from the table in small batches between requests (at start, and again at twice the size when it fills
  // up). Keys stored while it loads (and those still waiting for their commit when it starts) are replayed into it.
  let filter: KeyFilter | null = null;
  let storedWhileLoading: string[] | null = null;
  const remember = (id: string) => {
    filter?.add(id);
    if (storedWhileLoading) storedWhileLoading.push(id);
    else if (filter?.full) void loadFilter(filter.capacity * 2);
  };
  async function loadFilter(minimumKeys: number): Promise<void> {
    const stored = (storedWhileLoading = [...pending.keys()]);
    try {
      await setImmediate();
      // The highest rowid bounds the row count and is read from the table's last page.
      const highest = await store.read((sql) => sql.get<{ n: number | null }>('SELECT MAX(rowid) AS n FROM cache_entries')?.n ?? 0);
      const next = new KeyFilter(Math.max(minimumKeys, 2 * highest));
      for (let after = 0; ; ) {
        const rows = await store.read((sql) =>
          sql.all<{ r: number; tenant_id: string; cache_type: string; key: string }>(
            'SELECT rowid AS r, tenant_id, cache_type, key FROM cache_entries WHERE rowid > ? ORDER BY rowid LIMIT ?',
            [after, FILTER_LOAD_BATCH],
          ),
        );
        for (const row of rows) next.add(idOf(row.tenant_id, row.cache_type, row.key));
        if (rows.length < FILTER_LOAD_BATCH) break;
        after = rows[rows.length - 1]!.r;
        await setImmediate();
      }
      for (const id of stored) next.add(id);
      filter = next;
    } catch {
      // The store closed during the load: there is nothing left to answer.
    } finally {
      storedWhileLoading = null;
    }
  }
  const filterKeys = options.keyFilterKeys ?? DEFAULT_FILTER_KEYS;
  if (filterKeys > 0) void loadFilter(filterKeys);

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
        if (recent) askedWhilePending.add(id);
        return Promise.resolve(waiting);
      }
      const known = recent?.get(id);
      if (known) return Promise.resolve(known);
      if (filter && !filter.mightContain(id)) return Promise.resolve(null);
      const startedIn = generation;
      return store.read((sql) => {
        const unwritten = pending.get(id);
        if (unwritten) return unwritten;
        const row = sql.get<EntryRow>('SELECT * FROM cache_entries WHERE tenant_id = ? AND cache_type = ? AND key = ?', [
          tenantId,
          cacheType,
          key,
        ]);
        if (!row) return null;
        const entry: CacheEntry = {
          tenantId: row.tenant_id,
          cacheType: row.cache_type,
          key: row.key,
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

    putDeferred(entry) {
      const id = idOf(entry.tenantId, entry.cacheType, entry.key);
      const overlay: CacheEntry = { ...entry, hits: 0, lastHitAt: null };
      pending.set(id, overlay);
      remember(id);
      // Decided once: the store may run a deferred write a second time (alone, after its batch's savepoint failed).
      let current: boolean | undefined;
      let asked = false;
      store.writeDeferred((sql) => {
        if (current === undefined) {
          current = pending.get(id) === overlay;
          if (current) {
            pending.delete(id);
            asked = askedWhilePending.delete(id);
          }
        }
        const valueJson = JSON.stringify(entry.value);
        sql.run(
          `INSERT INTO cache_entries (tenant_id, cache_type, key, value_json, source_run_id, cost_usd, latency_ms, hits, created_at)
           VALUES (?, ?, ?, CAST(? AS TEXT), ?, ?, ?, 0, ?)
           ON CONFLICT (tenant_id, cache_type, key) DO UPDATE SET value_json = excluded.value_json,
             source_run_id = excluded.source_run_id, cost_usd = excluded.cost_usd, latency_ms = excluded.latency_ms,
             created_at = excluded.created_at`,
          [entry.tenantId, entry.cacheType, entry.key, textBytes(valueJson), entry.sourceRunId, entry.costUsd, entry.latencyMs, entry.createdAt],
        );
        // Only the latest put of a key moves on to `recent`, and only if the key was asked for (a copy there is
        // replaced, an entry looked up while pending kept); an overlay dropped by invalidation stays dropped.
        if (current && recent && (asked || recent.has(id))) {
          recent.set(id, overlay, estimatedBytes(overlay, valueJson.length));
        }
      });
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
        if (!hits) return;
        sql.run('UPDATE cache_entries SET hits = hits + ?, last_hit_at = ? WHERE tenant_id = ? AND cache_type = ? AND key = ?', [
          hits.count,
          hits.lastHitAt,
          tenantId,
          cacheType,
          key,
        ]);
      });
    },

    stats: async (tenantId) => {
      await store.flush();
      return store.read((sql) =>
        sql.all<{ cacheType: string; entries: number; hits: number }>(
          `SELECT cache_type AS cacheType, COUNT(*) AS entries, COALESCE(SUM(hits), 0) AS hits
           FROM cache_entries WHERE tenant_id = ? GROUP BY cache_type ORDER BY cache_type`,
          [tenantId],
        ),
      );
    },

    invalidate: async (tenantId, { cacheType, keyPrefix }) => {
      const matches = (entry: CacheEntry) =>
        entry.tenantId === tenantId &&
        (cacheType === null || entry.cacheType === cacheType) &&
        (keyPrefix === null || entry.key.startsWith(keyPrefix));
      // Commit queued entries first, so none lands after the delete and resurrects what was invalidated.
      await store.flush();
      return store.write((sql) => {
        // Beside the SQL delete, in the same synchronous step: no lookup can see a copy the table no longer has.
        forget(matches);
        if (cacheType === null) return sql.run('DELETE FROM cache_entries WHERE tenant_id = ?', [tenantId]).changes;
        if (keyPrefix === null) {
          return sql.run('DELETE FROM cache_entries WHERE tenant_id = ? AND cache_type = ?', [tenantId, cacheType]).changes;
        }
        return sql.run("DELETE FROM cache_entries WHERE tenant_id = ? AND cache_type = ? AND key LIKE ? ESCAPE '\\'", [
          tenantId,
          cacheType,
          likePrefix(keyPrefix),
        ]).changes;
      });
    },

    pruneTenant: (tenantId, cutoff, batch) =>
      store.write((sql) => {
        // Every copy past the cutoff goes at once; the rows follow batch by batch.
        forget((entry) => entry.tenantId === tenantId && entry.createdAt < cutoff);
        return sql.run(
          `DELETE FROM cache_entries WHERE rowid IN (
             SELECT rowid FROM cache_entries WHERE tenant_id = ? AND created_at < ? LIMIT ?)`,
          [tenantId, cutoff, batch],
        ).changes;
      }),
  };
}
