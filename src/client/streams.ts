/**
 * The streaming contract of the reference client (SPEC 6.3): SSE read as it arrives, `delta` chunks as they come
 * and one final `done` chunk (chat completions: cumulative toolCalls and finishReason, and every choice's when the
 * request asked for several; messages: stopReason). A
 * provider error inside an accepted stream is raised as `SvcStreamError` carrying requestId, runId, runUrl, route.
 */
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { quoted } from './server-text.ts';

/** Correlation values of a gateway answer (SPEC 4.20, 9.4); empty strings when the server did not send them. */
export interface RunCorrelation {
  runId: string;
  route: string;
  requestId: string;
  runUrl: string;
}

export class SvcStreamError extends Error implements RunCorrelation {
  readonly runId: string;
  readonly route: string;
  readonly requestId: string;
  readonly runUrl: string;
  /** The error object of the wire's error event, when there was one. */
  readonly detail: unknown;

  constructor(message: string, correlation: RunCorrelation, detail: unknown = null, options?: ErrorOptions) {
    super(message, options);
    this.name = 'SvcStreamError';
    this.runId = correlation.runId;
    this.route = correlation.route;
    this.requestId = correlation.requestId;
    this.runUrl = correlation.runUrl;
    this.detail = detail;
  }
}

/** The message of a stream's error event, quoted as a server's text is (server-text.ts); the event stays on `detail`. */
function providerFailure(error: unknown): string {
  const message = (error as { message?: unknown } | null)?.message;
  return typeof message === 'string' ? quoted(message) : 'the provider failed inside the stream';
}

/** Same rule as the server's: a request id is 1-128 characters of a safe set. */
const REQUEST_ID = /^[A-Za-z0-9._:@/+=-]{1,128}$/;

/** Read the correlation headers, keeping only well-formed values (they may come through proxies). */
export function correlationOf(headers: Record<string, string>): RunCorrelation {
  const requestId = headers['x-request-id'] ?? '';
  let runUrl = headers['x-svc-run-url'] ?? '';
  try {
    if (runUrl && !['http:', 'https:'].includes(new URL(runUrl).protocol)) runUrl = '';
  } catch {
    runUrl = '';
  }
  return {
    runId: /^run_[A-Za-z0-9]+$/.test(headers['x-svc-run-id'] ?? '') ? headers['x-svc-run-id']! : '',
    route: /^[a-z_]{1,40}$/.test(headers['x-svc-route'] ?? '') ? headers['x-svc-route']! : '',
    requestId: REQUEST_ID.test(requestId) ? requestId : '',
    runUrl,
  };
}

/**
 * The body of an accepted stream as it arrives. The connection failing midway (reset, cut by a proxy, the server
 * gone) is the stream ending before it finished: a SvcStreamError with the run's correlation, not the transport's
 * bare error (undici's `TypeError: terminated`). A stream the caller aborted keeps the abort's own error.
 */
export async function* received(body: AsyncIterable<Uint8Array>, correlation: RunCorrelation, signal: AbortSignal): AsyncGenerator<Uint8Array> {
  try {
    for await (const chunk of body) yield chunk;
  } catch (error) {
    if (signal.aborted) throw error;
    throw new SvcStreamError(`the stream broke off before the answer finished: ${(error as Error).message}`, correlation, null, { cause: error });
  }
}

/**
 * The most of one SSE event (or comment) the client holds while it arrives: far more than any chunk svc sends, but an
 * event from a server that is not svc that never ends would otherwise be held until memory runs out.
 */
export const MAX_EVENT_BYTES = 16 * 1024 * 1024;

/** SSE messages of a byte stream, as they arrive; an event over MAX_EVENT_BYTES is a SvcStreamError. */
export async function* sseMessages(body: AsyncIterable<Uint8Array>, correlation: RunCorrelation): AsyncGenerator<EventSourceMessage> {
  const queue: EventSourceMessage[] = [];
  // Bytes received since the last event or comment ended, counted by whole chunks (within one chunk of the truth).
  let pending = 0;
  const parser = createParser({
    onEvent: (message) => {
      queue.push(message);
      pending = 0;
    },
    onComment: () => {
      pending = 0;
    },
  });
  const decoder = new TextDecoder();
  for await (const chunk of body) {
    pending += chunk.byteLength;
    if (pending > MAX_EVENT_BYTES) throw new SvcStreamError(`the gateway sent a stream event larger than ${MAX_EVENT_BYTES} bytes`, correlation);
    parser.feed(decoder.decode(chunk, { stream: true }));
    while (queue.length > 0) yield queue.shift()!;
  }
  parser.feed(decoder.decode());
  while (queue.length > 0) yield queue.shift()!;
}

export interface ToolCall {
  id: string;
  name: string;
  /** JSON text as the model produced it. */
  arguments: string;
}

export interface Usage {
  promptTokens: number;
  completionTokens: number;
  totalTokens: number;
}

