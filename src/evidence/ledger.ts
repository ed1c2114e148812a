/**
 * Records one gateway request as a run: the run row, its hash-chained trace events and its provider attempts.
 * Nothing here waits on the disk: writes are deferred to the next group commit (DESIGN.md section 3), and the
 * chain is linked in memory because one request appends its events in order from one place.
 */
import type { Clock } from '../core/clock.ts';
import { DictionaryMap } from '../core/dictionary-map.ts';
import { newTimeOrderedId } from '../core/ids.ts';
import { genesisHash, linkedEvent } from './chain.ts';
import type { LedgerChange, RunsRepository } from './repo.ts';
import type { AttemptRecord, FinishedRun, RouteExplanation, RunError, RunRecord, RunRoute, RunStatus, RunUsage, TraceEvent } from './types.ts';

export interface RunStart {
  tenantId: string;
  appId: string | null;
  agent: string | null;
  subject: string | null;
  keyId: string | null;
  mode: 'observe' | 'optimize';
  wire: string;
  model: string;
  stream: boolean;
  requestId: string | null;
  fingerprint?: string | null;
  /** When the request arrived, if the run is opened later than that (default: now). */
  startedAt?: number;
}

export interface RunOutcome {
  status: Exclude<RunStatus, 'running'>;
  route: RunRoute;
  provider: string | null;
  routeExplanation: RouteExplanation;
  usage: RunUsage;
  costUsd: number;
  priced: boolean;
  savedUsd?: number;
  ghostSavedUsd?: number;
  savedMs?: number;
  error?: RunError | null;
  /** Overrides the derived reason code (docs/evidence.md). */
  reasonCode?: string;
  /** sha256 of the canonical JSON of the answer served, for the replay bundle. */
  responseHash?: string;
}

/** The reason code of a run that failed with an error of `kind`. */
export const failedReasonCode = (kind: string): string => `failed:${kind}`;

/** The default reason code of a finished run: why it took its route, in a word (attribution's `reason`). */
export function reasonCodeOf(outcome: RunOutcome): string {
  if (outcome.reasonCode) return outcome.reasonCode;
  if (outcome.status === 'failed') return failedReasonCode(outcome.error?.kind ?? 'unknown');
  if (outcome.status === 'blocked') return 'policy_block';
  if (outcome.route === 'exact_cache') return 'exact_cache_hit';
  if (outcome.route === 'artifact') return 'artifact';
  return outcome.routeExplanation.fallback ? 'live_fallback' : 'live';
}

export type AttemptInput = Omit<AttemptRecord, 'runId' | 'seq' | 'createdAt'>;

export interface RunRecorder {
  readonly id: string;
  readonly startedAt: number;
  /** Append a trace event (type and payload; never secrets). */
  event(type: string, payload: Record<string, unknown>): TraceEvent;
  /** Record one provider attempt, failed ones included (their cost counts, SPEC 4.9). */
  attempt(attempt: AttemptInput): void;
  readonly attempts: readonly AttemptRecord[];
  /** Finalise the run once; later calls are ignored (a stream's `finally` may race an error path). */
  finish(outcome: RunOutcome): void;
  readonly finished: boolean;
  /** Keep what a replay needs: the request as received, its canonical identity, the route decision inputs. */
  replay(bundle: { request: Record<string, unknown>; identity: Record<string, unknown>; inputs: Record<string, unknown> }): void;
}

export interface Ledger {
  start(start: RunStart): RunRecorder;
  /** The recorder of a run still being written by its request (its chain head lives in memory), if any. */
  active(runId: string): RunRecorder | undefined;
  /**
   * Commit the ledger's open window now if its commit is due. Each change recorded asks this already; a gateway
   * request asks it as it starts, so that a turn of the event loop spent taking in new requests (tens of them under
   * load, before any of them records a change or the window's timer can run) does not hold the window past its end.
   */
  commitIfOverdue(): void;
  /**
   * Whether an answer is to wait for its run's commit (`committed`) instead of going out first, its run committed
   * within 20 ms after it: while the store cannot keep that window (a fresh process: the store's
   * `answersWaitForCommit`).
   */
  answersWaitForCommit(): boolean;
  /** Resolves once the changes recorded so far are committed. */
  committed(): Promise<void>;
}

