/**
 * The messages wire as a pipeline adapter. The relay guarantees what clients of this wire rely on and peers got
 * wrong: exactly one `message_start` (with input tokens, filled from the local count when the upstream sent none),
 * text deltas relayed at once, each `tool_use` block held until its `content_block_stop` (with the events of blocks
 * started meanwhile, which follow it) so the concatenated `input_json_delta` pieces are checked (valid JSON matching
 * the declared schema) before any of them is emitted (or, cut off by `max_tokens`, relayed as streamed when the
 * `message_delta` says so), and a stream that ends without `message_stop` treated as truncated.
 */
import { HELD_EVENT_BYTES, heldJsonBytes, heldParsedBytes, heldTextBytes } from './answer-budget.ts';
import type { CallSignal } from './call-signal.ts';
import { newId } from '../core/ids.ts';
import { MAX_JSON_DEPTH, nestsDeeperThan } from '../core/json-depth.ts';
import type { RunUsage } from '../evidence/types.ts';
import { InvalidToolCallError, isTokenCount, refusedAnswer, type StreamRelay, type UpstreamFailure, type WireAdapter } from './pipeline.ts';
import { isObject } from './providers/chat-completions.ts';
import { DEFAULT_MESSAGES_VERSION } from './providers/messages.ts';
import { providerErrorStatus, refusedGatewayAccount } from './providers/errors.ts';
import { messagesProviderRun } from './provider-run.ts';
import { isEventName } from './providers/sse.ts';
import { ProviderError, type MessagesContentBlock, type MessagesResponse, type MessagesStreamEvent, type Provider } from './providers/types.ts';
import { countMessagesTokens } from './tokens-messages.ts';
import { MESSAGES_ERROR_TYPES, messagesErrorType } from './messages-error-types.ts';
import { countTokens } from './tokens.ts';
import { argumentsNamingTwice } from './tool-schemas.ts';
import { messagesUpstreamState } from './upstream-state.ts';
import { messageToEvents } from './wire-replay.ts';
import { toolUseAsCall, type ValidatedMessages } from './wires/messages-schema.ts';

/** The text of an answer's blocks, for the local count of its output tokens. */
function answerText(content: MessagesResponse['content']): string {
  let text = '';
  for (const block of content) {
    if (block.type === 'text') text += String(block.text ?? '');
    else if (block.type === 'thinking') text += String(block.thinking ?? '');
    else if (block.type === 'tool_use') text += `${String(block.name)} ${JSON.stringify(block.input ?? {})}`;
  }
  return text;
}

const messageText = (message: MessagesResponse): string => answerText(message.content);

/**
 * The prompt-cache parts of a messages usage: tokens read from the cache and written to it (of which kept an hour, from
 * `cache_creation`), each a token count or none. `input_tokens` counts neither: the prompt is all three together.
 */
function cacheTokensOf(usage: Record<string, unknown>): { read: number; written: number; writtenForAnHour: number } {
  const count = (value: unknown) => (isTokenCount(value) ? value : 0);
  const creation = usage.cache_creation as { ephemeral_1h_input_tokens?: unknown } | null | undefined;
  return { read: count(usage.cache_read_input_tokens), written: count(usage.cache_creation_input_tokens), writtenForAnHour: count(creation?.ephemeral_1h_input_tokens) };
}

/**
 * Whether a streamed input count is one the upstream reported: a token count, but 0 only beside prompt-cache tokens (a
 * prompt read from or written to the cache whole has no other input tokens), as a 0 alone stands for a count an
 * upstream leaves to a later event. `cached` is the usage holding the cache counts.
 */
function reportsInputTokens(inputTokens: unknown, cached: Record<string, unknown>): inputTokens is number {
  if (!isTokenCount(inputTokens)) return false;
  if (inputTokens > 0) return true;
  const cache = cacheTokensOf(cached);
  return cache.read + cache.written > 0;
}

