/**
 * The gateway pipeline every model wire shares (DESIGN.md section 2): route to providers -> start the run -> policy
 * verdict -> cache controls -> exact-response cache -> providers in registry order with fail-open -> record. What
 * differs per wire (how to call a provider, relay and assemble its stream, replay a cached answer, shape a
 * failure) is a `WireAdapter`; the rest is here once. Free of HTTP: wire plugins render the `GatewayResult`.
 */
import { answerBudgetFailure, createAnswerBudget, StreamHeld, type AnswerBudget } from './answer-budget.ts';
import type { CallSignal } from './call-signal.ts';
import { canonicalJson } from '../core/canonical-json.ts';
import { deferContained, type FailureLog } from '../core/deferred.ts';
import { AppError } from '../core/errors.ts';
import { sha256Hex } from '../core/ids.ts';
import type { Clock } from '../core/clock.ts';
import type { ResponseCache } from '../caches/service.ts';
import type { Ledger, RunRecorder } from '../evidence/ledger.ts';
import type { CacheDecision, RouteExplanation, RunRoute, RunUsage } from '../evidence/types.ts';
import type { AuthContext } from '../identity/auth-context.ts';
import { exactCacheKey, type CacheControls } from './cache-controls.ts';
import { requestFingerprint } from './fingerprint.ts';
import { costOf } from './pricing.ts';
import { classifyThrown, providerErrorToAppError } from './providers/errors.ts';
import { ProviderError, type Provider, type ProviderRegistry, type UpstreamEvents, type Wire } from './providers/types.ts';
import { countTokens } from './tokens.ts';

export const EXACT_CACHE = 'exact_response';

/** A model answered with a tool call that is not declared or does not match its schema. */
export class InvalidToolCallError extends Error {
  /** The buffered answer that made the call, refused but made (and billed) all the same; undefined in a stream. */
  answer: unknown = undefined;

  constructor(message: string) {
    super(`Invalid tool call from the model: ${message}.`);
    this.name = 'InvalidToolCallError';
  }
}

/** An error a buffered answer's check threw, with the answer kept on it when it is an invalid tool call. */
export function refusedAnswer(error: unknown, answer: unknown): unknown {
  if (error instanceof InvalidToolCallError) error.answer = answer;
  return error;
}

export type UpstreamFailure = ProviderError | InvalidToolCallError;

/** Relays one upstream stream to the client while assembling the whole answer. */
export interface StreamRelay<Res, Ev> {
  /** Events to send for one upstream event; throws UpstreamFailure when the stream is invalid. */
  accept(event: unknown): Ev[];
  /** Events to send at the end; throws when the stream ended incomplete (truncated). */
  end(): Ev[];
  /**
   * After `accept` refused the stream (an invalid tool call), take the usage an event read after it reports, which
   * chat sends in a chunk of its own after the finish chunk; true once it has it. Absent: nothing is read after.
   */
  acceptTrailingUsage?(event: unknown): boolean;
  /**
   * True while the events accepted so far sent the client nothing and started no answer (the responses wire's
   * `keepalive` before `response.created`, the messages wire's `ping` before `message_start`): the stream is not
   * committed yet (`acceptedStream`), and what `accept` returns meanwhile is not sent. Absent: every event
   * starts it (a chat relay that holds a tool call's fragments has started all the same).
   */
  readonly awaitingStart?: boolean;
  /** Usage reported by the upstream, if any: the counts it has reported so far (the pipeline fills the others). */
  readonly usage: Partial<RunUsage> | null;
  /** Text produced so far (for partial usage estimates). */
  readonly producedText: string;
  /**
   * About the bytes of memory what the relay keeps of the stream takes (its assembled text, held events: see
   * answer-budget.ts `heldTextBytes`), kept up to date by one addition where it keeps something: the stream is counted
   * by it in the budget of the answers in progress, read once per upstream event.
   */
  readonly heldBytes: number;
  /** The assembled answer (cached and recorded). */
  result(): Res;
}

