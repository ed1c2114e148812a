/**
 * Run rollups: every finished run adds itself to one row per dimension, keyed by tenant, UTC day and app
 * (`run_rollups`, migrations 3, 8, 10 and 12). Savings, usage, attribution and the runs list's counts sum these rows, so
 * they stay fast on a ledger of millions of runs (docs/evidence.md). Running runs are not in the rollups: readers
 * count them from `runs`.
 */
import { ROLLUP_DIMENSION_COLUMNS, ROLLUP_STATUS_ROUTE_DIMENSIONS } from '../store/migrations.ts';
import { placeholders, type Sql, type SqlValue } from '../store/sql.ts';
import type { Store } from '../store/store.ts';
import { storedNumber } from './stored-values.ts';
import type { FinishedRun, RunRecord } from './types.ts';

export type RollupDimension = keyof typeof ROLLUP_DIMENSION_COLUMNS;
export const ROLLUP_DIMENSIONS = Object.keys(ROLLUP_DIMENSION_COLUMNS) as RollupDimension[];

export const DAY_MS = 86_400_000;

export function dayOf(epochMs: number): number {
  return Math.floor(epochMs / DAY_MS);
}

/** The dimension values of one finished run ('' stands for "none"). */
export function dimensionValues(run: RunRecord): Record<RollupDimension, string> {
  return {
    route: run.route ?? '',
    app: run.appId ?? '',
    agent: run.agent ?? '',
    model: run.model,
    subject: run.subject ?? '',
    fingerprint: run.fingerprint ?? '',
    executionMethod: run.executionMethod ?? '',
    reason: run.reasonCode ?? '',
    fallback: run.fallback ?? '',
    provider: run.provider ?? '',
  };
}

const UPSERT = `INSERT INTO run_rollups (tenant_id, dim, value, day, app_id, status, route, runs, cost_usd, saved_usd,
    ghost_saved_usd, saved_ms, prompt_tokens, completion_tokens, unpriced_runs, actual_prompt_tokens, actual_completion_tokens)
  VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
  ON CONFLICT (tenant_id, dim, day, value, app_id, status, route) DO UPDATE SET
    runs = runs + excluded.runs, cost_usd = cost_usd + excluded.cost_usd, saved_usd = saved_usd + excluded.saved_usd,
    ghost_saved_usd = ghost_saved_usd + excluded.ghost_saved_usd, saved_ms = saved_ms + excluded.saved_ms,
    prompt_tokens = prompt_tokens + excluded.prompt_tokens, completion_tokens = completion_tokens + excluded.completion_tokens,
    unpriced_runs = unpriced_runs + excluded.unpriced_runs, actual_prompt_tokens = actual_prompt_tokens + excluded.actual_prompt_tokens,
    actual_completion_tokens = actual_completion_tokens + excluded.actual_completion_tokens`;

/** The key of one rollup row: tenant, dim, value, day, app, status, route (the table's order). */
type RollupKey = [string, RollupDimension, string, number, string, string, string];

/**
 * The rows a finished run counts in: one per dimension; status and route are kept on the 'route', 'model' and
 * 'provider' ones only (ROLLUP_STATUS_ROUTE_DIMENSIONS), so a (value, day, app) of those has a row per status and route.
 */
function rollupKeys(run: RunRecord): RollupKey[] {
  const values = dimensionValues(run);
  const day = dayOf(run.createdAt);
  const app = run.appId ?? '';
  return ROLLUP_DIMENSIONS.map((dim) =>
    ROLLUP_STATUS_ROUTE_DIMENSIONS.has(dim)
      ? [run.tenantId, dim, values[dim], day, app, run.status, run.route ?? '']
      : [run.tenantId, dim, values[dim], day, app, '', ''],
  );
}

/**
 * Sums of one rollup row: its key, then runs, the totals, the unpriced runs and the actual tokens, in UPSERT's
 * parameter order.
 */
type RollupCell = [...RollupKey, number, number, number, number, number, number, number, number, number, number];

/** Add one run to the sums of the rollup rows it counts in (`cells`, keyed by the row's key). */
function sumInto(cells: Map<string, RollupCell>, run: FinishedRun): void {
  // A run whose cost is not firm (no list price, or a lower bound) counts $0 in cost_usd: the row says how many.
  const unpriced = run.priced ? 0 : 1;
  for (const key of rollupKeys(run)) {
    const id = key.join('\u0000');
    const cell = cells.get(id);
    if (cell) {
      cell[7] += 1;
      cell[8] += run.costUsd;
      cell[9] += run.savedUsd;
      cell[10] += run.ghostSavedUsd;
      cell[11] += run.savedMs;
      cell[12] += run.usage.promptTokens;
      cell[13] += run.usage.completionTokens;
      cell[14] += unpriced;
      cell[15] += run.actualPromptTokens;
      cell[16] += run.actualCompletionTokens;
    } else {
      cells.set(id, [
        ...key, 1, run.costUsd, run.savedUsd, run.ghostSavedUsd, run.savedMs, run.usage.promptTokens, run.usage.completionTokens, unpriced,
        run.actualPromptTokens, run.actualCompletionTokens,
      ]);
    }
  }
}