/**
 * A run's usage from a messages usage: the prompt is its input tokens with those read from and written to the prompt
 * cache (priced at their own rates: RunUsage), as the chat wire's `prompt_tokens` includes its cached tokens. Counts
 * as they came otherwise (the pipeline checks them); the cache parts only with an input count to add them to.
 */
function runUsageOf(usage: Record<string, unknown>, inputTokens: unknown, outputTokens: unknown): Partial<RunUsage> {
  const run: Partial<RunUsage> = { promptTokens: inputTokens as number, completionTokens: outputTokens as number };
  if (!isTokenCount(inputTokens)) return run;
  const cache = cacheTokensOf(usage);
  run.promptTokens = inputTokens + cache.read + cache.written;
  if (isTokenCount(outputTokens)) run.totalTokens = run.promptTokens + outputTokens;
  if (cache.read > 0) run.cacheReadTokens = cache.read;
  if (cache.written > 0) run.cacheWriteTokens = cache.written;
  if (cache.writtenForAnHour > 0) run.cacheWrite1hTokens = Math.min(cache.writtenForAnHour, cache.written);
  return run;
}

/**
 * A buffered answer's usage, its input count read as a stream's is (`reportsInputTokens`): a 0 without prompt-cache
 * tokens is no count, and the run records (and the answer carries) the local one, as a stream's would.
 */
function usageOf(usage: MessagesResponse['usage'] | undefined): RunUsage | null {
  if (!usage) return null;
  return runUsageOf(usage, reportsInputTokens(usage.input_tokens, usage) ? usage.input_tokens : undefined, usage.output_tokens) as RunUsage;
}

/**
 * A run's usage as the messages wire writes it, over the usage an answer came with (in place of counts that are not
 * token counts): `input_tokens` without the prompt-cache parts, which are the run's (none when the prompt was
 * estimated, so that a hit of the answer records the same prompt).
 */
function withRunUsage(message: MessagesResponse, usage: RunUsage): void {
  const read = usage.cacheReadTokens ?? 0;
  const written = usage.cacheWriteTokens ?? 0;
  const recorded: MessagesResponse['usage'] = { ...message.usage, input_tokens: usage.promptTokens - read - written, output_tokens: usage.completionTokens };
  if (read > 0 || isTokenCount(recorded.cache_read_input_tokens)) recorded.cache_read_input_tokens = read;
  if (written > 0 || isTokenCount(recorded.cache_creation_input_tokens)) recorded.cache_creation_input_tokens = written;
  message.usage = recorded;
}

/**
 * The `event: error` a failure mid-stream ends the client's stream with. Its type is the upstream's own when its error
 * event said one of the wire's (`overloaded_error` tells the caller to back off, where `api_error` would hide it), else
 * the type of the status svc answers the failure with; but a refusal of svc's own account (`authentication_error`,
 * `billing_error`, `permission_error`) is svc's failure, as it is before the stream started, not the caller's.
 */
function messagesStreamError(error: UpstreamFailure): MessagesStreamEvent {
  if (error instanceof InvalidToolCallError) return { type: 'error', error: { type: 'api_error', message: error.message } };
  const http = providerErrorStatus(error);
  const relayed = error.upstreamCode !== undefined && MESSAGES_ERROR_TYPES.has(error.upstreamCode) && !refusedGatewayAccount(error);
  const said = relayed ? error.upstreamCode : undefined;
  return { type: 'error', error: { type: said ?? messagesErrorType(http.status), message: http.message } };
}

/** A `tool_use` block of an answer, as the checks read it. */
type ToolUseBlock = { id: string; name: string; input: unknown };

/**
 * A complete `tool_use` block must name a declared tool and carry input matching its `input_schema`. A streamed block's
 * input goes to the client as the text streamed (`streamedInput`), which svc read with `JSON.parse`: a name twice in
 * one object of it is refused as on the other wires. Tools defined by the provider (versioned types such as
 * `bash_20250124`) have no schema here and are not checked.
 */
