/**
 * Side-effect records (SPEC 2.3): what a traced tool with side-effect level >= 2 planned, and what became of it.
 * They are derived from the run's own trace, in the same transaction as the event that changes them:
 *
 * | trace event                                   | record                                                 |
 * | side_effect.planned {toolName, level, ...}    | new record, state `planned`                             |
 * | tool.completed {name} (not `cached: true`)    | the oldest still-planned record of that tool: `executed`|
 * | side_effect.executed/suppressed/blocked       | the oldest still-planned record of that tool (or of its |
 * |   {toolName, idempotencyKey?, reason?}        |   idempotency key when given): that state               |
 */
import { newId } from '../core/ids.ts';
import type { Sql } from '../store/sql.ts';
import { storedNumber } from './stored-values.ts';
import { storedPayload } from './stored-payload.ts';
import type { TraceEvent } from './types.ts';

export type SideEffectState = 'planned' | 'executed' | 'suppressed' | 'blocked';

export interface SideEffectRecord {
  id: string;
  runId: string;
  seq: number;
  toolName: string;
  level: number;
  state: SideEffectState;
  idempotencyKey: string | null;
  payload: unknown;
  reason: string | null;
  createdAt: number;
  updatedAt: number;
}

interface SideEffectRow {
  id: string;
  run_id: string;
  /** A BigInt past 2^53 (the data file edited): read through storedNumber. */
  seq: number | bigint;
  tool_name: string;
  level: number | bigint;
  state: SideEffectState;
  idempotency_key: string | null;
  payload_json: string;
  reason: string | null;
  created_at: number;
  updated_at: number;
}

function fromRow(row: SideEffectRow): SideEffectRecord {
  return {
    id: row.id,
    runId: row.run_id,
    seq: storedNumber(row.seq),
    toolName: row.tool_name,
    level: storedNumber(row.level),
    state: row.state,
    idempotencyKey: row.idempotency_key,
    // Stored by JSON.stringify (applyToSideEffects): text that is not JSON was edited in the data file, and stands as
    // {storedText}, marked, so the run's reads still answer (the view says payloadUnreadable).
    payload: storedPayload(row.payload_json) as unknown,
    reason: row.reason,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

const TRANSITIONS: Record<string, SideEffectState> = {
  'tool.completed': 'executed',
  'side_effect.executed': 'executed',
  'side_effect.suppressed': 'suppressed',
  'side_effect.blocked': 'blocked',
};

/** Apply a run's newly appended trace events to its side-effect records (inside the appending write). */
export function applyToSideEffects(sql: Sql, tenantId: string, events: readonly TraceEvent[]): void {
  for (const event of events) {
    const payload = event.payload;
    if (event.type === 'side_effect.planned') {
      sql.run(
        `INSERT INTO run_side_effects (id, run_id, tenant_id, seq, tool_name, level, state, idempotency_key, payload_json, reason,
           created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, 'planned', ?, ?, NULL, ?, ?)`,
        [newId('sfx'), event.runId, tenantId, event.seq, String(payload.toolName), Number(payload.level),
          typeof payload.idempotencyKey === 'string' ? payload.idempotencyKey : null, JSON.stringify(payload.payload ?? null),
          event.createdAt, event.createdAt],
      );
      continue;
    }
    const state = TRANSITIONS[event.type];
    if (!state) continue;
    // A result served from the tool cache: the tool did not run, so neither did the side effect it planned.
    if (event.type === 'tool.completed' && payload.cached === true) continue;
    const completion = event.type === 'tool.completed';
    const toolName = String(completion ? payload.name : payload.toolName);
    // Only a side_effect.* event names a record by its key (checked and trimmed as the record's was). A tool.completed's
    // `idempotencyKey` is an extra field kept as sent, data and not a key (sdk-events.ts): taken as one, a completion
    // noting a key the record does not hold (none, or padded) left the side effect of a tool that ran `planned`.
    const key = !completion && typeof payload.idempotencyKey === 'string' ? payload.idempotencyKey : null;
    const target = sql.get<{ id: string }>(
      `SELECT id FROM run_side_effects WHERE run_id = ? AND tenant_id = ? AND tool_name = ? AND state = 'planned'
         ${key ? 'AND idempotency_key = ?' : ''} ORDER BY seq LIMIT 1`,
      key ? [event.runId, tenantId, toolName, key] : [event.runId, tenantId, toolName],
    );
    if (!target) continue;
    const reason = typeof payload.reason === 'string' ? payload.reason : null;
    sql.run('UPDATE run_side_effects SET state = ?, reason = ?, updated_at = ? WHERE id = ?', [state, reason, event.createdAt, target.id]);
  }
}

/**
 * Run detail's window: the run's newest `limit + 1` records with a seq below `before` (all when undefined), in seq
 * order (the extra one says older records are left), and how many records the run holds.
 */
export function sideEffectsBefore(sql: Sql, tenantId: string, runId: string, before: number | undefined, limit: number): { records: SideEffectRecord[]; total: number } {
  const rows = sql.all<SideEffectRow>(
    'SELECT * FROM run_side_effects WHERE run_id = ? AND tenant_id = ? AND seq < ? ORDER BY seq DESC LIMIT ?',
    [runId, tenantId, before ?? Number.MAX_SAFE_INTEGER, limit + 1],
  );
  const total = sql.get<{ n: number }>('SELECT COUNT(*) AS n FROM run_side_effects WHERE run_id = ? AND tenant_id = ?', [runId, tenantId])!.n;
  return { records: rows.reverse().map(fromRow), total };
}

/** The run's records with a seq past `after`, at most `limit` of them, in seq order. */
export function sideEffectsAfter(sql: Sql, tenantId: string, runId: string, after: number, limit: number): SideEffectRecord[] {
  return sql
    .all<SideEffectRow>('SELECT * FROM run_side_effects WHERE run_id = ? AND tenant_id = ? AND seq > ? ORDER BY seq LIMIT ?', [runId, tenantId, after, limit])
    .map(fromRow);
}
