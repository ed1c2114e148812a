/**
 * The deterministic mock provider (TensorZero's `dummy` provider): it answers when no live provider is configured
 * for a model family, and tests choose failure behaviour through the model name (docs/providers.md, "Mock models").
 *
 * Answers are functions of the request: the text mentions the last user message and carries a digest of the
 * conversation; declared tools are called with arguments generated from their JSON Schema (honouring `tool_choice`
 * and `parallel_tool_calls`); structured outputs follow `response_format`; usage comes from the real tokenizer.
 * Streams are realistic chunk sequences (role chunk, content deltas, tool-call fragments, finish chunk, usage chunk).
 * Embeddings are unit vectors built from hashes of the input, so equal inputs embed equally and texts sharing words
 * are similar.
 */
import type { CallSignal } from '../call-signal.ts';
import { createHash, randomBytes } from 'node:crypto';
import { countChatTokens, countEmbeddingInputTokens, countTokens, truncateToTokens } from '../tokens.ts';
import { mockMessages, mockResponses, mockStreamMessages, mockStreamResponses } from './mock-wires.ts';
import { sampleFromSchema, UnsatisfiableSchemaError } from './schema-sample.ts';
import {
  ProviderError,
  type ChatChunk,
  type ChatCompletion,
  type ChatRequest,
  type ChatTool,
  type ChatToolCall,
  type ChatUsage,
  type EmbeddingsRequest,
  type EmbeddingsResult,
  type Provider,
  type ProviderCallContext,
  type Wire,
} from './types.ts';

export const MOCK_PROVIDER_NAME = 'mock';

/** Default wait of `mock-slow` models; `mock-slow-<ms>` chooses its own. */
export const MOCK_SLOW_DEFAULT_MS = 2000;

export interface MockProviderOptions {
  /** Epoch milliseconds (the `created` field); defaults to Date.now. */
  now?: () => number;
}

/** Behaviour chosen by the model name; see docs/providers.md. */
export interface MockBehaviour {
  slowMs: number;
  failure: 'rate_limited' | 'upstream_error' | 'timeout' | 'network' | 'rejected' | null;
  stream: 'malformed' | 'truncated' | null;
  /** Embeddings: largest batch accepted before answering batch_too_large. */
  maxBatch: number | null;
}

export function mockBehaviour(model: string): MockBehaviour {
  const id = model.toLowerCase();
  const slow = /mock-slow(?:-(\d+))?/.exec(id);
  const batch = /mock-batch-(\d+)/.exec(id);
  let failure: MockBehaviour['failure'] = null;
  if (id.includes('mock-429')) failure = 'rate_limited';
  else if (id.includes('mock-5xx')) failure = 'upstream_error';
  else if (id.includes('mock-timeout')) failure = 'timeout';
  else if (id.includes('mock-network')) failure = 'network';
  else if (id.includes('mock-400')) failure = 'rejected';
  return {
    slowMs: slow ? (slow[1] !== undefined ? Number(slow[1]) : MOCK_SLOW_DEFAULT_MS) : 0,
    failure,
    stream: id.includes('mock-malformed') ? 'malformed' : id.includes('mock-truncated') ? 'truncated' : null,
    maxBatch: batch ? Math.max(1, Number(batch[1])) : null,
  };
}

function failureError(failure: NonNullable<MockBehaviour['failure']>): ProviderError {
  const provider = MOCK_PROVIDER_NAME;
  switch (failure) {
    case 'rate_limited':
      return new ProviderError('rate_limited', 'mock rate limit (model name contains mock-429)', { provider, upstreamStatus: 429, retryAfterSeconds: 1 });
    case 'upstream_error':
      return new ProviderError('upstream_error', 'mock upstream failure (model name contains mock-5xx)', { provider, upstreamStatus: 500 });
    case 'timeout':
      return new ProviderError('timeout', 'mock timeout (model name contains mock-timeout)', { provider });
    case 'network':
      return new ProviderError('network', 'mock connection refused (model name contains mock-network)', { provider });
    case 'rejected':
      return new ProviderError('rejected', 'mock rejection (model name contains mock-400)', { provider, upstreamStatus: 400 });
  }
}

function abortedError(): ProviderError {
  return new ProviderError('aborted', 'the client went away', { provider: MOCK_PROVIDER_NAME });
}

