/**
 * The run ledger's tables. Writes of a gateway request are deferred: they join the next group commit after the
 * answer was sent (DESIGN.md section 3); readers call `settle()` first so reads are read-your-writes.
 */
import type { Store } from '../store/store.ts';
import { JsonText } from '../core/json-slices.ts';
import { erasing, placeholders, textBytes, togetherOrAlone, type Sql, type SqlValue } from '../store/sql.ts';
import { addToRollups, DAY_MS, RollupRemoval } from './rollups.ts';
import { applyToSideEffects, sideEffectsAfter, sideEffectsBefore, type SideEffectRecord } from './side-effects.ts';
import { storedNumber } from './stored-values.ts';
import { storedJson, storedPayload } from './stored-payload.ts';
import { INGESTED_REASON, RUN_STATUSES, type AttemptRecord, type FinishedRun, type RouteExplanation, type RunError, type RunFilter, type RunRecord, type TraceEvent } from './types.ts';

export interface RunPatch {
  status?: RunRecord['status'];
  route?: RunRecord['route'];
  provider?: string | null;
  routeExplanation?: RunRecord['routeExplanation'];
  usage?: RunRecord['usage'];
  costUsd?: number;
  savedUsd?: number;
  ghostSavedUsd?: number;
  savedMs?: number;
  priced?: boolean;
  latencyMs?: number | null;
  error?: RunRecord['error'];
  completedAt?: number | null;
  eventCount?: number;
  lastHash?: string;
  executionMethod?: string | null;
  reasonCode?: string | null;
  fallback?: string | null;
}

/** What a replay needs (SPEC 4.9 replay-bundle): stored once per gateway run. */
export interface ReplayRecord {
  runId: string;
  tenantId: string;
  request: Record<string, unknown>;
  identity: Record<string, unknown>;
  inputs: Record<string, unknown>;
  responseHash: string | null;
  createdAt: number;
}

/**
 * A replay record as read: its request as the JSON text stored, not parsed (up to the gateway's body limit, 32 MiB
 * by default: ~50 ms of parse), for the bundle to splice in as it is.
 */
export interface StoredReplay extends Omit<ReplayRecord, 'request'> {
  request: JsonText;
}

export interface FeedbackRecord {
  id: string;
  runId: string;
  tenantId: string;
  kind: 'rating' | 'metrics';
  body: Record<string, unknown>;
  actor: Record<string, string>;
  createdAt: number;
}

export interface LedgerChange {
  insert?: RunRecord;
  /** Appended in order; the run's `eventCount` and `lastHash` move to the last one's. */
  events?: TraceEvent[];
  attempts?: AttemptRecord[];
  /**
   * The run in its final state: written in place of its row (inserted so if the row is not written yet) and added to
   * the rollups in the same transaction.
   */
  finished?: FinishedRun;
  replay?: ReplayRecord;
  /** Set the response hash of an already queued replay record. */
  responseHash?: { runId: string; hash: string };
}

export interface RunListResult {
  runs: RunRecord[];
  /** Whether a run the filter matches follows the page's last in the list's order. */
  more: boolean;
  total: number;
  facets: { route: Record<string, number>; status: Record<string, number> };
}

/** A place in the runs list's order (created_at, then id, both descending): a page may start below one. */
export interface RunPosition {
  createdAt: number;
  id: string;
}

/** A page of the runs list: `offset` runs skipped after `below` (a run's position; the list's start when absent). */
export interface RunPage {
  limit: number;
  offset: number;
  below?: RunPosition;
}

export interface RunsRepository {
  /** Queue the ledger writes of one stage boundary: they commit together, within the deferred window. */
  recordDeferred(change: LedgerChange): void;
  /** Commit the deferred window now if its commit is due (the store's `commitIfOverdue`). */
  commitIfOverdue(): void;
  /** Whether answers are to wait for their runs' commit (the store's `answersWaitForCommit`). */
  answersWaitForCommit(): boolean;
  /** Resolves once the changes recorded so far are committed (the store's `committed`). */
  committed(): Promise<void>;
  /**
   * Append events to a run that no request is writing any more (SDK traces after the answer): the chain link is
   * read and extended inside one committed write, so concurrent appends chain in commit order. Returns null when the
   * run does not exist in the tenant. Side-effect records follow the appended events in the same transaction.
   */
  /**
   * Append a client's events to a committed run: null when the run is not there, `'full'` (nothing appended) when
   * they would take its trace past the events or client bytes it may hold (`budget`).
   */
  appendCommitted(
    tenantId: string,
    runId: string,
    build: (head: { seq: number; hash: string }) => TraceEvent[],
    budget: TraceBudget,
    keyed?: TraceKey,
  ): Promise<TraceEvent[] | null | 'full' | { duplicate: TraceEvent }>;
  /**
   * The run's event of `key.type` carrying `key.idempotencyKey` (the first, if several were appended before keys
   * were kept to one event), or null.
   */
  keyedEvent(tenantId: string, runId: string, key: TraceKey): Promise<TraceEvent | null>;
  /**
   * Count `bytes` of client payload against a committed run's trace budget, for an event its request's own recorder
   * is about to append; false (nothing counted) when the trace is full.
   */
  reserveClientTrace(tenantId: string, runId: string, bytes: number, budget: TraceBudget): Promise<boolean>;
  replay(tenantId: string, runId: string): Promise<StoredReplay | null>;
  /** Whether the run keeps a replay record, read without its stored request (up to the body limit): a HEAD's answer. */
  hasReplay(tenantId: string, runId: string): Promise<boolean>;
  /** Update side-effect records from events appended by a request's own recorder (committed). */
  applySideEffects(tenantId: string, events: TraceEvent[]): Promise<void>;
  /**
   * The run's newest `limit + 1` side-effect records with a seq below `before` (all when undefined), in seq order,
   * and how many it holds: run detail's window, read without the rest.
   */
  sideEffectsBefore(tenantId: string, runId: string, before: number | undefined, limit: number): Promise<{ records: SideEffectRecord[]; total: number }>;
  /** The run's side-effect records with a seq past `after`, at most `limit` of them, in seq order (a page). */
  sideEffectsAfter(tenantId: string, runId: string, after: number, limit: number): Promise<SideEffectRecord[]>;
  /**
   * Add a feedback record unless the run holds `max` already (`full`) or is gone (`gone`: pruned by retention or its
   * organization's purge since it was read); nothing is added then.
   */
  addFeedback(record: FeedbackRecord, max: number): Promise<'added' | 'full' | 'gone'>;
  /** How many feedback records the run holds. */
  feedbackCount(tenantId: string, runId: string): Promise<number>;
  /** At most `limit` of the run's feedback records from position `offset` (0 the oldest), in `feedback`'s order (a page). */
  feedbackPage(tenantId: string, runId: string, offset: number, limit: number): Promise<FeedbackRecord[]>;
  /** Wait for every pending ledger write (read-your-writes for API calls naming a run). */
  settle(): Promise<void>;
  /** `settle()`, and the pending ledger writes flushed to the disk: before answering a management write made through the ledger. */
  settleOnDisk(): Promise<void>;
  get(tenantId: string, id: string): Promise<RunRecord | null>;
  list(filter: RunFilter, page: RunPage): Promise<RunListResult>;
  /** Newest `limit` events with seq < before (or the newest overall), returned in append order. */
  eventsBefore(tenantId: string, runId: string, options: { limit: number; before?: number }): Promise<TraceEvent[]>;
  allEvents(tenantId: string, runId: string): Promise<TraceEvent[]>;
  /** The first `limit` events with seq > after, in append order. */
  eventsAfter(tenantId: string, runId: string, after: number, limit: number): Promise<TraceEvent[]>;
  /**
   * The run's last event of `type` among those it records (seq 1 to `throughSeq`, its event count), if any (read
   * without the payloads of the others): one stored past them was chained by no append.
   */
  lastEventOfType(tenantId: string, runId: string, type: string, throughSeq: number): Promise<TraceEvent | null>;
  attempts(tenantId: string, runId: string): Promise<AttemptRecord[]>;
  /**
   * Delete up to `batch` of the tenant's finished runs created before `cutoff` (those still running are not read)
   * with their events and attempts, in one write, or
   * in several when their traces are long (`PRUNE_EVENTS_PER_WRITE`) or a write has taken `PRUNE_WRITE_MS`.
   */
  pruneTenantRuns(tenantId: string, cutoff: number, batch: number): Promise<number>;
  /** Ids of every tenant's runs whose status is `running` (read through the tenants' status index). */
  runningRunIds(): Promise<string[]>;
  /**
   * Finish those of `ids` that are still running, in one committed write: `finish` gives each, from the run and what
   * its committed attempts spent, its closing event (chained from the run's head) and final record; the run row
   * follows the record and the rollups count it. Resolves to how many were finished.
   */
  finishRunning(ids: readonly string[], finish: (run: RunRecord, spent: AttemptsSpent) => { event: TraceEvent; final: FinishedRun }): Promise<number>;
  /** Whether the tenant recorded any run (onboarding). */
  hasRuns(tenantId: string): Promise<boolean>;
}