function checkToolUse(validated: ValidatedMessages, block: ToolUseBlock, index: number, streamedInput?: string): void {
  if (definedByProvider(validated, block.name)) return;
  const problem = validated.tools.check(toolUseAsCall(block), index) ?? (streamedInput === undefined ? null : argumentsNamingTwice(block.name, index, streamedInput));
  if (problem) throw new InvalidToolCallError(problem.message);
}

/**
 * A `tool_use` block `max_tokens` cut off mid-input is checked for its name only: its input is as far as it came, not
 * a call to check or to run, as the upstream's own API relays it.
 */
function checkCutToolUse(validated: ValidatedMessages, block: ToolUseBlock, index: number): void {
  if (definedByProvider(validated, block.name)) return;
  const problem = validated.tools.checkName(block.name, index);
  if (problem) throw new InvalidToolCallError(problem.message);
}

/** Whether the request declares the tool without an `input_schema`: one of the provider's own, which svc cannot check. */
function definedByProvider(validated: ValidatedMessages, name: string): boolean {
  const declared = (validated.request.tools ?? []).find((tool) => tool.name === name);
  return declared !== undefined && !('input_schema' in declared);
}

const notJson = (name: string) => new InvalidToolCallError(`the input of "${name}" is not valid JSON`);

/** The usage totals besides the token counts that a `message_delta` repeats for the whole message. */
const DELTA_USAGE_TOTALS = ['cache_creation_input_tokens', 'cache_read_input_tokens', 'server_tool_use', 'output_tokens_details'] as const;

/**
 * The streamed answers whose assembly could not keep what the live client got (MessagesRelay `lossy`): not stored in
 * the exact cache. Weak: an answer leaves it when the request that made it is done with it.
 */
const unstorable = new WeakSet<MessagesResponse>();

function isIndex(value: unknown): boolean {
  return Number.isInteger(value) && (value as number) >= 0;
}

/**
 * Whether an upstream event has the shape the relay reads: a `message_start` with a `message` object, block events
 * with a non-negative integer `index`, a `content_block_start` with a typed `content_block`, a `content_block_delta`
 * and a `message_delta` with a `delta` object. Anything else is the upstream's bad answer, not a failure of svc's (a
 * `content_block_delta` without `delta` was a TypeError, recorded as a network failure with its JavaScript message).
 * Other event types pass through (forward-compatible) when they are names (`isEventName`).
 */
function isMessagesEvent(event: MessagesStreamEvent): boolean {
  switch (event.type) {
    case 'message_start':
      return isObject(event.message);
    case 'content_block_start':
      return isIndex(event.index) && isObject(event.content_block) && typeof event.content_block.type === 'string';
    case 'content_block_delta':
      return isIndex(event.index) && isObject(event.delta);
    case 'content_block_stop':
      return isIndex(event.index);
    case 'message_delta':
      return isObject(event.delta) && (event.usage === undefined || event.usage === null || isObject(event.usage));
    default:
      return isEventName(event.type);
  }
}

/** The event types the relay reads; any other passes through as it is (forward-compatible). */
const KNOWN_EVENT_TYPES: ReadonlySet<string> = new Set(['message_start', 'content_block_start', 'content_block_delta', 'content_block_stop', 'message_delta', 'message_stop', 'ping', 'error']);

interface BlockState {
  block: MessagesContentBlock;
  text: string;
  json: string;
  /** A `tool_use` block, whose input is checked at its `content_block_stop` before any of its events is sent. */
  checked: boolean;
  stopped: boolean;
  /**
   * A checked block whose input stopped short of JSON: held, stopped, until the `message_delta` says whether
   * `max_tokens` cut it off (relayed as streamed) or the message ended another way (refused).
   */
  cut: boolean;
}

