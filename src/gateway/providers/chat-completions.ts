/**
 * The live chat-completions-compatible provider over undici: `POST {baseUrl}/chat/completions` and
 * `POST {baseUrl}/responses` (buffered and SSE) and `POST {baseUrl}/embeddings`, with a bearer key. The client's request fields go upstream untouched; only the
 * transport fields (`stream`, `stream_options.include_usage`) are set for the call being made.
 *
 * Time is bounded without cutting long answers short: a connect timeout on the agent; for buffered calls one deadline
 * of `bufferedMs` (900 s, the longest buffered deadline of SPEC 8) over headers and body; for streams a header deadline
 * (30 s) and an idle timeout between body chunks, never a total. The caller's AbortSignal aborts the upstream call.
 * Every failure is classified by providers/errors.ts. This provider carries the chat_completions, responses and
 * embeddings wires; the registry reports the messages wire as unsupported for it.
 */
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { Agent, type Dispatcher } from 'undici';
import { classifyErrorCodes, classifyErrorEvent, classifyThrown, encodedAnswerFailure, readHttpFailure, redactSecrets } from './errors.ts';
import {
  ProviderError,
  type ChatChunk,
  type ChatCompletion,
  type ChatRequest,
  type EmbeddingsRequest,
  type EmbeddingsResult,
  type Provider,
  type ProviderCallContext,
  type ResponseObject,
  type ResponsesRequest,
  type ResponseStreamEvent,
  type UpstreamEvents,
  type Wire,
} from './types.ts';
import { deadlineSignal } from './deadline.ts';
import { undiciSignal, type CallSignal } from '../call-signal.ts';
import { firstEventWatch, notAnEventStream, releasable, SseFeed, sseJson, UnfinishedLine } from './sse.ts';
import { EMBEDDINGS_ANSWER_FACTOR, DEFAULT_MAX_ANSWER_BYTES, readAnswer, tooLargeMessage } from './bodies.ts';
import { answerBudgetFailure, type AnswerBudget } from '../answer-budget.ts';
import { MAX_JSON_DEPTH, nestsDeeperThan } from '../../core/json-depth.ts';
import { countEmbeddingTokens } from '../tokens.ts';
import { namesModel } from '../chat-document-values.ts';

export interface ProviderTimeouts {
  /** TCP/TLS connect. */
  connectMs: number;
  /** Whole buffered call (headers and body); at least the 900 s buffered deadline of SPEC 8 by default. */
  bufferedMs: number;
  /** Until a stream's status and headers arrive. */
  streamHeadersMs: number;
  /** Longest silence between two chunks of a stream body. */
  streamIdleMs: number;
}

export const DEFAULT_PROVIDER_TIMEOUTS: ProviderTimeouts = {
  connectMs: 10_000,
  bufferedMs: 900_000,
  streamHeadersMs: 30_000,
  streamIdleMs: 300_000,
};

/** One agent (connection pool) shared by every live provider of a registry. */
export function createUpstreamAgent(timeouts: ProviderTimeouts = DEFAULT_PROVIDER_TIMEOUTS): Agent {
  return new Agent({
    connect: { timeout: timeouts.connectMs },
    keepAliveTimeout: 30_000,
    // Per-request values below replace these; they only bound a request made without them.
    headersTimeout: timeouts.bufferedMs,
    bodyTimeout: timeouts.bufferedMs,
  });
}

export interface ChatCompletionsProviderOptions {
  /** Recorded on attempts: `chatcomp`, `chatcomp-fallback`, `chatcomp-tenant`. */
  name: string;
  apiKey: string;
  /** Base address including the version path, e.g. `https://upstream.example/v1`. */
  baseUrl: string;
  dispatcher: Dispatcher;
  timeouts?: Partial<ProviderTimeouts>;
  /** The most bytes an answer may have (src/gateway/providers/bodies.ts); default `DEFAULT_MAX_ANSWER_BYTES`. */
  maxAnswerBytes?: number;
  /** The budget of the answers in progress, in total (src/gateway/answer-budget.ts); absent: none. */
  answerBudget?: AnswerBudget;
}

type ResponseData = Dispatcher.ResponseData;

export function contentType(headers: ResponseData['headers']): string {
  const value = headers['content-type'];
  return ((Array.isArray(value) ? value[0] : value) ?? '').toLowerCase();
}

