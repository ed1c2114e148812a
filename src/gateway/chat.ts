/**
 * The chat-completions wire as a pipeline adapter: how to call a provider, relay and assemble its chunk stream,
 * replay a cached completion and shape a failure inside a stream. The shared stages live in pipeline.ts.
 */
import { newId } from '../core/ids.ts';
import type { RunUsage } from '../evidence/types.ts';
import { documentLogprobs, namesModel, withDocumentTopValues } from './chat-document-values.ts';
import { isDocumentFinishReason, withDocumentFinishReason } from './finish-reasons.ts';
import { filledUsage, hasTokenCounts, InvalidToolCallError, isTokenCount, refusedAnswer, type StreamRelay, type UpstreamFailure, type WireAdapter } from './pipeline.ts';
import { cachedTokensOf } from './pricing.ts';
import { chatProviderRun } from './provider-run.ts';
import { isObject } from './providers/chat-completions.ts';
import { providerErrorStatus } from './providers/errors.ts';
import { ProviderError, type ChatChunk, type ChatCompletion, type ChatRequest, type ChatUsage } from './providers/types.ts';
import { completionToChunks, newCompletionId, reasoningText, StreamAssembler } from './stream-assembler.ts';
import { countChatTokens, countTokens } from './tokens.ts';
import type { ValidatedChat } from './wires/chat-completions-schema.ts';

/** A chat-completions error body sent as the last `data:` line of a failed stream. */
export interface ChatStreamError {
  error: { message: string; type: string; param: null; code: string };
}

export type ChatStreamEvent = ChatChunk | ChatStreamError;

function usageOf(usage: ChatCompletion['usage'] | null | undefined): RunUsage | null {
  // Any other value (`0`, `"x"`) is a usage reported that is not token counts: recorded as the local count.
  if (usage === undefined || usage === null) return null;
  // Cached prompt tokens are part of prompt_tokens, priced at the model's cached-input rate (pricing.ts).
  const cached = cachedTokensOf(usage.prompt_tokens_details);
  return cached > 0
    ? { promptTokens: usage.prompt_tokens, completionTokens: usage.completion_tokens, totalTokens: usage.total_tokens, cacheReadTokens: cached }
    : { promptTokens: usage.prompt_tokens, completionTokens: usage.completion_tokens, totalTokens: usage.total_tokens };
}

/** A run's usage as the chat-completions wire writes it (in place of a reported one that is not token counts). */
function chatUsageOf(usage: RunUsage): ChatUsage {
  const written: ChatUsage = { prompt_tokens: usage.promptTokens, completion_tokens: usage.completionTokens, total_tokens: usage.totalTokens };
  if (usage.cacheReadTokens) written.prompt_tokens_details = { cached_tokens: usage.cacheReadTokens };
  return written;
}

/**
 * The text of a buffered completion's choices, as a stream's `completionText` has it (content, refusal, reasoning,
 * calls' names and arguments).
 */
function answerText(completion: ChatCompletion): string {
  let text = '';
  for (const choice of completion.choices) {
    const message = choice?.message;
    if (typeof message !== 'object' || message === null) continue;
    if (typeof message.content === 'string') text += message.content;
    text += reasoningText(message);
    for (const call of Array.isArray(message.tool_calls) ? message.tool_calls : []) {
      text += String(call?.function?.name ?? '') + String(call?.function?.arguments ?? '');
    }
    const legacy = message.function_call as { name?: unknown; arguments?: unknown } | undefined;
    if (typeof legacy === 'object' && legacy !== null) text += String(legacy.name ?? '') + String(legacy.arguments ?? '');
  }
  return text;
}

/**
 * The answers not stored in the exact cache for what they are, not what was asked: a streamed one whose assembly could
 * not keep what the live client got (StreamAssembler `storable`), a buffered one whose finish reason was not one known
 * (finish-reasons.ts). Weak: an answer leaves it when the request that made it is done with it.
 */
const unstorable = new WeakSet<ChatCompletion>();

/** A chat stream relayed and assembled (a class: its getters live on the prototype, not on each stream's object). */
class ChatRelay implements StreamRelay<ChatCompletion, ChatStreamEvent> {
  constructor(
    private readonly assembler: StreamAssembler,
    private readonly provider: string,
    private readonly request: ChatRequest,
  ) {}

  accept(event: unknown): ChatStreamEvent[] {
    const out = this.assembler.accept(event as ChatChunk);
    const usage = (event as ChatChunk).usage;
    if (usage === undefined || usage === null) return out;
    // In the upstream's usage object, which the relayed chunk and the assembled answer share.
    if (isObject(usage)) withDocumentUsageDetails(usage);
    if (!hasTokenCounts(usageOf(usage))) this.relayRecordedUsage(out, usage);
    return out;
  }

