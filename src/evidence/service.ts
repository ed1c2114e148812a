/**
 * Reading the evidence (SPEC 4.9): runs, their trace windows, route explanations and chain integrity. Every read
 * naming a run first settles the pending ledger commit (read-your-writes for `x-svc-run-id`), and is scoped to the
 * caller's tenant, and to its app for app-pinned identities: anything else is a 404, never a 403 that would confirm
 * the id exists.
 */
import { setImmediate as nextTurn } from 'node:timers/promises';
import { canonicalJson } from '../core/canonical-json.ts';
import type { JsonText, StreamedMember } from '../core/json-slices.ts';
import { toIso, type Clock } from '../core/clock.ts';
import { AppError, invalid, notFound } from '../core/errors.ts';
import { newId } from '../core/ids.ts';
import type { AuditService } from '../audit/service.ts';
import { actorOf } from '../identity/auth-context.ts';
import { eventHash, type ChainVerdict } from './chain.ts';
import { runEconomics } from './economics.ts';
import { parseMetricsFeedback, ratingBody } from './feedback-rules.ts';
import type { Ledger } from './ledger.ts';
import { RUN_CLIENT_TRACE_MAX_BYTES, RUN_TRACE_MAX_EVENTS, type IngestBody, type TraceBody } from './sdk-events.ts';
import type { SideEffectRecord } from './side-effects.ts';
import { pageOf, type Page } from '../core/pagination.ts';
import type { AuthContext } from '../identity/auth-context.ts';
import type { FeedbackRecord, RunPosition, RunsRepository, TraceKey } from './repo.ts';
import { runVerifier } from './run-integrity.ts';
import { storedInstant } from './stored-values.ts';
import { readableOrNull, unreadablePayload } from './stored-payload.ts';
import { INGESTED_REASON, type AttemptRecord, type RunFilter, type RunRecord, type TraceEvent } from './types.ts';

/** For a trace read only to be verified. */
const keepNone = (): boolean => false;

function noReplayBundle(run: RunRecord): AppError {
  return new AppError('not_found', { message: `Run ${run.id} has no replay bundle: only gateway model requests keep one.` });
}

/** Byte budget of one trace page: a page stops before it would exceed this many payload bytes (>= 1 event). */
export const EVENT_PAGE_MAX_BYTES = 512 * 1024;
export const EVENT_PAGE_DEFAULT_LIMIT = 100;
/**
 * Run detail's side effects and feedback: the newest this many by default, within the trace page's byte budget. A
 * run may hold 10,000 side effects (16 MiB of payload) and 200 feedback records (64 KiB each): all of them made the
 * detail answer of a large run tens of megabytes, for a screen that shows a handful.
 */
export const DETAIL_SECTION_DEFAULT_LIMIT = 50;

export interface RunsQuery {
  limit: number;
  offset: number;
  route?: string;
  status?: string;
  provider?: string;
  model?: string;
  since?: number;
  /** Only SDK-ingested prompts (true), or every run but them (false). */
  ingested?: boolean;
  /** A run of the caller's (the previous page's `pagination.nextBefore`): the page lists the runs after it. */
  before?: string;
}

/**
 * The runs list's pagination: `nextBefore` is the last run's id when another run follows it, else null. Following it
 * (`before`) lists each run once while runs are added above the walk or leave a filter, which `offset` cannot.
 */
export interface RunsPage extends Page {
  nextBefore: string | null;
}

export interface EventWindow {
  limit: number;
  count: number;
  hasMore: boolean;
  nextBefore: number | null;
  truncatedByBytes: boolean;
}

/** A window over one of run detail's record sections (side effects, feedback): newest kept, in append order. */
export interface SectionWindow {
  limit: number;
  count: number;
  /** Records the run holds in the section. */
  total: number;
  hasMore: boolean;
  /** Pass as the section's `*Before` query for the older records. */
  nextBefore: number | null;
  truncatedByBytes: boolean;
}

/** Which window of each section run detail answers: `before` is exclusive (side effects: seq; feedback: position). */
export interface DetailWindows {
  events: { limit: number; before?: number };
  sideEffects: { limit: number; before?: number };
  feedback: { limit: number; before?: number };
}

