/**
 * The audit log: append-only rows, hash-chained per tenant (`hash_n = sha256(hash_{n-1} || canonical_json(row_n))`,
 * `hash_0` over the tenant id). Appends compute the link inside the write, so concurrent appends chain in commit order.
 */
import { chainHash } from '../core/canonical-json.ts';
import { newId, sha256Hex } from '../core/ids.ts';
import type { Sql, SqlValue } from '../store/sql.ts';
import type { Store } from '../store/store.ts';

export type AuditDecision = 'allow' | 'deny';

export interface AuditEntry {
  tenantId: string;
  action: string;
  decision: AuditDecision;
  actor: Record<string, string>;
  target: string | null;
  details: Record<string, unknown>;
}

export interface AuditRecord extends AuditEntry {
  id: string;
  seq: number;
  createdAt: number;
  prevHash: string;
  hash: string;
}

export interface AuditRepository {
  append(entry: AuditEntry, now: number): Promise<AuditRecord>;
  /** Append inside a write of another repository: the row commits with that write's change, or not at all. */
  appendIn(sql: Sql, entry: AuditEntry, now: number): AuditRecord;
  /**
   * Newest first, below the exclusive `before` seq when given; with `scope`, only the rows it lets through (the limit
   * counts those). `hasMore`: a row the same query would show lies below the page.
   */
  list(tenantId: string, options: AuditListOptions): Promise<{ records: AuditRecord[]; hasMore: boolean }>;
  /** Rows naming one target (e.g. a run id), oldest first. */
  listByTarget(tenantId: string, target: string, limit: number): Promise<AuditRecord[]>;
  /** Recompute the tenant's chain; returns the first broken seq or null when intact. */
  verify(tenantId: string): Promise<{ ok: boolean; count: number; brokenAt: number | null }>;
  /** Whether the tenant's log holds its organization's deletion (`org.delete`, whose target is the organization). */
  recordsDeletion(tenantId: string): Promise<boolean>;
}

export interface AuditListOptions {
  limit: number;
  /** Exclusive: only rows whose seq is below it (the previous page's oldest seq). */
  before?: number;
  decision?: AuditDecision;
  scope?: AuditScope;
}

/**
 * The rows of a tenant's log a reader is shown (src/audit/service.ts decides it per identity): every row but those of
 * the admin-only areas (the `admin_only` column, migration 13: `key.*`, `user.*`, `invite.*`), unless the row is
 * about `userId` (its target or its actor) or is a key row of a key pinned to `keysOfApp`.
 */
export interface AuditScope {
  userId: string | null;
  keysOfApp: string | null;
}

/**
 * The rowids of the page a scope shows, below `filter` (the tenant, `before`, `decision`): one index-backed part per
 * way a row is shown, each its newest `take` rows, so the page costs what those do, not a filter over the whole log.
 * The expressions are those of migration 13's indexes, written alike so that SQLite uses them; with a `decision`
 * SQLite takes migration 14's, the same with the decision before `seq`, so a rare decision's page does not walk every
 * row the reader may see.
 */
function scopedRowids(scope: AuditScope, filter: { sql: string; params: SqlValue[] }, take: number): { sql: string; params: SqlValue[] } {
  const parts: string[] = [];
  const params: SqlValue[] = [];
  const part = (condition: string, values: SqlValue[]) => {
    parts.push(`SELECT rowid FROM (SELECT rowid FROM audit_events WHERE ${filter.sql} AND ${condition} ORDER BY seq DESC LIMIT ?)`);
    params.push(...filter.params, ...values, take);
  };
  part('admin_only = 0', []);
  // The rows about a user that part one holds already are found again here: the set of rowids keeps them once, and
  // a term on admin_only would steer SQLite to walk the admin-only rows instead of this user's.
  if (scope.userId !== null) {
    part('target = ?', [scope.userId]);
    part("json_extract(actor_json, '$.userId') = ?", [scope.userId]);
  }
  if (scope.keysOfApp !== null) part("json_extract(details_json, '$.appId') = ? AND substr(action, 1, 4) = 'key.'", [scope.keysOfApp]);
  return { sql: parts.join(' UNION ALL '), params };
}

interface AuditRow {
  id: string;
  tenant_id: string;
  seq: number;
  action: string;
  decision: AuditDecision;
  actor_json: string;
  target: string | null;
  details_json: string;
  created_at: number;
  prev_hash: string;
  hash: string;
}

function genesisHash(tenantId: string): string {
  return sha256Hex(`audit:${tenantId}`);
}

