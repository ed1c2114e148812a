/**
 * The chat-completions pipeline (DESIGN.md section 2): policy verdict -> cache controls -> exact-response cache ->
 * provider (registry order, fail-open) -> record. Free of HTTP: the wire plugin turns a `ChatResult` into JSON or
 * SSE, and thrown AppErrors (already carrying the run headers) into the chat-completions error shape.
 */
import { AppError } from '../core/errors.ts';
import type { Clock } from '../core/clock.ts';
import { newId } from '../core/ids.ts';
import type { CacheRepository } from '../caches/repo.ts';
import type { Ledger, RunRecorder } from '../evidence/ledger.ts';
import type { CacheDecision, RouteExplanation, RunRoute, RunUsage } from '../evidence/types.ts';
import type { AuthContext } from '../identity/auth-context.ts';
import { exactCacheKey, type CacheControls } from './cache-controls.ts';
import { costOf } from './pricing.ts';
import { classifyThrown, providerErrorStatus, providerErrorToAppError } from './providers/errors.ts';
import { ProviderError, type ChatChunk, type ChatCompletion, type Provider, type ProviderRegistry } from './providers/types.ts';
import { completionToChunks, InvalidToolCallError, StreamAssembler } from './stream-assembler.ts';
import { countChatTokens, countTokens } from './tokens.ts';
import type { ValidatedChat } from './wires/chat-completions-schema.ts';

export const EXACT_CACHE = 'exact_response';

export interface ChatCall {
  auth: AuthContext;
  chat: ValidatedChat;
  controls: CacheControls;
  requestId: string;
  /** Aborted when the client goes away: cancels the upstream call. */
  signal: AbortSignal;
}

/** What a stream yields: chunks to relay, or one terminal error in the wire's shape. */
export type StreamItem = { chunk: ChatChunk } | { error: { status: number; body: unknown } };

export type ChatResult =
  | { kind: 'json'; runId: string; route: RunRoute; completion: ChatCompletion }
  | { kind: 'stream'; runId: string; route: RunRoute; items: AsyncGenerator<StreamItem> };

export interface ChatGateway {
  /** Starts the run; `onRun` is told its id before any provider work so failures carry it too. */
  complete(call: ChatCall): Promise<ChatResult>;
}

interface Deps {
  registry: ProviderRegistry;
  ledger: Ledger;
  cache: CacheRepository;
  clock: Clock;
}

function usageOf(usage: ChatCompletion['usage'] | null | undefined): RunUsage | null {
  if (!usage) return null;
  return { promptTokens: usage.prompt_tokens, completionTokens: usage.completion_tokens, totalTokens: usage.total_tokens };
}

function runHeaders(runId: string, route: RunRoute): Record<string, string> {
  return { 'x-svc-run-id': runId, 'x-svc-route': route };
}

/** A chat-completions-shaped error body for a failure inside an accepted stream. */
function streamErrorOf(error: ProviderError | InvalidToolCallError): { status: number; body: unknown } {
  if (error instanceof InvalidToolCallError) {
    return { status: 502, body: { error: { message: error.message, type: 'server_error', param: null, code: 'invalid_tool_call' } } };
  }
  const http = providerErrorStatus(error);
  return { status: http.status, body: { error: { message: http.message, type: http.type, param: null, code: http.code } } };
}