class MessagesRelay implements StreamRelay<MessagesResponse, MessagesStreamEvent> {
  private message: MessagesResponse | null = null;
  private readonly blocks = new Map<number, BlockState>();
  private stopped = false;
  private outputTokens: number | null = null;
  /** The input tokens the client was given: the upstream's, else the local count `message_start` was filled with. */
  private inputTokens: number | null = null;
  /** The input tokens the upstream itself reported (`message_start`, or a `message_delta`), for the run's usage. */
  private reportedInputTokens: number | null = null;
  /** The output tokens the relay filled in a `message_delta` without them (the local count). */
  private estimatedOutputTokens: number | null = null;
  /** Set when the stream had what the assembled answer cannot keep as the client got it: not stored. */
  private lossy = false;
  /** Events of types svc does not know that came before `message_start`: relayed ahead of it (`accept`). */
  private early: MessagesStreamEvent[] | null = null;
  /**
   * The events held since a checked `tool_use` block started, in the upstream's order: its own, and those of the
   * blocks started after it (an upstream may open the next block before this one stops). The SDKs add a block per
   * `content_block_start` in the order they come and find it by index, so a later block's start sent ahead of the held
   * one would put each block's deltas on the other's (`release`).
   */
  private held: MessagesStreamEvent[] | null = null;
  /** The block held as `cut` (BlockState), whose fate the `message_delta` decides. */
  private cut: BlockState | null = null;
  /**
   * About the memory what the relay keeps takes (answer-budget.ts): its blocks as their starts gave them, their text and
   * input pieces, citations and parsed inputs, and the events it holds (`held`, `early`), each beside its text; one
   * addition where it keeps one.
   * Events let go are not taken off: the budget counts what a stream held at most.
   */
  heldBytes = 0;

  constructor(
    private readonly validated: ValidatedMessages,
    private readonly provider: Provider,
    private readonly promptTokens: () => number,
  ) {}

  private bad(message: string): ProviderError {
    return new ProviderError('bad_response', message, { provider: this.provider.name });
  }

  accept(raw: unknown): MessagesStreamEvent[] {
    const out = this.read(raw as MessagesStreamEvent);
    if (this.held === null) return out;
    for (const event of out) this.held.push(event);
    this.heldBytes += out.length * HELD_EVENT_BYTES;
    const event = raw as MessagesStreamEvent;
    // A checked block's stop may free it, and a message_delta a block held as cut (`read`).
    if (event.type === 'message_delta') return this.release();
    return event.type === 'content_block_stop' && this.blocks.get(event.index as number)?.checked === true ? this.release() : [];
  }

  /**
   * The held events up to the start of the first checked block not stopped yet (all of them once every one has): a
   * block that stopped checked is sent with what came after its start, in order.
   */
  private release(): MessagesStreamEvent[] {
    const held = this.held!;
    let cut = 0;
    for (; cut < held.length; cut++) {
      const event = held[cut]!;
      if (event.type !== 'content_block_start') continue;
      const state = this.blocks.get(event.index as number)!;
      if (state.checked && (!state.stopped || state.cut)) break;
    }
    if (cut === held.length) {
      this.held = null;
      return held;
    }
    return held.splice(0, cut);
  }