function wait(ms: number, signal: CallSignal): Promise<void> {
  if (signal.aborted) return Promise.reject(abortedError());
  if (ms <= 0) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(abortedError());
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * A planned chunk sequence as a stream, a turn of the event loop between chunks. Failure modes break off after the
 * first few chunks, as a live stream would mid-answer. Module-level: a generator function made per stream costs a
 * hidden class per call on Node 20 (docs/performance-notes.md, "Generators made per request").
 */
async function* paced(sequence: readonly ChatChunk[], behaviour: MockBehaviour, signal: CallSignal): AsyncGenerator<ChatChunk> {
  const breakAt = behaviour.stream ? Math.min(3, sequence.length - 1) : sequence.length;
  for (let i = 0; i < breakAt; i += 1) {
    if (signal.aborted) throw abortedError();
    yield sequence[i]!;
    // Let other work (and a client disconnect) in between chunks, as network pacing would.
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
  if (signal.aborted) throw abortedError();
  if (behaviour.stream === 'malformed') {
    throw new ProviderError('bad_response', 'mock malformed chunk: the stream event is not valid JSON', { provider: MOCK_PROVIDER_NAME, upstreamStatus: 200 });
  }
  if (behaviour.stream === 'truncated') {
    throw new ProviderError('bad_response', 'mock truncated stream: ended without a finish chunk or [DONE]', { provider: MOCK_PROVIDER_NAME, upstreamStatus: 200 });
  }
}

/** Wait and fail as the model name says, before any answer (so the caller may fail over). */
async function preamble(behaviour: MockBehaviour, signal: CallSignal): Promise<void> {
  await wait(behaviour.slowMs, signal);
  if (behaviour.failure) throw failureError(behaviour.failure);
}

function digest(value: unknown): string {
  return createHash('sha256').update(JSON.stringify(value) ?? '').digest('hex');
}

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content
      .map((part) => (part && typeof part === 'object' && typeof (part as { text?: unknown }).text === 'string' ? (part as { text: string }).text : ''))
      .filter(Boolean)
      .join(' ');
  }
  return '';
}

function excerpt(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length <= max ? flat : `${flat.slice(0, max - 1)}…`;
}

interface PlannedChoice {
  index: number;
  content: string | null;
  toolCalls: ChatToolCall[];
  finishReason: 'stop' | 'length' | 'tool_calls';
  completionTokens: number;
}

function declaredTools(request: ChatRequest): ChatTool[] {
  return (Array.isArray(request.tools) ? request.tools : []).filter(
    (tool): tool is ChatTool => tool?.type === 'function' && typeof tool.function?.name === 'string',
  );
}

/** The tools the mock calls for this turn, or none (answer with text). */
function selectTools(request: ChatRequest, lastUserText: string): ChatTool[] {
  let tools = declaredTools(request);
  if (tools.length === 0) return [];
  const choice = request.tool_choice as unknown;
  if (choice === 'none') return [];
  let required = choice === 'required';
  if (choice && typeof choice === 'object') {
    const named = (choice as { function?: { name?: unknown } }).function?.name;
    if (typeof named === 'string') {
      const tool = tools.find((t) => t.function.name === named);
      if (!tool) {
        throw new ProviderError('rejected', `tool_choice names "${named}", which is not a declared tool`, {
          provider: MOCK_PROVIDER_NAME,
          upstreamStatus: 400,
        });
      }
      return [tool];
    }
    const allowed = (choice as { allowed_tools?: { mode?: unknown; tools?: Array<{ function?: { name?: unknown } }> } }).allowed_tools;
    if (allowed) {
      const names = new Set((allowed.tools ?? []).map((t) => t.function?.name));
      tools = tools.filter((t) => names.has(t.function.name));
      required = allowed.mode === 'required';
      if (tools.length === 0) return [];
    }
  }
  // `auto`: call tools on a fresh user turn; once tool results came back, answer with text.
  const last = request.messages[request.messages.length - 1];
  if (!required && last?.role === 'tool') return [];
  const mentioned = tools.filter((t) => lastUserText.includes(t.function.name));
  const selected = mentioned.length > 0 ? mentioned : [tools[0]!];
  return request.parallel_tool_calls === false ? selected.slice(0, 1) : selected;
}

function answerText(request: ChatRequest, seed: string, lastUserText: string): string {
  const last = request.messages[request.messages.length - 1];
  const tag = seed.slice(0, 8);
  if (last?.role === 'tool') {
    return `Mock answer ${tag} using the tool results: ${excerpt(textOf(last.content), 160)}`;
  }
  if (!lastUserText) return `Mock answer ${tag}: there was no user message to answer.`;
  return `Mock answer ${tag}: you said "${excerpt(lastUserText, 160)}". This reply is deterministic for the same conversation.`;
}