export interface RunsService {
  list(auth: AuthContext, query: RunsQuery): Promise<{ runs: RunView[]; pagination: RunsPage; facets: { route: Record<string, number>; status: Record<string, number> } }>;
  get(auth: AuthContext, id: string, windows: DetailWindows): Promise<RunDetail>;
  events(auth: AuthContext, id: string, window: { limit: number; before?: number }): Promise<{ runId: string; events: EventView[]; window: EventWindow }>;
  route(auth: AuthContext, id: string): Promise<{ runId: string; status: string; route: string | null; routeExplanation: RunRecord['routeExplanation'] }>;
  integrity(auth: AuthContext, id: string): Promise<IntegrityView>;
  /** The run as stored (for other services, e.g. feedback), scoped like every read. */
  find(auth: AuthContext, id: string): Promise<RunRecord>;
  economics(auth: AuthContext, id: string): Promise<ReturnType<typeof runEconomics>>;
  /** The Chorus receipt of a run (its `chorus.receipt` trace event); 404 when the run has none. */
  receipt(auth: AuthContext, id: string): Promise<{ runId: string; receipt: Record<string, unknown>; eventSeq: number; eventHash: string }>;
  replayBundle(auth: AuthContext, id: string): Promise<ReplayBundle>;
  /** What a replay-bundle GET refuses before its body (404: a run not seen, or without a bundle), nothing read beyond. */
  checkReplayBundle(auth: AuthContext, id: string): Promise<void>;
  /**
   * The evidence packet's members, in order (objectSlices writes its text, objectOf makes it whole): what refuses it is
   * read first; its large sections are read as they are written.
   */
  evidencePacket(auth: AuthContext, id: string): Promise<readonly StreamedMember[]>;
  /**
   * Append an SDK trace event (committed before it returns). An event with an idempotency key the run holds an
   * event of that type for already is not appended again: the answer names that event, `replayed: true`.
   */
  appendTrace(auth: AuthContext, body: TraceBody): Promise<{ runId: string; seq: number; hash: string; replayed?: true }>;
  /** Record an externally handled prompt as a completed observed run (SPEC 4.19); committed before it returns. */
  ingestPrompt(auth: AuthContext, body: IngestBody): Promise<{ runId: string }>;
  rate(auth: AuthContext, id: string, body: unknown): Promise<FeedbackView>;
  addMetrics(auth: AuthContext, id: string, body: unknown): Promise<FeedbackView>;
}

export type FeedbackView = ReturnType<typeof feedbackView>;

export interface ReplayBundle {
  format: 'svc.replay-bundle';
  version: 1;
  runId: string;
  wire: string;
  model: string;
  createdAt: string | null;
  /** The request as stored, written into the bundle's text as it is (its toJSON parses it). */
  request: JsonText;
  identity: Record<string, unknown>;
  routeInputs: Record<string, unknown>;
  routeDecision: { route: string | null; status: string; reason: string | null };
  responseHash: string | null;
}

function feedbackView(record: FeedbackRecord) {
  return { id: record.id, runId: record.runId, type: record.kind, ...record.body, actor: record.actor, createdAt: storedInstant(record.createdAt) };
}

function unreadableSideEffectPayload(payload: unknown): string | null {
  const why = unreadablePayload(payload);
  return why === null ? null : `the stored payload ${why}`;
}

function sideEffectView(record: SideEffectRecord) {
  return {
    id: record.id,
    seq: record.seq,
    toolName: record.toolName,
    level: record.level,
    state: record.state,
    idempotencyKey: record.idempotencyKey,
    payload: record.payload,
    /** Why `payload` is its stored text (`{storedText}`), when it could not be read as stored (the data file edited). */
    payloadUnreadable: unreadableSideEffectPayload(record.payload),
    reason: record.reason,
    createdAt: storedInstant(record.createdAt),
    updatedAt: storedInstant(record.updatedAt),
  };
}

export type RunView = ReturnType<typeof runView>;
export type EventView = ReturnType<typeof eventView>;

export interface RunDetail {
  run: RunView;
  events: EventView[];
  window: EventWindow;
  attempts: ReturnType<typeof attemptView>[];
  sideEffects: ReturnType<typeof sideEffectView>[];
  sideEffectWindow: SectionWindow;
  feedback: FeedbackView[];
  feedbackWindow: SectionWindow;
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
    fingerprint: run.fingerprint,
    executionMethod: run.executionMethod,
    reasonCode: run.reasonCode,
    /** An SDK-ingested prompt: on the live route, but handled outside svc (docs/evidence.md, "SDK ingestion"). */
    ingested: run.reasonCode === INGESTED_REASON,
    fallback: run.fallback,
    routeExplanation: run.routeExplanation,
    // null as well for a stored time that is not one (the data file edited): stored-values.ts.
    createdAt: storedInstant(run.createdAt),
    completedAt: run.completedAt === null ? null : storedInstant(run.completedAt),
  };
}