/** What a run's recorded attempts add up to. */
export interface AttemptsSpent {
  costUsd: number;
  promptTokens: number;
  completionTokens: number;
}

function attemptsSpent(sql: Sql, runId: string): AttemptsSpent {
  const spent = sql.get<Record<keyof AttemptsSpent, number | bigint>>(
    `SELECT COALESCE(SUM(cost_usd), 0) AS costUsd, COALESCE(SUM(prompt_tokens), 0) AS promptTokens,
       COALESCE(SUM(completion_tokens), 0) AS completionTokens FROM run_attempts WHERE run_id = ?`,
    [runId],
  )!;
  // A count edited past 2^53 sums to a BigInt, which the closing event's hash cannot take: the run would stay running.
  return { costUsd: storedNumber(spent.costUsd), promptTokens: storedNumber(spent.promptTokens), completionTokens: storedNumber(spent.completionTokens) };
}

/** A `number | bigint` column is read through storedNumber: past 2^53 (an edit of the data file) it is a BigInt. */
interface RunRow {
  id: string;
  tenant_id: string;
  app_id: string | null;
  agent: string | null;
  subject: string | null;
  key_id: string | null;
  mode: string;
  wire: string;
  model: string;
  provider: string | null;
  status: string;
  route: string | null;
  stream: number;
  request_id: string | null;
  explanation_json: string | null;
  prompt_tokens: number | bigint;
  completion_tokens: number | bigint;
  cost_usd: number;
  saved_usd: number;
  ghost_saved_usd: number;
  saved_ms: number | bigint;
  priced: number;
  latency_ms: number | bigint | null;
  error_json: string | null;
  created_at: number;
  completed_at: number | null;
  event_count: number | bigint;
  last_hash: string;
  fingerprint: string | null;
  execution_method: string | null;
  reason_code: string | null;
  fallback: string | null;
}

function fromRow(row: RunRow): RunRecord {
  return {
    id: row.id,
    tenantId: row.tenant_id,
    appId: row.app_id,
    agent: row.agent,
    subject: row.subject,
    keyId: row.key_id,
    mode: row.mode as RunRecord['mode'],
    wire: row.wire,
    model: row.model,
    provider: row.provider,
    status: row.status as RunRecord['status'],
    route: row.route as RunRecord['route'],
    stream: row.stream === 1,
    requestId: row.request_id,
    routeExplanation: row.explanation_json ? storedJson<RouteExplanation>(row.explanation_json) : null,
    usage: {
      promptTokens: storedNumber(row.prompt_tokens),
      completionTokens: storedNumber(row.completion_tokens),
      totalTokens: storedNumber(row.prompt_tokens) + storedNumber(row.completion_tokens),
    },
    costUsd: row.cost_usd,
    savedUsd: row.saved_usd,
    ghostSavedUsd: row.ghost_saved_usd,
    savedMs: storedNumber(row.saved_ms),
    priced: row.priced === 1,
    latencyMs: storedNumber(row.latency_ms),
    error: row.error_json ? storedJson<RunError>(row.error_json) : null,
    createdAt: row.created_at,
    completedAt: row.completed_at,
    eventCount: storedNumber(row.event_count),
    lastHash: row.last_hash,
    fingerprint: row.fingerprint,
    executionMethod: row.execution_method,
    reasonCode: row.reason_code,
    fallback: row.fallback,
  };
}

interface EventRow {
  run_id: string;
  seq: number | bigint;
  type: string;
  payload_json: string;
  created_at: number | bigint;
  prev_hash: string;
  hash: string;
}

function eventFromRow(row: EventRow): TraceEvent {
  return {
    runId: row.run_id,
    seq: storedNumber(row.seq),
    type: row.type,
    payload: storedPayload(row.payload_json),
    createdAt: storedNumber(row.created_at),
    prevHash: row.prev_hash,
    hash: row.hash,
  };
}

interface AttemptRow {
  run_id: string;
  seq: number | bigint;
  provider: string;
  model: string;
  outcome: string;
  error_kind: string | null;
  upstream_status: number | bigint | null;
  prompt_tokens: number | bigint;
  completion_tokens: number | bigint;
  cost_usd: number;
  latency_ms: number | bigint;
  created_at: number;
}

function attemptFromRow(row: AttemptRow): AttemptRecord {
  return {
    runId: row.run_id,
    seq: storedNumber(row.seq),
    provider: row.provider,
    model: row.model,
    outcome: row.outcome as AttemptRecord['outcome'],
    errorKind: row.error_kind,
    upstreamStatus: storedNumber(row.upstream_status),
    promptTokens: storedNumber(row.prompt_tokens),
    completionTokens: storedNumber(row.completion_tokens),
    costUsd: row.cost_usd,
    latencyMs: storedNumber(row.latency_ms),
    createdAt: row.created_at,
  };
}

