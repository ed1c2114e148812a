/** Records audited actions (SPEC 6.2) and serves the log. */
import type { Clock } from '../core/clock.ts';
import { actorOf, type AuthContext } from '../identity/auth-context.ts';
import type { Sql } from '../store/sql.ts';
import type { AuditDecision, AuditRecord, AuditRepository, AuditScope } from './repo.ts';

export type { AuditRecord };

/**
 * An audit row to append inside the write of the change it records (a repository runs it in its `Store.write`,
 * after its statement, and only when that statement changed something): the change and its row commit together or
 * not at all. Two separate writes left a row for a change that failed (a key created in an organization deleted
 * meanwhile) or changed nothing (a second revocation racing the first).
 */
export type AuditStep = (sql: Sql) => AuditRecord;

/** A page of the log: `nextBefore` is the `before` of the next (older) page, null on the last one. */
export interface AuditPage {
  records: AuditRecord[];
  window: { limit: number; count: number; hasMore: boolean; nextBefore: number | null };
}

type RecordOptions = { decision?: AuditDecision; target?: string | null; details?: Record<string, unknown>; tenantId?: string };

export interface AuditService {
  record(auth: AuthContext, action: string, options?: RecordOptions): Promise<AuditRecord>;
  /** The row `record` would append, as a step of another write (`AuditStep`). */
  staged(auth: AuthContext, action: string, options?: RecordOptions): AuditStep;
  /** Record an action taken without a request identity of the tenant (signup, a public invitation acceptance). */
  recordAs(
    actor: Record<string, string>,
    tenantId: string,
    action: string,
    options?: { decision?: AuditDecision; target?: string | null; details?: Record<string, unknown> },
  ): Promise<AuditRecord>;
  /** The row `recordAs` would append, as a step of another write (`AuditStep`). */
  stagedAs(
    actor: Record<string, string>,
    tenantId: string,
    action: string,
    options?: { decision?: AuditDecision; target?: string | null; details?: Record<string, unknown> },
  ): AuditStep;
  /** A page of the log as `auth` reads it, newest first; `before` (exclusive seq) reaches older pages. */
  list(auth: AuthContext, options: { limit: number; before?: number; decision?: AuditDecision }): Promise<AuditPage>;
  /** Audit rows about one target in the caller's tenant (evidence packets). */
  aboutTarget(auth: AuthContext, target: string, limit?: number): Promise<AuditRecord[]>;
  /**
   * Recompute the tenant's whole chain. `count` (events in the chain) only for a reader of every event: to anyone
   * else it would tell how many events are withheld from them, and when one more was written (docs/api.md).
   */
  verify(auth: AuthContext): Promise<{ ok: boolean; count: number | null; brokenAt: number | null }>;
  /**
   * Whether `tenantId` is an organization that was deleted: its log, kept after it (docs/accounts.md "Deletion"),
   * holds the `org.delete` row. One that never existed has no log.
   */
  recordsDeletionOf(tenantId: string): Promise<boolean>;
}

/**
 * An audit row as `auth` may read it: another module's rule for what of its own records an identity must not see
 * (the settings withheld from app-pinned callers). It may rewrite `details`, nothing else; `hash` stays the stored
 * row's, so only the server-side `verify` checks a rewritten row.
 */
export type AuditRowView = (auth: AuthContext, record: AuditRecord) => AuditRecord;

/**
 * The rows of the log `auth` reads (docs/api.md "Audit log"): a tenant-wide admin every row; anyone else no row of an
 * admin-only area, except the rows about themself (a session's user: their own signup, verification, password
 * changes, invitation acceptance) and, for an app-pinned admin key, the key rows of its own app, the keys it lists
 * and manages through `/api/v1/keys`. The admin-only areas are those whose records only admins read elsewhere (SPEC
 * 4.4 users, 4.5 invitations, 4.6 API keys: `user.*`, `invite.*`, `key.*`), since SPEC 4.12 opens the log to any
 * identity of the tenant and a member must not learn there which keys exist, who was invited or whose password an
 * admin reset; they are the audit table's `admin_only` column (migration 13), indexed, so a member's page is found
 * without filtering the whole log.
 */
function readScopeOf(auth: AuthContext): AuditScope | undefined {
  if (auth.admin && auth.tenantWide) return undefined;
  return {
    userId: auth.kind === 'session' ? auth.userId : null,
    keysOfApp: auth.admin && auth.appId !== null ? auth.appId : null,
  };
}

/**
 * Rows written before svc stopped recording it named, in `org.switch`'s `details.from`, the organization the user
 * left: another tenant's id, in a log every member of this one reads. It is dropped as the row is read (`hash`
 * stays the stored row's, as for any rewritten row).
 */
function withoutSwitchOrigin(record: AuditRecord): AuditRecord {
  if (record.action !== 'org.switch' || !('from' in record.details)) return record;
  const { from: _from, ...details } = record.details;
  return { ...record, details };
}

function entryOf(auth: AuthContext, action: string, options: RecordOptions) {
  return {
    tenantId: options.tenantId ?? auth.tenantId,
    action,
    decision: options.decision ?? 'allow',
    actor: actorOf(auth),
    target: options.target ?? null,
    details: options.details ?? {},
  };
}

function entryAs(actor: Record<string, string>, tenantId: string, action: string, options: Omit<RecordOptions, 'tenantId'>) {
  return { tenantId, action, decision: options.decision ?? 'allow', actor, target: options.target ?? null, details: options.details ?? {} };
}

export function createAuditService(repo: AuditRepository, clock: Clock, options: { view?: AuditRowView } = {}): AuditService {
  const view = options.view ?? ((_auth, record) => record);
  return {
    record(auth, action, options = {}) {
      return repo.append(entryOf(auth, action, options), clock.now());
    },
    staged(auth, action, options = {}) {
      const entry = entryOf(auth, action, options);
      return (sql) => repo.appendIn(sql, entry, clock.now());
    },
    recordAs(actor, tenantId, action, options = {}) {
      return repo.append(entryAs(actor, tenantId, action, options), clock.now());
    },
    stagedAs(actor, tenantId, action, options = {}) {
      const entry = entryAs(actor, tenantId, action, options);
      return (sql) => repo.appendIn(sql, entry, clock.now());
    },
    async list(auth, options) {
      const scope = readScopeOf(auth);
      const { records, hasMore } = await repo.list(auth.tenantId, { ...options, ...(scope ? { scope } : {}) });
      const oldest = records.at(-1);
      return {
        records: records.map((record) => view(auth, withoutSwitchOrigin(record))),
        window: { limit: options.limit, count: records.length, hasMore, nextBefore: hasMore && oldest ? oldest.seq : null },
      };
    },
    async aboutTarget(auth, target, limit = 1000) {
      return (await repo.listByTarget(auth.tenantId, target, limit)).map((record) => view(auth, withoutSwitchOrigin(record)));
    },
    async verify(auth) {
      const integrity = await repo.verify(auth.tenantId);
      return readScopeOf(auth) === undefined ? integrity : { ...integrity, count: null };
    },
    recordsDeletionOf(tenantId) {
      return repo.recordsDeletion(tenantId);
    },
  };
}