  /** What to send for an upstream event, as if no checked block were held (`accept` holds it then). */
  private read(event: MessagesStreamEvent): MessagesStreamEvent[] {
    if (!isMessagesEvent(event)) throw this.bad(`an upstream stream event is not a messages stream event (${String(event.type)})`);
    if (!this.message) {
      // Until message_start nothing has started (`awaitingStart`), so a failure after these is still answered with its
      // own status: a ping, a keepalive for a connection whose headers have not left yet, is dropped (the SDKs skip
      // pings wherever they come); an event of a type svc does not know is held and relayed ahead of message_start.
      if (event.type === 'ping') return [];
      if (!KNOWN_EVENT_TYPES.has(event.type)) {
        (this.early ??= []).push(event);
        this.heldBytes += heldJsonBytes(event);
        return [];
      }
    }
    switch (event.type) {
      case 'message_start': {
        if (this.message) return []; // exactly one message_start reaches the client
        const message = structuredClone(event.message as MessagesResponse);
        const usage = { ...(message.usage ?? { input_tokens: 0, output_tokens: 0 }) };
        if (reportsInputTokens(usage.input_tokens, usage)) this.reportedInputTokens = usage.input_tokens;
        else usage.input_tokens = this.promptTokens();
        message.usage = usage;
        this.inputTokens = usage.input_tokens;
        this.message = message;
        const start = { ...event, message: { ...message, content: [] } };
        if (!this.early) return [start];
        const out = [...this.early, start];
        this.early = null;
        return out;
      }
      case 'content_block_start': {
        this.requireStarted();
        // max_tokens cuts only the last block: an input that stopped short of JSON with a block after it is broken.
        if (this.cut) throw notJson(String((this.cut.block as { name?: unknown }).name));
        const index = event.index as number;
        // The SDKs add a block per start and find it by its index: a second start for an index, or an index out of
        // order, would give the client other blocks than the assembled answer has.
        if (index !== this.blocks.size) throw this.bad(`content_block_start for block ${index} where block ${this.blocks.size} was due`);
        const block = structuredClone(event.content_block as MessagesContentBlock);
        // Kept whole as the start gave it, with the text it may carry, or a server tool's result (web search's, each
        // several KB): a stream of such blocks keeps as much as one of text deltas.
        this.heldBytes += heldJsonBytes(block);
        const isTool = block.type === 'tool_use';
        if (isTool && !block.id) return this.startToolUseWithId(event, block, index);
        // Text the start already carries comes before the deltas', as the SDKs join them (an upstream may send it
        // there rather than in a first delta).
        const started = block.type === 'text' ? block.text : block.type === 'thinking' ? block.thinking : '';
        this.blocks.set(index, { block, text: typeof started === 'string' ? started : '', json: '', checked: isTool, stopped: false, cut: false });
        if (isTool) this.held ??= [];
        return [event];
      }
      case 'content_block_delta': {
        const state = this.blocks.get(event.index as number);
        if (!state || state.stopped) throw this.bad(`content_block_delta for unknown block ${String(event.index)}`);
        const delta = event.delta as { type: string; text?: string; partial_json?: string; thinking?: string; signature?: string; citation?: unknown };
        if (delta.type === 'text_delta') this.keepText(state, delta.text);
        else if (delta.type === 'input_json_delta') {
          const json = delta.partial_json ?? '';
          state.json += json;
          this.heldBytes += heldTextBytes(json);
        } else if (delta.type === 'thinking_delta') this.keepText(state, delta.thinking);
        // The thinking block's signature (a client sends the block back with it on its next turn) and a text block's
        // citations belong to the assembled answer too: the cache and the run keep it whole. A signature_delta
        // carries the whole signature: the SDKs keep the last one sent, not a concatenation.
        else if (delta.type === 'signature_delta') (state.block as { signature?: unknown }).signature = delta.signature;
        else if (delta.type === 'citations_delta' && delta.citation !== undefined) {
          // Pushed, not copied into a new array per delta (quadratic in the block's citations).
          ((state.block as { citations?: unknown[] | null }).citations ??= []).push(delta.citation);
          this.heldBytes += heldJsonBytes(delta.citation);
        }
        return [event];
      }
      case 'content_block_stop': {
        const state = this.blocks.get(event.index as number);
        if (!state || state.stopped) throw this.bad(`content_block_stop for unknown block ${String(event.index)}`);
        state.stopped = true;
        if (!state.checked) {
          if (state.json.trim() !== '') this.keepServerInput(state);
          return [event];
        }
        const block = state.block as ToolUseBlock;
        let input: unknown;
        try {
          input = state.json.trim() === '' ? (block.input ?? {}) : JSON.parse(state.json);
        } catch {
          // Perhaps cut off by max_tokens, which only the message_delta says: held until it does.
          checkCutToolUse(this.validated, block, event.index as number);
          state.cut = true;
          this.cut = state;
          return [event];
        }
        // The JSON inside a string escaped the depth bound of the events that carried it, and the answer is hashed,
        // validated and stored by walks that recurse (a stack overflow, misread as a network failure).
        if (nestsDeeperThan(input, MAX_JSON_DEPTH)) throw new InvalidToolCallError(`the input of "${block.name}" nests more than ${MAX_JSON_DEPTH} levels deep`);
        block.input = input;
        this.heldBytes += heldParsedBytes(state.json.length);
        checkToolUse(this.validated, block, event.index as number, state.json);
        return [event];
      }
      case 'message_delta': {
        this.requireStarted();
        const message = this.message!;
        const delta = event.delta as { stop_reason?: string | null; stop_sequence?: string | null; stop_details?: unknown; container?: unknown };
        if (delta.stop_reason !== undefined) message.stop_reason = delta.stop_reason;
        if (delta.stop_sequence !== undefined) message.stop_sequence = delta.stop_sequence;
        // The rest as the SDK's accumulator keeps them: `stop_details` as sent, the container (code execution's) and
        // the whole-message usage totals the delta repeats when they are not null. A hit answers them as they came.
        if (delta.stop_details !== undefined) message.stop_details = delta.stop_details;
        if (delta.container !== undefined && delta.container !== null) message.container = delta.container;
        const usage = event.usage as Record<string, unknown> | null | undefined;
        if (usage) this.takeDeltaUsage(usage);
        if (this.cut) this.settleCut();
        const keepsOutput = isTokenCount(usage?.output_tokens);
        // The SDKs take a delta's input tokens over message_start's whenever it has some: one that is no count (a 0
        // an upstream sends for none) goes out as the count the client was given, which the run records.
        const keepsInput = usage?.input_tokens === undefined || usage.input_tokens === null || usage.input_tokens === this.inputTokens;
        if (keepsOutput && keepsInput) return [event];
        // Spread, not Object.assign: an upstream's own `__proto__` member is copied as the member it is, where
        // assigned it set the copy's prototype and went out of the relayed usage.
        const relayed: Record<string, unknown> = { ...usage };
        // The SDKs read the delta's output tokens (one without failed the client's stream with a TypeError while its
        // run completed): filled from the local count, as message_start's input tokens are. The run records the usage
        // as estimated, since the upstream reported none.
        if (!keepsOutput) relayed.output_tokens = this.estimatedOutputTokens = countTokens(this.producedText, this.validated.request.model);
        if (!keepsInput) relayed.input_tokens = this.inputTokens;
        return [{ ...event, usage: relayed }];
      }
      case 'message_stop':
        this.requireStarted();
        if (this.cut) throw notJson(String((this.cut.block as { name?: unknown }).name)); // ended without a message_delta
        if ([...this.blocks.values()].some((state) => !state.stopped)) throw this.bad('message_stop before every content block stopped');
        this.stopped = true;
        return [event];
      case 'ping':
        return [event];
      case 'error': {
        const error = event.error as { type?: string; message?: string } | undefined;
        throw new ProviderError(error?.type === 'overloaded_error' ? 'upstream_error' : 'bad_response', error?.message ?? 'upstream stream error', { provider: this.provider.name });
      }
      default:
        return [event]; // forward-compatible: unknown event types pass through
    }
  }