/**
 * A value of the schema, or the mock's 400 for one whose bounds allow no value it must write (a required integer between
 * exclusive bounds 1 and 2): no answer could be valid, and svc would refuse the mock's own (docs/providers.md).
 */
function sampled(schema: unknown, of: string): unknown {
  try {
    return sampleFromSchema(schema);
  } catch (error) {
    if (!(error instanceof UnsatisfiableSchemaError)) throw error;
    throw new ProviderError('rejected', `the mock provider can write no value of ${of}: ${error.message}`, { provider: MOCK_PROVIDER_NAME, upstreamStatus: 400 });
  }
}

function structuredContent(request: ChatRequest, text: string): string | null {
  const format = request.response_format as { type?: unknown; json_schema?: { schema?: unknown } } | undefined;
  if (format?.type === 'json_schema') return JSON.stringify(sampled(format.json_schema?.schema ?? {}, 'the structured output\'s schema'));
  if (format?.type === 'json_object') return JSON.stringify({ answer: text });
  return null;
}

/**
 * The text ended before the earliest of the `stop` sequences it holds, and that sequence (null when none occurs): the
 * model generated it and the provider bills it, though it is not in the answer.
 */
function applyStop(text: string, stop: unknown): { text: string; sequence: string | null } {
  const stops = typeof stop === 'string' ? [stop] : Array.isArray(stop) ? stop.filter((s): s is string => typeof s === 'string' && s !== '') : [];
  let cut = -1;
  let sequence: string | null = null;
  for (const s of stops) {
    const at = text.indexOf(s);
    if (at >= 0 && (cut < 0 || at < cut)) {
      cut = at;
      sequence = s;
    }
  }
  return cut >= 0 ? { text: text.slice(0, cut), sequence } : { text, sequence: null };
}

function planChoices(request: ChatRequest): PlannedChoice[] {
  const lastUser = [...request.messages].reverse().find((m) => m.role === 'user');
  const lastUserText = textOf(lastUser?.content);
  const count = typeof request.n === 'number' && Number.isInteger(request.n) && request.n > 1 ? Math.min(request.n, 8) : 1;
  const maxTokens = [request.max_completion_tokens, request.max_tokens].find((v): v is number => typeof v === 'number' && v > 0);
  const tools = selectTools(request, lastUserText);
  const choices: PlannedChoice[] = [];
  for (let index = 0; index < count; index += 1) {
    const seed = digest({ model: request.model, messages: request.messages, index });
    if (tools.length > 0) {
      const toolCalls = tools.map((tool, i) => ({
        id: `call_${digest({ seed, i, name: tool.function.name }).slice(0, 24)}`,
        type: 'function' as const,
        function: { name: tool.function.name, arguments: JSON.stringify(sampled(tool.function.parameters ?? { type: 'object' }, `tool ${tool.function.name}'s parameters`)) },
      }));
      const completionTokens = toolCalls.reduce((sum, c) => sum + 3 + countTokens(c.function.name) + countTokens(c.function.arguments), 0);
      choices.push({ index, content: null, toolCalls, finishReason: 'tool_calls', completionTokens });
      continue;
    }
    const text = answerText(request, seed, lastUserText);
    let content = structuredContent(request, text) ?? text;
    let finishReason: PlannedChoice['finishReason'] = 'stop';
    const stopped = applyStop(content, request.stop);
    content = stopped.text;
    // The stop sequence counts as generated output (as the messages wire's `chatToMessage` counts it): a text stopped
    // before its first character is no answer of 0 completion tokens. A sequence the token limit cuts off was not
    // generated: the answer ends at the limit.
    let generated = stopped.sequence === null ? content : content + stopped.sequence;
    if (maxTokens !== undefined && countTokens(generated) > maxTokens) {
      content = truncateToTokens(content, maxTokens);
      generated = content;
      finishReason = 'length';
    }
    choices.push({ index, content, toolCalls: [], finishReason, completionTokens: countTokens(generated) });
  }
  return choices;
}

function usageOf(request: ChatRequest, choices: PlannedChoice[]): ChatUsage {
  const prompt = countChatTokens(request);
  const completion = choices.reduce((sum, c) => sum + c.completionTokens, 0);
  return {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + completion,
    prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
    completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
  };
}