  /**
   * A usage chunk whose usage is not token counts goes out with the usage the run records in its place (the
   * pipeline's `filledUsage` of the same counts and text), so that a client never reads that as usage.
   */
  private relayRecordedUsage(out: ChatChunk[], reported: ChatUsage): void {
    const recorded = this.recordedUsage(reported);
    for (const chunk of out) if (chunk.usage === reported) chunk.usage = recorded;
  }

  /** The usage the run records for a reported one that is not token counts, or none, as the wire writes it. */
  private recordedUsage(reported: ChatUsage | null): ChatUsage {
    const promptTokens = () => countChatTokens(this.request);
    const completionTokens = () => countTokens(this.assembler.completionText, this.request.model);
    return chatUsageOf(filledUsage(usageOf(reported), promptTokens, completionTokens));
  }

  end(): ChatStreamEvent[] {
    // The upstream ended it with `[DONE]`; the assembler finishes a choice left without a reason, so only a stream
    // whose chunks started no choice at all is no answer here.
    const out = this.assembler.end();
    if (!this.assembler.finished) {
      throw new ProviderError('bad_response', 'The upstream stream ended without an answer.', { provider: this.provider });
    }
    // An upstream that ignores `stream_options.include_usage` sends no usage chunk: the client that asked for one gets
    // the usage the run records (the wire drops it for one that did not), as a cache hit of the answer does. One that
    // sent its usage on a chunk with choices (its finish chunk, or every chunk) has it repeated on a chunk of its own,
    // the document's usage chunk, which the wire shows a client that asked as the stream's only usage.
    const usage = this.assembler.usage;
    if (usage === null) out.push(this.assembler.usageChunk(this.recordedUsage(null)));
    else if (!this.assembler.usageOnItsOwn) out.push(this.assembler.usageChunk(hasTokenCounts(usageOf(usage)) ? usage : this.recordedUsage(usage)));
    return out;
  }

  /** A usage chunk after the refused chunk (the pipeline's `trailingUsage`); the text of a chunk before it is counted. */
  acceptTrailingUsage(event: unknown): boolean {
    this.assembler.acceptRefused(event as ChatChunk);
    const usage = (event as ChatChunk).usage;
    if (usage === undefined || usage === null) return false;
    this.assembler.usage = usage;
    return true;
  }

  get heldBytes(): number {
    return this.assembler.heldBytes;
  }

  get usage(): RunUsage | null {
    return usageOf(this.assembler.usage);
  }

  get producedText(): string {
    return this.assembler.completionText;
  }

  result(): ChatCompletion {
    const completion = this.assembler.completion();
    if (!this.assembler.storable) unstorable.add(completion);
    return completion;
  }
}

function chatStreamError(error: UpstreamFailure): ChatStreamError {
  if (error instanceof InvalidToolCallError) {
    return { error: { message: error.message, type: 'server_error', param: null, code: 'invalid_tool_call' } };
  }
  const http = providerErrorStatus(error);
  return { error: { message: http.message, type: http.type, param: null, code: http.code } };
}

/**
 * The fields the OpenAPI document requires of a completion, where an upstream left them out (some compatible servers
 * send no `object`, `id`, `created` or `model`): the SDKs type them as always there (the Java SDK throws reading one
 * that is not set), and a streamed answer has them (the assembler writes its chunks so). What the upstream sent stays,
 * but for a fingerprint or service tier the document has not (chat-document-values.ts).
 */
function withDocumentFields(completion: ChatCompletion, model: string, now: () => number): void {
  completion.object = 'chat.completion';
  if (typeof completion.id !== 'string') completion.id = newCompletionId();
  if (!Number.isInteger(completion.created)) completion.created = Math.floor(now() / 1000);
  if (!namesModel(completion.model)) completion.model = model;
  withDocumentTopValues(completion);
}

/**
 * A usage's token details as the document has them, where an upstream sent them otherwise: a details field that is
 * `null` or not an object (some compatible servers send `prompt_tokens_details: null`) is left out, and so is a count
 * of the document's in one that is not a token count (`"cached_tokens": "2"`, `null`, `1.5`); the SDKs type them as
 * objects of integers. Left out is undefined (JSON drops it): nothing is written into a usage that has them right, which
 * pays a switch per count.
 */
function withDocumentUsageDetails(usage: ChatUsage): void {
  const prompt = usage.prompt_tokens_details;
  if (prompt !== undefined) {
    if (isObject(prompt)) withTokenCountsOnly(prompt);
    else usage.prompt_tokens_details = undefined;
  }
  const completion = usage.completion_tokens_details;
  if (completion !== undefined) {
    if (isObject(completion)) withTokenCountsOnly(completion);
    else usage.completion_tokens_details = undefined;
  }
}

