/** Cache entries of every tier, keyed per tenant, tier and key (exact-response now; tool-result, som... later). */
import type { Store } from '../store/store.ts';

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

export function createCacheRepository(store: Store): CacheRepository {
  // Entries written but not yet committed (deferred writes join the next group commit): lookups see them at once,
  // so two identical requests a few milliseconds apart still share the answer. Each leaves the map as soon as its
  // write ran on the connection, after which a read sees the row.
  const pending = new Map<string, CacheEntry>();
  const pendingKey = (tenantId: string, cacheType: string, key: string) => `${tenantId}\u0000${cacheType}\u0000${key}`;

  return {
    get: (tenantId, cacheType, key) =>
      store.read((sql) => {
        const unwritten = pending.get(pendingKey(tenantId, cacheType, key));
        if (unwritten) return unwritten;
        const row = sql.get<EntryRow>('SELECT * FROM cache_entries WHERE tenant_id = ? AND cache_type = ? AND key = ?', [
          tenantId,
          cacheType,
          key,
        ]);
        if (!row) return null;
        return {
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
      }),

    putDeferred(entry) {
      const id = pendingKey(entry.tenantId, entry.cacheType, entry.key);
      const overlay: CacheEntry = { ...entry, hits: 0, lastHitAt: null };
      pending.set(id, overlay);
      store.writeDeferred((sql) => {
        if (pending.get(id) === overlay) pending.delete(id);
        sql.run(
          `INSERT INTO cache_entries (tenant_id, cache_type, key, value_json, source_run_id, cost_usd, latency_ms, hits, created_at)
           VALUES (?, ?, ?, ?, ?, ?, ?, 0, ?)
           ON CONFLICT (tenant_id, cache_type, key) DO UPDATE SET value_json = excluded.value_json,
             source_run_id = excluded.source_run_id, cost_usd = excluded.cost_usd, latency_ms = excluded.latency_ms,
             created_at = excluded.created_at`,
          [
            entry.tenantId,
            entry.cacheType,
            entry.key,
            JSON.stringify(entry.value),
            entry.sourceRunId,
            entry.costUsd,
            entry.latencyMs,
            entry.createdAt,
          ],
        );
      });
    },

    recordHitDeferred(tenantId, cacheType, key, at) {
      store.writeDeferred((sql) => {
        sql.run('UPDATE cache_entries SET hits = hits + 1, last_hit_at = ? WHERE tenant_id = ? AND cache_type = ? AND key = ?', [
          at,
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
      // Commit queued entries first, so none lands after the delete and resurrects what was invalidated.
      await store.flush();
      return store.write((sql) => {
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
      store.write(
        (sql) =>
          sql.run(
            `DELETE FROM cache_entries WHERE rowid IN (
               SELECT rowid FROM cache_entries WHERE tenant_id = ? AND created_at < ? LIMIT ?)`,
            [tenantId, cutoff, batch],
          ).changes,
      ),
  };
}
