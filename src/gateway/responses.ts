/**
 * The responses wire as a pipeline adapter. The relay checks what makes a streamed response complete before it
 * counts as such: every event an object with a `type`, `response.created` first, every delta naming an announced and
 * still open item at its `output_index` (and an output text, refusal or reasoning text delta a part of its kind added
 * before it), text and argument deltas adding up to their `.done` values, every function call's arguments matching its declared schema, every
 * announced item done (a `response.incomplete` closes the ones still open), and a terminal `response.completed` /
 * `response.incomplete`. Sequence numbers are assigned on
 * the way out (wires/responses.ts), so they increase by one whatever the upstream did.
 */
import { newId } from '../core/ids.ts';
import { heldJsonBytes, heldTextBytes } from './answer-budget.ts';
import type { RunUsage } from '../evidence/types.ts';
import { InvalidToolCallError, refusedAnswer, type StreamRelay, type UpstreamFailure, type WireAdapter } from './pipeline.ts';
import { cachedTokensOf } from './pricing.ts';
import { classifyErrorCodes, providerErrorStatus } from './providers/errors.ts';
import { isEventName } from './providers/sse.ts';
import { ProviderError, type Provider, type ResponseObject, type ResponsesRequest, type ResponseStreamEvent } from './providers/types.ts';
import { isDeferredTool } from './deferred-tools.ts';
import { countChatTokens } from './tokens.ts';
import { responsesStateRefusedByMock, responsesUpstreamState } from './upstream-state.ts';
import { calledToolName } from './tool-schemas.ts';
import type { ValidatedResponses } from './wires/responses-schema.ts';
import { responseToEvents } from './wire-replay.ts';

type OutputItem = ResponseObject['output'][number];

/** A `Response` object whose output is a list of typed items (what may be relayed, recorded and cached as one). */
function isResponseShaped(value: unknown): value is ResponseObject {
  const output = (value as { output?: unknown } | null)?.output;
  return Array.isArray(output) && output.every((item) => typeof (item as { type?: unknown } | null)?.type === 'string');
}

function usageOf(response: ResponseObject): RunUsage | null {
  const usage = response.usage;
  if (!usage) return null;
  const totalTokens = usage.total_tokens ?? usage.input_tokens + usage.output_tokens;
  // Cached input tokens are part of input_tokens, priced at the model's cached-input rate (pricing.ts).
  const cached = cachedTokensOf(usage.input_tokens_details);
  return cached > 0
    ? { promptTokens: usage.input_tokens, completionTokens: usage.output_tokens, totalTokens, cacheReadTokens: cached }
    : { promptTokens: usage.input_tokens, completionTokens: usage.output_tokens, totalTokens };
}

/** The text of a buffered response's output, as a stream's `producedText` has it (output text, call arguments). */
function answerText(response: ResponseObject): string {
  let text = '';
  for (const item of response.output) {
    if (item?.type === 'function_call') text += String(item.arguments ?? '');
    else if (item?.type === 'message' && Array.isArray(item.content)) {
      for (const part of item.content as Array<{ type?: unknown; text?: unknown } | null>) if (part?.type === 'output_text') text += String(part.text ?? '');
    }
  }
  return text;
}

/**
 * Function and custom tool calls must name declared tools; function arguments must match the schema, but for a call
 * the upstream cut off (status `incomplete`, as the OpenAPI document allows: `max_output_tokens` came mid-arguments),
 * whose arguments are as far as they came, not a call to check or to run.
 */
function checkItem(validated: ValidatedResponses, item: OutputItem, index: number): void {
  if (item.type === 'function_call') {
    const name = calledToolName(item);
    const problem =
      item.status === 'incomplete'
        ? validated.tools.checkName(name, index)
        : validated.tools.check({ id: String(item.call_id ?? ''), type: 'function', function: { name, arguments: String(item.arguments ?? '') } }, index);
    if (problem) throw new InvalidToolCallError(problem.message);
  } else if (item.type === 'custom_tool_call') {
    const name = calledToolName(item);
    if (!validated.customTools.has(name)) throw new InvalidToolCallError(`the model called "${name}", which is not a declared custom tool`);
  }
}