export interface WireAdapter<Res, Ev> {
  readonly wire: Extract<Wire, 'chat_completions' | 'messages' | 'responses'>;
  readonly model: string;
  readonly stream: boolean;
  /** The request fields that form the exact-cache key (cache-controls.ts drops the non-output ones). */
  readonly cacheBody: Record<string, unknown>;
  /**
   * Request headers sent upstream beside the body that can change the answer (the messages wire's version and beta
   * tokens), when the request has any: part of the exact-cache key as a member of their own, so that no body field
   * can stand for them.
   */
  readonly cacheHeaders?: Record<string, unknown> | undefined;
  /**
   * What the provider runs for this request at request time (`web_search_options`, `web_search_20250305`,
   * `mcp_servers`: provider-run.ts), undefined when nothing: its answer depends on the world when it was asked, so
   * the request is neither served from nor stored into the exact cache.
   */
  readonly providerRun?: string | undefined;
  /**
   * The request field naming state the upstream holds between requests (a message `thread`, a `previous_response_id`:
   * upstream-state.ts), undefined when none: its answer depends on that state, so the request is neither served from
   * nor stored into the exact cache either, and goes to the first provider alone (the state lives in that upstream
   * account; another one's answer would be its 404, or an answer without the state).
   */
  readonly upstreamState?: string | undefined;
  /**
   * The refusal of a request naming upstream state (`upstreamState`, the field given) when the mock would answer it,
   * which keeps no state: called only then. Absent: the mock answers such a request as any other.
   */
  refusedByMock?(field: string): AppError;
  /**
   * Input tokens estimated locally, used only when the upstream reports no usage: asked for, so a request whose
   * provider reports usage never pays for tokenising its prompt. A method, not a getter: an adapter is an object
   * literal made per request, and one with getters gets a hidden class of its own (docs/performance-notes.md,
   * "Getters in per-request object literals").
   */
  promptTokens(): number;
  /** Buffered call; validates tool calls against the declared tools (throws InvalidToolCallError). */
  callBuffered(provider: Provider, signal: CallSignal): Promise<Res>;
  /** The usage an answer reports, its fields mapped as they came (the pipeline checks them: `hasTokenCounts`). */
  usageOf(response: Res): RunUsage | null;
  /**
   * Put the usage the run records on an answer whose upstream reported none, or usage that is not token counts
   * (`usage: 5`): its client (and SDK) never reads such a value as usage, and a cache hit of the answer records what
   * the live run did. Absent: the wire's answers are relayed and stored as they came.
   */
  withRecordedUsage?(response: Res, usage: RunUsage): void;
  /**
   * The text a buffered answer produced (content, tool call arguments), for the local count of its output tokens
   * when the upstream reports none, as a stream's `producedText` is counted.
   */
  answerText(response: Res): string;
  openStream(provider: Provider, signal: CallSignal): Promise<UpstreamEvents<unknown>>;
  newRelay(provider: Provider): StreamRelay<Res, Ev>;
  /** Whether a completed answer may be stored in the exact cache. */
  cacheable(response: Res): boolean;
  /**
   * When the earliest object a stored answer names that its upstream keeps for a while only (a chat answer's audio,
   * a message's container) expires, in epoch milliseconds; undefined when it names none. Past it the answer is not
   * served: a next turn naming the object would fail upstream. Absent: the wire's answers name no such object.
   */
  expiresAt?(stored: Res): number | undefined;
  /** A stored answer as served again (fresh id and timestamp). */
  fromCache(stored: Res): Res;
  /** A stored answer replayed as this wire's stream. */
  replay(response: Res): Ev[];
  /** The wire-shaped terminal event for a failure after the stream started. */
  streamError(error: UpstreamFailure): Ev;
}

export interface GatewayCall {
  auth: AuthContext;
  controls: CacheControls;
  requestId: string;
  /** Aborted when the client goes away: cancels the upstream call. */
  signal: CallSignal;
  /** Where a failure of the run's recording put off past its answer is logged (the request's log). */
  log: FailureLog;
}

export type StreamItem<Ev> = { event: Ev; terminal?: false } | { event: Ev; terminal: true };

export type GatewayResult<Res, Ev> =
  | {
      kind: 'json';
      runId: string;
      route: RunRoute;
      provider: string | null;
      /**
       * The answer written out as JSON (UTF-8), once: the bytes the client is sent and, for a live answer, the exact
       * cache stores (a 60 MB answer was written out twice, its text and its bytes each time, for the client and the
       * cache).
       */
      json: Uint8Array;
      /**
       * Record what is left of the run (its cache write and outcome). Call it right after the answer is handed to
       * the client, so that this work follows the response instead of preceding it; it runs by itself on the next
       * turn of the event loop otherwise. Safe to call more than once.
       */
      settle(): void;
      /**
       * Null while the answer may go out before its run is committed (then `settle` after it); otherwise settles the
       * run and resolves once it is committed, when the answer may go (the ledger's `answersWaitForCommit`).
       */
      recorded(): Promise<void> | null;
    }
  | {
      kind: 'stream';
      runId: string;
      route: RunRoute;
      /** The provider serving the answer (null for a cache hit: none did). */
      provider: string | null;
      items: AsyncGenerator<StreamItem<Ev>>;
      /**
       * Release the stream, also when nobody ever read from it (the client left before the first event): the run is
       * finalised and the upstream released either way. Safe to call more than once.
       */
      close(): Promise<void>;
      /**
       * Once a stream has ended complete: null if its end may go out before its run is committed; otherwise records
       * the run now and resolves once it is committed, when the end (chat's `[DONE]`, the response's last bytes) may
       * go out (the ledger's `answersWaitForCommit`).
       */
      recorded(): Promise<void> | null;
    };

export interface Gateway {
  handle<Res, Ev>(adapter: WireAdapter<Res, Ev>, call: GatewayCall): Promise<GatewayResult<Res, Ev>>;
}

/** An answer written out as JSON, in UTF-8: what its client is sent and the exact cache stores. */
function answerJson(response: unknown): Uint8Array {
  return Buffer.from(JSON.stringify(response), 'utf8');
}

/** sha256 of the canonical JSON of an answer (the replay bundle's response hash). */
function hashOf(response: unknown): string {
  return sha256Hex(canonicalJson(response));
}

/**
 * The steps of a relayed stream (see `relayed`): `start` when the consumer first asks for an event, each upstream
 * event as what to send, what to send at the end, a failure as its terminal event (null: send none, the client is
 * gone), and `settle` once, however the stream ended.
 */
interface RelaySteps<Ev> {
  start(): void;
  accept(event: unknown): Ev[];
  end(): Ev[];
  /** Reads what may still come after a failure (a refused stream's usage: `trailingUsage`); null when nothing is. */
  afterFailure(thrown: unknown): Promise<void> | null;
  failed(thrown: unknown): Ev | null;
  settle(completed: boolean): void;
}

/**
 * An upstream stream relayed as stream items. The generators here are module-level, as every generator function of
 * the request path must be: on Node 20 a generator function made per request (nested in a request's function) costs
 * a hidden class of its own on each call, which keeps the stream's objects alive through scavenges
 * (docs/performance-notes.md, "Generators made per request").
 */