export function createChatGateway(deps: Deps): ChatGateway {
  const { registry, ledger, cache, clock } = deps;

  return {
    async complete(call) {
      const { auth, chat, controls } = call;
      const request = chat.request;
      // Routing before the run: a model the wire cannot serve is a validation error and creates no run.
      let providers: Provider[];
      try {
        providers = (await registry.route('chat_completions', request.model, auth.tenantId)).candidates;
      } catch (error) {
        if (error instanceof ProviderError) throw providerErrorToAppError(error);
        throw error;
      }

      const run = ledger.start({
        tenantId: auth.tenantId,
        appId: auth.appId,
        agent: auth.agent,
        subject: auth.subject,
        keyId: auth.keyId,
        mode: auth.mode,
        wire: 'chat_completions',
        model: request.model,
        stream: request.stream === true,
        requestId: call.requestId,
      });
      const promptEstimate = countChatTokens(request);
      run.event('policy.verdict', { decision: 'allow', policy: null, reason: 'no policy matched' });

      // Exact-response cache (SPEC 4.2 controls; observe mode never serves, but measures what it would have saved).
      const key = exactCacheKey('chat_completions', { tenantId: auth.tenantId, appId: auth.appId, subject: auth.subject }, request);
      const decision: CacheDecision = { cacheType: EXACT_CACHE, lookup: 'miss', key };
      const rejected: RouteExplanation['rejectedAlternatives'] = [];
      let ghostSavedUsd = 0;
      if (!controls.serve) {
        decision.lookup = controls.store ? 'bypassed' : 'skipped_no_store';
        decision.control = controls.control!;
        run.event('cache.skipped', { cacheType: EXACT_CACHE, control: controls.control });
        rejected.push({ route: 'exact_cache', reason: `skipped by ${controls.control}` });
      } else {
        const entry = await cache.get(auth.tenantId, EXACT_CACHE, key);
        if (entry && auth.mode === 'observe') {
          decision.lookup = 'observe_only';
          decision.sourceRunId = entry.sourceRunId ?? undefined;
          ghostSavedUsd = entry.costUsd;
          run.event('cache.observe_only', { cacheType: EXACT_CACHE, wouldHaveServed: true, ghostSavedUsd, sourceRunId: entry.sourceRunId });
          rejected.push({ route: 'exact_cache', reason: 'observe mode: a cached answer exists but is never served' });
        } else if (entry) {
          decision.lookup = 'hit';
          if (entry.sourceRunId) decision.sourceRunId = entry.sourceRunId;
          run.event('cache.hit', { cacheType: EXACT_CACHE, key, sourceRunId: entry.sourceRunId });
          cache.recordHitDeferred(auth.tenantId, EXACT_CACHE, key, clock.now());
          return serveCached(call, run, entry.value as ChatCompletion, decision, { usd: entry.costUsd, ms: entry.latencyMs });
        } else {
          run.event('cache.miss', { cacheType: EXACT_CACHE });
          rejected.push({ route: 'exact_cache', reason: 'no cached answer for this request' });
        }
      }
      rejected.push({ route: 'artifact', reason: 'no promoted artifact serves this request shape' });

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
        model: request.model,
        executionMethod: { id: provider?.kind === 'mock' ? 'mock_model' : 'live_model', referenceGrade: 'not_applicable' },
      });

      const storeAnswer = (completion: ChatCompletion, costUsd: number, latencyMs: number) => {
        if (!controls.store) {
          decision.write = 'suppressed_no_store';
          run.event('cache.write_suppressed', { cacheType: EXACT_CACHE, control: controls.control });
          return;
        }
        if (!completion.choices.every((choice) => ['stop', 'tool_calls', 'length'].includes(choice.finish_reason))) {
          decision.write = 'not_cacheable';
          return;
        }
        decision.write = controls.serve ? 'stored' : 'refreshed';
        cache.putDeferred({ tenantId: auth.tenantId, cacheType: EXACT_CACHE, key, value: completion, sourceRunId: run.id, costUsd, latencyMs, createdAt: clock.now() });
        run.event('cache.stored', { cacheType: EXACT_CACHE, refreshed: !controls.serve });
      };

      const failRun = (provider: Provider | null, fallback: RouteExplanation['fallback'], error: ProviderError | InvalidToolCallError, usage: RunUsage) => {
        const kind = error instanceof ProviderError ? error.kind : 'invalid_tool_call';
        run.finish({
          status: 'failed',
          route: 'live',
          provider: provider?.name ?? null,
          routeExplanation: explain(provider, fallback, `the provider failed: ${kind}`),
          usage,
          costUsd: run.attempts.reduce((sum, attempt) => sum + attempt.costUsd, 0),
          priced: true,
          ghostSavedUsd,
          error: {
            kind,
            message: error.message,
            ...(error instanceof ProviderError && error.upstreamStatus ? { upstreamStatus: error.upstreamStatus } : {}),
          },
        });
      };

      // Providers in registry order; a failure before any byte reached the client fails open to the next one.
      let fallback: RouteExplanation['fallback'] = null;
      for (const [index, provider] of providers.entries()) {
        const startedAt = clock.now();
        run.event('provider.attempt', { provider: provider.name, model: request.model, stream: request.stream === true });
        try {
          if (request.stream === true) {
            const upstream = await provider.streamChat(request, { signal: call.signal });
            const items = relay(upstream, provider, startedAt, fallback);
            return { kind: 'stream', runId: run.id, route: 'live', items };
          }
          const completion = await provider.chat(request, { signal: call.signal });
          for (const choice of completion.choices) {
            for (const [callIndex, toolCall] of (choice.message.tool_calls ?? []).entries()) {
              const problem = chat.tools.check(toolCall, callIndex);
              if (problem) throw new InvalidToolCallError(problem);
            }
          }
          const latencyMs = clock.now() - startedAt;
          const usage = usageOf(completion.usage) ?? { promptTokens: promptEstimate, completionTokens: 0, totalTokens: promptEstimate };
          const cost = costOf(request.model, usage, provider.kind === 'mock');
          run.attempt({ provider: provider.name, model: request.model, outcome: 'success', errorKind: null, upstreamStatus: null, promptTokens: usage.promptTokens, completionTokens: usage.completionTokens, costUsd: cost.usd, latencyMs });
          storeAnswer(completion, cost.usd, latencyMs);
          run.finish({
            status: 'completed',
            route: 'live',
            provider: provider.name,
            routeExplanation: explain(provider, fallback, fallback ? `served by ${provider.name} after ${fallback.from} failed` : `served by ${provider.name}`),
            usage,
            costUsd: run.attempts.reduce((sum, attempt) => sum + attempt.costUsd, 0),
            priced: cost.priced,
            ghostSavedUsd,
          });
          return { kind: 'json', runId: run.id, route: 'live', completion };
        } catch (thrown) {
          const error = thrown instanceof InvalidToolCallError || thrown instanceof ProviderError ? thrown : classifyThrown(provider.name, thrown, call.signal);
          const kind = error instanceof ProviderError ? error.kind : 'invalid_tool_call';
          run.attempt({
            provider: provider.name,
            model: request.model,
            outcome: kind === 'aborted' ? 'aborted' : 'failed',
            errorKind: kind,
            upstreamStatus: error instanceof ProviderError ? (error.upstreamStatus ?? null) : null,
            promptTokens: 0,
            completionTokens: 0,
            costUsd: 0,
            latencyMs: clock.now() - startedAt,
          });
          run.event('provider.failed', { provider: provider.name, kind, message: error.message });
          const next = providers[index + 1];
          const retryable = error instanceof ProviderError && error.retryable && !call.signal.aborted;
          if (next && retryable) {
            fallback = { from: provider.name, to: next.name, reason: kind };
            run.event('provider.fallback', fallback);
            continue;
          }
          failRun(provider, fallback, error, { promptTokens: 0, completionTokens: 0, totalTokens: 0 });
          const appError =
            error instanceof InvalidToolCallError
              ? new AppError('upstream_error', { message: error.message, cause: error })
              : providerErrorToAppError(error);
          Object.assign(appError.headers, runHeaders(run.id, 'live'));
          throw appError;
        }
      }
      throw new Error('the provider registry returned no candidates');

      /** Relay an accepted upstream stream; the run is finalised in `finally`, also when the client aborts. */
      async function* relay(upstream: AsyncIterable<ChatChunk>, provider: Provider, startedAt: number, usedFallback: RouteExplanation['fallback']): AsyncGenerator<StreamItem> {
        const assembler = new StreamAssembler(chat.tools);
        let failure: ProviderError | InvalidToolCallError | null = null;
        let completed = false;
        try {
          for await (const chunk of upstream) {
            for (const out of assembler.accept(chunk)) yield { chunk: out };
          }
          for (const out of assembler.end()) yield { chunk: out };
          if (!assembler.finished) throw new ProviderError('bad_response', 'The upstream stream ended before every choice finished.', { provider: provider.name });
          completed = true;
        } catch (thrown) {
          failure = thrown instanceof InvalidToolCallError || thrown instanceof ProviderError ? thrown : classifyThrown(provider.name, thrown, call.signal);
          if (!call.signal.aborted) yield { error: streamErrorOf(failure) };
        } finally {
          const latencyMs = clock.now() - startedAt;
          const completion = assembler.completion();
          const reported = usageOf(assembler.usage);
          const completionTokens = countTokens(assembler.completionText, request.model);
          const usage = reported ?? { promptTokens: promptEstimate, completionTokens, totalTokens: promptEstimate + completionTokens };
          if (!reported) run.event('usage.estimated', { reason: completed ? 'upstream sent no usage' : 'stream did not complete', ...usage });
          const cost = costOf(request.model, usage, provider.kind === 'mock');
          const aborted = !completed && (call.signal.aborted || failure === null);
          const kind = completed ? null : aborted ? 'aborted' : failure instanceof ProviderError ? failure.kind : 'invalid_tool_call';
          run.attempt({
            provider: provider.name,
            model: request.model,
            outcome: completed ? 'success' : aborted ? 'aborted' : 'failed',
            errorKind: kind,
            upstreamStatus: failure instanceof ProviderError ? (failure.upstreamStatus ?? null) : null,
            promptTokens: usage.promptTokens,
            completionTokens: usage.completionTokens,
            costUsd: cost.usd,
            latencyMs,
          });
          if (completed) {
            storeAnswer(completion, cost.usd, latencyMs);
            run.finish({
              status: 'completed',
              route: 'live',
              provider: provider.name,
              routeExplanation: explain(provider, usedFallback, usedFallback ? `streamed by ${provider.name} after ${usedFallback.from} failed` : `streamed by ${provider.name}`),
              usage,
              costUsd: run.attempts.reduce((sum, attempt) => sum + attempt.costUsd, 0),
              priced: cost.priced,
              ghostSavedUsd,
            });
          } else {
            const error = failure ?? new ProviderError('aborted', 'The client closed the stream.', { provider: provider.name });
            run.event('stream.ended_early', { kind, message: error.message });
            failRun(provider, usedFallback, error, usage);
          }
        }
      }
    },
  };

  function serveCached(call: ChatCall, run: RunRecorder, stored: ChatCompletion, decision: CacheDecision, saved: { usd: number; ms: number }): ChatResult {
    const created = Math.floor(clock.now() / 1000);
    const id = newId('chatcmpl').replace('_', '-');
    const completion: ChatCompletion = { ...stored, id, created };
    const usage = usageOf(stored.usage) ?? { promptTokens: 0, completionTokens: 0, totalTokens: 0 };
    run.finish({
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
        model: call.chat.request.model,
        executionMethod: { id: 'exact_cache', referenceGrade: 'not_applicable' },
      },
      usage,
      costUsd: 0,
      priced: true,
      savedUsd: saved.usd,
      savedMs: saved.ms,
    });
    if (call.chat.request.stream !== true) return { kind: 'json', runId: run.id, route: 'exact_cache', completion };
    const chunks = completionToChunks(completion, { id, created, includeUsage: true });
    async function* replay(): AsyncGenerator<StreamItem> {
      for (const chunk of chunks) yield { chunk };
    }
    return { kind: 'stream', runId: run.id, route: 'exact_cache', items: replay() };
  }
}