/** The input as chat-style messages, for the local prompt-token estimate. */
function promptEstimate(validated: ValidatedResponses): number {
  const request = validated.request;
  const text = typeof request.input === 'string' ? request.input : JSON.stringify(request.input ?? '');
  return countChatTokens({
    model: request.model,
    messages: [
      ...(request.instructions ? [{ role: 'system', content: request.instructions }] : []),
      { role: 'user', content: text },
    ],
    // A deferred tool is in the model's context by name and description only, its schema loaded once a tool search finds it.
    tools: (request.tools ?? [])
      .filter((tool) => tool.name !== undefined)
      .map((tool) => ({ function: { name: tool.name, description: tool.description, ...(isDeferredTool(tool) ? {} : { parameters: tool.parameters }) } })),
  });
}

interface ItemState {
  item: OutputItem;
  /** Its place in the output: every event naming it carries this `output_index` (clients index their output by it). */
  index: number;
  /** Its content parts' types in the order they were added (their `content_index`), and each one's text so far. */
  parts: string[];
  texts: string[];
  /** How far each part was closed: 0 open, 1 its text's `.done` came, 2 its `content_part.done` came. */
  closed: number[];
  /**
   * The `content_part.added` svc made for a text part the upstream streamed without adding (`textPart`), to go out
   * before the event that needed it; and whether svc made any, so that its parts are closed at the item's done.
   */
  addedHere: ResponseStreamEvent | null;
  partsAddedHere: boolean;
  args: string;
  argsDone: boolean;
  done: boolean;
  /** Whether the terminal response's output has it (set while that output is read, once per stream). */
  inTerminal: boolean;
}

/** The `.done` event type of a text part's text, by the part's type. */
const TEXT_DONE: Readonly<Record<string, string>> = { output_text: 'response.output_text.done', refusal: 'response.refusal.done', reasoning_text: 'response.reasoning_text.done' };

/**
 * An item left open by a `response.incomplete`, as its events gave it: its content parts with their text so far (an
 * output text with the `annotations` and `logprobs` the wire's OutputTextContent requires), its arguments so far, and
 * status `incomplete`.
 */
function streamedSoFar(state: ItemState): OutputItem {
  const item: OutputItem = { ...state.item, status: 'incomplete' };
  if (state.parts.length > 0) {
    item.content = state.parts.map((type, index) => {
      const text = state.texts[index] ?? '';
      if (type === 'output_text') return { type, text, annotations: [], logprobs: [] };
      if (type === 'refusal') return { type, refusal: text };
      return { type, text };
    });
  }
  if (item.type === 'function_call') item.arguments = state.args;
  return item;
}

/**
 * The events that close an item a `response.incomplete` left open, as `item` (what was streamed of it, or the
 * terminal output's): each part's text `.done` and `content_part.done` not yet sent, the arguments' `.done`, then
 * `output_item.done`. A client reading the stream (the SDK's, a raw SSE reader) has every item and part it was given
 * closed before the terminal event. Sequence numbers are assigned on the way out.
 */
function closingEvents(state: ItemState, item: OutputItem): ResponseStreamEvent[] {
  const events = partClosingEvents(state, item);
  events.push({ type: 'response.output_item.done', output_index: state.index, item, sequence_number: 0 });
  return events;
}

/** The done events of `item`'s parts (and arguments) not yet closed, as `closingEvents` sends them. */
function partClosingEvents(state: ItemState, item: OutputItem): ResponseStreamEvent[] {
  const at = { item_id: item.id, output_index: state.index };
  const events: ResponseStreamEvent[] = [];
  const content = Array.isArray(item.content) ? (item.content as Array<{ type?: unknown } | null>) : [];
  state.parts.forEach((type, contentIndex) => {
    const closed = state.closed[contentIndex]!;
    const text = state.texts[contentIndex]!;
    const base = { ...at, content_index: contentIndex, sequence_number: 0 };
    const textDone = TEXT_DONE[type];
    if (closed < 1 && textDone) {
      if (type === 'refusal') events.push({ type: textDone, ...base, refusal: text });
      else if (type === 'output_text') events.push({ type: textDone, ...base, text, logprobs: [] });
      else events.push({ type: textDone, ...base, text });
    }
    if (closed < 2) events.push({ type: 'response.content_part.done', ...base, part: content[contentIndex] ?? { type, text } });
  });
  if (item.type === 'function_call' && !state.argsDone) {
    events.push({ type: 'response.function_call_arguments.done', ...at, name: item.name, arguments: state.args, sequence_number: 0 });
  }
  return events;
}

/** The empty part a `content_part.added` announces, by the part's type, as OpenAI streams it. */
function emptyPart(type: string): Record<string, unknown> {
  return type === 'refusal' ? { type, refusal: '' } : { type, text: '', annotations: [] };
}