/** The runs' sums per rollup row they count in, keyed by the row's key. */
function sumByRow(runs: readonly FinishedRun[]): Map<string, RollupCell> {
  const cells = new Map<string, RollupCell>();
  for (const run of runs) sumInto(cells, run);
  return cells;
}

/**
 * Add finished runs to their rollup rows (inside the write that records their final state). The runs of one group
 * commit are summed first, so rows they share (same day, app, model, route...) are upserted once, not once per run.
 */
export function addToRollups(sql: Sql, runs: readonly FinishedRun[]): void {
  for (const cell of sumByRow(runs).values()) sql.run(UPSERT, cell);
}

const ROW_KEY = 'tenant_id = ? AND dim = ? AND value = ? AND day = ? AND app_id = ? AND status = ? AND route = ?';

/**
 * Pruned runs being taken out of the rollups (retention deletes whole runs; their sums must go with them). As when
 * they were added, the runs are summed per row first: each row they counted in is updated once and, once it counts
 * no run, deleted by its key. (Deleting the emptied rows of a tenant's day instead, `WHERE tenant_id = ? AND day = ?`,
 * read every rollup row of the tenant, the key leading with the dimension: ~300 ms per retention batch of 200 runs
 * with 30,000 rollup rows, all of it on the event loop.)
 */
export class RollupRemoval {
  private readonly cells = new Map<string, RollupCell>();

  /** Take a finished run out at the next `apply` (a running one is in no row: the caller, which reads its status, skips it). */
  add(run: FinishedRun): void {
    sumInto(this.cells, run);
  }

  /** How many rows the next `apply` updates: what it costs. */
  get rows(): number {
    return this.cells.size;
  }

  /** Update the rows of the runs added since the last apply. */
  apply(sql: Sql): void {
    for (const cell of this.cells.values()) {
      const key = cell.slice(0, 7);
      sql.run(
        `UPDATE run_rollups SET runs = runs - ?, cost_usd = cost_usd - ?, saved_usd = saved_usd - ?,
           ghost_saved_usd = ghost_saved_usd - ?, saved_ms = saved_ms - ?, prompt_tokens = prompt_tokens - ?,
           completion_tokens = completion_tokens - ?, unpriced_runs = unpriced_runs - ?,
           actual_prompt_tokens = actual_prompt_tokens - ?, actual_completion_tokens = actual_completion_tokens - ?
         WHERE ${ROW_KEY}`,
        [...cell.slice(7), ...key],
      );
      sql.run(`DELETE FROM run_rollups WHERE ${ROW_KEY} AND runs <= 0`, key);
    }
    this.cells.clear();
  }
}

export interface RollupTotals {
  runs: number;
  costUsd: number;
  savedUsd: number;
  ghostSavedUsd: number;
  savedMs: number;
  promptTokens: number;
  completionTokens: number;
  /** Runs whose cost is not firm (`priced: false`): their cost and savings are in the sums as $0, a lower bound. */
  unpricedRuns: number;
  /** Tokens providers processed (FinishedRun); promptTokens and completionTokens are the customer tokens. */
  actualPromptTokens: number;
  actualCompletionTokens: number;
}

export interface RollupScope {
  tenantId: string;
  /** App-pinned identities see only their app. */
  appId?: string | null;
  /** Inclusive UTC day range. */
  fromDay: number;
  toDay: number;
}

const SUMS = `SUM(runs) AS runs, SUM(cost_usd) AS costUsd, SUM(saved_usd) AS savedUsd, SUM(ghost_saved_usd) AS ghostSavedUsd,
  SUM(saved_ms) AS savedMs, SUM(prompt_tokens) AS promptTokens, SUM(completion_tokens) AS completionTokens,
  SUM(unpriced_runs) AS unpricedRuns, SUM(actual_prompt_tokens) AS actualPromptTokens,
  SUM(actual_completion_tokens) AS actualCompletionTokens`;

/**
 * The WHERE clause of a dimension's rows within the scope. `daysListed`: the days as an `IN` list, each one a seek on
 * the primary key (tenant, dim, day, value) where the clause also names values, instead of a range of days.
 */
