/**
 * The one typed interface every model provider implements (STYLE.md section 2). A provider carries each wire
 * natively: a provider that lacks a wire says so (`supports`) and the registry reports it as unsupported; a request is
 * never translated silently to another wire.
 *
 * Request and response bodies are the wire's own JSON shapes (chat-completions and embeddings objects of the official
 * OpenAPI document), so a compatible upstream receives the client's fields untouched and a mock answer is
 * indistinguishable in shape from a live one.
 */
import type { CallSignal } from '../call-signal.ts';

/** The inbound/outbound protocols svc speaks. */
export type Wire = 'chat_completions' | 'embeddings' | 'responses' | 'messages';

/** Model families of the registry table (docs/providers.md). */
export type ModelFamily = 'chat_completions' | 'messages';

export interface ChatMessage {
  role: string;
  content?: unknown;
  name?: string;
  tool_call_id?: string;
  tool_calls?: ChatToolCall[];
  refusal?: string | null;
  [field: string]: unknown;
}

export interface ChatToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

export interface ChatTool {
  type: 'function';
  function: { name: string; description?: string; parameters?: Record<string, unknown>; strict?: boolean | null };
}

/** A validated chat-completions request body; every optional field of SPEC 4.2 passes through untouched. */
export interface ChatRequest {
  model: string;
  messages: ChatMessage[];
  stream?: boolean;
  tools?: ChatTool[];
  [field: string]: unknown;
}

export interface ChatUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  [field: string]: unknown;
}

/** A `chat.completion` object. */
export interface ChatCompletion {
  id: string;
  object: 'chat.completion';
  created: number;
  model: string;
  choices: Array<{
    index: number;
    message: { role: 'assistant'; content: string | null; refusal: string | null; tool_calls?: ChatToolCall[]; [field: string]: unknown };
    finish_reason: string;
    logprobs: unknown;
    /** A provider's fields of the choice (Azure's `content_filter_results`). */
    [field: string]: unknown;
  }>;
  usage?: ChatUsage;
  [field: string]: unknown;
}

/** A `chat.completion.chunk` object as relayed on the SSE stream. */
export interface ChatChunk {
  id: string;
  object: 'chat.completion.chunk';
  created: number;
  model: string;
  choices: Array<{
    index: number;
    delta: {
      role?: 'assistant';
      content?: string | null;
      refusal?: string | null;
      tool_calls?: Array<{ index: number; id?: string; type?: 'function'; function?: { name?: string; arguments?: string } }>;
      [field: string]: unknown;
    };
    finish_reason: string | null;
    logprobs?: unknown;
    /** A provider's fields of the choice beside its delta (Azure's `content_filter_results`). */
    [field: string]: unknown;
  }>;
  usage?: ChatUsage | null;
  [field: string]: unknown;
}

/** Embedding inputs after wire normalisation: strings or token-id arrays, placeholders already substituted. */
export interface EmbeddingsRequest {
  model: string;
  input: string[] | number[][];
  dimensions?: number;
  user?: string;
  /** The client's fields svc does not know (a compatible provider's `input_type`, `truncate`), passed on untouched. */
  extra?: Record<string, unknown>;
}

export interface EmbeddingsResult {
  model: string;
  /** One float vector per input, index-aligned with the request. */
  vectors: number[][];
  usage: { prompt_tokens: number; total_tokens: number };
}

/** Per-call context: cancellation (client disconnect) and the bounded time budget. */
export interface ProviderCallContext {
  signal: CallSignal;
  /** Messages wire only: the client's version and beta tokens, sent upstream under the provider's real header names. */
  messagesVersion?: string;
  messagesBetas?: string[];
}

/** A validated messages-wire request body (`model`, `messages`, `max_tokens`, ...); other fields pass through. */
export interface MessagesRequest {
  model: string;
  messages: Array<{ role: 'user' | 'assistant'; content: string | Array<{ type: string; [field: string]: unknown }> }>;
  max_tokens: number;
  system?: string | Array<{ type: string; [field: string]: unknown }>;
  tools?: Array<{ name: string; description?: string; input_schema: Record<string, unknown>; [field: string]: unknown }>;
  tool_choice?: { type: 'auto' | 'any' | 'tool' | 'none'; name?: string; [field: string]: unknown };
  stream?: boolean;
  [field: string]: unknown;
}