async function* relayed<Ev>(upstream: AcceptedStream<Ev>, steps: RelaySteps<Ev>): AsyncGenerator<StreamItem<Ev>> {
  steps.start();
  let completed = false;
  try {
    for (const out of upstream.firstOut) yield { event: out };
    for (let next = await upstream.rest.next(); !next.done; next = await upstream.rest.next()) {
      for (const out of steps.accept(next.value)) yield { event: out };
    }
    for (const out of steps.end()) yield { event: out };
    completed = true;
  } catch (thrown) {
    const reading = steps.afterFailure(thrown);
    if (reading !== null) await reading;
    const terminal = steps.failed(thrown);
    if (terminal !== null) yield { event: terminal, terminal: true };
  } finally {
    try {
      steps.settle(completed);
    } finally {
      // Releases the upstream when the stream stopped early (the consumer left, the relay refused an event); a no-op
      // on one that ended. Whatever recording the run did: a settle that throws must not keep the connection open.
      await upstream.rest.return?.();
    }
  }
}

/** An upstream stream whose first event the wire's relay accepted: what to send for it, and the iterator of the rest. */
interface AcceptedStream<Ev> {
  firstOut: Ev[];
  rest: AsyncIterator<unknown>;
  /** Releases the upstream connection while a read of `rest` is pending (`trailingUsage`); absent for the mock's. */
  release: (() => void) | undefined;
}

/**
 * Events read after a refused stream for its usage: the usage chunk follows the finish chunk at once (then `[DONE]`).
 */
const MAX_TRAILING_EVENTS = 2;

/**
 * Read what an upstream already sent after svc refused its stream (an invalid tool call at the finish chunk), for the
 * usage it reports: the upstream made and billed the answer, and the usage chunk comes after the finish chunk. Only
 * what has arrived by the next turn of the event loop is read (at most MAX_TRAILING_EVENTS): the client's error waits
 * for the run to be recorded, and that must not wait on an upstream that is slow to send its usage or never does
 * (the error was held up to a 2 s bound). The upstream is then released; a usage not read by then leaves svc's estimate.
 */
async function trailingUsage<Ev>(upstream: AcceptedStream<Ev>, take: (event: unknown) => boolean): Promise<void> {
  const cut = setImmediate(() => upstream.release?.());
  try {
    for (let read = 0; read < MAX_TRAILING_EVENTS; read += 1) {
      const next = await upstream.rest.next();
      if (next.done || take(next.value)) return;
    }
  } catch {
    // The upstream broke, or was cut at the next turn: the run records svc's estimate.
  } finally {
    clearImmediate(cut);
  }
}

/**
 * Wait for a stream's first event, and pass it through the wire's relay, before answering with it. The client's
 * headers leave with the first frame, so until then nothing is committed to: a stream that fails before its first
 * event (a reset after the upstream's headers, an error event, nothing but comments until the timeout, an end with no
 * event), or whose first event the relay refuses (the responses wire's `response.failed`, a first event out of the
 * wire's order), is a failure of its call like a buffered one's, answered with its own status or failed over to the
 * next provider, instead of a 200 carrying an error event. An event that starts nothing (the responses wire's
 * `keepalive` before `response.created`, the messages wire's `ping` before `message_start`: `awaitingStart`) is no
 * first event, so a failure after it is still the call's. The upstream is released on any such failure.
 */
async function acceptedStream<Ev>(upstream: UpstreamEvents<unknown>, relay: StreamRelay<unknown, Ev>, provider: Provider, held: StreamHeld): Promise<AcceptedStream<Ev>> {
  const rest = upstream[Symbol.asyncIterator]();
  try {
    let firstOut: Ev[];
    do {
      const next = await rest.next();
      // A stream that ended before any event (chat's `data: [DONE]` alone), or before one that started an answer (only
      // keepalives), is no answer at all.
      if (next.done) throw new ProviderError('bad_response', 'the upstream stream ended before its first event', { provider: provider.name, upstreamStatus: 200 });
      firstOut = relay.accept(next.value);
      countHeld(held, relay, provider);
    } while (relay.awaitingStart === true);
    return { firstOut, rest, release: upstream.release };
  } catch (thrown) {
    await rest.return?.();
    throw thrown;
  }
}

/**
 * Count what a stream's relay holds in the budget of the answers in progress, after an upstream event: a `busy`
 * failure when it does not fit (the stream is cut as an over-long one is). One comparison while it holds no more than
 * was counted.
 */
function countHeld(held: StreamHeld, relay: StreamRelay<unknown, unknown>, provider: Provider): void {
  const bytes = relay.heldBytes;
  if (!held.reach(bytes)) throw answerBudgetFailure(provider.name, bytes, 200);
}

/** Stored events replayed as stream items (a cached answer served as a stream). */
async function* replayed<Ev>(events: readonly Ev[]): AsyncGenerator<StreamItem<Ev>> {
  for (const event of events) yield { event };
}

/** `fn` on its first call only. */
function once(fn: () => void): () => void {
  let done = false;
  return () => {
    if (done) return;
    done = true;
    fn();
  };
}

/** A token count svc can price and add up: a non-negative safe integer. */
export function isTokenCount(value: unknown): value is number {
  return Number.isSafeInteger(value) && (value as number) >= 0;
}

function estimatedUsage(promptTokens: number, completionTokens: number): RunUsage {
  return { promptTokens, completionTokens, totalTokens: promptTokens + completionTokens };
}

/**
 * Whether an upstream reported usage whose counts are all token counts (the common case: recorded as reported). The
 * wires' `usageOf` map the upstream's fields as they came: this is the one check of what an upstream reported.
 */
export function hasTokenCounts(usage: Partial<RunUsage> | null): usage is RunUsage {
  return usage !== null && isTokenCount(usage.promptTokens) && isTokenCount(usage.completionTokens) && isTokenCount(usage.totalTokens);
}