export function eventView(event: TraceEvent) {
  return {
    seq: event.seq,
    type: event.type,
    payload: event.payload,
    /** null when the stored time is not one (the data file edited): integrity reports the event. */
    createdAt: storedInstant(event.createdAt),
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
    createdAt: storedInstant(attempt.createdAt),
  };
}

/** Keep the newest items whose `weighed` part fits the byte budget (at least one), in append order. */
function boundByBytes<T>(events: T[], weighed: (item: T) => unknown = (event) => (event as TraceEvent).payload): { kept: T[]; truncated: boolean } {
  let bytes = 0;
  let start = events.length;
  while (start > 0) {
    const size = Buffer.byteLength(JSON.stringify(weighed(events[start - 1]!)) ?? '');
    if (start < events.length && bytes + size > EVENT_PAGE_MAX_BYTES) break;
    bytes += size;
    start -= 1;
  }
  return { kept: events.slice(start), truncated: start > 0 };
}

/**
 * A window over `records`, the newest `limit` (or fewer) of a section whose position key is below the asked `before`,
 * in append order, bounded by bytes; `keyOf` gives the key `before` and `nextBefore` speak of, `olderLeft` whether
 * the section holds older records below `before` than these.
 */
function sectionWindow<T>(records: T[], keyOf: (record: T, index: number) => number, options: { limit: number; total: number; olderLeft: boolean }) {
  const keyed = records.map((record, index) => ({ record, key: keyOf(record, index) }));
  const { kept, truncated } = boundByBytes(keyed, (entry) => entry.record);
  const hasMore = kept.length < keyed.length || options.olderLeft;
  const window: SectionWindow = {
    limit: options.limit,
    count: kept.length,
    total: options.total,
    hasMore,
    nextBefore: hasMore && kept.length > 0 ? kept[0]!.key : null,
    truncatedByBytes: truncated,
  };
  return { kept: kept.map((entry) => entry.record), window };
}

export interface RunsServiceDeps {
  repo: RunsRepository;
  clock: Clock;
  ledger: Ledger;
  audit: AuditService;
  /** Token estimate of an ingested prompt (the gateway's tokenizer). */
  countTokens: (text: string, model: string) => number;
  /** Where a read that a reply survives (a packet's replay bundle) reports its failure: the reply names no store error. */
  log: RunsLog;
}

export interface RunsLog {
  warn(message: string, error?: unknown): void;
}

/**
 * Trace events integrity reads and hashes in one turn of the event loop: at most 4 MiB of client payloads (each at
 * most 256 KiB), ~0.3 ms of gateway events.
 */
const INTEGRITY_PAGE_EVENTS = 16;
/**
 * Where a verification starts reading a trace: before any seq, not after 0. Appends number events from 1, but the
 * trace windows show every stored event, so one stored as 0 or below (an edit of the data file) was shown there and
 * left out of the verdict, which said ok.
 */
const TRACE_START = Number.NEGATIVE_INFINITY;
/** Side-effect or feedback records the evidence packet reads in one turn: at most 4 MiB, or 1 MiB, of payload. */
const PACKET_PAGE_RECORDS = 16;

/**
 * The pages of a paged read, `size` records a page, with a turn of the event loop after each: `pageAfter` reads the page
 * that follows the records read so far (how many, and the last), and a page shorter than `size` is the last.
 */
async function* pagesOf<T>(size: number, pageAfter: (count: number, last: T | undefined) => Promise<T[]>): AsyncGenerator<T[], void, undefined> {
  let count = 0;
  let last: T | undefined;
  for (;;) {
    const page = await pageAfter(count, last);
    if (page.length === 0) return;
    count += page.length;
    last = page[page.length - 1];
    yield page;
    await nextTurn();
    if (page.length < size) return;
  }
}

/** Each entry of each page mapped: a paged section's views, a page at a time. */
async function* mapPages<T, U>(pages: AsyncIterable<T[]>, view: (record: T) => U): AsyncGenerator<U[], void, undefined> {
  for await (const page of pages) yield page.map(view);
}

/** Feedback records a run may hold (each up to 64 KiB; the evidence packet carries them all). */
export const RUN_FEEDBACK_MAX = 200;

/**
 * The idempotency key of an SDK event that carries one (the `side_effect.*` types), as validated (trimmed). A
 * `tool.*` event's `idempotencyKey` is an extra field, kept as sent and never checked: data, not a key (taken as one,
 * a second call of a tool was refused, or dropped as a retry, whenever its SDK noted the side effect's key beside it).
 */