export type MessagesContentBlock =
  | { type: 'text'; text: string; [field: string]: unknown }
  | { type: 'tool_use'; id: string; name: string; input: unknown; [field: string]: unknown }
  | { type: string; [field: string]: unknown };

export interface MessagesUsage {
  input_tokens: number;
  output_tokens: number;
  [field: string]: unknown;
}

/** A messages-wire `message` response object. */
export interface MessagesResponse {
  id: string;
  type: 'message';
  role: 'assistant';
  model: string;
  content: MessagesContentBlock[];
  stop_reason: string | null;
  stop_sequence: string | null;
  usage: MessagesUsage;
  [field: string]: unknown;
}

/** One messages-wire stream event (`message_start`, `content_block_delta`, `ping`, `error`, ...). */
export interface MessagesStreamEvent {
  type: string;
  [field: string]: unknown;
}

/** A validated responses-wire request body (`model`, `input`, ...); other fields pass through. */
export interface ResponsesRequest {
  model: string;
  input?: unknown;
  instructions?: string;
  tools?: Array<{ type: string; name?: string; parameters?: Record<string, unknown>; [field: string]: unknown }>;
  stream?: boolean;
  [field: string]: unknown;
}

/** A responses-wire `Response` object (`object: "response"`, `status`, `output` items, `usage`). */
export interface ResponseObject {
  id: string;
  object: 'response';
  created_at: number;
  status: string;
  model: string;
  output: Array<{ type: string; id?: string; [field: string]: unknown }>;
  usage?: { input_tokens: number; output_tokens: number; total_tokens: number; [field: string]: unknown } | null;
  [field: string]: unknown;
}

/** One responses-wire stream event; `sequence_number` increases by one per event. */
export interface ResponseStreamEvent {
  type: string;
  sequence_number: number;
  [field: string]: unknown;
}

export interface Provider {
  /** Stable name recorded on attempts and in route explanations, e.g. `mock`, `chatcomp`, `chatcomp-fallback`. */
  readonly name: string;
  readonly kind: 'mock' | 'live';
  supports(wire: Wire): boolean;
  /** Buffered chat completion. */
  chat(request: ChatRequest, context: ProviderCallContext): Promise<ChatCompletion>;
  /**
   * Streamed chat completion. The promise settles once the upstream accepted the request (status and headers),
   * so failures before the first byte may be retried or failed over; errors thrown while iterating happen after the
   * stream started and are never retried. `stream_options.include_usage` is requested so the final chunk has usage.
   */
  streamChat(request: ChatRequest, context: ProviderCallContext): Promise<UpstreamEvents<ChatChunk>>;
  embed(request: EmbeddingsRequest, context: ProviderCallContext): Promise<EmbeddingsResult>;
  /** Messages wire, buffered and streamed (same contract as chat: the stream promise settles on upstream headers). */
  messages(request: MessagesRequest, context: ProviderCallContext): Promise<MessagesResponse>;
  streamMessages(request: MessagesRequest, context: ProviderCallContext): Promise<UpstreamEvents<MessagesStreamEvent>>;
  /** Responses wire, buffered and streamed. */
  responses(request: ResponsesRequest, context: ProviderCallContext): Promise<ResponseObject>;
  streamResponses(request: ResponsesRequest, context: ProviderCallContext): Promise<UpstreamEvents<ResponseStreamEvent>>;
}

/**
 * An upstream's accepted stream. Reading it to its end, or stopping a started read, releases the upstream connection
 * (the reader's `finally`); `release` does so for a stream nobody will read, which an async generator's `return()`
 * cannot (a generator that never started skips its `finally`). Streams holding no connection (the mock's) have none.
 */
export interface UpstreamEvents<T> extends AsyncIterable<T> {
  release?(): void;
}