/** The part of a row the hash covers. */
function hashedFields(record: Omit<AuditRecord, 'prevHash' | 'hash'>) {
  return {
    id: record.id,
    tenantId: record.tenantId,
    seq: record.seq,
    action: record.action,
    decision: record.decision,
    actor: record.actor,
    target: record.target,
    details: record.details,
    createdAt: record.createdAt,
  };
}

function fromRow(row: AuditRow): AuditRecord {
  return {
    id: row.id,
    tenantId: row.tenant_id,
    seq: row.seq,
    action: row.action,
    decision: row.decision,
    actor: JSON.parse(row.actor_json) as Record<string, string>,
    target: row.target,
    details: JSON.parse(row.details_json) as Record<string, unknown>,
    createdAt: row.created_at,
    prevHash: row.prev_hash,
    hash: row.hash,
  };
}

/** Append a row, linked to the tenant's last one, inside the caller's write (so appends chain in commit order). */
function appendIn(sql: Sql, entry: AuditEntry, now: number): AuditRecord {
  // A row of no tenant is in no one's log (a session without an organization has tenant ''): the caller must name
  // the organization the action belongs to. Thrown inside the write, so a staged change is not made unaudited.
  if (entry.tenantId === '') throw new Error(`audit row ${entry.action} has no tenant`);
  const last = sql.get<{ seq: number; hash: string }>(
    'SELECT seq, hash FROM audit_events WHERE tenant_id = ? ORDER BY seq DESC LIMIT 1',
    [entry.tenantId],
  );
  const base = { ...entry, id: newId('aud'), seq: (last?.seq ?? 0) + 1, createdAt: now };
  const prevHash = last?.hash ?? genesisHash(entry.tenantId);
  const hash = chainHash(prevHash, hashedFields(base));
  sql.run(
    `INSERT INTO audit_events (id, tenant_id, seq, action, decision, actor_json, target, details_json, created_at, prev_hash, hash)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    [
      base.id,
      base.tenantId,
      base.seq,
      base.action,
      base.decision,
      JSON.stringify(base.actor),
      base.target,
      JSON.stringify(base.details),
      now,
      prevHash,
      hash,
    ],
  );
  return { ...base, prevHash, hash };
}

export function createAuditRepository(store: Store): AuditRepository {
  return {
    append(entry, now) {
      return store.write((sql) => appendIn(sql, entry, now));
    },
    appendIn,
    list(tenantId, { limit, before, decision, scope }) {
      return store.read((sql) => {
        const filter = {
          sql: `tenant_id = ?${before !== undefined ? ' AND seq < ?' : ''}${decision ? ' AND decision = ?' : ''}`,
          params: [tenantId, ...(before !== undefined ? [before] : []), ...(decision ? [decision] : [])] as SqlValue[],
        };
        // One row past the page tells whether another page follows, without a count over the whole log.
        const take = limit + 1;
        const rows = scope
          ? (() => {
              const shown = scopedRowids(scope, filter, take);
              return sql.all<AuditRow>(`SELECT * FROM audit_events WHERE rowid IN (${shown.sql}) ORDER BY seq DESC LIMIT ?`, [...shown.params, take]);
            })()
          : sql.all<AuditRow>(`SELECT * FROM audit_events WHERE ${filter.sql} ORDER BY seq DESC LIMIT ?`, [...filter.params, take]);
        return { records: rows.slice(0, limit).map(fromRow), hasMore: rows.length > limit };
      });
    },
    listByTarget(tenantId, target, limit) {
      return store.read((sql) =>
        sql
          .all<AuditRow>('SELECT * FROM audit_events WHERE tenant_id = ? AND target = ? ORDER BY seq LIMIT ?', [tenantId, target, limit])
          .map(fromRow),
      );
    },
    verify(tenantId) {
      return store.read((sql) => {
        let prev = genesisHash(tenantId);
        let count = 0;
        for (const row of sql.all<AuditRow>('SELECT * FROM audit_events WHERE tenant_id = ? ORDER BY seq', [tenantId])) {
          const record = fromRow(row);
          count++;
          if (record.prevHash !== prev || chainHash(prev, hashedFields(record)) !== record.hash) {
            return { ok: false, count, brokenAt: record.seq };
          }
          prev = record.hash;
        }
        return { ok: true, count, brokenAt: null };
      });
    },
    recordsDeletion(tenantId) {
      return store.read(
        (sql) =>
          sql.get("SELECT 1 AS found FROM audit_events WHERE tenant_id = ? AND target = ? AND action = 'org.delete' LIMIT 1", [tenantId, tenantId]) !==
          undefined,
      );
    },
  };
}
