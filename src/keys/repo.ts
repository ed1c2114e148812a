/** Tenant API keys (SPEC 2.2). Only the sha256 of a token is stored; lookups go by that hash. */
import type { AlsoStep, Sql } from '../store/sql.ts';
import type { Store } from '../store/store.ts';
import type { KeyMode } from '../identity/auth-context.ts';

export interface ApiKey {
  id: string;
  tenantId: string;
  name: string;
  mode: KeyMode;
  appId: string | null;
  admin: boolean;
  /** The first characters of the token (`svc_AbCd`), enough to recognise a key in a list; never the secret. */
  tokenPrefix: string;
  createdAt: number;
  revokedAt: number | null;
  lastUsedAt: number | null;
}

export interface NewApiKey {
  id: string;
  tenantId: string;
  name: string;
  mode: KeyMode;
  appId: string | null;
  admin: boolean;
  tokenHash: string;
  tokenPrefix: string;
  createdAt: number;
}

export interface ApiKeysRepository {
  /** Null when the organization is gone (deleted while the request was under way): nothing is written. */
  insert(key: NewApiKey, also?: AlsoStep): Promise<ApiKey | null>;
  findByTokenHash(tokenHash: string): Promise<ApiKey | null>;
  findById(tenantId: string, id: string): Promise<ApiKey | null>;
  list(tenantId: string, options: { limit: number; offset: number; appId?: string }): Promise<{ keys: ApiKey[]; total: number }>;
  /** Set the mode of a live key; `also` runs only if the mode changed. The key as it is after the write, or null. */
  setMode(tenantId: string, id: string, mode: KeyMode, also?: AlsoStep): Promise<ApiKey | null>;
  /** Revoke a live key; `also` runs only if this call revoked it. The key as it is after the write, or null. */
  revoke(tenantId: string, id: string, now: number, also?: AlsoStep): Promise<ApiKey | null>;
}

interface KeyRow {
  id: string;
  tenant_id: string;
  name: string;
  mode: KeyMode;
  app_id: string | null;
  admin: number;
  token_prefix: string;
  created_at: number;
  revoked_at: number | null;
  last_used_at: number | null;
}

const COLUMNS = 'id, tenant_id, name, mode, app_id, admin, token_prefix, created_at, revoked_at, last_used_at';

function fromRow(row: KeyRow): ApiKey {
  return {
    id: row.id,
    tenantId: row.tenant_id,
    name: row.name,
    mode: row.mode,
    appId: row.app_id,
    admin: row.admin === 1,
    tokenPrefix: row.token_prefix,
    createdAt: row.created_at,
    revokedAt: row.revoked_at,
    lastUsedAt: row.last_used_at,
  };
}

/** Most keys kept in memory by `findByTokenHash`; past it the oldest is dropped (a deployment has far fewer). */
const KEYS_IN_MEMORY_MAX = 10_000;

export function createApiKeysRepository(store: Store): ApiKeysRepository {
  // Keys found by token hash, kept so that an authenticated gateway request reads no SQL. They are good while the
  // store's write generation is the one they were read under: every change to a key (its mode, its revocation, its
  // organization's deletion) is an awaited write, which moves the generation, so a revoked key is refused from the
  // commit of its revocation on. Only tokens that match a stored key are kept: random tokens cannot fill it.
  const byTokenHash = new Map<string, ApiKey>();
  let keptUnder = store.writeGeneration;
  const byId = (sql: Sql, tenantId: string, id: string) => {
    const row = sql.get<KeyRow>(`SELECT ${COLUMNS} FROM api_keys WHERE tenant_id = ? AND id = ?`, [tenantId, id]);
    return row ? fromRow(row) : null;
  };
  return {
    insert(key, also) {
      return store.write((sql) => {
        if (!sql.get('SELECT 1 FROM tenants WHERE id = ?', [key.tenantId])) return null;
        sql.run(
          `INSERT INTO api_keys (id, tenant_id, name, mode, app_id, admin, token_hash, token_prefix, created_at)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
          [key.id, key.tenantId, key.name, key.mode, key.appId, key.admin ? 1 : 0, key.tokenHash, key.tokenPrefix, key.createdAt],
        );
        also?.(sql);
        return byId(sql, key.tenantId, key.id)!;
      });
    },
    findByTokenHash(tokenHash) {
      if (keptUnder !== store.writeGeneration) {
        byTokenHash.clear();
        keptUnder = store.writeGeneration;
      }
      const kept = byTokenHash.get(tokenHash);
      if (kept) return Promise.resolve(kept);
      return store.read((sql) => {
        const row = sql.get<KeyRow>(`SELECT ${COLUMNS} FROM api_keys WHERE token_hash = ?`, [tokenHash]);
        if (!row) return null;
        const key = Object.freeze(fromRow(row));
        if (keptUnder === store.writeGeneration) {
          if (byTokenHash.size >= KEYS_IN_MEMORY_MAX) byTokenHash.delete(byTokenHash.keys().next().value!);
          byTokenHash.set(tokenHash, key);
        }
        return key;
      });
    },
    findById(tenantId, id) {
      return store.read((sql) => byId(sql, tenantId, id));
    },
    list(tenantId, { limit, offset, appId }) {
      return store.read((sql) => {
        const where = appId === undefined ? 'tenant_id = ?' : 'tenant_id = ? AND app_id = ?';
        const params = appId === undefined ? [tenantId] : [tenantId, appId];
        const total = sql.get<{ n: number }>(`SELECT COUNT(*) AS n FROM api_keys WHERE ${where}`, params)!.n;
        const rows = sql.all<KeyRow>(
          `SELECT ${COLUMNS} FROM api_keys WHERE ${where} ORDER BY created_at DESC, id LIMIT ? OFFSET ?`,
          [...params, limit, offset],
        );
        return { keys: rows.map(fromRow), total };
      });
    },
    setMode(tenantId, id, mode, also) {
      return store.write((sql) => {
        const changed = sql.run('UPDATE api_keys SET mode = ? WHERE tenant_id = ? AND id = ? AND revoked_at IS NULL AND mode != ?', [mode, tenantId, id, mode]).changes > 0;
        if (changed) also?.(sql);
        return byId(sql, tenantId, id);
      });
    },
    revoke(tenantId, id, now, also) {
      return store.write((sql) => {
        const changed = sql.run('UPDATE api_keys SET revoked_at = ? WHERE tenant_id = ? AND id = ? AND revoked_at IS NULL', [now, tenantId, id]).changes > 0;
        if (changed) also?.(sql);
        return byId(sql, tenantId, id);
      });
    },
  };
}