class ResponsesRelay implements StreamRelay<ResponseObject, ResponseStreamEvent> {
  snapshot: ResponseObject | null = null;
  private final: ResponseObject | null = null;
  /** The usage an upstream's `response.failed` reported: what the failed run used, rather than an estimate. */
  private failedUsage: RunUsage | null = null;
  private readonly items = new Map<string, ItemState>();
  /**
   * About the memory what the relay keeps takes (answer-budget.ts): its items' text and argument pieces, one addition
   * each, and the items and terminal response it keeps whole, measured once each (their JSON written out).
   */
  heldBytes = 0;

  constructor(
    private readonly validated: ValidatedResponses,
    private readonly provider: Provider,
  ) {}

  private bad(message: string): ProviderError {
    return new ProviderError('bad_response', `Invalid upstream responses stream: ${message}.`, { provider: this.provider.name });
  }

  private open(itemId: unknown, outputIndex: unknown): ItemState {
    const state = typeof itemId === 'string' ? this.items.get(itemId) : undefined;
    if (!state) throw this.bad(`event for unknown item ${String(itemId)}`);
    if (state.done) throw this.bad(`event for item ${String(itemId)} after it was done`);
    if (outputIndex !== state.index) throw this.bad(`event for item ${String(itemId)} at output_index ${String(outputIndex)}, announced at ${state.index}`);
    return state;
  }

  /**
   * The open item of a text event, whose `content_index` must name a part of `type` (`output_text`, `refusal`,
   * `reasoning_text`) added before it: the SDK's stream throws on a delta for a part it does not have. A message's
   * text at its next `content_index` with no part added (OpenAI-compatible servers leave out `content_part.added`
   * and `.done`) is given the part here, its `content_part.added` relayed before the event (`relayed`).
   */
  private textPart(event: ResponseStreamEvent, type = 'output_text'): ItemState {
    const state = this.open(event.item_id, event.output_index);
    const index = event.content_index;
    if (typeof index !== 'number' || state.parts[index] !== type) {
      const addable = index === state.parts.length && state.item.type === 'message' && (type === 'output_text' || type === 'refusal');
      if (!addable) throw this.bad(`${event.type} for content_index ${String(index)}, which is no ${type} part`);
      this.addPart(state, type);
      state.addedHere = { type: 'response.content_part.added', item_id: event.item_id, output_index: state.index, content_index: index, part: emptyPart(type), sequence_number: 0 };
      state.partsAddedHere = true;
    }
    return state;
  }

  private addPart(state: ItemState, type: string): void {
    state.parts.push(type);
    state.texts.push('');
    state.closed.push(0);
  }

  /** `event`, after the `content_part.added` its part was given by svc when it was (`textPart`). */
  private relayed(state: ItemState, event: ResponseStreamEvent): ResponseStreamEvent[] {
    const added = state.addedHere;
    if (!added) return [event];
    state.addedHere = null;
    return [added, event];
  }

  /** A text delta added to its part's text so far. */
  private addText(event: ResponseStreamEvent, type: string): ResponseStreamEvent[] {
    const state = this.textPart(event, type);
    const delta = String(event.delta ?? '');
    state.texts[event.content_index as number] += delta;
    this.heldBytes += heldTextBytes(delta);
    return this.relayed(state, event);
  }

  /** A text's `.done`, whose text (when it has one) must be its deltas'. */
  private doneText(event: ResponseStreamEvent, type: string, text: unknown): ResponseStreamEvent[] {
    const state = this.textPart(event, type);
    const index = event.content_index as number;
    if (typeof text === 'string' && text !== state.texts[index]) throw this.bad(`${event.type} differs from its deltas`);
    if (state.closed[index] === 0) state.closed[index] = 1;
    return this.relayed(state, event);
  }