export function createLedger(deps: { repo: RunsRepository; clock: Clock }): Ledger {
  const { repo, clock } = deps;
  // Not a Map: an entry per request in flight, in and out (core/dictionary-map.ts says why).
  const active = new DictionaryMap<RunRecorder>();
  return {
    active: (runId) => active.get(runId),
    commitIfOverdue: () => repo.commitIfOverdue(),
    answersWaitForCommit: () => repo.answersWaitForCommit(),
    committed: () => repo.committed(),
    start(start) {
      const startedAt = start.startedAt ?? clock.now();
      const id = newTimeOrderedId('run', startedAt);
      let lastHash = genesisHash(id);
      let seq = 0;
      let attemptSeq = 0;
      const attempts: AttemptRecord[] = [];

      const chained = (type: string, payload: Record<string, unknown>): TraceEvent => {
        seq += 1;
        const linked = linkedEvent(lastHash, id, seq, type, payload, clock.now());
        lastHash = linked.hash;
        return linked;
      };

      const startedPayload: Record<string, unknown> = { wire: start.wire, model: start.model, stream: start.stream, mode: start.mode };
      if (start.appId) startedPayload.appId = start.appId;
      if (start.agent) startedPayload.agent = start.agent;
      if (start.subject) startedPayload.subject = start.subject;
      const started = chained('run.started', startedPayload);
      // Written out rather than spread from `start`: this runs for every gateway request.
      // A FinishedRun from the start (its actual tokens 0), so that the finished record spreads it without adding keys.
      const initial: FinishedRun = {
        id,
        tenantId: start.tenantId,
        appId: start.appId,
        agent: start.agent,
        subject: start.subject,
        keyId: start.keyId,
        mode: start.mode,
        wire: start.wire,
        model: start.model,
        provider: null,
        status: 'running',
        route: null,
        stream: start.stream,
        requestId: start.requestId,
        routeExplanation: null,
        usage: { promptTokens: 0, completionTokens: 0, totalTokens: 0 },
        costUsd: 0,
        savedUsd: 0,
        ghostSavedUsd: 0,
        savedMs: 0,
        priced: true,
        latencyMs: null,
        error: null,
        createdAt: startedAt,
        completedAt: null,
        eventCount: seq,
        lastHash,
        fingerprint: start.fingerprint ?? null,
        executionMethod: null,
        reasonCode: null,
        fallback: null,
        actualPromptTokens: 0,
        actualCompletionTokens: 0,
      };
      repo.recordDeferred({
        insert: initial,
        events: [started],
      });

      // Plain properties, no getters: an object literal with getters of its own closures gets a hidden class of its
      // own in the old generation, which keeps the run's records alive through scavenges (docs/performance-notes.md,
      // "Getters in per-request object literals").
      const recorder: RunRecorder & { finished: boolean } = {
        id,
        startedAt,
        finished: false,
        attempts,
        event(type, payload) {
          const event = chained(type, payload);
          // The run's head (event count, last hash) follows from its events where they are written.
          repo.recordDeferred({ events: [event] });
          return event;
        },
        attempt(input) {
          attemptSeq += 1;
          // Field by field: `{ ...input, runId, ... }` (a spread, then new keys) costs ~5 KB and a promotion per call on
          // Node 20 (docs/performance-notes.md, "Object spreads that add keys").
          const attempt: AttemptRecord = {
            runId: id,
            seq: attemptSeq,
            provider: input.provider,
            model: input.model,
            outcome: input.outcome,
            errorKind: input.errorKind,
            upstreamStatus: input.upstreamStatus,
            promptTokens: input.promptTokens,
            completionTokens: input.completionTokens,
            costUsd: input.costUsd,
            latencyMs: input.latencyMs,
            createdAt: clock.now(),
          };
          attempts.push(attempt);
          repo.recordDeferred({ attempts: [attempt] });
        },
        replay(bundle) {
          const { request, identity, inputs } = bundle;
          repo.recordDeferred({ replay: { runId: id, tenantId: start.tenantId, request, identity, inputs, responseHash: null, createdAt: clock.now() } });
        },
        finish(outcome) {
          if (recorder.finished) return;
          recorder.finished = true;
          active.delete(id);
          const fallback = outcome.routeExplanation.fallback;
          const completedAt = clock.now();
          const latencyMs = completedAt - startedAt;
          const payload: Record<string, unknown> = {
            route: outcome.route,
            provider: outcome.provider,
            usage: outcome.usage,
            costUsd: outcome.costUsd,
            latencyMs,
          };
          if (outcome.error) payload.error = outcome.error;
          const event = chained(`run.${outcome.status}`, payload);
          // What providers processed: its attempts' tokens (a cache hit has none; failed attempts' billed ones count).
          let actualPromptTokens = 0;
          let actualCompletionTokens = 0;
          for (const attempt of attempts) {
            actualPromptTokens += attempt.promptTokens;
            actualCompletionTokens += attempt.completionTokens;
          }
          const final: FinishedRun = {
            ...initial,
            status: outcome.status,
            route: outcome.route,
            provider: outcome.provider,
            routeExplanation: outcome.routeExplanation,
            usage: outcome.usage,
            costUsd: outcome.costUsd,
            priced: outcome.priced,
            savedUsd: outcome.savedUsd ?? 0,
            ghostSavedUsd: outcome.ghostSavedUsd ?? 0,
            savedMs: outcome.savedMs ?? 0,
            latencyMs,
            error: outcome.error ?? null,
            completedAt,
            eventCount: seq,
            lastHash,
            executionMethod: outcome.routeExplanation.executionMethod.id,
            reasonCode: reasonCodeOf(outcome),
            fallback: fallback ? `${fallback.from}->${fallback.to}` : null,
            actualPromptTokens,
            actualCompletionTokens,
          };
          const change: LedgerChange = { events: [event], finished: final };
          if (outcome.responseHash) change.responseHash = { runId: id, hash: outcome.responseHash };
          repo.recordDeferred(change);
        },
      };
      active.set(id, recorder);
      return recorder;
    },
  };
}