/** Pieces of a text as a model streams them: a word with its trailing whitespace per delta. */
function contentPieces(text: string): string[] {
  return text.match(/\s*\S+\s*/g) ?? (text ? [text] : []);
}

/** Tool-call arguments arrive in small fragments that split JSON tokens, as live upstreams send them. */
function argumentPieces(args: string): string[] {
  const pieces: string[] = [];
  for (let i = 0; i < args.length; i += 7) pieces.push(args.slice(i, i + 7));
  return pieces;
}

const SYSTEM_FINGERPRINT = 'fp_svc_mock';

/**
 * The mock's refusal of a request field it cannot honour, as an upstream refuses what its model cannot do: a 400
 * `upstream_rejected` naming the field in the message and in `param` (a wire whose errors have one). Every wire's mock
 * refuses so rather than answer silently less than was asked (SPEC 4.2; docs/providers.md, "Mock models").
 */
export function mockRefusal(field: string, why: string): ProviderError {
  return new ProviderError('rejected', `${field}: ${why}`, { provider: MOCK_PROVIDER_NAME, upstreamStatus: 400, upstreamParam: field });
}

/**
 * Why the mock refuses a chat request, as an upstream refuses what its model cannot do (a 400 `upstream_rejected`);
 * null when it answers it. The mock makes text and tool calls only: a request for log probabilities, audio or a web
 * search answered with `logprobs: null` or a plain text message would be silently less than was asked (SPEC 4.2), so
 * it names the field.
 */
function mockChatRefusal(request: ChatRequest): ProviderError | null {
  if (request.logprobs === true) return mockRefusal('logprobs', 'the mock provider has no log probabilities to give; leave logprobs out or configure a live provider');
  const modalities = request.modalities;
  if ((Array.isArray(modalities) && modalities.includes('audio')) || (request.audio !== undefined && request.audio !== null)) {
    return mockRefusal('modalities', 'the mock provider answers in text only, not audio; leave audio out or configure a live provider');
  }
  // A search model's answer is grounded in what it found; the mock searches nothing, so its answer would not be one.
  if (request.web_search_options !== undefined && request.web_search_options !== null) {
    return mockRefusal('web_search_options', 'the mock provider does not search the web; leave web_search_options out or configure a live provider');
  }
  return null;
}