  accept(raw: unknown): ResponseStreamEvent[] {
    const event = raw as ResponseStreamEvent;
    // Only typed events go on: anything else would reach the client as an event it cannot read (`event: undefined`),
    // or, with a line break in its type, as events of the upstream's choosing (`isEventName`).
    if (!isEventName(event?.type)) throw this.bad('an event without a type that is an event name');
    // The upstream's own failure, also as its first event (a rate limit is one: `failed`).
    if (event.type === 'response.failed') throw this.failed(event);
    if (!this.snapshot && event.type !== 'response.created') {
      // OpenAI sends `keepalive` events on long streams; one before response.created is dropped, as the SDK's stream
      // throws on any first event but response.created. Later ones pass through (the SDK ignores them). One compare,
      // on the events before response.created only.
      if (event.type === 'keepalive') return [];
      throw this.bad(`${event.type} before response.created`);
    }
    if (this.final) throw this.bad(`${event.type} after the terminal event`);
    switch (event.type) {
      case 'response.created':
        if (this.snapshot) throw this.bad('a second response.created');
        if (!isResponseShaped(event.response)) throw this.bad('response.created without a response');
        this.snapshot = structuredClone(event.response as ResponseObject);
        break;
      case 'response.output_item.added': {
        const item = event.item as OutputItem;
        if (!item?.id || this.items.has(item.id)) throw this.bad(`output item without a fresh id`);
        if (event.output_index !== this.items.size) throw this.bad(`output item ${item.id} added at output_index ${String(event.output_index)}, not ${this.items.size}`);
        this.items.set(item.id, { item: structuredClone(item), index: this.items.size, parts: [], texts: [], closed: [], addedHere: null, partsAddedHere: false, args: '', argsDone: false, done: false, inTerminal: false });
        break;
      }
      // vLLM names the events of a reasoning text part `response.reasoning_part.*`; they add and end a part as these do.
      case 'response.content_part.added':
      case 'response.reasoning_part.added': {
        const state = this.open(event.item_id, event.output_index);
        if (event.content_index !== state.parts.length) throw this.bad(`content part added at content_index ${String(event.content_index)}, not ${state.parts.length}`);
        this.addPart(state, String((event.part as { type?: unknown } | undefined)?.type));
        break;
      }
      case 'response.output_text.delta':
        return this.addText(event, 'output_text');
      case 'response.output_text.done':
        return this.doneText(event, 'output_text', event.text);
      case 'response.output_text.annotation.added':
        return this.relayed(this.textPart(event), event);
      case 'response.refusal.delta':
        return this.addText(event, 'refusal');
      case 'response.refusal.done':
        return this.doneText(event, 'refusal', event.refusal);
      case 'response.reasoning_text.delta':
        return this.addText(event, 'reasoning_text');
      case 'response.reasoning_text.done':
        return this.doneText(event, 'reasoning_text', event.text);
      case 'response.function_call_arguments.delta': {
        const delta = String(event.delta ?? '');
        this.open(event.item_id, event.output_index).args += delta;
        this.heldBytes += heldTextBytes(delta);
        break;
      }
      case 'response.function_call_arguments.done': {
        const state = this.open(event.item_id, event.output_index);
        if (typeof event.arguments === 'string' && state.args !== '' && event.arguments !== state.args) throw this.bad('function_call_arguments.done differs from its deltas');
        checkItem(this.validated, { ...state.item, arguments: event.arguments ?? state.args }, Number(event.output_index ?? 0));
        state.argsDone = true;
        break;
      }
      case 'response.content_part.done':
      case 'response.reasoning_part.done': {
        const state = this.open(event.item_id, event.output_index);
        // Marked closed when it names a part (an out-of-range index closes none, and is passed on as before).
        if (typeof event.content_index === 'number' && event.content_index < state.closed.length) state.closed[event.content_index] = 2;
        break;
      }
      case 'response.reasoning_summary_part.added':
      case 'response.reasoning_summary_part.done':
      case 'response.reasoning_summary_text.delta':
      case 'response.reasoning_summary_text.done':
      case 'response.custom_tool_call_input.delta':
      case 'response.custom_tool_call_input.done':
        this.open(event.item_id, event.output_index);
        break;
      case 'response.output_item.done': {
        const item = event.item as OutputItem;
        const state = this.open(item?.id, event.output_index);
        checkItem(this.validated, item, Number(event.output_index ?? 0));
        state.item = structuredClone(item);
        this.heldBytes += heldJsonBytes(item);
        state.done = true;
        // The parts svc added are closed as the upstream would have closed them, the item's done after them.
        if (state.partsAddedHere) return [...partClosingEvents(state, item), event];
        break;
      }
      case 'response.completed':
      case 'response.incomplete': {
        const response = event.response;
        if (!isResponseShaped(response)) throw this.bad(`${event.type} without a response whose output is typed items`);
        let closedHere: ItemState[] | null = null;
        for (const state of this.items.values()) {
          if (state.done) continue;
          // A response cut off (max_output_tokens) may end while an item is open: the item is what was streamed of
          // it, closed `incomplete`, and the client gets the incomplete response. A completed one must close them all.
          if (event.type === 'response.completed') throw this.bad(`${event.type} while item ${String(state.item.id)} is not done`);
          state.item = streamedSoFar(state);
          state.done = true;
          (closedHere ??= []).push(state);
        }
        // Streamed items the terminal output has, each counted once: an id given twice is one item twice (a count of
        // ids would take the second for a missing item's place and hide it).
        let given = 0;
        let repeated = false;
        for (const item of response.output) {
          if (!item.id) continue;
          const state = this.items.get(item.id);
          if (!state) throw this.bad(`completed output has unannounced item ${item.id}`);
          if (state.inTerminal) repeated = true;
          else {
            state.inTerminal = true;
            given += 1;
          }
        }
        // Some compatible upstreams leave streamed items out of the terminal response's output (all of them, `[]`, or
        // some), or give one twice: the items streamed whole are the answer, each once, relayed in it (the SDK's final
        // response is this event's), recorded and cached as the client had them.
        if (repeated || given < this.items.size) response.output = this.streamedItems(response.output);
        response.output.forEach((item, index) => checkItem(this.validated, item, index));
        this.final = response;
        this.heldBytes += heldJsonBytes(response);
        if (closedHere) return [...this.closing(closedHere, response.output), event];
        break;
      }
      case 'error':
        throw new ProviderError('upstream_error', String(event.message ?? 'upstream stream error'), { provider: this.provider.name, retryable: false });
      default:
        break; // in_progress and future event types pass through
    }
    return [event];
  }

