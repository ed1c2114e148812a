/**
 * A run's integrity (`GET /api/v1/runs/:id/integrity`, docs/evidence.md "Integrity"): its trace chain recomputed,
 * the chain's head matched against the run row, and then the row's start and outcome matched against those hashed
 * into the chain. A finished run's closing event (`run.<status>`: ledger.ts `finish`, interrupted.ts) carries its route,
 * provider, usage, cost, latency and error; the row keeps the same values in columns that lists, savings and exports
 * read, and nothing hashes those columns. Without this comparison an edit of the data file (`UPDATE runs SET
 * cost_usd = 0`) left every chain intact and the run verified.
 */
import { canonicalJson } from '../core/canonical-json.ts';
import { chainWalker, type ChainVerdict } from './chain.ts';
import { RUN_STATUSES, type RunRecord, type RunUsage, type TraceEvent } from './types.ts';

/** The types of the event that closes a run: one per finished status. */
const CLOSING_TYPES: ReadonlySet<string> = new Set(RUN_STATUSES.filter((status) => status !== 'running').map((status) => `run.${status}`));

type Payload = Record<string, unknown>;

/** Columns of a run row, each with whether it holds what an event of the run's chain hashed. */
type HashedColumns = ReadonlyArray<readonly [column: string, matches: (run: RunRecord, payload: Payload) => boolean]>;

type Mismatch = { brokenAt: number; reason: string };

/** The first of `columns` whose value in the row is not what `event` hashed, reported at that event. */
function columnMismatch(run: RunRecord, event: TraceEvent, columns: HashedColumns): Mismatch | null {
  for (const [column, matches] of columns) {
    if (!matches(run, event.payload)) return { brokenAt: event.seq, reason: `the run's ${column} does not match its hashed ${event.type} event` };
  }
  return null;
}

const usageOf = (payload: Payload): Partial<RunUsage> => (payload.usage ?? {}) as Partial<RunUsage>;

/**
 * The outcome columns of a run row and whether each holds what the closing event hashed. Compared as the row stores
 * them: `total_tokens` is not a column (the row derives it from the other two, where the event keeps the provider's
 * figure), and the error is compared as canonical JSON, its key order being no part of it. Numbers are compared
 * exactly: a cost is a double in the payload's JSON and in the REAL column alike, and each keeps every bit.
 */
const OUTCOME_COLUMNS: HashedColumns = [
  ['route', (run, payload) => (payload.route ?? null) === run.route],
  ['provider', (run, payload) => (payload.provider ?? null) === run.provider],
  ['prompt_tokens', (run, payload) => usageOf(payload).promptTokens === run.usage.promptTokens],
  ['completion_tokens', (run, payload) => usageOf(payload).completionTokens === run.usage.completionTokens],
  ['cost_usd', (run, payload) => payload.costUsd === run.costUsd],
  ['latency_ms', (run, payload) => (payload.latencyMs ?? null) === run.latencyMs],
  ['error_json', (run, payload) => canonicalJson(payload.error ?? null) === canonicalJson(run.error)],
];

/**
 * The columns a run row is given when it starts, and whether each holds what its `run.started` event hashed (ledger.ts
 * `start`: every run, gateway or SDK-ingested, opens with it). App, agent and subject are in the payload only when
 * set, so a missing one stands for none.
 */
const START_COLUMNS: HashedColumns = [
  ['wire', (run, payload) => payload.wire === run.wire],
  ['model', (run, payload) => payload.model === run.model],
  ['stream', (run, payload) => payload.stream === run.stream],
  ['mode', (run, payload) => payload.mode === run.mode],
  ['app_id', (run, payload) => (payload.appId ?? null) === (run.appId || null)],
  ['agent', (run, payload) => (payload.agent ?? null) === (run.agent || null)],
  ['subject', (run, payload) => (payload.subject ?? null) === (run.subject || null)],
];

/** Where a run row disagrees with the start its verified chain holds, if it does. */
function startMismatch(run: RunRecord, started: TraceEvent | undefined): Mismatch | null {
  if (!started || started.type !== 'run.started') return { brokenAt: 1, reason: 'the run\'s chain does not open with its run.started event' };
  return columnMismatch(run, started, START_COLUMNS);
}

/** Where a run row disagrees with the outcome its verified chain (of `count` events) holds, if it does. */
function outcomeMismatch(run: RunRecord, closing: TraceEvent | undefined, count: number): Mismatch | null {
  if (!closing) {
    // A running run has no outcome yet; a finished one always had its closing event chained with it.
    if (run.status === 'running') return null;
    return { brokenAt: count + 1, reason: `the run is ${run.status} but its chain holds no closing run.* event` };
  }
  if (closing.type !== `run.${run.status}`) return { brokenAt: closing.seq, reason: `the run's status does not match its hashed ${closing.type} event` };
  return columnMismatch(run, closing, OUTCOME_COLUMNS);
}

/**
 * A run's verification fed its events a page at a time, in append order (integrity and the evidence packet read a
 * long trace in pages, the event loop getting a turn between them).
 */
export function runVerifier(runId: string) {
  const chain = chainWalker(runId);
  let started: TraceEvent | undefined;
  // SDK clients cannot append `run.*` events (sdk-events.ts), so a closing event in a verified chain is svc's own.
  let closing: TraceEvent | undefined;
  return {
    get count(): number {
      return chain.count;
    },
    feed(events: readonly TraceEvent[]): void {
      if (chain.count === 0) started = events[0];
      closing ??= events.find((event) => CLOSING_TYPES.has(event.type));
      chain.feed(events);
    },
    /** The verdict on the events fed, and on the run's row against them. */
    verdict(run: RunRecord): ChainVerdict {
      const verdict = chain.verdict(run.eventCount);
      if (!verdict.ok) return verdict;
      if (verdict.headHash !== run.lastHash) {
        return { ...verdict, ok: false, brokenAt: verdict.eventCount, reason: 'the chain head does not match the hash recorded on the run' };
      }
      const mismatch = startMismatch(run, started) ?? outcomeMismatch(run, closing, verdict.eventCount);
      return mismatch ? { ...verdict, ok: false, ...mismatch } : verdict;
    },
  };
}
