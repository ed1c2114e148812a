/**
 * Reading the evidence (SPEC 4.9): runs, their trace windows, route explanations and chain integrity. Every read
 * naming a run first settles the pending ledger commit (read-your-writes for `x-svc-run-id`), and is scoped to the
 * caller's tenant, and to its app for app-pinned identities: anything else is a 404, never a 403 that would confirm
 * the id exists.
 */
import { toIso, type Clock } from '../core/clock.ts';
import { notFound } from '../core/errors.ts';
import { pageOf, type Page } from '../core/pagination.ts';
import type { AuthContext } from '../identity/auth-context.ts';
import { verifyChain } from './chain.ts';
import type { RunsRepository } from './repo.ts';
import type { AttemptRecord, RunFilter, RunRecord, TraceEvent } from './types.ts';

/** Byte budget of one trace page: a page stops before it would exceed this many payload bytes (>= 1 event). */
export const EVENT_PAGE_MAX_BYTES = 512 * 1024;
export const EVENT_PAGE_DEFAULT_LIMIT = 100;

export interface RunsQuery {
  limit: number;
  offset: number;
  route?: string;
  status?: string;
  provider?: string;
  model?: string;
  since?: number;
}

export interface EventWindow {
  limit: number;
  count: number;
  hasMore: boolean;
  nextBefore: number | null;
  truncatedByBytes: boolean;
}

export interface RunsService {
  list(auth: AuthContext, query: RunsQuery): Promise<{ runs: RunView[]; pagination: Page; facets: { route: Record<string, number>; status: Record<string, number> } }>;
  get(auth: AuthContext, id: string, window: { limit: number; before?: number }): Promise<RunDetail>;
  events(auth: AuthContext, id: string, window: { limit: number; before?: number }): Promise<{ runId: string; events: EventView[]; window: EventWindow }>;
  route(auth: AuthContext, id: string): Promise<{ runId: string; status: string; route: string | null; routeExplanation: RunRecord['routeExplanation'] }>;
  integrity(auth: AuthContext, id: string): Promise<IntegrityView>;
  /** The run as stored (for other services, e.g. feedback), scoped like every read. */
  find(auth: AuthContext, id: string): Promise<RunRecord>;
}

export type RunView = ReturnType<typeof runView>;
export type EventView = ReturnType<typeof eventView>;

export interface RunDetail {
  run: RunView;
  events: EventView[];
  window: EventWindow;
  attempts: ReturnType<typeof attemptView>[];
  sideEffects: unknown[];
  feedback: unknown[];
}

export interface IntegrityView {
  runId: string;
  ok: boolean;
  eventCount: number;
  brokenAt: number | null;
  reason: string | null;
  headHash: string;
  checkedAt: string;
}

export function runView(run: RunRecord) {
  return {
    id: run.id,
    status: run.status,
    route: run.route,
    wire: run.wire,
    model: run.model,
    provider: run.provider,
    mode: run.mode,
    stream: run.stream,
    appId: run.appId,
    agent: run.agent,
    subject: run.subject,
    keyId: run.keyId,
    requestId: run.requestId,
    usage: run.usage,
    costUsd: run.costUsd,
    priced: run.priced,
    savedUsd: run.savedUsd,
    ghostSavedUsd: run.ghostSavedUsd,
    savedMs: run.savedMs,
    latencyMs: run.latencyMs,
    error: run.error,
    eventCount: run.eventCount,
    routeExplanation: run.routeExplanation,
    createdAt: toIso(run.createdAt),
    completedAt: run.completedAt === null ? null : toIso(run.completedAt),
  };
}

export function eventView(event: TraceEvent) {
  return {
    seq: event.seq,
    type: event.type,
    payload: event.payload,
    createdAt: toIso(event.createdAt),
    prevHash: event.prevHash,
    hash: event.hash,
  };
}

function attemptView(attempt: AttemptRecord) {
  return {
    seq: attempt.seq,
    provider: attempt.provider,
    model: attempt.model,
    outcome: attempt.outcome,
    errorKind: attempt.errorKind,
    upstreamStatus: attempt.upstreamStatus,
    promptTokens: attempt.promptTokens,
    completionTokens: attempt.completionTokens,
    costUsd: attempt.costUsd,
    latencyMs: attempt.latencyMs,
    createdAt: toIso(attempt.createdAt),
  };
}

/** Keep the newest events that fit the byte budget (at least one), in append order. */
function boundByBytes(events: TraceEvent[]): { kept: TraceEvent[]; truncated: boolean } {
  let bytes = 0;
  let start = events.length;
  while (start > 0) {
    const size = Buffer.byteLength(JSON.stringify(events[start - 1]!.payload));
    if (start < events.length && bytes + size > EVENT_PAGE_MAX_BYTES) break;
    bytes += size;
    start -= 1;
  }
  return { kept: events.slice(start), truncated: start > 0 };
}

export function createRunsService(deps: { repo: RunsRepository; clock: Clock }): RunsService {
  const { repo, clock } = deps;

  async function find(auth: AuthContext, id: string): Promise<RunRecord> {
    await repo.settle();
    const run = await repo.get(auth.tenantId, id);
    if (!run || (!auth.tenantWide && run.appId !== auth.appId)) throw notFound('Run');
    return run;
  }

  async function window(runId: string, options: { limit: number; before?: number }) {
    const page = await repo.eventsBefore(runId, options);
    const { kept, truncated } = boundByBytes(page);
    const first = kept[0];
    const hasMore = first !== undefined && first.seq > 1;
    return {
      events: kept.map(eventView),
      window: {
        limit: options.limit,
        count: kept.length,
        hasMore,
        nextBefore: hasMore ? first.seq : null,
        truncatedByBytes: truncated,
      },
    };
  }

  return {
    find,

    async list(auth, query) {
      await repo.settle();
      const filter: RunFilter = { tenantId: auth.tenantId };
      if (!auth.tenantWide) filter.appId = auth.appId;
      if (query.route) filter.route = query.route;
      if (query.status) filter.status = query.status;
      if (query.provider) filter.provider = query.provider;
      if (query.model) filter.model = query.model;
      if (query.since !== undefined) filter.since = query.since;
      const result = await repo.list(filter, { limit: query.limit, offset: query.offset });
      return { runs: result.runs.map(runView), pagination: pageOf(query.limit, query.offset, result.total), facets: result.facets };
    },

    async get(auth, id, options) {
      const run = await find(auth, id);
      const { events, window: eventWindow } = await window(run.id, options);
      const attempts = await repo.attempts(run.id);
      return { run: runView(run), events, window: eventWindow, attempts: attempts.map(attemptView), sideEffects: [], feedback: [] };
    },

    async events(auth, id, options) {
      const run = await find(auth, id);
      return { runId: run.id, ...(await window(run.id, options)) };
    },

    async route(auth, id) {
      const run = await find(auth, id);
      return { runId: run.id, status: run.status, route: run.route, routeExplanation: run.routeExplanation };
    },

    async integrity(auth, id) {
      const run = await find(auth, id);
      const verdict = verifyChain(run.id, await repo.allEvents(run.id), run.eventCount);
      if (verdict.ok && verdict.headHash !== run.lastHash) {
        verdict.ok = false;
        verdict.brokenAt = verdict.eventCount;
        verdict.reason = 'the chain head does not match the hash recorded on the run';
      }
      return { runId: run.id, ...verdict, checkedAt: toIso(clock.now()) };
    },
  };
}