  /**
   * The failure an upstream's `response.failed` is, with the usage it reported: the HTTP error its code stands for
   * (a rate limit is the upstream's 429 said in an event), so that before the stream started it is answered or failed
   * over as that HTTP error is (`classifyErrorCodes`).
   */
  private failed(event: ResponseStreamEvent): ProviderError {
    const failed = event.response as ResponseObject | null | undefined;
    if (failed?.usage) this.failedUsage = usageOf(failed);
    const error = failed?.error as { code?: unknown; message?: unknown } | null | undefined;
    const message = typeof error?.message === 'string' && error.message !== '' ? error.message : 'The upstream response failed.';
    const failure = classifyErrorCodes({ provider: this.provider.name, wire: 'responses', codes: [error?.code], message });
    // As the first event its usage is the attempt's (the relay's usage is read only once the stream started).
    if (this.failedUsage && isResponseShaped(failed)) failure.answer = failed;
    return failure;
  }

  /**
   * The done events of the items a `response.incomplete` closed, each item as the terminal output has it (the
   * client's final response), else as it was streamed.
   */
  private closing(states: ItemState[], output: OutputItem[]): ResponseStreamEvent[] {
    return states.flatMap((state) => closingEvents(state, output.find((item) => item.id === state.item.id) ?? state.item));
  }

  /**
   * The streamed items in their output order, each once, as the terminal output first has it when it has it, else as
   * its `output_item.done` gave it; then the terminal output's items without an id, which no event could announce.
   */
  private streamedItems(terminal: OutputItem[]): OutputItem[] {
    const given = new Map<string, OutputItem>();
    for (const item of terminal) if (item.id && !given.has(item.id)) given.set(item.id, item);
    const output = Array.from(this.items.values(), (state) => given.get(state.item.id!) ?? state.item);
    for (const item of terminal) if (!item.id) output.push(item);
    return output;
  }

  end(): ResponseStreamEvent[] {
    if (!this.final) throw this.bad('the stream ended without response.completed');
    return [];
  }

  /** Until `response.created` nothing has started: the keepalives before it are dropped (`accept`). */
  get awaitingStart(): boolean {
    return this.snapshot === null;
  }

  get usage(): RunUsage | null {
    return this.final ? usageOf(this.final) : this.failedUsage;
  }

  get producedText(): string {
    return [...this.items.values()].map((state) => state.texts.join('') + state.args).join('');
  }

  result(): ResponseObject {
    return this.final!;
  }
}

/** The error codes of a failed Response (the OpenAPI document's `ResponseErrorCode`). */
const RESPONSE_ERROR_CODES: ReadonlySet<string> = new Set([
  'server_error',
  'rate_limit_exceeded',
  'invalid_prompt',
  'data_residency_mismatch',
  'bio_policy',
  'vector_store_timeout',
  'invalid_image',
  'invalid_image_format',
  'invalid_base64_image',
  'invalid_image_url',
  'image_too_large',
  'image_too_small',
  'image_parse_error',
  'image_content_policy_violation',
  'invalid_image_mode',
  'image_file_too_large',
  'unsupported_image_media_type',
  'empty_image_file',
  'failed_to_download_image',
  'image_file_not_found',
]);