/** How an upstream failure is classified, in one place (providers/errors.ts). */
export type ProviderFailureKind =
  | 'rate_limited' // upstream 429
  | 'upstream_error' // upstream 5xx
  | 'timeout' // no answer within the bounded time
  | 'bad_response' // not valid JSON / SSE, or a truncated stream
  | 'rejected' // upstream 4xx other than 429 (bad request, auth); surfaced to the client, not retryable but for a refusal of svc's own account (401/402/403)
  | 'batch_too_large' // embeddings backend refused the batch size; the caller splits
  | 'unsupported' // the provider lacks the wire
  | 'aborted' // the client went away
  | 'network' // connection refused / reset before an answer
  | 'busy'; // svc's, not the upstream's: the answer would take those in progress past their budget (answer-budget.ts); not failed over

export class ProviderError extends Error {
  readonly kind: ProviderFailureKind;
  /** The upstream HTTP status when there was one. */
  readonly upstreamStatus: number | undefined;
  readonly retryable: boolean;
  /** Seconds from the upstream `retry-after`, when given. */
  readonly retryAfterSeconds: number | undefined;
  readonly provider: string;
  /**
   * The error code the upstream gave a failure it said in an answer of HTTP 200 (a stream's error event, a failed
   * response; `classifyErrorCodes`): the run records it, and a wire whose codes it is one of relays it.
   */
  readonly upstreamCode: string | undefined;
  /** The request field an upstream's 4xx names (`error.param`), relayed as the client's `param`. */
  readonly upstreamParam: string | undefined;
  /**
   * What an upstream's 4xx says of itself in `error.details` (the messages family's `error_code` and its fields, by
   * which its SDKs type the error and recover: a lost message thread is replayed), relayed on that wire.
   */
  readonly upstreamDetails: Readonly<Record<string, unknown>> | undefined;
  /**
   * The failed answer the upstream sent when it reported usage for it (a response of status `failed`; a chat answer
   * svc could not read, as a completion without choices): billed all the same, so its usage counts for the attempt
   * and the run.
   */
  answer: unknown = undefined;
  /**
   * The call broke after its request was written to the upstream's connection (a timeout, a broken connection, the
   * client leaving): the upstream may have run and billed it. False for a call that never reached it, and for one the
   * upstream answered (the answer's status or content says what it cost).
   */
  readonly afterRequestSent: boolean;

  constructor(
    kind: ProviderFailureKind,
    message: string,
    options: {
      provider: string;
      upstreamStatus?: number;
      retryable?: boolean;
      retryAfterSeconds?: number;
      cause?: unknown;
      upstreamCode?: string;
      upstreamParam?: string;
      upstreamDetails?: Readonly<Record<string, unknown>>;
      afterRequestSent?: boolean;
    },
  ) {
    super(message, { cause: options.cause });
    this.name = 'ProviderError';
    this.kind = kind;
    this.provider = options.provider;
    this.upstreamStatus = options.upstreamStatus;
    this.retryable = options.retryable ?? ['rate_limited', 'upstream_error', 'timeout', 'network', 'bad_response'].includes(kind);
    this.retryAfterSeconds = options.retryAfterSeconds;
    this.upstreamCode = options.upstreamCode;
    this.upstreamParam = options.upstreamParam;
    this.upstreamDetails = options.upstreamDetails;
    this.afterRequestSent = options.afterRequestSent ?? false;
  }
}

/** The registry's answer for one request: candidates in order (primary first, then fail-open fallbacks). */
export interface ProviderRoute {
  family: ModelFamily;
  candidates: Provider[];
}

export interface ProviderRegistry {
  /**
   * Providers able to serve `wire` for `model` for this tenant, primary first. Throws ProviderError('unsupported')
   * when the model's family has a live provider configured that lacks the wire.
   */
  route(wire: Wire, model: string, tenantId: string): Promise<ProviderRoute>;
  /** Whether any live provider is configured (readiness). */
  hasLiveProvider(): boolean;
  /** Release upstream connections (app shutdown). */
  close(): Promise<void>;
}

/** Seam for tenant bring-your-own keys from the credential vault (SPEC 4.2, 5.5); returns none until the vault lands. */
export type TenantKeyLookup = (tenantId: string, family: ModelFamily) => Promise<{ apiKey: string; baseUrl?: string } | null>;