  /** A text or thinking piece added to its block's text. */
  private keepText(state: BlockState, piece: string | undefined): void {
    const text = piece ?? '';
    state.text += text;
    this.heldBytes += heldTextBytes(text);
  }

  /** A `message_delta`'s usage: its counts, and the whole-message totals it repeats over the `message_start`'s. */
  private takeDeltaUsage(usage: Record<string, unknown>): void {
    const message = this.message!;
    if (isTokenCount(usage.output_tokens)) this.outputTokens = usage.output_tokens;
    for (const key of DELTA_USAGE_TOTALS) if (usage[key] !== undefined && usage[key] !== null) message.usage[key] = usage[key];
    // After the cache totals it repeats: its input count is read beside the message's cache counts.
    if (reportsInputTokens(usage.input_tokens, message.usage)) this.inputTokens = this.reportedInputTokens = usage.input_tokens;
  }

  /**
   * The usage of the `message_delta` after a `tool_use` block refused at its `content_block_stop` (the pipeline's
   * `trailingUsage`): the output tokens the upstream bills, recorded rather than svc's estimate. True once the
   * `message_delta` came, with usage or not: no count follows it.
   */
  acceptTrailingUsage(raw: unknown): boolean {
    const event = raw as MessagesStreamEvent;
    if (event?.type !== 'message_delta' || !isMessagesEvent(event)) return false;
    const usage = event.usage as Record<string, unknown> | null | undefined;
    if (usage) this.takeDeltaUsage(usage);
    return true;
  }