function traceKeyOf(body: TraceBody): TraceKey | undefined {
  if (!body.type.startsWith('side_effect.')) return undefined;
  const key = body.payload.idempotencyKey;
  return typeof key === 'string' ? { type: body.type, idempotencyKey: key } : undefined;
}

/**
 * The answer to an append whose key names an event the run holds: that event, when the append is a retry of it (the
 * same payload); a 409 when the key was used for another payload, which the client would otherwise take as recorded.
 */
function replayOf(runId: string, body: TraceBody, existing: TraceEvent) {
  if (canonicalJson(existing.payload) !== canonicalJson(body.payload)) {
    throw new AppError('conflict', {
      message: `The run holds a ${body.type} event with this idempotencyKey and another payload (seq ${existing.seq}).`,
      details: { seq: existing.seq },
    });
  }
  return { runId, seq: existing.seq, hash: existing.hash, replayed: true as const };
}

function traceFull(): AppError {
  return new AppError('conflict', {
    message: `The run's trace is full: a run holds at most ${RUN_TRACE_MAX_EVENTS} events and ${RUN_CLIENT_TRACE_MAX_BYTES} bytes of payload appended by clients.`,
    details: { maxEvents: RUN_TRACE_MAX_EVENTS, maxClientBytes: RUN_CLIENT_TRACE_MAX_BYTES },
  });
}