/**
 * The `error.code` of the `response.failed` a failure mid-stream ends the client's stream with: the upstream's own code
 * (its error event's or failed response's) when it is one of the wire's, since `invalid_prompt` or
 * `rate_limit_exceeded` tells the caller what `server_error` would hide; a rate limit said in another family's words
 * (`rate_limit_error`) is the wire's `rate_limit_exceeded`; anything else svc's `server_error`.
 */
function failedResponseCode(error: UpstreamFailure): string {
  if (!(error instanceof ProviderError)) return 'server_error';
  if (error.upstreamCode !== undefined && RESPONSE_ERROR_CODES.has(error.upstreamCode)) return error.upstreamCode;
  return error.kind === 'rate_limited' ? 'rate_limit_exceeded' : 'server_error';
}

/**
 * Request fields a Response echoes that the exact-cache key leaves out (cache-controls.ts), with the value a response
 * echoes when its request does not set them. A hit answers them from the request it serves, not from the one that
 * filled the entry (another end user's `safety_identifier`, `user` and `metadata`); `store` when this request sets it
 * (the key tells only `false` from stored, so an entry filled with `store` unset serves `store: true` too).
 */
const ECHOED: ReadonlyArray<[field: string, unset: unknown]> = [
  ['metadata', {}],
  ['user', null],
  ['safety_identifier', null],
  ['prompt_cache_key', null],
];

function echoedBy(request: ResponsesRequest, stored: ResponseObject): Record<string, unknown> {
  const echoed: Record<string, unknown> = {};
  for (const [field, unset] of ECHOED) if (field in stored) echoed[field] = request[field] ?? unset;
  if ('store' in stored && request.store !== undefined) echoed.store = request.store;
  return echoed;
}

export function responsesAdapter(validated: ValidatedResponses, now: () => number): WireAdapter<ResponseObject, ResponseStreamEvent> {
  const request = validated.request;
  let relay: ResponsesRelay | null = null;
  return {
    wire: 'responses',
    model: request.model,
    stream: request.stream === true,
    cacheBody: request,
    upstreamState: responsesUpstreamState(request),
    refusedByMock: responsesStateRefusedByMock,
    promptTokens: () => promptEstimate(validated),

    async callBuffered(provider, signal) {
      const response = await provider.responses(request, { signal });
      try {
        response.output.forEach((item, index) => checkItem(validated, item, index));
      } catch (error) {
        throw refusedAnswer(error, response);
      }
      return response;
    },

    usageOf,
    answerText,
    openStream: (provider, signal) => provider.streamResponses(request, { signal }),
    newRelay(provider) {
      relay = new ResponsesRelay(validated, provider);
      return relay;
    },
    // An answer of no items is relayed, not stored: a hit would replay nothing (as a chat `choices: []`).
    cacheable: (response) => response.status === 'completed' && response.output.length > 0,

    fromCache(stored) {
      // Made and completed now: a stored `completed_at` would be before the new `created_at`.
      const at = Math.floor(now() / 1000);
      // The hit is a response of its own (its id), but its items are the stored ones, with the ids the upstream gave
      // them: a next turn sends them back as input, and an upstream that stored them looks them up by id (a reasoning
      // item's reasoning), so an id svc made up there was a 404 ("Item with id 'rs_...' not found").
      return {
        ...stored,
        ...echoedBy(request, stored),
        id: newId('resp'),
        created_at: at,
        ...(typeof stored.completed_at === 'number' ? { completed_at: at } : {}),
      };
    },

    replay: responseToEvents,

    streamError(error: UpstreamFailure): ResponseStreamEvent {
      const http = error instanceof InvalidToolCallError ? { code: 'invalid_tool_call', message: error.message } : { code: providerErrorStatus(error).code, message: providerErrorStatus(error).message };
      const snapshot = relay?.snapshot;
      if (!snapshot) return { type: 'error', code: http.code, message: http.message, param: null, sequence_number: 0 };
      return { type: 'response.failed', sequence_number: 0, response: { ...snapshot, status: 'failed', error: { code: failedResponseCode(error), message: http.message } } };
    },
  };
}