  /**
   * The `message_delta` after a block held as cut: cut off by `max_tokens`, it is relayed (`release`) as streamed, and
   * the assembled answer keeps its input as the text the client got, which the cache could not replay as such (an
   * input is replayed from its JSON): not stored. Stopped for any other reason, its input is broken.
   */
  private settleCut(): void {
    const state = this.cut!;
    const block = state.block as { name?: unknown; input?: unknown };
    if (this.message!.stop_reason !== 'max_tokens') throw notJson(String(block.name));
    block.input = state.json;
    state.cut = false;
    this.cut = null;
    this.lossy = true;
  }

  /** Until `message_start` nothing has started: the events before it are dropped or held (`accept`). */
  get awaitingStart(): boolean {
    return this.message === null;
  }

  end(): MessagesStreamEvent[] {
    if (!this.stopped) throw this.bad('The upstream stream ended before message_stop.');
    return [];
  }

  /**
   * A `tool_use` block the upstream started without an id (the SDKs' tool_result needs one to answer it by): given
   * one of svc's on its held start, which the assembled answer keeps, as a buffered answer's is.
   */
  private startToolUseWithId(event: MessagesStreamEvent, block: MessagesContentBlock, index: number): MessagesStreamEvent[] {
    block.id = newId('toolu');
    const start = { ...event, content_block: { ...(event.content_block as MessagesContentBlock), id: block.id } };
    this.blocks.set(index, { block, text: '', json: '', checked: true, stopped: false, cut: false });
    this.held ??= [];
    return [start];
  }

  /**
   * A server tool's call (`server_tool_use`: web search, code execution) streams its input in `input_json_delta`
   * pieces too, relayed at once (the provider runs it, svc does not check it): the assembled answer keeps the input the
   * SDK makes of them. Input that does not parse, or nests past the bound of the walks that hash and store an answer,
   * cannot be kept as the client got it: the answer is not stored.
   */
  private keepServerInput(state: BlockState): void {
    let input: unknown;
    try {
      input = JSON.parse(state.json);
    } catch {
      this.lossy = true;
      return;
    }
    if (nestsDeeperThan(input, MAX_JSON_DEPTH)) this.lossy = true;
    else {
      (state.block as { input?: unknown }).input = input;
      this.heldBytes += heldParsedBytes(state.json.length);
    }
  }

  private requireStarted(): void {
    if (!this.message) throw this.bad('stream event before message_start');
  }

  /**
   * The counts the upstream reported, each as soon as it has: a stream cut after `message_start` (truncated, or the
   * client gone) still has the input tokens the upstream reported there, which the run records rather than the local
   * estimate; the pipeline fills only the counts missing here.
   */
  get usage(): Partial<RunUsage> | null {
    const input = this.reportedInputTokens;
    const output = this.outputTokens;
    if (input === null && output === null) return null;
    // The message's usage holds the cache counts message_start reported, and those a message_delta repeated.
    return runUsageOf(this.message?.usage ?? {}, input ?? undefined, output ?? undefined);
  }

  get producedText(): string {
    return [...this.blocks.values()].map((state) => state.text + state.json).join('');
  }