/** One choice of a chat answer (a request with `n` > 1 has several), buffered or streamed. */
export interface ChatChoice {
  index: number;
  content: string;
  toolCalls: ToolCall[];
  finishReason: string | null;
}

/**
 * `delta` chunks of every choice, each marked with its `choice` index (always 0 unless the request asked for `n` > 1);
 * the `done` chunk's `content`, `toolCalls` and `finishReason` are choice 0's, as a buffered result's are, and
 * `choices` has every choice in index order.
 */
export type ChatStreamChunk =
  | { type: 'delta'; choice: number; content: string; toolCalls: Array<{ index: number; id?: string; name?: string; arguments?: string }> }
  | ({ type: 'done'; content: string; toolCalls: ToolCall[]; finishReason: string | null; choices: ChatChoice[]; usage: Usage | null; model: string } & RunCorrelation);

interface ChatChunkWire {
  model?: string;
  choices?: Array<{ index: number; delta?: { content?: string | null; tool_calls?: Array<{ index: number; id?: string; function?: { name?: string; arguments?: string } }> }; finish_reason?: string | null }>;
  usage?: { prompt_tokens: number; completion_tokens: number; total_tokens: number } | null;
  error?: { message?: string };
}

export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Whether a chunk has the shape `chatChunks` reads: an object whose `choices` (absent, or a list) each have an integer
 * `index` (a choice without one cannot be told from the others), a `delta` absent or an object, and its `tool_calls`
 * absent or a list of objects with an integer `index`.
 */
function isChatChunk(chunk: unknown): chunk is ChatChunkWire {
  if (!isObject(chunk)) return false;
  const choices = chunk.choices;
  if (choices === undefined || choices === null) return true;
  if (!Array.isArray(choices)) return false;
  for (const choice of choices) {
    if (!isObject(choice) || !Number.isInteger(choice.index)) return false;
    const delta = choice.delta;
    if (delta === undefined || delta === null) continue;
    if (!isObject(delta)) return false;
    const calls = delta.tool_calls;
    if (calls === undefined || calls === null) continue;
    if (!Array.isArray(calls) || !calls.every((call) => isObject(call) && Number.isInteger(call.index))) return false;
  }
  return true;
}

/** A choice as its deltas build it: text, tool calls by their index, finish reason. */
interface ChoiceDraft {
  content: string;
  calls: Map<number, ToolCall>;
  finishReason: string | null;
}

/** The chat-completions stream as delta chunks and a final done chunk (every choice; choice 0's at the top). */
export async function* chatChunks(body: AsyncIterable<Uint8Array>, correlation: RunCorrelation): AsyncGenerator<ChatStreamChunk> {
  let usage: Usage | null = null;
  let model = '';
  const drafts = new Map<number, ChoiceDraft>();
  let done = false;
  for await (const message of sseMessages(body, correlation)) {
    if (message.data === '[DONE]') {
      done = true;
      break;
    }
    let chunk: ChatChunkWire;
    try {
      chunk = JSON.parse(message.data) as ChatChunkWire;
    } catch {
      throw new SvcStreamError('the gateway sent a malformed stream chunk', correlation, message.data.slice(0, 500));
    }
    // svc sends chunks of this shape; a server that is not svc may not, and reading one would be a bare TypeError.
    if (!isChatChunk(chunk)) throw new SvcStreamError('the gateway sent a malformed stream chunk', correlation, message.data.slice(0, 500));
    if (chunk.error) throw new SvcStreamError(providerFailure(chunk.error), correlation, chunk.error);
    if (chunk.model) model = chunk.model;
    if (chunk.usage) usage = { promptTokens: chunk.usage.prompt_tokens, completionTokens: chunk.usage.completion_tokens, totalTokens: chunk.usage.total_tokens };
    for (const choice of chunk.choices ?? []) {
      const delta = chatDelta(choice, drafts);
      if (delta) yield delta;
    }
  }
  // svc sends `[DONE]` only after a complete answer: a stream that ends without it did not finish, even past its
  // finish_reason (cut before the usage chunk, or before a failure svc would have reported).
  if (!done) throw new SvcStreamError('the stream ended before the answer finished', correlation);
  const choices = [...drafts.entries()].sort(([a], [b]) => a - b).map(([index, draft]) => choiceOf(index, draft));
  const first = choices.find((choice) => choice.index === 0) ?? { content: '', toolCalls: [], finishReason: null };
  yield { type: 'done', content: first.content, toolCalls: first.toolCalls, finishReason: first.finishReason, choices, usage, model, ...correlation };
}