/** A details object's counts the document names (any other field of a provider's is kept as sent), token counts only. */
function withTokenCountsOnly(details: Record<string, unknown>): void {
  for (const key in details) {
    switch (key) {
      case 'audio_tokens':
      case 'cached_tokens':
      case 'text_tokens':
      case 'image_tokens':
      case 'cache_write_tokens':
      case 'reasoning_tokens':
      case 'accepted_prediction_tokens':
      case 'rejected_prediction_tokens':
        if (!isTokenCount(details[key])) details[key] = undefined;
    }
  }
}

/** A choice's required fields, as `withDocumentFields`' (Ollama's compatible endpoint sends no `logprobs` nor `refusal`). */
function withChoiceDocumentFields(choice: ChatCompletion['choices'][number], position: number): void {
  // Its position stands for its index where the upstream sent none or not one (`"0"`, `-1`), as in a stream whose
  // upstream sent none (stream-assembler.ts; a chunk's index that is not one is a bad answer, providers/chat-completions.ts).
  if (!Number.isSafeInteger(choice.index) || choice.index < 0) choice.index = position;
  if (choice.logprobs === undefined) choice.logprobs = null;
  else if (choice.logprobs !== null) choice.logprobs = documentLogprobs(choice.logprobs);
  const message = choice.message;
  // An answer's message is the assistant's, the one role the document has for it (some servers send none, or `model`).
  if (message.role !== 'assistant') message.role = 'assistant';
  if (message.content === undefined) message.content = null;
  if (message.refusal === undefined) message.refusal = null;
  // None sent as null (LiteLLM sends all three so): the document has an array or object, or none; left out.
  if (message.tool_calls === null) message.tool_calls = undefined;
  if (message.function_call === null) message.function_call = undefined;
  if (message.annotations === null) message.annotations = undefined;
}

export function chatAdapter(chat: ValidatedChat, now: () => number): WireAdapter<ChatCompletion, ChatStreamEvent> {
  const request = chat.request;
  return {
    wire: 'chat_completions',
    model: request.model,
    stream: request.stream === true,
    cacheBody: request,
    providerRun: chatProviderRun(request),
    promptTokens: () => countChatTokens(request),

    async callBuffered(provider, signal) {
      const completion = await provider.chat(request, { signal });
      withDocumentFields(completion, request.model, now);
      if (isObject(completion.usage)) withDocumentUsageDetails(completion.usage);
      for (const [position, choice] of completion.choices.entries()) {
        withChoiceDocumentFields(choice, position);
        if (!isDocumentFinishReason(choice.finish_reason) && !withDocumentFinishReason(choice)) unstorable.add(completion);
        for (const [index, call] of (choice.message.tool_calls ?? []).entries()) {
          const problem = chat.tools.check(call, index);
          if (problem) throw refusedAnswer(new InvalidToolCallError(problem.message), completion);
          // A call the client cannot answer by id (the SDKs refuse one without): given one of svc's, as streamed ones are.
          if (!call.id) call.id = newId('call');
        }
      }
      return completion;
    },

    usageOf: (completion) => usageOf(completion.usage),
    withRecordedUsage: (completion, usage) => void (completion.usage = chatUsageOf(usage)),
    answerText,

    openStream: (provider, signal) => provider.streamChat(request, { signal }),

    newRelay: (provider) => new ChatRelay(new StreamAssembler(chat.tools, request.model), provider.name, request),

    // Log probabilities are not kept by the stream assembler nor replayed as chunks, so an answer asked with them is
    // not stored: a hit would answer `logprobs: null`. Nor is a streamed answer the assembler could not keep whole,
    // nor one without a choice (a buffered `choices: []`): no answer to give again.
    cacheable: (completion) =>
      request.logprobs !== true &&
      !unstorable.has(completion) &&
      completion.choices.length > 0 &&
      completion.choices.every((choice) => ['stop', 'tool_calls', 'function_call', 'length'].includes(choice.finish_reason)),

    // A choice's audio is kept upstream until its `expires_at` (seconds) for a next turn to name by id.
    expiresAt(stored) {
      let earliest: number | undefined;
      for (const choice of stored.choices) {
        const expires = (choice.message.audio as { expires_at?: unknown } | null | undefined)?.expires_at;
        if (typeof expires === 'number') earliest = Math.min(earliest ?? Infinity, expires * 1000);
      }
      return earliest;
    },

    fromCache: (stored) => ({ ...stored, id: newCompletionId(), created: Math.floor(now() / 1000) }),

    replay: (completion) => completionToChunks(completion, { id: completion.id, created: completion.created, includeUsage: true }),

    streamError: chatStreamError,
  };
}