export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * A choice's or a tool call's position: a non-negative integer, or absent (some compatible upstreams, Gemini's among
 * them, leave a tool call's out; the assembler then tells the calls apart by their ids, stream-assembler.ts).
 */
function isIndex(value: unknown): boolean {
  return value === undefined || (Number.isInteger(value) && (value as number) >= 0);
}

/**
 * Whether a chunk's `choices` have the shape the stream assembler reads: each an object with an `index` (above), its
 * `delta` absent or an object, the delta's `tool_calls` absent or an array of objects with an `index`. Anything else
 * is the upstream's bad answer, not a failure of svc's (`choices: [null]` was a TypeError, recorded as a network
 * failure with its JavaScript message).
 */
function isChunkChoices(choices: unknown): boolean {
  if (!Array.isArray(choices)) return false;
  for (const choice of choices) {
    if (!isObject(choice) || !isIndex(choice.index)) return false;
    const delta = choice.delta;
    if (delta === undefined || delta === null) continue;
    if (!isObject(delta)) return false;
    const calls = delta.tool_calls;
    if (calls === undefined || calls === null) continue;
    if (!Array.isArray(calls)) return false;
    for (const call of calls) if (!isObject(call) || !isIndex(call.index)) return false;
  }
  return true;
}

/**
 * Whether a buffered answer's `choices` have the shape the wire reads (its tool-call check): each an object with a
 * `message` object, whose `tool_calls` are absent or an array of objects each with a `function` object. Anything else
 * is the upstream's bad answer, as a chunk's is (`isChunkChoices`); `choices: [null]` was a TypeError, recorded as a
 * network failure with its JavaScript message.
 */
function isCompletionChoices(choices: unknown): boolean {
  if (!Array.isArray(choices)) return false;
  for (const choice of choices) {
    if (!isObject(choice) || !isObject(choice.message)) return false;
    const calls = choice.message.tool_calls;
    if (calls === undefined || calls === null) continue;
    if (!Array.isArray(calls)) return false;
    for (const call of calls) if (!isObject(call) || !isObject(call.function)) return false;
  }
  return true;
}

/**
 * Whether a vector's component is a number a float32 holds (one that rounds to it, up to 3.4028235e38). Embeddings
 * are float32s, and base64, the official clients' default encoding, is their bytes: a finite double past that range
 * (1e39) was Infinity in a base64 answer and relayed as it came in a float one, so the client's choice of encoding
 * decided what it got. Such a value is no model's output, so the answer is refused whatever the encoding.
 */
function isFiniteFloat32(value: unknown): boolean {
  return Number.isFinite(value) && Number.isFinite(Math.fround(value as number));
}

/** Little-endian float32s from base64, or null when the bytes are not a whole number of them. */
function decodeBase64Floats(encoded: string): number[] | null {
  const bytes = Buffer.from(encoded, 'base64');
  if (bytes.byteLength % 4 !== 0) return null;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out = new Array<number>(bytes.byteLength / 4);
  for (let i = 0; i < out.length; i += 1) out[i] = view.getFloat32(i * 4, true);
  return out;
}

/** The origin and base path of an upstream address (`https://host/v1` -> `https://host`, `/v1`), or null. */
export function upstreamTarget(baseUrl: string): { origin: string; basePath: string } | null {
  try {
    const url = new URL(baseUrl);
    return { origin: url.origin, basePath: url.pathname.replace(/\/+$/, '') };
  } catch {
    return null;
  }
}

export function createChatCompletionsProvider(options: ChatCompletionsProviderOptions): Provider {
  const { name, apiKey, dispatcher } = options;
  const timeouts = { ...DEFAULT_PROVIDER_TIMEOUTS, ...options.timeouts };
  const maxAnswerBytes = options.maxAnswerBytes ?? DEFAULT_MAX_ANSWER_BYTES;
  const { answerBudget } = options;
  // Configured addresses are validated (config.ts); one that is not a URL fails each call, as undici would.
  const target = upstreamTarget(options.baseUrl);
  const secrets = [apiKey];

  const badResponse = (message: string, upstreamStatus?: number) =>
    new ProviderError('bad_response', message, { provider: name, ...(upstreamStatus !== undefined ? { upstreamStatus } : {}) });

  async function post(
    path: string,
    wire: Wire,
    body: unknown,
    signal: CallSignal,
    limits: { headersTimeout: number; bodyTimeout: number },
    clientSignal: CallSignal,
  ): Promise<ResponseData> {
    let response: ResponseData;
    try {
      // The dispatcher directly, with the origin and path split once per provider: undici's top-level `request`
      // would parse the URL again on every call.
      if (!target) throw new TypeError(`Invalid URL: ${options.baseUrl}`);
      response = await dispatcher.request({
        origin: target.origin,
        path: `${target.basePath}${path}`,
        method: 'POST',
        signal: undiciSignal(signal),
        headers: {
          authorization: `Bearer ${apiKey}`,
          'content-type': 'application/json',
          accept: (body as { stream?: unknown }).stream ? 'text/event-stream' : 'application/json',
          // svc decodes no answer's content coding (errors.ts `encodedAnswerFailure`), only an error's, for its message.
          'accept-encoding': 'identity',
        },
        body: JSON.stringify(body),
        headersTimeout: limits.headersTimeout,
        bodyTimeout: limits.bodyTimeout,
      });
    } catch (error) {
      throw classifyThrown(name, error, clientSignal);
    }
    if (response.statusCode < 200 || response.statusCode >= 300) {
      // Within the stream headers' deadline: a stream's call waits for its answer's status no longer than that.
      throw await readHttpFailure(response, { provider: name, wire, secrets, clientSignal, errorBodyMs: timeouts.streamHeadersMs });
    }
    const encoded = encodedAnswerFailure(name, response);
    if (encoded) throw encoded;
    return response;
  }

  /** POST and parse a JSON answer within the buffered deadline and `maxBytes`. */
  async function postJson(path: string, wire: Wire, body: unknown, context: ProviderCallContext, maxBytes = maxAnswerBytes): Promise<unknown> {
    const deadline = deadlineSignal(context.signal, timeouts.bufferedMs);
    const limits = { headersTimeout: timeouts.bufferedMs, bodyTimeout: timeouts.bufferedMs };
    let text: string;
    let status: number;
    try {
      const response = await post(path, wire, body, deadline.signal, limits, context.signal);
      status = response.statusCode;
      try {
        text = await readAnswer(response.body, maxBytes, () => badResponse(tooLargeMessage('the upstream answer', maxBytes), status), answerBudget, context.signal, name, status);
      } catch (error) {
        // The upstream answered 2xx and its body broke off or ran past the deadline: it made the answer.
        throw classifyThrown(name, error, context.signal, true);
      }
    } finally {
      deadline.release();
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      throw badResponse('the upstream answer is not valid JSON', status);
    }
    if (nestsDeeperThan(parsed, MAX_JSON_DEPTH)) throw badResponse(`the upstream answer nests more than ${MAX_JSON_DEPTH} levels deep`, status);
    return parsed;
  }

  async function chat(chatRequest: ChatRequest, context: ProviderCallContext): Promise<ChatCompletion> {
    // A buffered call: the transport fields of streaming do not go upstream (stream_options without stream is a 400).
    const { stream: _stream, stream_options: _streamOptions, ...body } = chatRequest;
    const parsed = await postJson('/chat/completions', 'chat_completions', body, context);
    if (!isObject(parsed) || !isCompletionChoices(parsed.choices)) {
      const failure = badResponse('the upstream answer is not a chat completion', 200);
      // Made and billed all the same: the usage it reported counts for the attempt (docs/gateway.md, "Cost"). Kept on
      // a completion without the choices svc could not read, so that the pipeline reads it as any answer's.
      if (isObject(parsed) && isObject(parsed.usage)) failure.answer = { choices: [], usage: parsed.usage };
      throw failure;
    }
    return parsed as unknown as ChatCompletion;
  }

  async function streamChat(chatRequest: ChatRequest, context: ProviderCallContext): Promise<UpstreamEvents<ChatChunk>> {
    const streamOptions = isObject(chatRequest.stream_options) ? chatRequest.stream_options : {};
    const body = { ...chatRequest, stream: true, stream_options: { ...streamOptions, include_usage: true } };
    const limits = { headersTimeout: timeouts.streamHeadersMs, bodyTimeout: timeouts.streamIdleMs };
    const response = await post('/chat/completions', 'chat_completions', body, context.signal, limits, context.signal);
    const type = contentType(response.headers);
    if (!type.includes('text/event-stream')) {
      throw badResponse(await notAnEventStream(response.body, type, secrets, timeouts.streamHeadersMs), response.statusCode);
    }
    return releasable(response.body, sseChunks(response.body, context.signal, firstEventWatch(name, timeouts.bufferedMs)));
  }

  /** The SSE body as typed chunks; ends at `[DONE]`, and a body that ends without it is a bad_response. */
  async function* sseChunks(body: ResponseData['body'], clientSignal: CallSignal, firstEvent: (eventsParsed: number) => void): AsyncGenerator<ChatChunk> {
    const pending: EventSourceMessage[] = [];
    const feed = new SseFeed(createParser({ onEvent: (event) => pending.push(event) }));
    let finished = false;
    let received = 0;
    const line = new UnfinishedLine(answerBudget, clientSignal);
    // The next pending chunk, or undefined when none is pending or `[DONE]` came. A plain function, not a generator
    // made per stream (see sse.ts).
    const next = (): ChatChunk | undefined => {
      if (pending.length === 0 || finished) return undefined;
      const event = pending.shift()!;
      if (event.data !== '[DONE]') return toChunk(event);
      finished = true;
      return undefined;
    };
    try {
      for await (const piece of body) {
        received += (piece as Buffer).length;
        // Every byte may be held until the stream ends (an unfinished line by the parser, the answer by the relay).
        if (received > maxAnswerBytes) throw badResponse(tooLargeMessage('the upstream stream', maxAnswerBytes), 200);
        feed.piece(piece as Buffer);
        // The relay's holdings are counted in the budget by the pipeline; the parser's unfinished line here.
        if (!line.fits(pending.length, (piece as Buffer).length)) throw answerBudgetFailure(name, received, 200);
        firstEvent(pending.length);
        for (let chunk = next(); chunk !== undefined; chunk = next()) yield chunk;
        if (finished) return;
      }
      feed.end();
      for (let chunk = next(); chunk !== undefined; chunk = next()) yield chunk;
      if (!finished) throw badResponse('the upstream stream ended without [DONE]', 200);
    } catch (error) {
      throw classifyThrown(name, error, clientSignal);
    } finally {
      // Stopping early (consumer break, error) must release the upstream connection.
      if (!body.destroyed) body.destroy();
    }
  }

  function toChunk(event: EventSourceMessage): ChatChunk {
    let parsed: unknown;
    try {
      parsed = JSON.parse(event.data);
    } catch {
      throw badResponse('an upstream stream event is not valid JSON', 200);
    }
    if (nestsDeeperThan(parsed, MAX_JSON_DEPTH)) throw badResponse(`an upstream stream event nests more than ${MAX_JSON_DEPTH} levels deep`, 200);
    // Classified by its code, as the other stream wires' error events are: a rate limit or server error before the
    // first chunk is failed over, an invalid request answered as the upstream's 400.
    if (event.event === 'error' || (isObject(parsed) && isObject(parsed.error))) {
      throw classifyErrorEvent({ provider: name, wire: 'chat_completions', data: isObject(parsed) ? parsed : {}, body: event.data, secrets });
    }
    // A usage chunk without `choices` (Fireworks and some proxies send one so) is read as the document's, with none.
    if (isObject(parsed) && parsed.choices === undefined && isObject(parsed.usage)) parsed.choices = [];
    if (!isObject(parsed) || !isChunkChoices(parsed.choices)) throw badResponse('an upstream stream event is not a chat completion chunk', 200);
    return parsed as unknown as ChatChunk;
  }

  async function embed(embeddingsRequest: EmbeddingsRequest, context: ProviderCallContext): Promise<EmbeddingsResult> {
    // The client's other fields first: the ones svc sets (floats, whatever the client asked for) win.
    const body: Record<string, unknown> = { ...embeddingsRequest.extra, model: embeddingsRequest.model, input: embeddingsRequest.input, encoding_format: 'float' };
    if (embeddingsRequest.dimensions !== undefined) body.dimensions = embeddingsRequest.dimensions;
    if (embeddingsRequest.user !== undefined) body.user = embeddingsRequest.user;
    const parsed = await postJson('/embeddings', 'embeddings', body, context, maxAnswerBytes * EMBEDDINGS_ANSWER_FACTOR);
    if (!isObject(parsed) || !Array.isArray(parsed.data)) throw badResponse('the upstream answer is not an embeddings list');
    const count = embeddingsRequest.input.length;
    // One embedding per input, each input's once: an answer with more (a repeated index) maps no vector to an input
    // for certain, so it is refused rather than one of them kept.
    if (parsed.data.length !== count) throw badResponse(`the upstream returned ${parsed.data.length} embeddings for ${count} inputs`);
    const vectors = new Array<number[] | undefined>(count);
    let dimensions = 0;
    parsed.data.forEach((item: unknown, position: number) => {
      if (!isObject(item)) throw badResponse('an upstream embedding is not an object');
      // An answer's position stands for an index only when the upstream sent none (`"1"` is not one).
      const index = item.index === undefined || item.index === null ? position : item.index;
      const raw = item.embedding;
      const vector = typeof raw === 'string' ? decodeBase64Floats(raw) : Array.isArray(raw) ? (raw as unknown[]) : null;
      // Finite float32s (JSON's 1e999 parses to Infinity, which a float answer would write out as null), as many in
      // every vector of the answer: one model's embeddings have one length.
      if (!vector || vector.length === 0 || (dimensions !== 0 && vector.length !== dimensions) || !vector.every(isFiniteFloat32)) {
        throw badResponse('an upstream embedding is not a vector of finite float32 numbers as long as the others');
      }
      dimensions = vector.length;
      if (!Number.isInteger(index) || (index as number) < 0 || (index as number) >= count) throw badResponse('an upstream embedding is malformed');
      if (vectors[index as number] !== undefined) throw badResponse(`the upstream returned two embeddings for input ${index as number}`);
      vectors[index as number] = vector as number[];
    });
    // The upstream's count when it is one, else the local one (none, or one that is not a count: -5, '7', 2.5). An
    // upstream that reports only total_tokens (Voyage AI, some compatible servers) counts the same tokens: an
    // embedding's are all input.
    const usage = isObject(parsed.usage) ? parsed.usage : undefined;
    const reported = usage?.prompt_tokens ?? usage?.total_tokens;
    const promptTokens = Number.isSafeInteger(reported) && (reported as number) >= 0 ? (reported as number) : countEmbeddingTokens(embeddingsRequest.input as Array<string | number[]>);
    return {
      // The model that embedded, when the upstream names one (namesModel: not an empty or blank name).
      model: namesModel(parsed.model) ? parsed.model : embeddingsRequest.model,
      vectors: vectors as number[][],
      usage: { prompt_tokens: promptTokens, total_tokens: promptTokens },
    };
  }

  async function responses(responsesRequest: ResponsesRequest, context: ProviderCallContext): Promise<ResponseObject> {
    const { stream: _stream, stream_options: _streamOptions, ...body } = responsesRequest;
    const parsed = await postJson('/responses', 'responses', body, context);
    if (!isObject(parsed) || parsed.object !== 'response' || !Array.isArray(parsed.output) || !parsed.output.every((item) => isObject(item) && typeof item.type === 'string')) {
      throw badResponse('the upstream answer is not a response');
    }
    // A response the upstream says failed is its failure, as the same answer streamed (its `response.failed`) is:
    // recorded failed, not completed, and answered with svc's error.
    if (parsed.status === 'failed') {
      const error = isObject(parsed.error) ? parsed.error : null;
      const message = typeof error?.message === 'string' ? redactSecrets(error.message, secrets) : '';
      const failure = classifyErrorCodes({ provider: name, wire: 'responses', codes: [error?.code], message: message || 'The upstream response failed.' });
      if (parsed.usage) failure.answer = parsed;
      throw failure;
    }
    return parsed as unknown as ResponseObject;
  }

  async function streamResponses(responsesRequest: ResponsesRequest, context: ProviderCallContext): Promise<UpstreamEvents<ResponseStreamEvent>> {
    const limits = { headersTimeout: timeouts.streamHeadersMs, bodyTimeout: timeouts.streamIdleMs };
    const response = await post('/responses', 'responses', { ...responsesRequest, stream: true }, context.signal, limits, context.signal);
    const type = contentType(response.headers);
    if (!type.includes('text/event-stream')) {
      throw badResponse(await notAnEventStream(response.body, type, secrets, timeouts.streamHeadersMs), response.statusCode);
    }
    // `response.failed` is relayed to the wire's own relay, which records it as the failure it is (with its usage and
    // code), its message masked here; an `error` event, and an error in the chat-completions shape (`data: {"error":
    // {...}}`, as compatible servers send one), are the upstream's failure here.
    return sseJson<ResponseStreamEvent>(response.body, {
      provider: name,
      wire: 'responses',
      clientSignal: context.signal,
      secrets,
      maxBytes: maxAnswerBytes,
      answerBudget,
      firstEventMs: timeouts.bufferedMs,
      isTerminal: (data) => data.type === 'response.completed' || data.type === 'response.incomplete' || data.type === 'response.failed',
      isError: (data) => data.type === 'error' || isObject((data as { error?: unknown }).error),
      redactTerminal: (data, redact) => {
        const error = data.type === 'response.failed' && isObject((data as { response?: unknown }).response) ? (data as { response: { error?: unknown } }).response.error : null;
        if (isObject(error) && typeof error.message === 'string') error.message = redact(error.message);
      },
    });
  }

  const notThisWire = async (): Promise<never> => {
    throw new ProviderError('unsupported', 'the chat-completions provider does not carry the messages wire', { provider: name, retryable: false });
  };

  return {
    name,
    kind: 'live',
    supports: (wire: Wire) => wire === 'chat_completions' || wire === 'embeddings' || wire === 'responses',
    chat,
    streamChat,
    embed,
    responses,
    streamResponses,
    messages: notThisWire,
    streamMessages: notThisWire,
  };
}