const PATCH_COLUMNS: Record<keyof RunPatch, (value: never) => Array<[string, SqlValue]>> = {
  status: (v: RunRecord['status']) => [['status', v]],
  route: (v: RunRecord['route']) => [['route', v]],
  provider: (v: string | null) => [['provider', v]],
  routeExplanation: (v: RunRecord['routeExplanation']) => [['explanation_json', v ? JSON.stringify(v) : null]],
  usage: (v: RunRecord['usage']) => [
    ['prompt_tokens', v.promptTokens],
    ['completion_tokens', v.completionTokens],
  ],
  costUsd: (v: number) => [['cost_usd', v]],
  savedUsd: (v: number) => [['saved_usd', v]],
  ghostSavedUsd: (v: number) => [['ghost_saved_usd', v]],
  savedMs: (v: number) => [['saved_ms', v]],
  priced: (v: boolean) => [['priced', v ? 1 : 0]],
  latencyMs: (v: number | null) => [['latency_ms', v]],
  error: (v: RunRecord['error']) => [['error_json', v ? JSON.stringify(v) : null]],
  completedAt: (v: number | null) => [['completed_at', v]],
  eventCount: (v: number) => [['event_count', v]],
  lastHash: (v: string) => [['last_hash', v]],
  executionMethod: (v: string | null) => [['execution_method', v]],
  reasonCode: (v: string | null) => [['reason_code', v]],
  fallback: (v: string | null) => [['fallback', v]],
};

function insertRun(sql: Sql, run: RunRecord): void {
  sql.run(
    `INSERT INTO runs (id, tenant_id, app_id, agent, subject, key_id, mode, wire, model, provider, status, route, stream,
       request_id, explanation_json, prompt_tokens, completion_tokens, cost_usd, saved_usd, ghost_saved_usd, saved_ms, priced,
       latency_ms, error_json, created_at, completed_at, event_count, last_hash, fingerprint, execution_method, reason_code,
       fallback)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, CAST(? AS TEXT), ?, ?, ?, ?, ?, ?, ?, ?, CAST(? AS TEXT), ?, ?, ?,
       CAST(? AS TEXT), ?, ?, ?, ?)`,
    [
      run.id, run.tenantId, run.appId, run.agent, run.subject, run.keyId, run.mode, run.wire, run.model, run.provider,
      run.status, run.route, run.stream ? 1 : 0, run.requestId,
      textBytes(run.routeExplanation ? JSON.stringify(run.routeExplanation) : null),
      run.usage.promptTokens, run.usage.completionTokens, run.costUsd, run.savedUsd, run.ghostSavedUsd, run.savedMs,
      run.priced ? 1 : 0, run.latencyMs, textBytes(run.error ? JSON.stringify(run.error) : null), run.createdAt, run.completedAt,
      run.eventCount, textBytes(run.lastHash), run.fingerprint, run.executionMethod, run.reasonCode, run.fallback,
    ],
  );
}

function patchRun(sql: Sql, id: string, patch: RunPatch): void {
  const assignments: Array<[string, SqlValue]> = [];
  for (const [field, value] of Object.entries(patch) as Array<[keyof RunPatch, never]>) {
    if (value === undefined) continue;
    const toColumns = PATCH_COLUMNS[field];
    if (toColumns) assignments.push(...toColumns(value));
  }
  if (assignments.length === 0) return;
  sql.run(`UPDATE runs SET ${assignments.map(([column]) => `${column} = ?`).join(', ')} WHERE id = ?`, [
    ...assignments.map(([, value]) => value),
    id,
  ]);
}

function insertEvent(sql: Sql, event: TraceEvent): void {
  sql.run(
    `INSERT INTO run_events (run_id, seq, type, payload_json, created_at, prev_hash, hash)
     VALUES (?, ?, ?, CAST(? AS TEXT), ?, CAST(? AS TEXT), CAST(? AS TEXT))`,
    [event.runId, event.seq, event.type, textBytes(JSON.stringify(event.payload)), event.createdAt, textBytes(event.prevHash), textBytes(event.hash)],
  );
}