/**
 * The usage a run records when the upstream reported none (null) or counts that are not token counts (missing, a
 * string, negative, fractional, past 2^53): each of the prompt and completion counts that is one is kept, each other
 * is the local one, as a usage the upstream did not send, and the total is their sum. Recorded as reported, such a
 * count made the run's cost NaN (its final write failed: the run stayed `running` for good), negative or infinite,
 * and the rollups summed it.
 */
export function filledUsage(reported: Partial<RunUsage> | null, promptTokens: () => number, completionTokens: () => number): RunUsage {
  const keptPrompt = reported !== null && isTokenCount(reported.promptTokens);
  const usage = estimatedUsage(
    keptPrompt ? reported.promptTokens! : promptTokens(),
    reported !== null && isTokenCount(reported.completionTokens) ? reported.completionTokens : completionTokens(),
  );
  // A reported prompt keeps its prompt-cache parts, priced at their own rates (a stream cut after messages' message_start).
  if (keptPrompt) {
    if (reported.cacheReadTokens !== undefined) usage.cacheReadTokens = reported.cacheReadTokens;
    if (reported.cacheWriteTokens !== undefined) usage.cacheWriteTokens = reported.cacheWriteTokens;
    if (reported.cacheWrite1hTokens !== undefined) usage.cacheWrite1hTokens = reported.cacheWrite1hTokens;
  }
  return usage;
}

const NO_TOKENS = () => 0;
const NO_USAGE = { promptTokens: 0, completionTokens: 0 };

/**
 * The usage a buffered answer is recorded with: as the upstream reported it, else (count by count) the local one, which
 * the answer then carries (`withRecordedUsage`).
 */
function answerUsage<Res>(adapter: WireAdapter<Res, unknown>, response: Res): RunUsage {
  const reported = adapter.usageOf(response);
  if (hasTokenCounts(reported)) return reported;
  const usage = filledUsage(reported, adapter.promptTokens, () => countTokens(adapter.answerText(response), adapter.model));
  adapter.withRecordedUsage?.(response, usage);
  return usage;
}

function runHeaders(runId: string, route: RunRoute): Record<string, string> {
  return { 'x-svc-run-id': runId, 'x-svc-route': route };
}

function failureKind(error: UpstreamFailure): string {
  return error instanceof ProviderError ? error.kind : 'invalid_tool_call';
}

/** What an upstream call threw, as a failure of that provider (its own errors as they are, anything else classified). */
function upstreamFailureOf(provider: Provider, thrown: unknown, signal: CallSignal): UpstreamFailure {
  return thrown instanceof InvalidToolCallError || thrown instanceof ProviderError ? thrown : classifyThrown(provider.name, thrown, signal);
}

/**
 * Whether what a failed attempt cost is unknown, when no usage came with its failure: the upstream answered (HTTP 2xx)
 * and may have billed the call, but svc could not read the answer (`bad_response`); or the call timed out, broke or
 * was left by its client after its request reached the upstream (buffered or streamed, before or after the upstream's
 * headers, before svc accepted a stream's first event), which may have run it. A failure the upstream said (an HTTP
 * error status, or its own error event: `upstream_error`, `rate_limited`) is a call it refused, and one whose request
 * never reached it (a connection refused, a DNS failure, a connect timeout) a call it never saw: both cost nothing, a
 * firm $0.
 */
function costUnknownAfter(error: UpstreamFailure, streamOpened: boolean): boolean {
  // A buffered answer refused for its tool call carries its usage; a stream's (no answer kept) is what it opened.
  if (error instanceof InvalidToolCallError) return streamOpened;
  // Let go for the budget of the answers in progress: the upstream made it (a 2xx) and svc never read its usage.
  if (error.kind === 'busy') return true;
  if (error.kind === 'bad_response') return error.upstreamStatus === undefined || (error.upstreamStatus >= 200 && error.upstreamStatus < 300);
  return (streamOpened || error.afterRequestSent) && (error.kind === 'timeout' || error.kind === 'network' || error.kind === 'aborted');
}

/** The HTTP error of a buffered failure. */
export function failureToAppError(error: UpstreamFailure): AppError {
  if (error instanceof InvalidToolCallError) return new AppError('upstream_error', { message: error.message, cause: error });
  return providerErrorToAppError(error);
}