/** One choice of a chunk into its draft; the delta chunk to yield, or null when it carried no text nor call. */
function chatDelta(choice: NonNullable<ChatChunkWire['choices']>[number], drafts: Map<number, ChoiceDraft>): ChatStreamChunk | null {
  let draft = drafts.get(choice.index);
  if (!draft) {
    draft = { content: '', calls: new Map(), finishReason: null };
    drafts.set(choice.index, draft);
  }
  const calls = draft.calls;
  const text = choice.delta?.content ?? '';
  const fragments = (choice.delta?.tool_calls ?? []).map((fragment) => {
    const call = calls.get(fragment.index) ?? { id: '', name: '', arguments: '' };
    if (fragment.id) call.id = fragment.id;
    if (fragment.function?.name) call.name += fragment.function.name;
    if (fragment.function?.arguments) call.arguments += fragment.function.arguments;
    calls.set(fragment.index, call);
    return {
      index: fragment.index,
      ...(fragment.id ? { id: fragment.id } : {}),
      ...(fragment.function?.name ? { name: fragment.function.name } : {}),
      ...(fragment.function?.arguments ? { arguments: fragment.function.arguments } : {}),
    };
  });
  if (choice.finish_reason) draft.finishReason = choice.finish_reason;
  draft.content += text;
  return text || fragments.length > 0 ? { type: 'delta', choice: choice.index, content: text, toolCalls: fragments } : null;
}

function choiceOf(index: number, draft: ChoiceDraft): ChatChoice {
  const toolCalls = [...draft.calls.entries()].sort(([a], [b]) => a - b).map(([, call]) => call);
  return { index, content: draft.content, toolCalls, finishReason: draft.finishReason };
}

export interface MessagesToolUse {
  id: string;
  name: string;
  input: unknown;
}

export type MessagesStreamChunk =
  | { type: 'delta'; content: string; toolUse?: { index: number; id?: string; name?: string; partialJson?: string } }
  | ({ type: 'done'; content: string; toolUses: MessagesToolUse[]; stopReason: string | null; usage: Usage | null; model: string } & RunCorrelation);

/** A tool_use block's assembled input: svc checks it is JSON, so input that is not came from another server. */
function toolInput(json: string, name: string, correlation: RunCorrelation): unknown {
  try {
    return JSON.parse(json) as unknown;
  } catch {
    throw new SvcStreamError(`the gateway sent tool_use input of "${name}" that is not JSON`, correlation, json.slice(0, 500));
  }
}

/** The messages-wire stream (text deltas, tool_use blocks with input_json_delta) ending with stopReason. */
export async function* messagesChunks(body: AsyncIterable<Uint8Array>, correlation: RunCorrelation): AsyncGenerator<MessagesStreamChunk> {
  let content = '';
  let stopReason: string | null = null;
  let model = '';
  let inputTokens = 0;
  let outputTokens = 0;
  let stopped = false;
  const blocks = new Map<number, { id: string; name: string; json: string }>();
  for await (const message of sseMessages(body, correlation)) {
    let event: any;
    try {
      event = JSON.parse(message.data);
    } catch {
      throw new SvcStreamError('the gateway sent a malformed stream event', correlation, message.data.slice(0, 500));
    }
    switch (event?.type) {
      case 'error':
        throw new SvcStreamError(providerFailure(event.error), correlation, event.error ?? null);
      case 'message_start':
        model = event.message?.model ?? '';
        inputTokens = event.message?.usage?.input_tokens ?? 0;
        outputTokens = event.message?.usage?.output_tokens ?? 0;
        break;
      case 'content_block_start':
        if (event.content_block?.type === 'tool_use') {
          blocks.set(event.index, { id: event.content_block.id, name: event.content_block.name, json: '' });
          yield { type: 'delta', content: '', toolUse: { index: event.index, id: event.content_block.id, name: event.content_block.name } };
        }
        break;
      case 'content_block_delta':
        if (event.delta?.type === 'text_delta') {
          content += event.delta.text;
          yield { type: 'delta', content: event.delta.text };
        } else if (event.delta?.type === 'input_json_delta') {
          const block = blocks.get(event.index);
          if (block) block.json += event.delta.partial_json;
          yield { type: 'delta', content: '', toolUse: { index: event.index, partialJson: event.delta.partial_json } };
        }
        break;
      case 'message_delta':
        if (event.delta?.stop_reason) stopReason = event.delta.stop_reason;
        if (typeof event.usage?.output_tokens === 'number') outputTokens = event.usage.output_tokens;
        break;
      case 'message_stop':
        stopped = true;
        break;
    }
  }
  if (!stopped) throw new SvcStreamError('the stream ended before message_stop', correlation);
  const toolUses = [...blocks.entries()]
    .sort(([a], [b]) => a - b)
    .map(([, block]) => ({ id: block.id, name: block.name, input: block.json ? toolInput(block.json, block.name, correlation) : {} }));
  yield {
    type: 'done',
    content,
    toolUses,
    stopReason,
    usage: { promptTokens: inputTokens, completionTokens: outputTokens, totalTokens: inputTokens + outputTokens },
    model,
    ...correlation,
  };
}