function scopeWhere(scope: RollupScope, dim: RollupDimension, daysListed = false): { clause: string; params: SqlValue[] } {
  const params: SqlValue[] = [scope.tenantId, dim];
  let clause = 'tenant_id = ? AND dim = ?';
  if (daysListed) {
    clause += ` AND day IN (${placeholders(scope.toDay - scope.fromDay + 1)})`;
    for (let day = scope.fromDay; day <= scope.toDay; day++) params.push(day);
  } else {
    clause += ' AND day BETWEEN ? AND ?';
    params.push(scope.fromDay, scope.toDay);
  }
  if (scope.appId !== undefined) {
    clause += ' AND app_id = ?';
    params.push(scope.appId ?? '');
  }
  return { clause, params };
}

/** Each sum through storedNumber: a rollup column edited past 2^53 in the data file sums to a BigInt. */
function totalsOf(row: Partial<Record<keyof RollupTotals, number | bigint | null>> | undefined): RollupTotals {
  return {
    runs: storedNumber(row?.runs ?? 0),
    costUsd: storedNumber(row?.costUsd ?? 0),
    savedUsd: storedNumber(row?.savedUsd ?? 0),
    ghostSavedUsd: storedNumber(row?.ghostSavedUsd ?? 0),
    savedMs: storedNumber(row?.savedMs ?? 0),
    promptTokens: storedNumber(row?.promptTokens ?? 0),
    completionTokens: storedNumber(row?.completionTokens ?? 0),
    unpricedRuns: storedNumber(row?.unpricedRuns ?? 0),
    actualPromptTokens: storedNumber(row?.actualPromptTokens ?? 0),
    actualCompletionTokens: storedNumber(row?.actualCompletionTokens ?? 0),
  };
}

/** Finished-run totals by status and route (the savings rollup). */
export function totalsByStatusRoute(sql: Sql, scope: RollupScope): Array<{ status: string; route: string } & RollupTotals> {
  const { clause, params } = scopeWhere(scope, 'route');
  return sql
    .all<{ status: string; route: string } & Record<keyof RollupTotals, number | bigint>>(
      `SELECT status, route, ${SUMS} FROM run_rollups WHERE ${clause} GROUP BY status, route`,
      params,
    )
    .map((row) => ({ status: row.status, route: row.route, ...totalsOf(row) }));
}

/**
 * Finished-run totals of the scope, all statuses and routes together. Every finished run counts once in each
 * dimension, so any dimension's rows sum to them; the 'app' rows are the fewest (one per day and app: their value is
 * the app), and a sum without GROUP BY sorts nothing. By status and route instead (the 'route' rows, a row per app,
 * value, status and route of a day, sorted to be grouped) it took ~4 times as long with 2,000 apps
 * (docs/performance-notes.md, "Attribution's totals from the app rows").
 */
export function totalsInScope(sql: Sql, scope: RollupScope): RollupTotals {
  const { clause, params } = scopeWhere(scope, 'app');
  return totalsOf(sql.get<Record<keyof RollupTotals, number | bigint | null>>(`SELECT ${SUMS} FROM run_rollups WHERE ${clause}`, params));
}

/** Finished-run totals of one value of a dimension (all statuses and routes of it). */
export function totalsOfValue(sql: Sql, scope: RollupScope, dim: RollupDimension, value: string): RollupTotals {
  const { clause, params } = scopeWhere(scope, dim);
  return totalsOf(sql.get<Record<keyof RollupTotals, number | bigint | null>>(`SELECT ${SUMS} FROM run_rollups WHERE ${clause} AND value = ?`, [...params, value]));
}

/** Finished-run totals per UTC day. */
export function totalsByDay(sql: Sql, scope: RollupScope): Array<{ day: number } & RollupTotals> {
  const { clause, params } = scopeWhere(scope, 'route');
  return sql
    .all<{ day: number | bigint } & Record<keyof RollupTotals, number | bigint>>(`SELECT day, ${SUMS} FROM run_rollups WHERE ${clause} GROUP BY day`, params)
    .map((row) => ({ day: storedNumber(row.day), ...totalsOf(row) }));
}

/**
 * Widest window, in days, whose page sums are read by seeking each (day, value) on the primary key; a wider one reads
 * the window's rows of the dimension again. A year: the default window is the month to date.
 */
const SEEK_DAYS = 366;