function insertAttempt(sql: Sql, attempt: AttemptRecord): void {
  sql.run(
    `INSERT INTO run_attempts (run_id, seq, provider, model, outcome, error_kind, upstream_status, prompt_tokens,
       completion_tokens, cost_usd, latency_ms, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    [
      attempt.runId, attempt.seq, attempt.provider, attempt.model, attempt.outcome, attempt.errorKind,
      attempt.upstreamStatus, attempt.promptTokens, attempt.completionTokens, attempt.costUsd, attempt.latencyMs,
      attempt.createdAt,
    ],
  );
}

interface ReplayRow {
  run_id: string;
  tenant_id: string;
  request_json: string;
  identity_json: string;
  inputs_json: string;
  response_hash: string | null;
  created_at: number;
}

interface FeedbackRow {
  id: string;
  run_id: string;
  tenant_id: string;
  kind: FeedbackRecord['kind'];
  body_json: string;
  actor_json: string;
  created_at: number;
}

function feedbackFromRow(row: FeedbackRow): FeedbackRecord {
  return {
    id: row.id,
    runId: row.run_id,
    tenantId: row.tenant_id,
    kind: row.kind,
    // Text that is not JSON (the data file edited) stands as {storedText}, as a run's explanation does.
    body: storedJson(row.body_json) as Record<string, unknown>,
    actor: storedJson(row.actor_json) as Record<string, string>,
    createdAt: row.created_at,
  };
}

function insertReplay(sql: Sql, replay: ReplayRecord): void {
  sql.run(
    `INSERT INTO run_replays (run_id, tenant_id, request_json, identity_json, inputs_json, response_hash, created_at)
     VALUES (?, ?, CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS TEXT), ?)`,
    [replay.runId, replay.tenantId, textBytes(JSON.stringify(replay.request)), textBytes(JSON.stringify(replay.identity)),
      textBytes(JSON.stringify(replay.inputs)), textBytes(replay.responseHash), replay.createdAt],
  );
}

function whereOf(filter: RunFilter, omit?: 'routeAndStatus'): { clause: string; params: SqlValue[] } {
  const parts = ['tenant_id = ?'];
  const params: SqlValue[] = [filter.tenantId];
  const add = (column: string, value: SqlValue | undefined, op = '=') => {
    if (value === undefined || value === null) return;
    parts.push(`${column} ${op} ?`);
    params.push(value);
  };
  add('app_id', filter.appId ?? undefined);
  if (omit !== 'routeAndStatus') {
    add('route', filter.route);
    add('status', filter.status);
  }
  add('provider', filter.provider);
  add('model', filter.model);
  add('created_at', filter.since, '>=');
  // IS NOT: the runs without a reason code (in flight) are not ingested prompts.
  if (filter.ingested !== undefined) add('reason_code', INGESTED_REASON, filter.ingested ? '=' : 'IS NOT');
  return { clause: parts.join(' AND '), params };
}

/** A (status, route) cell of run counts: `route` null for none. */
interface CountCell {
  status: string;
  route: string | null;
  n: number;
}

/**
 * Total and route/status facets of a runs list filtered by route/status/app only, from the rollups (finished runs)
 * plus the in-flight runs: constant time on a ledger of any size, where counting rows would scan it.
 */
function countsFromRollups(sql: Sql, filter: RunFilter): Pick<RunListResult, 'total' | 'facets'> {
  const app = filter.appId !== undefined && filter.appId !== null;
  const cells = sql
    .all<{ status: string; route: string; n: number | bigint }>(
      `SELECT status, route, SUM(runs) AS n FROM run_rollups WHERE tenant_id = ? AND dim = 'route' ${app ? 'AND app_id = ?' : ''}
       GROUP BY status, route`,
      app ? [filter.tenantId, filter.appId!] : [filter.tenantId],
    )
    // A rollup's count edited past 2^53 in the data file sums to a BigInt.
    .map((cell) => ({ ...cell, n: storedNumber(cell.n) }));
  const running = sql.get<{ n: number }>(
    `SELECT COUNT(*) AS n FROM runs WHERE tenant_id = ? AND status = 'running' ${app ? 'AND app_id = ?' : ''}`,
    app ? [filter.tenantId, filter.appId!] : [filter.tenantId],
  )?.n ?? 0;
  if (running > 0) cells.push({ status: 'running', route: '', n: running });
  if (filter.ingested === false) {
    // The ingested prompts are all in the completed live cell (INGESTED_REASON): taken out of it, as /savings does.
    const ingested = ingestedCells(sql, filter).reduce((sum, cell) => sum + cell.n, 0);
    const live = cells.find((cell) => cell.status === 'completed' && cell.route === 'live');
    if (live) live.n -= Math.min(ingested, live.n);
  }
  return countsOfCells(cells.map((cell) => ({ status: cell.status, route: cell.route === '' ? null : cell.route, n: cell.n })), filter);
}

/**
 * Total and route/status facets from run counts per (status, route) cell of the list's other filters: the total
 * counts the cells both filters match, each facet those the other filter matches (a facet ignores its own filter).
 */
function countsOfCells(cells: readonly CountCell[], filter: RunFilter): Pick<RunListResult, 'total' | 'facets'> {
  const facets = { route: {} as Record<string, number>, status: {} as Record<string, number> };
  let total = 0;
  for (const cell of cells) {
    if (cell.n <= 0) continue;
    const route = cell.route;
    const routeMatches = filter.route === undefined || filter.route === route;
    const statusMatches = filter.status === undefined || filter.status === cell.status;
    if (routeMatches && statusMatches) total += cell.n;
    if (statusMatches) facets.route[route ?? 'unknown'] = (facets.route[route ?? 'unknown'] ?? 0) + cell.n;
    if (routeMatches) facets.status[cell.status] = (facets.status[cell.status] ?? 0) + cell.n;
  }
  return { total, facets };
}

/** Epoch ms, both inclusive, between which every run a list's filter matches was created; null when none is. */
type CreatedSpan = { from: number; to: number } | null;

/** A cell whose runs lie between `first` and `last` (UTC days of rollup rows, or created_at of running runs). */
type SpannedCell = CountCell & { first: number; last: number };

function cellMatches(cell: CountCell, filter: RunFilter): boolean {
  return (filter.route === undefined || filter.route === cell.route) && (filter.status === undefined || filter.status === cell.status);
}

/** The smallest span holding every cell's runs (`toMs` turns a cell's first and last into epoch ms). */
function spanOf(cells: readonly SpannedCell[], toMs: (first: number, last: number) => { from: number; to: number }): CreatedSpan {
  let span: CreatedSpan = null;
  for (const cell of cells) {
    if (cell.n <= 0) continue;
    const { from, to } = toMs(cell.first, cell.last);
    span = span === null ? { from, to } : { from: Math.min(span.from, from), to: Math.max(span.to, to) };
  }
  return span;
}

const daysToMs = (first: number, last: number) => ({ from: first * DAY_MS, to: (last + 1) * DAY_MS - 1 });
const msToMs = (first: number, last: number) => ({ from: first, to: last });

function intersect(a: CreatedSpan, b: CreatedSpan): CreatedSpan {
  if (a === null || b === null) return null;
  const span = { from: Math.max(a.from, b.from), to: Math.min(a.to, b.to) };
  return span.from <= span.to ? span : null;
}

function union(a: CreatedSpan, b: CreatedSpan): CreatedSpan {
  if (a === null) return b;
  if (b === null) return a;
  return { from: Math.min(a.from, b.from), to: Math.max(a.to, b.to) };
}

/**
 * The finished runs of one model or provider (`dim`) in the list's app, per (status, route), from the rollups, with
 * the first and last UTC day they were created on.
 */
function rolledUpCells(sql: Sql, filter: RunFilter, dim: 'model' | 'provider' | 'reason', value: string): SpannedCell[] {
  const app = filter.appId !== undefined && filter.appId !== null;
  return sql
    .all<{ status: string; route: string; n: number | bigint; first: number; last: number }>(
      `SELECT status, route, SUM(runs) AS n, MIN(day) AS first, MAX(day) AS last FROM run_rollups
       WHERE tenant_id = ? AND dim = ? AND value = ? ${app ? 'AND app_id = ?' : ''} AND runs > 0 GROUP BY status, route`,
      app ? [filter.tenantId, dim, value, filter.appId!] : [filter.tenantId, dim, value],
    )
    .map((cell) => ({ ...cell, n: storedNumber(cell.n), route: cell.route === '' ? null : cell.route }));
}

/**
 * The SDK-ingested prompts of the list's app, from the 'reason' rollup rows. Those rows keep no status or route, but
 * an ingested prompt is only ever recorded completed on the live route (INGESTED_REASON), never running.
 */
function ingestedCells(sql: Sql, filter: RunFilter): SpannedCell[] {
  return rolledUpCells(sql, filter, 'reason', INGESTED_REASON).map((cell) => ({ ...cell, status: 'completed', route: 'live' }));
}

/**
 * The running runs the list's filters other than route and status match, per route, with the first and last
 * created_at: they are not in the rollups. Read through the status index (runs_tenant_status); summed here, as a
 * GROUP BY route would have the planner walk the tenant's runs in the route index's order instead.
 */
function runningCells(sql: Sql, filter: RunFilter): SpannedCell[] {
  const { clause, params } = whereOf(filter, 'routeAndStatus');
  const cells = new Map<string | null, SpannedCell>();
  for (const run of sql.all<{ route: string | null; created_at: number }>(
    `SELECT route, created_at FROM runs WHERE ${clause} AND status = 'running'`,
    params,
  )) {
    const cell = cells.get(run.route);
    if (cell) {
      cell.n += 1;
      cell.first = Math.min(cell.first, run.created_at);
      cell.last = Math.max(cell.last, run.created_at);
    } else cells.set(run.route, { status: 'running', route: run.route, n: 1, first: run.created_at, last: run.created_at });
  }
  return [...cells.values()];
}

/**
 * A page of the runs list with its total and route/status facets (each facet ignoring its own filter).
 *
 * Filtered by route/status/app only, the counts come from the 'route' rollup rows. Filtered by one model or one
 * provider (with route/status/app), from that dimension's rows, which keep status and route (migration 8). Either
 * way the running runs, not in the rollups, are counted from `runs`. Where the rollups cannot answer exactly (a model
 * and a provider together, or `since`, a timestamp within a day), the matching runs are counted, but only between
 * the first and last day their model's or provider's rows name: a rare model's count and page read its days, not
 * the tenant's whole ledger. The page's query is bounded the same way and made only when the total reaches it.
 * The SDK-ingested prompts (`ingested: true`) are counted as a model is, from their 'reason' rows; the other runs
 * (`ingested: false`) as the list without that filter, less the ingested ones where the rows can say how many.
 */
function listRuns(sql: Sql, filter: RunFilter, page: RunPage): RunListResult {
  const { below } = page;
  // One run past the page says whether another follows it (the cursor of a walk, which `total` cannot give below one).
  const pageOf = (span?: CreatedSpan): Pick<RunListResult, 'runs' | 'more'> => {
    const { clause, params } = whereOf(filter);
    const within = span ? ' AND created_at BETWEEN ? AND ?' : '';
    // `created_at <= ?` first: the (tenant_id, created_at) indexes' range; the rest of the row order within it.
    const after = below ? ' AND created_at <= ? AND (created_at < ? OR id < ?)' : '';
    const rows = sql.all<RunRow>(`SELECT * FROM runs WHERE ${clause}${within}${after} ORDER BY created_at DESC, id DESC LIMIT ? OFFSET ?`, [
      ...params,
      ...(span ? [span.from, span.to] : []),
      ...(below ? [below.createdAt, below.createdAt, below.id] : []),
      page.limit + 1,
      page.offset,
    ]);
    return { runs: rows.slice(0, page.limit).map(fromRow), more: rows.length > page.limit };
  };
  const none = { runs: [], more: false };
  // Counted over the runs, within `span` (undefined: all of them; null: none can match).
  const countIn = (span?: CreatedSpan): Pick<RunListResult, 'total' | 'facets'> => {
    if (span === null) return countsOfCells([], filter);
    const { clause, params } = whereOf(filter, 'routeAndStatus');
    const within = span ? ' AND created_at BETWEEN ? AND ?' : '';
    const cells = sql.all<CountCell>(`SELECT status, route, COUNT(*) AS n FROM runs WHERE ${clause}${within} GROUP BY status, route`, [
      ...params,
      ...(span ? [span.from, span.to] : []),
    ]);
    return countsOfCells(cells, filter);
  };

  if (filter.provider === undefined && filter.model === undefined && filter.ingested !== true) {
    if (filter.since === undefined) return { ...pageOf(), ...countsFromRollups(sql, filter) };
    // `since` alone: its index range is the scan (one pass for the total and both facets).
    const counts = countIn();
    return { ...(page.offset < counts.total ? pageOf() : none), ...counts };
  }

  const rolled: SpannedCell[][] = [];
  if (filter.model !== undefined) rolled.push(rolledUpCells(sql, filter, 'model', filter.model));
  if (filter.provider !== undefined) rolled.push(rolledUpCells(sql, filter, 'provider', filter.provider));
  // Ingested prompts only: like a model, read within the days of their rows (they may be few on a long ledger).
  if (filter.ingested === true) rolled.push(ingestedCells(sql, filter));
  const running = runningCells(sql, filter);
  // A finished run the filters match has a row of its model and one of its provider on its day, with its status and
  // route: it lies within the days of each; a running one within the running runs' span.
  const spanWhere = (keep: (cell: CountCell) => boolean): CreatedSpan =>
    union(
      rolled.map((cells) => spanOf(cells.filter(keep), daysToMs)).reduce(intersect),
      spanOf(running.filter(keep), msToMs),
    );
  // Leaving the ingested prompts out of a model's or provider's rows is not something the rows can say: counted.
  const exact = rolled.length === 1 && filter.since === undefined && filter.ingested !== false;
  const counts = exact ? countsOfCells([...rolled[0]!, ...running], filter) : countIn(spanWhere(() => true));
  // The page's runs also match the route and status filters: their cells' days may be fewer.
  const matching = spanWhere((cell) => cellMatches(cell, filter));
  return { ...(page.offset < counts.total && matching !== null ? pageOf(matching) : none), ...counts };
}

/** What a client's append may take of a run's trace: its payload `bytes`, within the run's limits. */
/**
 * An SDK event's idempotency key (docs/evidence.md): a run holds one event per type and key. With it,
 * `appendCommitted` looks for that event inside its write and appends nothing when there is one (`duplicate`), so
 * retries sent at once are recorded once.
 */
export interface TraceKey {
  type: string;
  idempotencyKey: string;
}

/**
 * The WHERE term naming a run of the tenant in run_events and run_attempts, which keep no tenant column; its
 * parameters are the run's id, then the tenant's. Run ids are global, so a read by id alone would find another
 * tenant's run: the subquery is a lookup of the runs primary key, and the table is still searched by its
 * (run_id, seq) key (no scan).
 */
const TENANT_RUN = 'run_id = (SELECT id FROM runs WHERE id = ? AND tenant_id = ?)';

/**
 * Read the run's events from its primary key; the type is compared before the payload's key is extracted, so only
 * the payloads of events of that type are parsed (a run holds at most 10,000 events and 16 MiB of client payloads).
 */
function findKeyed(sql: Sql, tenantId: string, runId: string, key: TraceKey): TraceEvent | null {
  const row = sql.get<EventRow>(
    `SELECT * FROM run_events WHERE ${TENANT_RUN} AND type = ? AND json_extract(payload_json, '$.idempotencyKey') = ? ORDER BY seq LIMIT 1`,
    [runId, tenantId, key.type, key.idempotencyKey],
  );
  return row ? eventFromRow(row) : null;
}

export interface TraceBudget {
  bytes: number;
  maxEvents: number;
  maxClientBytes: number;
}

/** Count `bytes` against the run's client trace bytes if the run has room for one more event and for them. */
function reserveIn(sql: Sql, tenantId: string, runId: string, bytes: number, budget: Omit<TraceBudget, 'bytes'>): boolean {
  return (
    sql.run(
      'UPDATE runs SET client_trace_bytes = client_trace_bytes + ? WHERE id = ? AND tenant_id = ? AND event_count < ? AND client_trace_bytes + ? <= ?',
      [bytes, runId, tenantId, budget.maxEvents, bytes, budget.maxClientBytes],
    ).changes > 0
  );
}

/**
 * Trace events one retention write deletes at most (or one run's, should it hold more): a batch of runs with
 * long traces (SDK agents append up to 10,000 events a run) is deleted in as many writes, each a short stall of the
 * event loop. A gateway run has a handful of events, so a batch of them is one write.
 */
export const PRUNE_EVENTS_PER_WRITE = 10_000;

/**
 * How long one retention write goes on deleting runs, one after the other, before leaving the rest of its batch to
 * the next write (at least one run each), the update of their rollup rows included. A warm process deletes
 * a gateway run in ~0.1 ms (its row and six index entries, events, attempts, replay bundle); the rollup rows it counts
 * in, one per dimension (ten), are summed over the write's runs, which share most of them, and updated once a write
 * for ~0.05 ms a run more, so a batch of 200 runs would be one ~30 ms write and is two. But a
 * process's first writes cost 2-5 times that (the pages read from the file, the code run for the first time): on
 * 200,000 expired runs the first write of a pass took 70-183 ms of CPU (test/bench/retention.ts; 533 ms on a loaded
 * machine).
 */
export const PRUNE_WRITE_MS = 25;

/** The statuses retention deletes runs in: every one but `running`. */
const FINISHED_STATUSES = RUN_STATUSES.filter((status) => status !== 'running');

export interface RunsRepositoryOptions {
  /** A retention write's time budget; default `PRUNE_WRITE_MS` (0: one run a write, as a test drives it). */
  pruneWriteMs?: number;
}

/**
 * Delete runs whole, in order, until `budgetMs` has passed (at least one run), counting the update of the rollup rows
 * they counted in, summed per row at the end; returns how many were deleted. That update's cost is not known before
 * it runs, and in a cold process it is most of the write's (~50 of a first write's ~76 ms, when it came after the
 * budget): the first run's rows are updated at once, and what a row took there is the price of each row still to
 * update when the budget is checked. (Updating each run's rows as it is deleted would cost more: rows the write's
 * runs share would be updated once per run.)
 */
function deleteRuns(sql: Sql, ids: readonly string[], budgetMs: number): number {
  const started = performance.now();
  const removal = new RollupRemoval();
  let msPerRow = 0;
  let count = 0;
  while (count < ids.length) {
    deleteRun(sql, ids[count++]!, removal);
    if (count === 1) {
      const rows = removal.rows;
      const applying = performance.now();
      removal.apply(sql);
      if (rows > 0) msPerRow = (performance.now() - applying) / rows;
    }
    if (performance.now() - started + removal.rows * msPerRow >= budgetMs) break;
  }
  removal.apply(sql);
  return count;
}

/** Delete one run whole, handing it to `removal` to leave the rollups. */
function deleteRun(sql: Sql, id: string, removal: RollupRemoval): void {
  const row = sql.get<RunRow>('SELECT * FROM runs WHERE id = ?', [id]);
  // A running run is in no rollup row; a finished one takes its actual tokens out as well, summed from its attempts.
  if (row && row.status !== 'running') {
    const spent = attemptsSpent(sql, id);
    removal.add({ ...fromRow(row), actualPromptTokens: spent.promptTokens, actualCompletionTokens: spent.completionTokens });
  }
  for (const table of ['run_replays', 'run_side_effects', 'run_feedback']) sql.run(`DELETE FROM ${table} WHERE run_id = ?`, [id]);
  sql.run('DELETE FROM run_events WHERE run_id = ?', [id]);
  sql.run('DELETE FROM run_attempts WHERE run_id = ?', [id]);
  sql.run('DELETE FROM runs WHERE id = ?', [id]);
}

/**
 * Write ledger changes merged per run: a run started and finished within the window is inserted once in its final
 * state (not inserted, then updated per event), and a replay record gets its response hash before it is written.
 * The runs finished are handed to `finishedOut`, whose rollup rows are summed and upserted once per commit.
 */
function writeMerged(sql: Sql, changes: readonly LedgerChange[], finishedOut: Map<string, FinishedRun>): void {
  const inserts = new Map<string, RunRecord>();
  const patches = new Map<string, { id: string } & RunPatch>();
  const replays = new Map<string, ReplayRecord>();
  const lateHashes: Array<{ runId: string; hash: string }> = [];
  const events: TraceEvent[] = [];
  const attempts: AttemptRecord[] = [];
  const finished: FinishedRun[] = [];
  const heads = new Map<string, TraceEvent>();
  for (const change of changes) {
    if (change.insert) inserts.set(change.insert.id, { ...change.insert });
    if (change.events) {
      for (const event of change.events) {
        events.push(event);
        heads.set(event.runId, event);
      }
    }
    if (change.attempts) attempts.push(...change.attempts);
    if (change.replay) replays.set(change.replay.runId, { ...change.replay });
    if (change.responseHash) {
      const replay = replays.get(change.responseHash.runId);
      if (replay) replay.responseHash = change.responseHash.hash;
      else lateHashes.push(change.responseHash);
    }
    if (change.finished) {
      const run = change.finished;
      finished.push(run);
      if (inserts.has(run.id)) inserts.set(run.id, { ...run });
      else patches.set(run.id, { ...patches.get(run.id), ...run });
    }
  }
  for (const [runId, head] of heads) {
    const inserted = inserts.get(runId);
    const moved = { eventCount: head.seq, lastHash: head.hash };
    if (inserted) Object.assign(inserted, moved);
    else patches.set(runId, { ...patches.get(runId), id: runId, ...moved });
  }
  for (const run of inserts.values()) insertRun(sql, run);
  for (const patch of patches.values()) patchRun(sql, patch.id, patch);
  for (const event of events) insertEvent(sql, event);
  for (const attempt of attempts) insertAttempt(sql, attempt);
  for (const replay of replays.values()) insertReplay(sql, replay);
  for (const { runId, hash } of lateHashes) sql.run('UPDATE run_replays SET response_hash = ? WHERE run_id = ?', [hash, runId]);
  for (const run of finished) finishedOut.set(run.id, run);
}

/**
 * Runs per step of a commit's ledger write. A step is the least a slice of a sliced commit writes (the store gives
 * the event loop a turn only between steps), and a live run is ~0.1-0.15 ms of SQLite's work: four runs made every
 * slice ~0.4 ms whatever the store's budget, two make it ~0.2-0.3 ms: at concurrency 1 a p99 ~0.3 ms lower at the
 * same median (docs/performance-notes.md, "Smaller commit slices").
 */
const RUNS_PER_COMMIT_STEP = 2;

/**
 * Runs per step of the early writes under load. They are written together, not sliced, so a step is only the unit a
 * failure is retried in (each step in a savepoint of its own): twice as many steps cost exact-cache hits at c=16 ~2.5%
 * of their throughput.
 */
const RUNS_PER_EARLY_STEP = 4;

/** The run a change belongs to (each change the ledger records is about one run). */
function runIdOf(change: LedgerChange): string | undefined {
  return change.insert?.id ?? change.finished?.id ?? change.events?.[0]?.runId ?? change.attempts?.[0]?.runId ?? change.replay?.runId ?? change.responseHash?.runId;
}

/** The changes queued, grouped by run in the order each run was first seen. */
function byRun(changes: readonly LedgerChange[]): LedgerChange[][] {
  const groups = new Map<string | undefined, LedgerChange[]>();
  for (const change of changes) {
    const runId = runIdOf(change);
    const own = groups.get(runId);
    if (own) own.push(change);
    else groups.set(runId, [change]);
  }
  return [...groups.values()];
}

/**
 * Steps writing the changes of a few runs each (every run's changes in one step, so it is still written merged); the
 * runs finished by them are added to `finished` (keyed by run: a step that is redone, its slice having failed, adds
 * its runs again). A change that fails alone is told to `dropped`.
 */
function runSteps(
  runs: readonly LedgerChange[][],
  finished: Map<string, FinishedRun>,
  runsPerStep: number,
  dropped: (index: number, error: unknown) => void,
): Array<(sql: Sql) => void> {
  const steps: Array<(sql: Sql) => void> = [];
  for (let i = 0; i < runs.length; i += runsPerStep) {
    const part = runs.slice(i, i + runsPerStep).flat();
    // One bad change (it should not happen: ids are unique) must not drop its neighbours: only it is lost, and told.
    steps.push((sql) => togetherOrAlone(sql, part, (inner, items) => writeMerged(inner, items, finished), dropped));
  }
  return steps;
}

/** A ledger change that failed alone, as the report of the commit that lost it names it (see Store.tellDropped). */
const LEDGER_CHANGE_DROPPED = 'run ledger changes';

export function createRunsRepository(store: Store, options: RunsRepositoryOptions = {}): RunsRepository {
  const pruneWriteMs = options.pruneWriteMs ?? PRUNE_WRITE_MS;
  // Changes queued since the last group commit took them: one deferred write, planned when its commit starts (and,
  // under load, for the runs that finished, earlier: see Store.writeDeferredSteps).
  let queued: LedgerChange[] = [];
  let registered = false;
  // The runs finished since the last commit (written early or at the commit): their rollups are summed once, in the
  // commit's last step.
  let finished = new Map<string, FinishedRun>();
  // A change of the ledger that failed alone (its step's others written): told as lost, like a dropped deferred write.
  const dropped = (_index: number, error: unknown) => store.tellDropped(LEDGER_CHANGE_DROPPED, error);
  const plan = (final: boolean) => {
    if (final) {
      const runs = byRun(queued);
      const rolledUp = finished;
      queued = [];
      registered = false;
      finished = new Map();
      const steps = runSteps(runs, rolledUp, RUNS_PER_COMMIT_STEP, dropped);
      steps.push((sql) => {
        if (rolledUp.size > 0) addToRollups(sql, [...rolledUp.values()]);
      });
      return steps;
    }
    // Early: only runs that finished, so each is still written once, in its final state.
    const ready: LedgerChange[][] = [];
    const waiting: LedgerChange[] = [];
    for (const changes of byRun(queued)) {
      if (changes.some((change) => change.finished)) ready.push(changes);
      else waiting.push(...changes);
    }
    queued = waiting;
    return runSteps(ready, finished, RUNS_PER_EARLY_STEP, dropped);
  };

  return {
    recordDeferred(change) {
      queued.push(change);
      if (!registered) {
        registered = true;
        store.writeDeferredSteps(plan, 'run ledger windows');
      } else {
        // Called per change, between requests: the window may have fallen due in a long turn of the loop.
        store.commitIfOverdue();
      }
    },

    commitIfOverdue: () => store.commitIfOverdue(),
    answersWaitForCommit: () => store.answersWaitForCommit,
    committed: () => store.committed(),

    appendCommitted: (tenantId, runId, build, budget, keyed) =>
      store.write((sql) => {
        const head = sql.get<{ event_count: number; last_hash: string }>(
          'SELECT event_count, last_hash FROM runs WHERE id = ? AND tenant_id = ?',
          [runId, tenantId],
        );
        if (!head) return null;
        const duplicate = keyed ? findKeyed(sql, tenantId, runId, keyed) : null;
        if (duplicate) return { duplicate };
        const events = build({ seq: head.event_count, hash: head.last_hash });
        if (events.length === 0) return events;
        if (!reserveIn(sql, tenantId, runId, budget.bytes, { ...budget, maxEvents: budget.maxEvents - events.length + 1 })) return 'full';
        for (const event of events) insertEvent(sql, event);
        const last = events[events.length - 1]!;
        sql.run('UPDATE runs SET event_count = ?, last_hash = ? WHERE id = ?', [last.seq, last.hash, runId]);
        applyToSideEffects(sql, tenantId, events);
        return events;
      }),

    keyedEvent: (tenantId, runId, key) => store.read((sql) => findKeyed(sql, tenantId, runId, key)),

    reserveClientTrace: (tenantId, runId, bytes, budget) => store.write((sql) => reserveIn(sql, tenantId, runId, bytes, budget)),

    applySideEffects: (tenantId, events) => store.write((sql) => applyToSideEffects(sql, tenantId, events)),

    sideEffectsBefore: (tenantId, runId, before, limit) => store.read((sql) => sideEffectsBefore(sql, tenantId, runId, before, limit)),

    sideEffectsAfter: (tenantId, runId, after, limit) => store.read((sql) => sideEffectsAfter(sql, tenantId, runId, after, limit)),

    addFeedback: (record, max) =>
      store.write((sql) => {
        // Checked in the write: a record added after its run was deleted would outlive it, as no deletion finds it.
        if (!sql.get('SELECT 1 FROM runs WHERE id = ? AND tenant_id = ?', [record.runId, record.tenantId])) return 'gone';
        const held = sql.get<{ n: number }>('SELECT COUNT(*) AS n FROM run_feedback WHERE run_id = ? AND tenant_id = ?', [record.runId, record.tenantId])!.n;
        if (held >= max) return 'full';
        sql.run(
          'INSERT INTO run_feedback (id, run_id, tenant_id, kind, body_json, actor_json, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
          [record.id, record.runId, record.tenantId, record.kind, JSON.stringify(record.body), JSON.stringify(record.actor), record.createdAt],
        );
        return 'added';
      }),

    feedbackCount: (tenantId, runId) =>
      store.read((sql) => sql.get<{ n: number }>('SELECT COUNT(*) AS n FROM run_feedback WHERE run_id = ? AND tenant_id = ?', [runId, tenantId])!.n),

    // By position: records are only ever added, after the others (by time), so a later page starts where the last ended.
    // rowid, not the random id, after the time: records of one millisecond in the order they were added, so that run
    // detail's feedback positions stay put as records are added.
    feedbackPage: (tenantId, runId, offset, limit) =>
      store.read((sql) =>
        sql
          .all<FeedbackRow>('SELECT * FROM run_feedback WHERE run_id = ? AND tenant_id = ? ORDER BY created_at, rowid LIMIT ? OFFSET ?', [runId, tenantId, limit, offset])
          .map(feedbackFromRow),
      ),

    replay: (tenantId, runId) =>
      store.read((sql) => {
        const row = sql.get<ReplayRow>('SELECT * FROM run_replays WHERE run_id = ? AND tenant_id = ?', [runId, tenantId]);
        return row
          ? {
              runId: row.run_id,
              tenantId: row.tenant_id,
              // Written by JSON.stringify (insertReplay), so already the text the bundle writes for it.
              request: new JsonText(row.request_json),
              // Text that is not JSON (the data file edited) stands as {storedText}, as a run's explanation does.
              identity: storedJson(row.identity_json) as Record<string, unknown>,
              inputs: storedJson(row.inputs_json) as Record<string, unknown>,
              responseHash: row.response_hash,
              createdAt: row.created_at,
            }
          : null;
      }),

    hasReplay: (tenantId, runId) =>
      store.read((sql) => sql.get('SELECT 1 FROM run_replays WHERE run_id = ? AND tenant_id = ?', [runId, tenantId]) !== undefined),

    settle: () => store.flush(),
    settleOnDisk: () => store.flushToDisk(),

    get: (tenantId, id) =>
      store.read((sql) => {
        const row = sql.get<RunRow>('SELECT * FROM runs WHERE id = ? AND tenant_id = ?', [id, tenantId]);
        return row ? fromRow(row) : null;
      }),

    list: (filter, page) => store.read((sql) => listRuns(sql, filter, page)),

    eventsBefore: (tenantId, runId, options) =>
      store.read((sql) => {
        const rows =
          options.before === undefined
            ? sql.all<EventRow>(`SELECT * FROM run_events WHERE ${TENANT_RUN} ORDER BY seq DESC LIMIT ?`, [runId, tenantId, options.limit])
            : sql.all<EventRow>(`SELECT * FROM run_events WHERE ${TENANT_RUN} AND seq < ? ORDER BY seq DESC LIMIT ?`, [
                runId,
                tenantId,
                options.before,
                options.limit,
              ]);
        return rows.reverse().map(eventFromRow);
      }),

    allEvents: (tenantId, runId) =>
      store.read((sql) => sql.all<EventRow>(`SELECT * FROM run_events WHERE ${TENANT_RUN} ORDER BY seq`, [runId, tenantId]).map(eventFromRow)),

    eventsAfter: (tenantId, runId, after, limit) =>
      store.read((sql) =>
        sql
          .all<EventRow>(`SELECT * FROM run_events WHERE ${TENANT_RUN} AND seq > ? ORDER BY seq LIMIT ?`, [runId, tenantId, after, limit])
          .map(eventFromRow),
      ),

    lastEventOfType: (tenantId, runId, type, throughSeq) =>
      store.read((sql) => {
        const row = sql.get<EventRow>(`SELECT * FROM run_events WHERE ${TENANT_RUN} AND seq BETWEEN 1 AND ? AND type = ? ORDER BY seq DESC LIMIT 1`, [
          runId,
          tenantId,
          throughSeq,
          type,
        ]);
        return row ? eventFromRow(row) : null;
      }),

    attempts: (tenantId, runId) =>
      store.read((sql) =>
        sql.all<AttemptRow>(`SELECT * FROM run_attempts WHERE ${TENANT_RUN} ORDER BY seq`, [runId, tenantId]).map(attemptFromRow),
      ),

    hasRuns: (tenantId) =>
      store.read((sql) => sql.get('SELECT 1 AS found FROM runs WHERE tenant_id = ? LIMIT 1', [tenantId]) !== undefined),

    runningRunIds: () =>
      store.read((sql) =>
        sql
          .all<{ id: string }>('SELECT id FROM tenants ORDER BY id')
          .flatMap(({ id: tenantId }) =>
            sql.all<{ id: string }>("SELECT id FROM runs WHERE tenant_id = ? AND status = 'running' ORDER BY created_at", [tenantId]),
          )
          .map((row) => row.id),
      ),

    finishRunning: (ids, finish) =>
      store.write((sql) => {
        const finished: FinishedRun[] = [];
        for (const id of ids) {
          const row = sql.get<RunRow>("SELECT * FROM runs WHERE id = ? AND status = 'running'", [id]);
          if (!row) continue;
          const { event, final } = finish(fromRow(row), attemptsSpent(sql, id));
          insertEvent(sql, event);
          patchRun(sql, id, {
            status: final.status,
            route: final.route,
            usage: final.usage,
            costUsd: final.costUsd,
            priced: final.priced,
            error: final.error,
            completedAt: final.completedAt,
            eventCount: final.eventCount,
            lastHash: final.lastHash,
            reasonCode: final.reasonCode,
          });
          finished.push(final);
        }
        if (finished.length > 0) addToRollups(sql, finished);
        return finished.length;
      }),

    async pruneTenantRuns(tenantId, cutoff, batch) {
      let deleted = 0;
      while (deleted < batch) {
        const { count, cut } = await store.write((sql) => {
          const runs = sql.all<{ id: string; event_count: number }>(
            // A run still under way is left to finish first: deleting it would leave its last writes (events,
            // attempts, rollups, its cache entry) without it, and its request's answer without its run. The finished
            // ones are sought through the status index (a status at a time, oldest first), so that runs left running
            // are never read: through the created_at index, `status != 'running'` read every expired running run's
            // row again in every batch of every pass.
            `SELECT id, event_count FROM runs WHERE tenant_id = ? AND status IN (${placeholders(FINISHED_STATUSES.length)}) AND created_at < ?
             ORDER BY status DESC, created_at LIMIT ?`,
            [tenantId, ...FINISHED_STATUSES, cutoff, batch - deleted],
          );
          // The runs whose events fit in one write's budget (always the first), the rest in the next write.
          let take = 1;
          for (let events = runs[0]?.event_count ?? 0; take < runs.length && events + runs[take]!.event_count <= PRUNE_EVENTS_PER_WRITE; take++) {
            events += runs[take]!.event_count;
          }
          // And those deleted before the write's time is up: the rest in the next write. Overwritten in the file, not
          // only unlinked from the tables (`erasing`): a run holds prompts, answers and trace payloads.
          const count = erasing(sql, () => deleteRuns(sql, runs.slice(0, take).map((run) => run.id), pruneWriteMs));
          return { count, cut: count < runs.length };
        });
        deleted += count;
        if (!cut) break;
      }
      return deleted;
    },
  };
}