export function createRunsService(deps: RunsServiceDeps): RunsService {
  const { repo, clock, ledger, audit, countTokens, log } = deps;
  // Per run written by a request, the end of the last append through its recorder (see appendTrace).
  const recorderTurns = new Map<string, Promise<void>>();

  /** The run if the caller may read it (its tenant's, and its app's for an app-pinned identity), else null. */
  async function visible(auth: AuthContext, id: string): Promise<RunRecord | null> {
    await repo.settle();
    const run = await repo.get(auth.tenantId, id);
    return run && (auth.tenantWide || run.appId === auth.appId) ? run : null;
  }

  async function find(auth: AuthContext, id: string): Promise<RunRecord> {
    const run = await visible(auth, id);
    if (!run) throw notFound('Run');
    return run;
  }

  /**
   * Where a page after run `id` starts. A run the caller may not read is refused as one never made, so the answer
   * tells nothing of another tenant's or app's runs. Its filters do not apply: the run a walk stopped at may have
   * left them since (a running run that finished), and the walk goes on below it.
   */
  async function positionOf(auth: AuthContext, id: string): Promise<RunPosition> {
    const run = await visible(auth, id);
    if (!run) {
      const message = "no such run in your runs list; send the previous page's pagination.nextBefore";
      throw invalid(`before: ${message}`, { issues: [{ path: 'before', message }] });
    }
    return { createdAt: run.createdAt, id: run.id };
  }

  async function window(run: RunRecord, options: { limit: number; before?: number }) {
    const page = await repo.eventsBefore(run.tenantId, run.id, options);
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
      if (query.ingested !== undefined) filter.ingested = query.ingested;
      const below = query.before === undefined ? undefined : await positionOf(auth, query.before);
      const result = await repo.list(filter, { limit: query.limit, offset: query.offset, ...(below ? { below } : {}) });
      const last = result.runs.at(-1);
      const nextBefore = result.more && last ? last.id : null;
      // Below a cursor, `total` (the whole list's) cannot say whether more follow: the page's own read does.
      const page = pageOf(query.limit, query.offset, result.total);
      const pagination: RunsPage = { ...page, hasMore: below ? nextBefore !== null : page.hasMore, nextBefore };
      return { runs: result.runs.map(runView), pagination, facets: result.facets };
    },

    async get(auth, id, windows) {
      const run = await find(auth, id);
      const { events, window: eventWindow } = await window(run, windows.events);
      // Only the windows are read: every record (10,000 side effects, 16 MiB of payload) held the event loop ~0.25 s.
      const [attempts, effects, ratings] = await Promise.all([repo.attempts(run.tenantId, run.id), sideEffectWindow(run, windows.sideEffects), feedbackWindow(run, windows.feedback)]);
      return {
        run: runView(run),
        events,
        window: eventWindow,
        attempts: attempts.map(attemptView),
        sideEffects: effects.kept,
        sideEffectWindow: effects.window,
        feedback: ratings.kept,
        feedbackWindow: ratings.window,
      };
    },

    async events(auth, id, options) {
      const run = await find(auth, id);
      return { runId: run.id, ...(await window(run, options)) };
    },

    async route(auth, id) {
      const run = await find(auth, id);
      return { runId: run.id, status: run.status, route: run.route, routeExplanation: run.routeExplanation };
    },

    async economics(auth, id) {
      const run = await find(auth, id);
      return runEconomics(run, await repo.attempts(run.tenantId, run.id));
    },

    async receipt(auth, id) {
      const run = await find(auth, id);
      // Only that event: the run's whole trace (up to 16 MiB of client payloads) held the event loop ~0.1-0.2 s.
      const receipt = await repo.lastEventOfType(run.tenantId, run.id, 'chorus.receipt', run.eventCount);
      if (!receipt) throw new AppError('not_found', { message: `Run ${run.id} has no receipt: receipts are issued for svc/chorus runs.` });
      // The receipt is answered only as it was hashed: one edited in the data file is not vouched for (one event's
      // hash is cheap; whether the rest of the chain holds is integrity's to say).
      if (eventHash(receipt.prevHash, receipt) !== receipt.hash) {
        throw new AppError('conflict', {
          message: `The receipt of run ${run.id} does not match its hashed trace event: the run's data was modified (GET /api/v1/runs/${run.id}/integrity says where).`,
        });
      }
      return { runId: run.id, receipt: receipt.payload, eventSeq: receipt.seq, eventHash: receipt.hash };
    },

    async replayBundle(auth, id) {
      return bundleOf(await find(auth, id));
    },

    async checkReplayBundle(auth, id) {
      const run = await find(auth, id);
      if (!(await repo.hasReplay(run.tenantId, run.id))) throw noReplayBundle(run);
    },

    async evidencePacket(auth, id) {
      // Only the run can refuse the packet, so only it is read before the first byte; everything else is read as the
      // text reaches it, a page at a time, so that a packet at a run's limits (~41-57 MiB of JSON) is never held whole
      // (docs/evidence.md). The trace is read once: verified as its events are written, its verdict after them.
      const run = await find(auth, id);
      const trace = packetTrace(run);
      const [attempts, auditRows] = await Promise.all([repo.attempts(run.tenantId, run.id), audit.aboutTarget(auth, run.id)]);
      const generatedAt = toIso(clock.now());
      let replayBundleError: string | null = null;
      return [
        { key: 'format', value: () => 'svc.evidence-packet' },
        { key: 'version', value: () => 1 },
        { key: 'generatedAt', value: () => generatedAt },
        { key: 'run', value: () => runView(run) },
        { key: 'routeExplanation', value: () => run.routeExplanation },
        { key: 'economics', value: () => runEconomics(run, attempts) },
        // null for a run that keeps none (an ingested prompt), and for a bundle whose read failed: the row is read whole
        // before any of its text is written, so its failure need not abort the packet (the rest of the evidence stands);
        // `replayBundleError` says which, without the store's error.
        {
          key: 'replayBundle',
          value: () =>
            bundleOf(run).catch((error: unknown) => {
              if (!(error instanceof AppError && error.code === 'not_found')) {
                replayBundleError = 'the replay bundle could not be read';
                log.warn(`reading the replay bundle of run ${run.id} for its evidence packet failed`, error);
              }
              return null;
            }),
        },
        { key: 'replayBundleError', value: () => replayBundleError },
        { key: 'attempts', value: () => attempts.map(attemptView) },
        {
          key: 'sideEffects',
          pages: () => mapPages(pagesOf(PACKET_PAGE_RECORDS, (_, last: SideEffectRecord | undefined) => repo.sideEffectsAfter(run.tenantId, run.id, last?.seq ?? 0, PACKET_PAGE_RECORDS)), sideEffectView),
        },
        { key: 'feedback', pages: () => mapPages(pagesOf(PACKET_PAGE_RECORDS, (read) => repo.feedbackPage(run.tenantId, run.id, read, PACKET_PAGE_RECORDS)), feedbackView) },
        {
          key: 'audit',
          value: () =>
            auditRows.map((row) => ({
              id: row.id,
              seq: row.seq,
              action: row.action,
              decision: row.decision,
              actor: row.actor,
              target: row.target,
              details: row.details,
              createdAt: toIso(row.createdAt),
              prevHash: row.prevHash,
              hash: row.hash,
            })),
        },
        { key: 'events', pages: () => mapPages(trace.pages(), eventView) },
        { key: 'integrity', value: () => trace.integrity() },
        {
          key: 'chorus',
          value: () => (trace.chorusEvents.length > 0 ? { events: trace.chorusEvents.map(eventView), receipt: trace.chorusEvents.findLast((e) => e.type === 'chorus.receipt')?.payload ?? null } : null),
        },
      ] satisfies StreamedMember[];
    },

    async appendTrace(auth, body) {
      const run = await find(auth, body.runId);
      const budget = { bytes: body.payloadBytes, maxEvents: RUN_TRACE_MAX_EVENTS, maxClientBytes: RUN_CLIENT_TRACE_MAX_BYTES };
      const key = traceKeyOf(body);
      const recorder = ledger.active(run.id);
      if (recorder && !recorder.finished) {
        // The request is still writing this run (a stream in flight): its recorder owns the chain head. Its writes
        // so far are committed first, so that the budget is counted against the run as it stands; the appends through
        // it take turns, or concurrent ones all counted against the same committed events and all found room. So
        // too for keys: an earlier turn's keyed event is committed when the next turn looks for it.
        const event = await inTurn(run.id, async () => {
          await repo.settle();
          const existing = key ? await repo.keyedEvent(run.tenantId, run.id, key) : null;
          if (existing) return { duplicate: existing };
          if (!(await repo.reserveClientTrace(run.tenantId, run.id, body.payloadBytes, budget))) throw traceFull();
          if (!recorder.finished) return recorder.event(body.type, body.payload);
          // The request finished while the bytes were counted: from then on appends chain in the store (below), where
          // an event of its recorder would take a seq one of them took, and be lost. The count is given back, and the
          // event appended as to any committed run.
          const unbounded = { bytes: -body.payloadBytes, maxEvents: Number.MAX_SAFE_INTEGER, maxClientBytes: Number.MAX_SAFE_INTEGER };
          await repo.reserveClientTrace(run.tenantId, run.id, -body.payloadBytes, unbounded);
          return null;
        });
        if (event && 'duplicate' in event) return replayOf(run.id, body, event.duplicate);
        if (event) {
          await repo.settle();
          await repo.applySideEffects(run.tenantId, [event]);
          return { runId: run.id, seq: event.seq, hash: event.hash };
        }
      }
      const now = clock.now();
      const events = await repo.appendCommitted(
        run.tenantId,
        run.id,
        (head) => {
          const event = { runId: run.id, seq: head.seq + 1, type: body.type, payload: body.payload, createdAt: now };
          return [{ ...event, prevHash: head.hash, hash: eventHash(head.hash, event) }];
        },
        budget,
        key,
      );
      if (events === 'full') throw traceFull();
      if (events && 'duplicate' in events) return replayOf(run.id, body, events.duplicate);
      const event = events?.[0];
      if (!event) throw notFound('Run');
      return { runId: run.id, seq: event.seq, hash: event.hash };
    },

    async ingestPrompt(auth, body) {
      const { model } = body;
      const run = ledger.start({
        tenantId: auth.tenantId,
        appId: auth.appId,
        agent: auth.agent,
        subject: auth.subject,
        keyId: auth.keyId,
        mode: 'observe',
        wire: 'sdk_ingest',
        model,
        stream: false,
        requestId: null,
      });
      run.event('prompt.ingested', {
        source: body.source,
        prompt: body.prompt,
        ...(body.sessionId ? { sessionId: body.sessionId } : {}),
        ...(body.metadata ? { metadata: body.metadata } : {}),
      });
      const promptTokens = countTokens(body.prompt, model);
      run.finish({
        status: 'completed',
        route: 'live',
        provider: body.source,
        reasonCode: INGESTED_REASON,
        routeExplanation: {
          route: 'live',
          reason: `handled outside svc by ${body.source}; recorded by the SDK`,
          rejectedAlternatives: [],
          policyVerdict: { decision: 'allow', policy: null, reason: null },
          cache: [],
          artifact: null,
          estimatedSavings: { usd: 0, ms: 0, ghost: false },
          fallback: null,
          provider: body.source,
          model,
          executionMethod: { id: 'external', referenceGrade: 'not_applicable' },
        },
        usage: { promptTokens, completionTokens: 0, totalTokens: promptTokens },
        costUsd: 0,
        priced: false,
      });
      await onDisk(auth, run.id);
      return { runId: run.id };
    },

    async rate(auth, id, body) {
      const run = await find(auth, id);
      const rating = ratingBody.parse(body);
      return saveFeedback(auth, run, 'rating', { rating: rating.rating, correction: rating.correction ?? null });
    },

    async addMetrics(auth, id, body) {
      const run = await find(auth, id);
      const metrics = parseMetricsFeedback(body);
      return saveFeedback(auth, run, 'metrics', { ...metrics });
    },

    async integrity(auth, id) {
      return integrityOf(await find(auth, id));
    },
  };

  /** `append` once the run's earlier turns (appends through its recorder) have ended, however they ended. */
  function inTurn<T>(runId: string, append: () => Promise<T>): Promise<T> {
    const appended = (recorderTurns.get(runId) ?? Promise.resolve()).then(append);
    const ended = appended.then(
      () => undefined,
      () => undefined,
    );
    recorderTurns.set(runId, ended);
    void ended.then(() => {
      if (recorderTurns.get(runId) === ended) recorderTurns.delete(runId);
    });
    return appended;
  }

  async function saveFeedback(auth: AuthContext, run: RunRecord, kind: FeedbackRecord['kind'], body: Record<string, unknown>) {
    const record: FeedbackRecord = { id: newId('fbk'), runId: run.id, tenantId: run.tenantId, kind, body, actor: actorOf(auth), createdAt: clock.now() };
    const added = await repo.addFeedback(record, RUN_FEEDBACK_MAX);
    if (added === 'gone') throw notFound('Run');
    if (added === 'full') {
      throw new AppError('conflict', { message: `The run has the most feedback a run may hold (${RUN_FEEDBACK_MAX} records).`, details: { max: RUN_FEEDBACK_MAX } });
    }
    return feedbackView(record);
  }

  async function bundleOf(run: RunRecord): Promise<ReplayBundle> {
    const replay = await repo.replay(run.tenantId, run.id);
    if (!replay) throw noReplayBundle(run);
    return {
      format: 'svc.replay-bundle',
      version: 1,
      runId: run.id,
      wire: run.wire,
      model: run.model,
      createdAt: storedInstant(replay.createdAt),
      request: replay.request,
      identity: replay.identity,
      routeInputs: replay.inputs,
      // A stored explanation that is not JSON (`{storedText}`) gives no reason; the packet's routeExplanation shows it.
      routeDecision: { route: run.route, status: run.status, reason: readableOrNull(run.routeExplanation)?.reason ?? null },
      responseHash: replay.responseHash,
    };
  }

  /**
   * An ingestion is a management write: its 201 follows the run's commit and the log's flush, not just the commit.
   * The ledger drops a write that fails (a gateway run's answer went out before it) and its commit reports nothing,
   * so the run is read back: it is there, complete and with its whole chain, or the ingestion is a retryable 503.
   */
  async function onDisk(auth: AuthContext, runId: string): Promise<void> {
    let verdict: ChainVerdict | null = null;
    try {
      await repo.settleOnDisk();
      const stored = await repo.get(auth.tenantId, runId);
      if (stored?.status === 'completed') verdict = (await verifiedTrace(stored, keepNone)).verdict;
    } catch (error) {
      // A flush that failed: committed, but not known to be on the disk.
      throw new AppError('write_failed', { headers: { 'retry-after': '1' }, cause: error });
    }
    if (!verdict?.ok) throw new AppError('write_failed', { headers: { 'retry-after': '1' }, message: `the ingested run ${runId} was not written` });
  }

  /**
   * The packet's trace, read once: its events a page at a time, each page verified as it is written (`pages`), then
   * the verdict on them (`integrity`, written after them) and the chorus events among them. The packet is of the run
   * as read before its first byte (`snapshot`, written in `run`): its `eventCount` events, not those appended since.
   * Stored events past that count are left out when the row moved meanwhile (a commit appended them), and written and
   * counted when it did not (stored but not counted by the row: the data's, a break the verdict reports). A run gone
   * meanwhile (retention, its organization's purge), found when its trace reads short, fails the packet rather than
   * have it end short.
   */
  function packetTrace(snapshot: RunRecord) {
    const verifier = runVerifier(snapshot.id);
    const chorusEvents: TraceEvent[] = [];
    let read = false;
    /** Whether the row still counts what it did when read: false when it moved, notFound when it is gone. */
    const rowUnmoved = async (): Promise<boolean> => {
      const again = await repo.get(snapshot.tenantId, snapshot.id);
      if (!again) throw notFound('Run');
      return again.eventCount === snapshot.eventCount && again.lastHash === snapshot.lastHash;
    };
    async function* pages(): AsyncGenerator<TraceEvent[], void, undefined> {
      let after = TRACE_START;
      let pastCountIsData: boolean | undefined;
      for (;;) {
        const page = await repo.eventsAfter(snapshot.tenantId, snapshot.id, after, INTEGRITY_PAGE_EVENTS);
        let kept = page;
        if (pastCountIsData !== true && page.length > 0 && page[page.length - 1]!.seq > snapshot.eventCount) {
          pastCountIsData ??= await rowUnmoved();
          if (!pastCountIsData) kept = page.filter((event) => event.seq <= snapshot.eventCount);
        }
        if (kept.length > 0) {
          verifier.feed(kept);
          for (const event of kept) if (event.type.startsWith('chorus.')) chorusEvents.push(event);
          after = kept[kept.length - 1]!.seq;
          yield kept;
        }
        if (kept.length < INTEGRITY_PAGE_EVENTS) break;
        await nextTurn();
      }
      if (verifier.count < snapshot.eventCount && pastCountIsData === undefined) await rowUnmoved();
      read = true;
    }
    return {
      pages,
      chorusEvents,
      /** The verdict on the events `pages` wrote, against the row as read: only once they are all written. */
      integrity(): IntegrityView {
        if (!read) throw new Error('the packet\'s integrity is given only after its events are read');
        return { runId: snapshot.id, ...verifier.verdict(snapshot), checkedAt: toIso(clock.now()) };
      },
    };
  }

  /** Run detail's side effects: they page by their seq. */
  async function sideEffectWindow(run: RunRecord, options: { limit: number; before?: number }) {
    const { records, total } = await repo.sideEffectsBefore(run.tenantId, run.id, options.before, options.limit);
    const newest = records.slice(-options.limit);
    return sectionWindow(newest.map(sideEffectView), (effect) => effect.seq, { limit: options.limit, total, olderLeft: records.length > newest.length });
  }

  /**
   * Run detail's feedback: records have no seq, so they page by their position (1-based) in the run's list, which
   * stays put as records are added (after the others).
   */
  async function feedbackWindow(run: RunRecord, options: { limit: number; before?: number }) {
    const total = await repo.feedbackCount(run.tenantId, run.id);
    const below = options.before === undefined ? total : Math.min(total, options.before - 1);
    const offset = Math.max(0, below - options.limit);
    const records = below > 0 ? await repo.feedbackPage(run.tenantId, run.id, offset, below - offset) : [];
    return sectionWindow(records.map(feedbackView), (_, index) => offset + index + 1, { limit: options.limit, total, olderLeft: offset > 0 });
  }

  /** Verify a run's chain and outcome. */
  async function integrityOf(found: RunRecord): Promise<IntegrityView> {
    const { run, verdict } = await verifiedTrace(found, keepNone);
    return { runId: run.id, ...verdict, checkedAt: toIso(clock.now()) };
  }

  /**
   * A run's trace read and verified a page at a time, the event loop getting a turn between pages: a whole trace
   * (10,000 events, 16 MiB of client payloads) read and hashed at once held it ~0.2-0.3 s, and any key of the tenant
   * may ask. The events `keep` selects are kept (the packet's chorus events), with how many were read and the last one's seq;
   * `run` is the run's row as they were read.
   */
  async function verifiedTrace(
    found: RunRecord,
    keep: (event: TraceEvent) => boolean,
  ): Promise<{ run: RunRecord; count: number; lastSeq: number; chorusEvents: TraceEvent[]; verdict: ChainVerdict }> {
    let run = found;
    const verifier = runVerifier(run.id);
    const kept: TraceEvent[] = [];
    let count = 0;
    let after = TRACE_START;
    for (;;) {
      for (let page = await repo.eventsAfter(run.tenantId, run.id, after, INTEGRITY_PAGE_EVENTS); page.length > 0; page = await repo.eventsAfter(run.tenantId, run.id, after, INTEGRITY_PAGE_EVENTS)) {
        verifier.feed(page);
        for (const event of page) if (keep(event)) kept.push(event);
        count += page.length;
        after = page[page.length - 1]!.seq;
        await nextTurn();
      }
      if (verifier.count === run.eventCount) break;
      // The row was read before the events: a commit since (the run finishing, an SDK trace append) added events it
      // does not count yet, and retention may have deleted the run. Read it again rather than report a break; the
      // events it adds are read next. A count that still differs is the data's.
      const again = await repo.get(run.tenantId, run.id);
      if (!again) throw notFound('Run');
      if (again.eventCount === run.eventCount && again.lastHash === run.lastHash) break;
      run = again;
    }
    return { run, count, lastSeq: after, chorusEvents: kept, verdict: verifier.verdict(run) };
  }
}