/**
 * One page of a dimension's values ranked by cost, then runs, then value; and how many values there are.
 *
 * In two steps: the ranking sums only what the order needs, and the page's full sums are then read for its few values.
 * GROUP BY value sorts every row of the window (the primary key is by day first), and with all ten sums that sort
 * carried eleven columns a row: on a dimension of many values (30,000 subject rows in a month of the bench's
 * 1,000,000 runs) it was most of the attribution's time. Three columns a row cost about half as much, and the page's
 * sums, by seeks, about 2 ms (docs/performance-notes.md, "Attribution ranked on two sums").
 */
export function rankedValues(
  sql: Sql,
  scope: RollupScope,
  dim: RollupDimension,
  page: { limit: number; offset: number },
): { entries: Array<{ value: string } & RollupTotals>; total: number } {
  const { clause, params } = scopeWhere(scope, dim);
  // The window count is the number of distinct values, computed before LIMIT applies.
  const ranked = sql.all<{ value: string; total: number }>(
    `SELECT value, SUM(cost_usd) AS costUsd, SUM(runs) AS runs, COUNT(*) OVER () AS total FROM run_rollups WHERE ${clause}
     GROUP BY value ORDER BY costUsd DESC, runs DESC, value LIMIT ? OFFSET ?`,
    [...params, page.limit, page.offset],
  );
  const total =
    ranked[0]?.total ??
    (page.offset > 0 ? (sql.get<{ n: number }>(`SELECT COUNT(DISTINCT value) AS n FROM run_rollups WHERE ${clause}`, params)?.n ?? 0) : 0);
  if (ranked.length === 0) return { entries: [], total };
  const sums = valueSums(sql, scope, dim, ranked.map((row) => row.value));
  return { entries: ranked.map((row) => ({ value: row.value, ...totalsOf(sums.get(row.value)) })), total };
}

/** The sums of each of `values` of a dimension within the scope, by value. */
function valueSums(sql: Sql, scope: RollupScope, dim: RollupDimension, values: string[]): Map<string, Record<keyof RollupTotals, number | bigint>> {
  const { clause, params } = scopeWhere(scope, dim, scope.toDay - scope.fromDay + 1 <= SEEK_DAYS);
  const rows = sql.all<{ value: string } & Record<keyof RollupTotals, number | bigint>>(
    `SELECT value, ${SUMS} FROM run_rollups WHERE ${clause} AND value IN (${placeholders(values.length)}) GROUP BY value`,
    [...params, ...values],
  );
  return new Map(rows.map((row) => [row.value, row]));
}

export interface RollupsRepository {
  byStatusRoute(scope: RollupScope): Promise<Array<{ status: string; route: string } & RollupTotals>>;
  /** The scope's totals, without the split by status and route that byStatusRoute costs. */
  total(scope: RollupScope): Promise<RollupTotals>;
  byDay(scope: RollupScope): Promise<Array<{ day: number } & RollupTotals>>;
  byValue(scope: RollupScope, dim: RollupDimension, value: string): Promise<RollupTotals>;
  ranked(scope: RollupScope, dim: RollupDimension, page: { limit: number; offset: number }): Promise<{ entries: Array<{ value: string } & RollupTotals>; total: number }>;
  /** Runs still in flight (not in the rollups) created within the scope's days, from the runs table. */
  runningCount(scope: RollupScope): Promise<number>;
  /** Wait for deferred ledger writes (a run answered a moment ago counts). */
  settle(): Promise<void>;
}

export function createRollupsRepository(store: Store): RollupsRepository {
  return {
    byStatusRoute: (scope) => store.read((sql) => totalsByStatusRoute(sql, scope)),
    total: (scope) => store.read((sql) => totalsInScope(sql, scope)),
    byDay: (scope) => store.read((sql) => totalsByDay(sql, scope)),
    byValue: (scope, dim, value) => store.read((sql) => totalsOfValue(sql, scope, dim, value)),
    ranked: (scope, dim, page) => store.read((sql) => rankedValues(sql, scope, dim, page)),
    runningCount: (scope) =>
      store.read((sql) => {
        // Read through the status index (runs_tenant_status_app): the runs in flight are few; their days filter them.
        const days = [scope.fromDay * DAY_MS, (scope.toDay + 1) * DAY_MS - 1];
        return (
          (scope.appId === undefined
            ? sql.get<{ n: number }>("SELECT COUNT(*) AS n FROM runs WHERE tenant_id = ? AND status = 'running' AND created_at BETWEEN ? AND ?", [scope.tenantId, ...days])
            : sql.get<{ n: number }>(
                "SELECT COUNT(*) AS n FROM runs WHERE tenant_id = ? AND status = 'running' AND app_id IS ? AND created_at BETWEEN ? AND ?",
                [scope.tenantId, scope.appId, ...days],
              )
          )?.n ?? 0
        );
      }),
    settle: () => store.flush(),
  };
}