export function createMockProvider(options: MockProviderOptions = {}): Provider {
  const now = options.now ?? Date.now;

  async function chat(request: ChatRequest, context: ProviderCallContext): Promise<ChatCompletion> {
    const behaviour = mockBehaviour(request.model);
    await preamble(behaviour, context.signal);
    const refusal = mockChatRefusal(request);
    if (refusal) throw refusal;
    if (behaviour.stream) {
      throw new ProviderError('bad_response', `mock ${behaviour.stream} answer: the upstream body is not valid JSON`, { provider: MOCK_PROVIDER_NAME, upstreamStatus: 200 });
    }
    const choices = planChoices(request);
    return {
      id: `chatcmpl-${randomBytes(12).toString('hex')}`,
      object: 'chat.completion',
      created: Math.floor(now() / 1000),
      model: request.model,
      choices: choices.map((choice) => ({
        index: choice.index,
        message: {
          role: 'assistant',
          content: choice.content,
          refusal: null,
          annotations: [],
          ...(choice.toolCalls.length > 0 ? { tool_calls: choice.toolCalls } : {}),
        },
        logprobs: null,
        finish_reason: choice.finishReason,
      })),
      usage: usageOf(request, choices),
      service_tier: 'default',
      system_fingerprint: SYSTEM_FINGERPRINT,
    };
  }

  async function streamChat(request: ChatRequest, context: ProviderCallContext): Promise<AsyncIterable<ChatChunk>> {
    const behaviour = mockBehaviour(request.model);
    await preamble(behaviour, context.signal);
    const refusal = mockChatRefusal(request);
    if (refusal) throw refusal;
    const choices = planChoices(request);
    const includeUsage = (request.stream_options as { include_usage?: unknown } | undefined)?.include_usage === true;
    const usage = usageOf(request, choices);
    const id = `chatcmpl-${randomBytes(12).toString('hex')}`;
    const created = Math.floor(now() / 1000);
    const chunk = (index: number, delta: ChatChunk['choices'][number]['delta'], finishReason: string | null = null): ChatChunk => ({
      id,
      object: 'chat.completion.chunk',
      created,
      model: request.model,
      service_tier: 'default',
      system_fingerprint: SYSTEM_FINGERPRINT,
      choices: [{ index, delta, logprobs: null, finish_reason: finishReason }],
      ...(includeUsage ? { usage: null } : {}),
    });

    const sequence: ChatChunk[] = [];
    for (const choice of choices) {
      if (choice.toolCalls.length > 0) {
        sequence.push(chunk(choice.index, { role: 'assistant', content: null, refusal: null }));
        choice.toolCalls.forEach((call, i) => {
          sequence.push(chunk(choice.index, { tool_calls: [{ index: i, id: call.id, type: 'function', function: { name: call.function.name, arguments: '' } }] }));
          for (const piece of argumentPieces(call.function.arguments)) {
            sequence.push(chunk(choice.index, { tool_calls: [{ index: i, function: { arguments: piece } }] }));
          }
        });
      } else {
        sequence.push(chunk(choice.index, { role: 'assistant', content: '', refusal: null }));
        for (const piece of contentPieces(choice.content ?? '')) sequence.push(chunk(choice.index, { content: piece }));
      }
      sequence.push(chunk(choice.index, {}, choice.finishReason));
    }
    // Always, as the live provider asks every upstream for it (chat-completions.ts `streamChat`): the run records it
    // and the answer is stored with it, so that a cache hit asking for usage gets it; a client that did not ask does
    // not see this chunk (wires/chat-completions.ts).
    sequence.push({ id, object: 'chat.completion.chunk', created, model: request.model, service_tier: 'default', system_fingerprint: SYSTEM_FINGERPRINT, choices: [], usage });
    return paced(sequence, behaviour, context.signal);
  }

  async function embed(request: EmbeddingsRequest, context: ProviderCallContext): Promise<EmbeddingsResult> {
    const behaviour = mockBehaviour(request.model);
    await preamble(behaviour, context.signal);
    if (behaviour.maxBatch !== null && request.input.length > behaviour.maxBatch) {
      throw new ProviderError('batch_too_large', `mock batch limit: at most ${behaviour.maxBatch} inputs per request`, { provider: MOCK_PROVIDER_NAME, upstreamStatus: 400 });
    }
    const refusal = mockEmbeddingsRefusal(request.model, request.input.length, request.dimensions);
    if (refusal) throw refusal;
    const dimensions = request.dimensions ?? defaultEmbeddingDimensions(request.model);
    const inputs = request.input as Array<string | number[]>;
    let tokens = 0;
    for (const input of inputs) {
      const count = countEmbeddingInputTokens(input);
      if (count > MOCK_MAX_EMBEDDING_INPUT_TOKENS) throw inputTooLong(count);
      tokens += count;
    }
    const vectors = inputs.map((input) => mockEmbedding(input, dimensions));
    return { model: request.model, vectors, usage: { prompt_tokens: tokens, total_tokens: tokens } };
  }

  return {
    name: MOCK_PROVIDER_NAME,
    kind: 'mock',
    supports: () => true, // the mock speaks every wire natively
    chat,
    streamChat,
    embed,
    messages: (request, context) => mockMessages(chat, request, context),
    streamMessages: (request, context) => mockStreamMessages(chat, request, context),
    responses: (request, context) => mockResponses(chat, request, context, now()),
    streamResponses: (request, context) => mockStreamResponses(chat, request, context, now()),
  };
}

/** The most `dimensions` the mock embeds to: the size of its largest model (text-embedding-3-large). */
export const MOCK_MAX_EMBEDDING_DIMENSIONS = 3072;

/**
 * The most values (inputs × dimensions) the mock builds for one request: 2048 inputs of 512 dimensions, or 341 of
 * 3072, a ~21 MB JSON answer. Every value is a float in svc's memory and ~20 bytes of JSON, so the wire's largest
 * batch at the largest model's size (2048 × 3072) was a ~136 MB body that took svc from ~137 MB to ~650 MB.
 */
export const MOCK_MAX_EMBEDDING_VALUES = 1_048_576;

/**
 * Why the mock refuses to embed `inputs` inputs of `dimensions` (its model's default when unset), as an upstream
 * refuses what its model or its limits do not take (a 400 `upstream_rejected`); null when it embeds them. The mock's
 * vectors are svc's own work: no larger than its largest model's (the wire takes larger ones for upstreams whose
 * models have them), and no more values than MOCK_MAX_EMBEDDING_VALUES. The embeddings service asks it for the whole
 * request before splitting a batch, so split parts are counted together.
 */
