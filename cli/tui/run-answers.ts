/**
 * The runs answers (the list; a run's detail, trace events, integrity, economics) as the screens' types, read field
 * by field.
 * `--url` may name a server that is not svc, or a hostile one: a section may be a string (`"sideEffects": {}`,
 * `"events": "x"`), a number a string, an object null. Every field here has the type its view reads whatever the
 * answer held (a value of another type is none: `-` on screen), and every text is cut short, so a field of megabytes
 * costs the terminal one line. The list's rows are made text the same way (format.ts, toRunRow).
 */

/** The longest text kept of one field: wider than any terminal line, far below what would slow a redraw. */
export const MAX_FIELD_CHARS = 1024;

import type { Pagination, RunSummary } from '../../src/client/client.ts';

type Fields = Record<string, unknown>;

const fieldsOf = (value: unknown): Fields => (typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Fields) : {});
const objectOrNull = (value: unknown): Fields | null => (typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Fields) : null);
const listOf = (value: unknown): unknown[] => (Array.isArray(value) ? value : []);
/** The items of `value` that are objects (none when it is not a list), each read by `read`. */
const objectsOf = <T>(value: unknown, read: (item: Fields) => T): T[] =>
  listOf(value)
    .map(objectOrNull)
    .filter((item) => item !== null)
    .map(read);

/** Text as shown: a string (cut to MAX_FIELD_CHARS), a number or boolean written out; null for anything else. */
export function textOf(value: unknown): string | null {
  if (typeof value === 'string') return value.length > MAX_FIELD_CHARS ? `${value.slice(0, MAX_FIELD_CHARS - 1)}…` : value;
  return typeof value === 'number' || typeof value === 'boolean' ? String(value) : null;
}

/** A finite number, or null. */
export function numberOf(value: unknown): number | null {
  return typeof value === 'number' && Number.isFinite(value) ? value : null;
}

export interface RouteExplanationView {
  route: string | null;
  reason: string | null;
  rejectedAlternatives: Array<{ route: string | null; reason: string | null }>;
  cache: Array<{ cacheType: string | null; lookup: string | null; write: string | null; control: string | null; sourceRunId: string | null }>;
  fallback: { from: string | null; to: string | null; reason: string | null } | null;
  policyVerdict: { decision: string | null; policy: string | null } | null;
  executionMethod: { id: string | null; referenceGrade: string | null } | null;
}

/** The run's headline and route explanation. */
export interface RunView {
  status: string | null;
  route: string | null;
  model: string | null;
  provider: string | null;
  wire: string | null;
  mode: string | null;
  latencyMs: number | null;
  createdAt: string | null;
  error: { kind: string | null; message: string | null } | null;
  /** Null when the answer gave none: the screen then reads the run again on every refresh. */
  eventCount: number | null;
  routeExplanation: RouteExplanationView | null;
}

/** A side-effect record of a run (SPEC 2.3), as the detail endpoint returns it. */
export interface SideEffectView {
  toolName: string | null;
  level: string | null;
  state: string | null;
  idempotencyKey: string | null;
  reason: string | null;
}

/** A run with what the detail screen shows beside its trace: side effects. */
export interface RunDetailView {
  run: RunView;
  /** The newest side effects the answer holds (svc sends a bounded window of them, an older gateway all). */
  sideEffects: SideEffectView[];
  /** How many the run holds: the window's total, or, from an older gateway that sends no window, the list's length. */
  sideEffectTotal: number;
}

export interface TraceEventLine {
  seq: number | null;
  type: string | null;
  payload: Fields;
  createdAt: string | null;
}

/** One page of trace events, ascending by seq, and where the older page starts. */
export interface EventPage {
  events: TraceEventLine[];
  window: { hasMore: boolean; nextBefore: number | null };
}

/** The chain verdict: verified only when the answer says `"ok": true`. */
export interface IntegrityView {
  ok: boolean;
  eventCount: number | null;
  brokenAt: number | null;
  reason: string | null;
}

export interface TokensView {
  promptTokens: number | null;
  completionTokens: number | null;
  totalTokens: number | null;
}

export interface EconomicsView {
  providerUsd: number | null;
  optimizerUsd: number | null;
  referenceUsd: number | null;
  referenceSource: string | null;
  /** False only when the answer says so (an unpriced model). */
  priced: boolean;
  savingsUsd: number | null;
  ghostUsd: number | null;
  savedMs: number | null;
  marginRatio: number | null;
  tokensActual: TokensView | null;
  tokensCustomer: TokensView | null;
}

function routeExplanationOf(value: unknown): RouteExplanationView | null {
  const explanation = objectOrNull(value);
  if (!explanation) return null;
  const fallback = objectOrNull(explanation.fallback);
  const verdict = objectOrNull(explanation.policyVerdict);
  const method = objectOrNull(explanation.executionMethod);
  return {
    route: textOf(explanation.route),
    reason: textOf(explanation.reason),
    rejectedAlternatives: objectsOf(explanation.rejectedAlternatives, (item) => ({ route: textOf(item.route), reason: textOf(item.reason) })),
    cache: objectsOf(explanation.cache, (item) => ({
      cacheType: textOf(item.cacheType),
      lookup: textOf(item.lookup),
      write: textOf(item.write),
      control: textOf(item.control),
      sourceRunId: textOf(item.sourceRunId),
    })),
    fallback: fallback ? { from: textOf(fallback.from), to: textOf(fallback.to), reason: textOf(fallback.reason) } : null,
    policyVerdict: verdict ? { decision: textOf(verdict.decision), policy: textOf(verdict.policy) } : null,
    executionMethod: method ? { id: textOf(method.id), referenceGrade: textOf(method.referenceGrade) } : null,
  };
}