export function createGateway(deps: { registry: ProviderRegistry; ledger: Ledger; cache: ResponseCache; clock: Clock; answers?: AnswerBudget }): Gateway {
  const { registry, ledger, cache, clock } = deps;
  // The live answers in progress (answer-budget.ts): a call's are let go once its run is recorded or its attempt failed.
  const answers = deps.answers ?? createAnswerBudget(Infinity);

  /**
   * A result's `recorded`: null while its answer may go out before its run is committed; otherwise `settle` records
   * what is left of the run, and the answer waits for the commit.
   */
  const recordedAfter = (settle: () => void) => (): Promise<void> | null => {
    if (!ledger.answersWaitForCommit()) return null;
    settle();
    return ledger.committed();
  };

  return {
    async handle<Res, Ev>(adapter: WireAdapter<Res, Ev>, call: GatewayCall): Promise<GatewayResult<Res, Ev>> {
      ledger.commitIfOverdue();
      const { auth, controls } = call;
      const receivedAt = clock.now();
      // Routing before the run: a model this wire cannot serve is a validation error and creates no run.
      let providers: Provider[];
      try {
        providers = (await registry.route(adapter.wire, adapter.model, auth.tenantId)).candidates;
      } catch (error) {
        if (error instanceof ProviderError) throw providerErrorToAppError(error);
        throw error;
      }

      const { providerRun, upstreamState } = adapter;
      // Before any run, as a validation error: only a live upstream holds the state such a request continues.
      if (upstreamState !== undefined && providers[0]?.kind === 'mock' && adapter.refusedByMock) throw adapter.refusedByMock(upstreamState);

      // Exact-response cache (SPEC 4.2 controls; observe mode never serves, but measures what it would have saved).
      const scope = { tenantId: auth.tenantId, appId: auth.appId, subject: auth.subject };
      // The registry offers the mock alone or live providers alone: the first candidate says which answers.
      const key = exactCacheKey(adapter.wire, scope, adapter.cacheBody, adapter.cacheHeaders, providers[0]?.kind === 'mock');
      const decision: CacheDecision = { cacheType: EXACT_CACHE, lookup: 'miss', key };
      const rejected: RouteExplanation['rejectedAlternatives'] = [];
      let ghostSavedUsd = 0;
      let cacheEvent: [type: string, payload: Record<string, unknown>];
      const uncacheable = providerRun !== undefined || upstreamState !== undefined;
      const found = controls.serve && !uncacheable ? await cache.get(auth.tenantId, EXACT_CACHE, key) : null;
      // Read only when an entry is found: a hit's cost, never a miss's.
      const outlived = found !== null && (adapter.expiresAt?.(found.value as Res) ?? Infinity) <= receivedAt;
      const entry = outlived ? null : found;
      if (uncacheable) {
        // Before the controls: no header makes such an answer one to serve or store.
        decision.lookup = 'not_applicable';
        cacheEvent = ['cache.skipped', providerRun !== undefined ? { cacheType: EXACT_CACHE, providerRun } : { cacheType: EXACT_CACHE, upstreamState }];
        const reason = providerRun !== undefined ? `the provider runs ${providerRun} at request time` : `the request's ${upstreamState} names state the upstream holds`;
        rejected.push({ route: 'exact_cache', reason: `${reason}: its answer is not cached` });
        if (upstreamState !== undefined && providers.length > 1) {
          rejected.push({ route: 'fallback', reason: `the request's ${upstreamState} names state ${providers[0]!.name} holds: not failed over to ${providers.slice(1).map((provider) => provider.name).join(', ')}` });
        }
      } else if (!controls.serve) {
        decision.lookup = controls.store ? 'bypassed' : 'skipped_no_store';
        decision.control = controls.control!;
        cacheEvent = ['cache.skipped', { cacheType: EXACT_CACHE, control: controls.control }];
        rejected.push({ route: 'exact_cache', reason: `skipped by ${controls.control}` });
      } else if (entry && auth.mode === 'observe') {
        decision.lookup = 'observe_only';
        if (entry.sourceRunId) decision.sourceRunId = entry.sourceRunId;
        ghostSavedUsd = entry.costUsd;
        cacheEvent = ['cache.observe_only', { cacheType: EXACT_CACHE, wouldHaveServed: true, ghostSavedUsd, sourceRunId: entry.sourceRunId }];
        rejected.push({ route: 'exact_cache', reason: 'observe mode: a cached answer exists but is never served' });
      } else if (entry) {
        decision.lookup = 'hit';
        if (entry.sourceRunId) decision.sourceRunId = entry.sourceRunId;
        cacheEvent = ['cache.hit', { cacheType: EXACT_CACHE, key, sourceRunId: entry.sourceRunId }];
      } else if (outlived) {
        // The fresh answer replaces it (one entry per key).
        cacheEvent = ['cache.miss', { cacheType: EXACT_CACHE, expired: true }];
        rejected.push({ route: 'exact_cache', reason: 'the cached answer names an upstream object (audio, container) that has expired' });
      } else {
        cacheEvent = ['cache.miss', { cacheType: EXACT_CACHE }];
        rejected.push({ route: 'exact_cache', reason: 'no cached answer for this request' });
      }

      // The run's opening record: everything decided so far, in the trace's order. A live request opens it only once
      // its first upstream call is on the wire (`dispatched` below), so this bookkeeping overlaps the upstream's time
      // instead of adding to the client's; the run keeps the time the request arrived.
      const open = (): RunRecorder => {
        const opened = ledger.start({
          tenantId: auth.tenantId,
          appId: auth.appId,
          agent: auth.agent,
          subject: auth.subject,
          keyId: auth.keyId,
          mode: auth.mode,
          wire: adapter.wire,
          model: adapter.model,
          stream: adapter.stream,
          requestId: call.requestId,
          fingerprint: requestFingerprint(adapter.wire, adapter.model, adapter.cacheBody),
          startedAt: receivedAt,
        });
        opened.event('policy.verdict', { decision: 'allow', policy: null, reason: 'no policy matched' });
        opened.replay({
          request: adapter.cacheBody,
          identity: { wire: adapter.wire, model: adapter.model, exactCacheKey: key, scope, headers: adapter.cacheHeaders },
          inputs: {
            mode: auth.mode,
            stream: adapter.stream,
            cacheControls: { serve: controls.serve, store: controls.store, control: controls.control },
            candidates: providers.map((provider) => ({ name: provider.name, kind: provider.kind })),
            policy: { decision: 'allow', policy: null },
          },
        });
        opened.event(...cacheEvent);
        return opened;
      };

      if (entry && decision.lookup === 'hit') {
        const run = open();
        cache.recordHitDeferred(auth.tenantId, EXACT_CACHE, key, clock.now());
        // Priced as a live run of the request would be (by the provider that would serve it): a hit of a model without
        // a list price saves an unknown amount, not a firm one.
        const priced = costOf(adapter.model, NO_USAGE, providers[0]?.kind === 'mock').priced;
        return serveCached(adapter, run, entry.value as Res, decision, { usd: entry.costUsd, ms: entry.latencyMs }, priced);
      }
      rejected.push({ route: 'artifact', reason: 'no promoted artifact serves this request shape' });
      // Opened by the first attempt (`dispatched`), before anything below reads it.
      let run!: RunRecorder;
      // A recording that failed fails the call it belongs to and every later one.
      let recordingFailed: unknown = null;
      /**
       * Start an upstream call, then record its attempt (opening the run first) while the request is on the wire.
       * undici writes a request to a connection it reuses one event-loop turn later, once it has checked the idle
       * socket (a setImmediate), so the recording waits for a turn queued after that one instead of delaying the
       * write; the call's outcome is seen only after it (the promise returned records first if still needed). A call
       * whose recording failed is not served: what it opened is released (`release`, a stream's connection).
       */
      const dispatched = <T>(provider: Provider, startCall: () => Promise<T>, release?: (opened: T) => void): Promise<T> => {
        let pending: Promise<T>;
        try {
          pending = startCall();
        } catch (error) {
          pending = Promise.reject(error);
        }
        const record = once(() => {
          try {
            run ??= open();
            run.event('provider.attempt', { provider: provider.name, model: adapter.model, stream: adapter.stream });
          } catch (error) {
            recordingFailed = error;
          }
        });
        setImmediate(record);
        const recorded = () => {
          record();
          if (recordingFailed !== null) throw recordingFailed;
        };
        return pending.then(
          (value) => {
            try {
              recorded();
            } catch (error) {
              release?.(value);
              throw error;
            }
            return value;
          },
          (error: unknown) => {
            recorded();
            throw error;
          },
        );
      };

      const explain = (provider: Provider | null, fallback: RouteExplanation['fallback'], reason: string): RouteExplanation => ({
        route: 'live',
        reason,
        rejectedAlternatives: rejected,
        policyVerdict: { decision: 'allow', policy: null, reason: null },
        cache: [decision],
        artifact: null,
        estimatedSavings: { usd: ghostSavedUsd, ms: 0, ghost: ghostSavedUsd > 0 },
        fallback,
        provider: provider?.name ?? null,
        model: adapter.model,
        executionMethod: { id: provider?.kind === 'mock' ? 'mock_model' : 'live_model', referenceGrade: 'not_applicable' },
      });

      /** Store an answer in the exact cache, or record why not; `json` is the answer as its client was sent it, if it was. */
      const storeAnswer = (response: Res, json: Uint8Array | null, costUsd: number, latencyMs: number) => {
        if (uncacheable) {
          decision.write = 'not_cacheable';
          return;
        }
        if (!controls.store) {
          decision.write = 'suppressed_no_store';
          run.event('cache.write_suppressed', { cacheType: EXACT_CACHE, control: controls.control });
          return;
        }
        const notStored = () => {
          decision.write = 'not_cacheable';
          // A refresh asked for this answer instead of the stored one: that one must not be served to the next
          // request either, so it goes (a refresh that fails upstream gives no answer and leaves the entry alone).
          if (!controls.serve) {
            cache.dropDeferred(auth.tenantId, EXACT_CACHE, key);
            run.event('cache.dropped', { cacheType: EXACT_CACHE, control: controls.control, reason: 'not_cacheable' });
          }
        };
        if (!adapter.cacheable(response)) return notStored();
        const stored = json ?? answerJson(response);
        // An answer's JSON past the bound is relayed, not stored: SQLite's memory grows by about three times what it
        // writes and never shrinks (caches/service.ts, DEFAULT_CACHE_MAX_ENTRY_BYTES).
        if (stored.length > cache.maxEntryBytes) {
          decision.reason = `the answer is ${stored.length} bytes as JSON, more than the ${cache.maxEntryBytes} the exact cache stores (SVC_CACHE_MAX_ENTRY_BYTES)`;
          run.event('cache.not_stored', { cacheType: EXACT_CACHE, reason: 'too_large', bytes: stored.length, maxBytes: cache.maxEntryBytes });
          return notStored();
        }
        decision.write = controls.serve ? 'stored' : 'refreshed';
        cache.putDeferred({ tenantId: auth.tenantId, cacheType: EXACT_CACHE, key, appId: auth.appId, value: response, sourceRunId: run.id, costUsd, latencyMs, createdAt: clock.now() }, stored);
        run.event('cache.stored', { cacheType: EXACT_CACHE, refreshed: !controls.serve });
      };

      const totalCost = () => run.attempts.reduce((sum, attempt) => sum + attempt.costUsd, 0);
      // Set once an attempt's cost is unknown (`costUnknownAfter`): the run's cost is then a lower bound, not priced.
      let costUnknown = false;

      const complete = (provider: Provider, fallback: RouteExplanation['fallback'], response: Res, usage: RunUsage, priced: boolean, verb: string) =>
        run.finish({
          responseHash: hashOf(response),
          status: 'completed',
          route: 'live',
          provider: provider.name,
          routeExplanation: explain(provider, fallback, fallback ? `${verb} by ${provider.name} after ${fallback.from} failed` : `${verb} by ${provider.name}`),
          usage,
          costUsd: totalCost(),
          priced: priced && !costUnknown,
          ghostSavedUsd,
        });

      const fail = (provider: Provider | null, fallback: RouteExplanation['fallback'], error: UpstreamFailure, usage: RunUsage) =>
        run.finish({
          status: 'failed',
          route: 'live',
          provider: provider?.name ?? null,
          routeExplanation: explain(provider, fallback, `the provider failed: ${failureKind(error)}`),
          usage,
          costUsd: totalCost(),
          // A model without a list price is flagged whatever the outcome: an aborted stream's partial answer cost something.
          priced: costOf(adapter.model, usage, provider?.kind === 'mock').priced && !costUnknown,
          // No ghost savings: like savings, they are credited to completed runs only (docs/evidence.md).
          error: {
            kind: failureKind(error),
            message: error.message,
            ...(error instanceof ProviderError && error.upstreamStatus ? { upstreamStatus: error.upstreamStatus } : {}),
            ...(error instanceof ProviderError && error.upstreamCode ? { upstreamCode: error.upstreamCode } : {}),
          },
        });

      // Providers in registry order; a failure before any byte reached the client fails open to the next one.
      let fallback: RouteExplanation['fallback'] = null;
      for (const [index, provider] of providers.entries()) {
        const startedAt = clock.now();
        // The relay of a stream the upstream opened (answered 200), until its first event is accepted.
        let openedRelay: StreamRelay<Res, Ev> | null = null;
        try {
          if (adapter.stream) {
            const assembler = adapter.newRelay(provider);
            const opened = await dispatched(provider, () => adapter.openStream(provider, call.signal), (unread) => unread.release?.());
            openedRelay = assembler;
            const held = new StreamHeld(answers, call.signal);
            const upstream = await acceptedStream(opened, assembler, provider, held);
            let relayStarted = false;
            // A completed stream's run is recorded (its answer assembled, hashed, cached) once the response has ended
            // (`close`), so that this work follows the stream's last bytes instead of preceding them; by itself on the
            // next turn of the event loop if nobody closes the stream first (a slow client still reading its end),
            // where a failure is logged, not thrown (core/deferred.ts).
            let settleCompleted: (() => void) | null = null;
            const deferSettle = (settle: () => void) => {
              settleCompleted = once(settle);
              deferContained(settleCompleted, call.log, run.id);
            };
            const items = relay(upstream, assembler, held, provider, startedAt, fallback, () => (relayStarted = true), deferSettle);
            const close = async () => {
              // A generator that never started has not entered its try/finally: step it once so `finally` runs.
              if (!relayStarted) await items.next().catch(() => undefined);
              await items.return(undefined);
              settleCompleted?.();
            };
            const recorded = recordedAfter(() => settleCompleted?.());
            return { kind: 'stream', runId: run.id, route: 'live', provider: provider.name, items, close, recorded };
          }
          const response = await dispatched(provider, () => adapter.callBuffered(provider, call.signal));
          const latencyMs = clock.now() - startedAt;
          const usage = answerUsage(adapter, response);
          const cost = costOf(adapter.model, usage, provider.kind === 'mock');
          run.attempt({ provider: provider.name, model: adapter.model, outcome: 'success', errorKind: null, upstreamStatus: null, promptTokens: usage.promptTokens, completionTokens: usage.completionTokens, costUsd: cost.usd, latencyMs });
          const usedFallback = fallback;
          const json = answerJson(response);
          const settle = once(() => {
            try {
              storeAnswer(response, json, cost.usd, latencyMs);
              complete(provider, usedFallback, response, usage, cost.priced, 'served');
            } finally {
              answers.release(call.signal);
            }
          });
          deferContained(settle, call.log, run.id);
          return { kind: 'json', runId: run.id, route: 'live', provider: provider.name, json, settle, recorded: recordedAfter(settle) };
        } catch (thrown) {
          // What the failed attempt read of its answer is gone with it.
          answers.release(call.signal);
          // The ledger could not record the call: svc's own failure (a 500), not the provider's, and nothing more of
          // this run can be recorded.
          if (thrown === recordingFailed) throw thrown;
          const error = upstreamFailureOf(provider, thrown, call.signal);
          const kind = failureKind(error);
          // An answer refused for its tool call, one the upstream says failed, or one svc could not read that reported
          // usage, was made all the same: the upstream billed it, so its usage counts; so does the usage a stream's
          // failure reported (a responses `response.failed` as its first event). Without usage, what the attempt cost
          // may be unknown (`costUnknownAfter`).
          const reported = openedRelay?.usage ?? null;
          const spent =
            error.answer !== undefined
              ? answerUsage(adapter, error.answer as Res)
              : hasTokenCounts(reported)
                ? reported
                : null;
          const unknown = spent === null && provider.kind !== 'mock' && costUnknownAfter(error, openedRelay !== null);
          if (unknown) costUnknown = true;
          run.attempt({
            provider: provider.name,
            model: adapter.model,
            outcome: kind === 'aborted' ? 'aborted' : 'failed',
            errorKind: kind,
            upstreamStatus: error instanceof ProviderError ? (error.upstreamStatus ?? null) : null,
            promptTokens: spent?.promptTokens ?? 0,
            completionTokens: spent?.completionTokens ?? 0,
            costUsd: spent ? costOf(adapter.model, spent, provider.kind === 'mock').usd : 0,
            latencyMs: clock.now() - startedAt,
          });
          run.event('provider.failed', unknown ? { provider: provider.name, kind, message: error.message, costUnknown: true } : { provider: provider.name, kind, message: error.message });
          // A request naming upstream state stays with the provider holding it (`upstreamState`).
          const next = upstreamState === undefined ? providers[index + 1] : undefined;
          if (next && error instanceof ProviderError && error.retryable && !call.signal.aborted) {
            fallback = { from: provider.name, to: next.name, reason: kind };
            run.event('provider.fallback', fallback);
            continue;
          }
          fail(provider, fallback, error, spent ?? { promptTokens: 0, completionTokens: 0, totalTokens: 0 });
          const appError = failureToAppError(error);
          Object.assign(appError.headers, runHeaders(run.id, 'live'));
          if (ledger.answersWaitForCommit()) await ledger.committed();
          throw appError;
        }
      }
      throw new Error('the provider registry returned no candidates');

      /**
       * Relay an accepted upstream stream; the run is finalised when it ends, also when the client aborts (a completed
       * one through `deferSettle`).
       */
      function relay(
        upstream: AcceptedStream<Ev>,
        assembler: StreamRelay<Res, Ev>,
        held: StreamHeld,
        provider: Provider,
        startedAt: number,
        usedFallback: RouteExplanation['fallback'],
        onStart: () => void,
        deferSettle: (settle: () => void) => void,
      ): AsyncGenerator<StreamItem<Ev>> {
        let failure: UpstreamFailure | null = null;
        return relayed(upstream, {
          start: onStart,
          accept: (event) => {
            const out = assembler.accept(event);
            countHeld(held, assembler, provider);
            return out;
          },
          end: () => assembler.end(),
          afterFailure(thrown) {
            const take = assembler.acceptTrailingUsage?.bind(assembler);
            return thrown instanceof InvalidToolCallError && take !== undefined && !call.signal.aborted ? trailingUsage(upstream, take) : null;
          },
          failed(thrown) {
            failure = upstreamFailureOf(provider, thrown, call.signal);
            return call.signal.aborted ? null : adapter.streamError(failure);
          },
          settle(completed) {
            if (completed) deferSettle(() => settleStream(assembler, provider, startedAt, usedFallback, true, null));
            else settleStream(assembler, provider, startedAt, usedFallback, false, failure);
          },
        });
      }

      /** Record a relayed stream's attempt, answer and outcome, however it ended; its answers' share let go after. */
      function settleStream(...recorded: Parameters<typeof recordStream>): void {
        try {
          recordStream(...recorded);
        } finally {
          answers.release(call.signal);
        }
      }

      function recordStream(
        assembler: StreamRelay<Res, Ev>,
        provider: Provider,
        startedAt: number,
        usedFallback: RouteExplanation['fallback'],
        completed: boolean,
        failure: UpstreamFailure | null,
      ): void {
        const latencyMs = clock.now() - startedAt;
        const reported = assembler.usage;
        const usage = hasTokenCounts(reported)
          ? reported
          : filledUsage(reported, adapter.promptTokens, () => countTokens(assembler.producedText, adapter.model));
        if (usage !== reported) {
          const reason = !completed ? 'stream did not complete' : reported ? 'upstream usage is not token counts' : 'upstream sent no usage';
          run.event('usage.estimated', { reason, ...usage });
        }
        const cost = costOf(adapter.model, usage, provider.kind === 'mock');
        const aborted = !completed && (call.signal.aborted || failure === null);
        const kind = completed ? null : aborted ? 'aborted' : failureKind(failure!);
        run.attempt({
          provider: provider.name,
          model: adapter.model,
          outcome: completed ? 'success' : aborted ? 'aborted' : 'failed',
          errorKind: kind,
          upstreamStatus: failure instanceof ProviderError ? (failure.upstreamStatus ?? null) : null,
          promptTokens: usage.promptTokens,
          completionTokens: usage.completionTokens,
          costUsd: cost.usd,
          latencyMs,
        });
        if (completed) {
          const answer = assembler.result();
          // Stored with the usage recorded, so that a hit records it too (and replays it as the usage chunk).
          if (usage !== reported) adapter.withRecordedUsage?.(answer, usage);
          storeAnswer(answer, null, cost.usd, latencyMs);
          complete(provider, usedFallback, answer, usage, cost.priced, 'streamed');
        } else {
          const error = aborted ? new ProviderError('aborted', 'The client closed the stream.', { provider: provider.name }) : failure!;
          run.event('stream.ended_early', { kind, message: error.message });
          fail(provider, usedFallback, error, usage);
        }
      }
    },
  };

  function serveCached<Res, Ev>(
    adapter: WireAdapter<Res, Ev>,
    run: RunRecorder,
    stored: Res,
    decision: CacheDecision,
    saved: { usd: number; ms: number },
    priced: boolean,
  ): GatewayResult<Res, Ev> {
    const response = adapter.fromCache(stored);
    const reported = adapter.usageOf(stored);
    run.finish({
      responseHash: hashOf(response),
      status: 'completed',
      route: 'exact_cache',
      provider: null,
      routeExplanation: {
        route: 'exact_cache',
        reason: 'an identical request was answered before; served from the exact-response cache',
        rejectedAlternatives: [{ route: 'live', reason: 'a cached answer exists' }],
        policyVerdict: { decision: 'allow', policy: null, reason: null },
        cache: [decision],
        artifact: null,
        estimatedSavings: { usd: saved.usd, ms: saved.ms, ghost: false },
        fallback: null,
        provider: null,
        model: adapter.model,
        executionMethod: { id: 'exact_cache', referenceGrade: 'not_applicable' },
      },
      usage: hasTokenCounts(reported) ? reported : filledUsage(reported, NO_TOKENS, NO_TOKENS),
      costUsd: 0,
      priced,
      savedUsd: saved.usd,
      savedMs: saved.ms,
    });
    // The run was finished above: nothing is left to record first.
    const recorded = recordedAfter(() => undefined);
    if (!adapter.stream) return { kind: 'json', runId: run.id, route: 'exact_cache', provider: null, json: answerJson(response), settle: () => undefined, recorded };
    const items = replayed(adapter.replay(response));
    return { kind: 'stream', runId: run.id, route: 'exact_cache', provider: null, items, close: async () => void (await items.return(undefined)), recorded };
  }
}