export function mockEmbeddingsRefusal(model: string, inputs: number, dimensions: number | undefined): ProviderError | null {
  if (dimensions !== undefined && dimensions > MOCK_MAX_EMBEDDING_DIMENSIONS) {
    return new ProviderError('rejected', `mock embeddings: dimensions must be at most ${MOCK_MAX_EMBEDDING_DIMENSIONS}, got ${dimensions}`, { provider: MOCK_PROVIDER_NAME, upstreamStatus: 400 });
  }
  const size = dimensions ?? defaultEmbeddingDimensions(model);
  if (inputs * size > MOCK_MAX_EMBEDDING_VALUES) {
    const message = `mock embeddings: at most ${MOCK_MAX_EMBEDDING_VALUES} values (inputs × dimensions) per request, got ${inputs} inputs × ${size} dimensions; send fewer inputs or fewer dimensions`;
    return new ProviderError('rejected', message, { provider: MOCK_PROVIDER_NAME, upstreamStatus: 400 });
  }
  return null;
}

/**
 * The most tokens of one embeddings input, the chat-completions family's bound for every embedding model (its OpenAPI
 * document's `input`: "8192 tokens for all embedding models"). The mock refuses a longer one as that upstream does,
 * so that what embeds against the mock embeds against the upstream.
 */
export const MOCK_MAX_EMBEDDING_INPUT_TOKENS = 8192;

/** The upstream's refusal of an input past MOCK_MAX_EMBEDDING_INPUT_TOKENS, in its words (a 400 it gives no param). */
function inputTooLong(tokens: number): ProviderError {
  const message = `This model's maximum context length is ${MOCK_MAX_EMBEDDING_INPUT_TOKENS} tokens, however you requested ${tokens} tokens (${tokens} in your prompt; 0 for the completion). Please reduce your prompt; or completion length.`;
  return new ProviderError('rejected', message, { provider: MOCK_PROVIDER_NAME, upstreamStatus: 400 });
}

/** 3072 for `*large*` embedding models, 1536 otherwise (text-embedding-3-small, ada-002, unknown ids). */
export function defaultEmbeddingDimensions(model: string): number {
  return /large/i.test(model) ? 3072 : 1536;
}

const WORD_POSITIONS = 8;
const DENSE_WEIGHT = 0.5;

/**
 * A unit vector for one input: a dense part from a SHAKE-256 stream of the whole input (equal inputs, equal vectors)
 * plus signed features hashed from each word or token id (inputs sharing words point the same way).
 */
export function mockEmbedding(input: string | number[], dimensions: number): number[] {
  const key = typeof input === 'string' ? `s:${input}` : `t:${input.join(',')}`;
  const bytes = createHash('shake256', { outputLength: dimensions * 2 }).update(key).digest();
  const dense = new Float64Array(dimensions);
  let denseNorm = 0;
  for (let i = 0; i < dimensions; i += 1) {
    dense[i] = bytes.readInt16LE(i * 2) / 32768;
    denseNorm += dense[i]! * dense[i]!;
  }
  const words = typeof input === 'string' ? (input.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []) : input.map(String);
  const features = new Float64Array(dimensions);
  let featureNorm = 0;
  for (const word of words.slice(0, 8192)) {
    const h = createHash('sha256').update(word).digest();
    for (let k = 0; k < WORD_POSITIONS; k += 1) {
      const n = h.readUInt32LE(k * 4);
      features[n % dimensions]! += n & 0x80000000 ? -1 : 1;
    }
  }
  for (const value of features) featureNorm += value * value;
  const denseScale = denseNorm > 0 ? DENSE_WEIGHT / Math.sqrt(denseNorm) : 0;
  const featureScale = featureNorm > 0 ? 1 / Math.sqrt(featureNorm) : 0;
  const out = new Array<number>(dimensions);
  let norm = 0;
  for (let i = 0; i < dimensions; i += 1) {
    out[i] = dense[i]! * denseScale + features[i]! * featureScale;
    norm += out[i]! * out[i]!;
  }
  const scale = norm > 0 ? 1 / Math.sqrt(norm) : 1;
  // Rounded to float32 so float and base64 encodings of the same vector agree exactly.
  for (let i = 0; i < dimensions; i += 1) out[i] = Math.fround(out[i]! * scale);
  return out;
}