/** `GET /api/v1/runs/:id`: the run and its side effects. */
export function runDetailOf(answer: unknown): RunDetailView {
  const fields = fieldsOf(answer);
  const run = fieldsOf(fields.run);
  const error = objectOrNull(run.error);
  const sideEffects = objectsOf(fields.sideEffects, (effect) => ({
    toolName: textOf(effect.toolName),
    level: textOf(effect.level),
    state: textOf(effect.state),
    idempotencyKey: textOf(effect.idempotencyKey),
    reason: textOf(effect.reason),
  }));
  return {
    run: {
      status: textOf(run.status),
      route: textOf(run.route),
      model: textOf(run.model),
      provider: textOf(run.provider),
      wire: textOf(run.wire),
      mode: textOf(run.mode),
      latencyMs: numberOf(run.latencyMs),
      createdAt: textOf(run.createdAt),
      error: error ? { kind: textOf(error.kind), message: textOf(error.message) } : typeof run.error === 'string' ? { kind: null, message: textOf(run.error) } : null,
      eventCount: numberOf(run.eventCount),
      routeExplanation: routeExplanationOf(run.routeExplanation),
    },
    sideEffects,
    sideEffectTotal: totalOf(fields.sideEffectWindow, sideEffects.length),
  };
}

/** A window's `total`, never below the records at hand (a server that is not svc may say anything). */
function totalOf(window: unknown, held: number): number {
  const total = numberOf(fieldsOf(window).total);
  return total !== null && Number.isSafeInteger(total) && total > held ? total : held;
}

/** `GET /api/v1/runs/:id/events`: the events that are objects, with their fields typed. */
export function eventPageOf(answer: unknown): EventPage {
  const fields = fieldsOf(answer);
  const window = fieldsOf(fields.window);
  return {
    events: objectsOf(fields.events, (event) => ({ seq: numberOf(event.seq), type: textOf(event.type), payload: fieldsOf(event.payload), createdAt: textOf(event.createdAt) })),
    window: { hasMore: window.hasMore === true, nextBefore: numberOf(window.nextBefore) },
  };
}

/** `GET /api/v1/runs/:id/integrity`. */
export function integrityOf(answer: unknown): IntegrityView {
  const fields = fieldsOf(answer);
  return { ok: fields.ok === true, eventCount: numberOf(fields.eventCount), brokenAt: numberOf(fields.brokenAt), reason: textOf(fields.reason) };
}

function tokensOf(value: unknown): TokensView | null {
  const tokens = objectOrNull(value);
  return tokens ? { promptTokens: numberOf(tokens.promptTokens), completionTokens: numberOf(tokens.completionTokens), totalTokens: numberOf(tokens.totalTokens) } : null;
}

/** `GET /api/v1/runs/:id/economics`. */
export function economicsOf(answer: unknown): EconomicsView {
  const fields = fieldsOf(answer);
  const cost = fieldsOf(fields.cost);
  const reference = fieldsOf(fields.reference);
  const savings = fieldsOf(fields.savings);
  const tokens = fieldsOf(fields.tokens);
  return {
    providerUsd: numberOf(cost.providerUsd),
    optimizerUsd: numberOf(cost.optimizerUsd),
    referenceUsd: numberOf(reference.costUsd),
    referenceSource: textOf(reference.source),
    priced: fields.priced !== false,
    savingsUsd: numberOf(savings.usd),
    ghostUsd: numberOf(savings.ghostUsd),
    savedMs: numberOf(savings.ms),
    marginRatio: numberOf(fieldsOf(fields.margin).ratio),
    tokensActual: tokensOf(tokens.actual),
    tokensCustomer: tokensOf(tokens.customer),
  };
}

/** One page of the run list with its route/status facet counts. */
export interface RunListPage {
  /** Objects, each made text cell by cell by toRunRow (format.ts): their fields may still have any type. */
  runs: RunSummary[];
  /** `nextBefore`: the `before` of the next page, null on the last one (and from a server without cursors). */
  pagination: Pagination & { nextBefore: string | null };
  facets: { route: Record<string, number>; status: Record<string, number> };
}

/** Facet counts: the values that are counts. */
function countsOf(value: unknown): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const [key, n] of Object.entries(fieldsOf(value))) if (numberOf(n) !== null) counts[key] = n as number;
  return counts;
}

/** A run id as the list's cursor: one word of text (the API's ids are up to 200 characters), else null. */
const runIdOf = (value: unknown): string | null => (typeof value === 'string' && /^\S{1,200}$/.test(value) ? value : null);

/**
 * `GET /api/v1/runs`: the runs that are objects, the pagination and facets as numbers. An answer without a list of
 * runs is an error: whatever answered is not svc, and "No runs" would say it has none.
 */
export function runListPageOf(answer: unknown): RunListPage {
  const fields = fieldsOf(answer);
  if (!Array.isArray(fields.runs)) throw new Error("the server's answer to GET /api/v1/runs holds no list of runs: is it svc?");
  const runs = fields.runs.map(objectOrNull).filter((run) => run !== null) as unknown as RunSummary[];
  const pagination = fieldsOf(fields.pagination);
  const facets = fieldsOf(fields.facets);
  return {
    runs,
    pagination: {
      limit: numberOf(pagination.limit) ?? runs.length,
      offset: numberOf(pagination.offset) ?? 0,
      total: numberOf(pagination.total) ?? runs.length,
      hasMore: pagination.hasMore === true,
      nextBefore: runIdOf(pagination.nextBefore),
    },
    facets: { route: countsOf(facets.route), status: countsOf(facets.status) },
  };
}