  result(): MessagesResponse {
    const message = this.message!;
    const content = [...this.blocks.entries()]
      .sort(([a], [b]) => a - b)
      .map(([, state]) => {
        if (state.block.type === 'text') return { ...state.block, text: state.text };
        if (state.block.type === 'thinking') return { ...state.block, thinking: state.text };
        return state.block;
      });
    const answer = {
      ...message,
      content,
      usage: { ...message.usage, input_tokens: this.inputTokens ?? message.usage.input_tokens, output_tokens: this.outputTokens ?? this.estimatedOutputTokens ?? 0 },
    };
    if (this.lossy) unstorable.add(answer);
    return answer;
  }
}

/**
 * The headers of the request the exact cache keys beside its body: beta tokens and the API version are sent upstream
 * and can change the answer. The default version keys as none, which is what the upstream is sent then.
 */
function cacheHeaders(headers: { version?: string; betas?: string[] }): Record<string, unknown> | undefined {
  const version = headers.version !== undefined && headers.version !== DEFAULT_MESSAGES_VERSION ? headers.version : undefined;
  if (!headers.betas && version === undefined) return undefined;
  return { betas: headers.betas ? [...headers.betas].sort() : undefined, version };
}

export function messagesAdapter(validated: ValidatedMessages, headers: { version?: string; betas?: string[] }): WireAdapter<MessagesResponse, MessagesStreamEvent> {
  const request = validated.request;
  let estimate: number | null = null;
  const promptTokens = () => (estimate ??= countMessagesTokens(request));
  const context = (signal: CallSignal) => ({
    signal,
    ...(headers.version ? { messagesVersion: headers.version } : {}),
    ...(headers.betas ? { messagesBetas: headers.betas } : {}),
  });
  return {
    wire: 'messages',
    model: request.model,
    stream: request.stream === true,
    cacheBody: request,
    cacheHeaders: cacheHeaders(headers),
    providerRun: messagesProviderRun(request),
    upstreamState: messagesUpstreamState(request),
    promptTokens,

    async callBuffered(provider, signal) {
      const message = await provider.messages(request, context(signal));
      try {
        for (const [index, block] of message.content.entries()) {
          if (block.type !== 'tool_use') continue;
          // The last block of an answer max_tokens stopped may be a call cut off mid-input, whose input is what the
          // upstream made of what came (a required field missing, a string short): checked for its tool only, as a
          // streamed one cut off is.
          const cut = message.stop_reason === 'max_tokens' && index === message.content.length - 1;
          if (cut) checkCutToolUse(validated, block as ToolUseBlock, index);
          else checkToolUse(validated, block as ToolUseBlock, index);
          // A call the client cannot answer by id (the SDKs' tool_result needs one): given one of svc's, as streamed ones are.
          if (!block.id) block.id = newId('toolu');
        }
      } catch (error) {
        throw refusedAnswer(error, message);
      }
      // A message has usage (the SDKs' types require it, and a cache hit replayed as a stream reads it: one stored
      // without failed each such hit with a 500): one the upstream sent without gets the local counts, as a stream's
      // message_start and message_delta do.
      if (!isObject(message.usage)) message.usage = { input_tokens: promptTokens(), output_tokens: countTokens(answerText(message.content), request.model) };
      return message;
    },

    usageOf: (message) => usageOf(message.usage),
    withRecordedUsage: withRunUsage,
    answerText: messageText,
    openStream: (provider, signal) => provider.streamMessages(request, context(signal)),
    newRelay: (provider) => new MessagesRelay(validated, provider, promptTokens),
    cacheable: (message) => !unstorable.has(message) && ['end_turn', 'tool_use', 'max_tokens', 'stop_sequence'].includes(message.stop_reason ?? ''),
    // A code execution container lives upstream until its `expires_at` (RFC 3339) for a next request to reuse by id.
    expiresAt(stored) {
      const expires = (stored.container as { expires_at?: unknown } | null | undefined)?.expires_at;
      const at = typeof expires === 'string' ? Date.parse(expires) : NaN;
      return Number.isNaN(at) ? undefined : at;
    },
    fromCache: (stored) => ({ ...stored, id: newId('msg') }),
    replay: messageToEvents,
    streamError: messagesStreamError,
  };
}
