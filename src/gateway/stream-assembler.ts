/**
 * Relays a chat-completions chunk stream while assembling it: content deltas pass through at once; `tool_calls`
 * fragments are held until the call is complete, validated against the declared tool's schema, and emitted as one
 * whole call. The assembled completion is what the run records and the exact cache stores.
 *
 * When a call is complete: OpenAI streams a choice's calls one after another, so when the next call index starts the
 * call before it is emitted at once, if its arguments are whole JSON (the fast path: no call waits for the choice's
 * end). Some compatible upstreams (vLLM, proxies) interleave the fragments of several calls (index 0, 1, 0, 1): a call
 * whose arguments are not yet whole JSON (or are empty) when another index starts is held, and from then on every call
 * of the choice is, until the choice finishes or the stream ends, when they are checked and emitted in index order. A
 * fragment for a call already emitted may repeat what it had or add whitespace; one that adds to it otherwise makes
 * the call another than the one emitted, and is an invalid tool call (a JSON value cannot be continued into another).
 * A fragment without an index (Gemini's compatible endpoint sends none) continues the call before it, unless it carries
 * an id other than that call's: then it starts the next call, at the next position.
 *
 * What the assembled completion keeps of the chunks besides content and tool calls, so that a cache hit answers what
 * the live client got (docs/gateway.md, "Exact-response cache"). What the client got is what the official Node SDK's
 * accumulator (`ChatCompletionStream`, whose `finalChatCompletion()` merges the chunks) makes of the live stream; an
 * answer whose fields cannot be kept so is not stored (`storable`), rather than stored other than it came:
 * - a chunk's top-level fields (`service_tier`, `system_fingerprint`, Azure's `prompt_filter_results`, a provider's
 *   `citations` or name, `moderation`): the last non-null value of each, whole, as the SDK's `Object.assign` keeps
 *   it (an array is not joined with the one before it; a null after a value, which the SDK would keep, is not).
 *   `obfuscation` is not kept: it pads one chunk to hide its size and means nothing for the answer.
 * - a choice's own fields beside its delta (Azure's `content_filter_results`, a provider's `native_finish_reason`):
 *   the last value of each, null included, as the SDK's `Object.assign` on the choice keeps it. A choice with such
 *   fields is relayed even when its delta is empty, so that the live client gets every value the answer keeps. A
 *   choice with a `message` in a chunk (the Node SDK takes it for the whole message so far) is not storable.
 * - a delta's `refusal` text and `annotations` (url citations), concatenated in order, as content is;
 * - the legacy `function_call` (a request with the deprecated `functions`): its `arguments` concatenated, as both SDKs
 *   do; its `name` as the one fragment that has one (OpenAI sends it once). A second name makes the answer not
 *   storable: the Node SDK keeps the last, the Python one joins them. It is relayed as it comes, not checked against
 *   the function's schema as a tool call is (svc compiles `tools`, not `functions`); a replay sends it whole.
 * - a tool call's fields beside `index`, `id`, `type` and `function` (Gemini's `extra_content`, the thought signature
 *   its next turn must send back): the last value of each, as the Node SDK's `Object.assign` on the call keeps it; an
 *   object sent twice makes the answer not storable (the Python SDK merges them). svc's delta of the call carries them,
 *   live and replayed.
 * - a delta's fields svc does not know: strings (`reasoning_content`) concatenated in order (a delta is a fragment, as
 *   `content` is; the official Python SDK's accumulator merges strings so, and every client that shows reasoning
 *   joins it, where the Node SDK's `Object.assign` keeps the last fragment), numbers and booleans the last one (as the
 *   Node SDK does). An object or array (`audio`, `reasoning_details`) is kept whole when one delta of the choice has
 *   it; when a second one has it too, the answer is not storable: the Node SDK keeps the last, the Python one merges
 *   them deeply (strings joined, list entries by their `index`), a client reading them as fragments joins them, and no
 *   value is what every client got. A replay sends these fields in one delta before the text.
 * A choice that says nothing (`isEmptyChoice`) at an index that never started is skipped: it starts no choice, so the
 * stream's end does not wait for its finish (a stream ending before every started choice finished was truncated).
 * Everything kept is a part of the upstream's stream, so the stream's byte bound (SVC_PROVIDER_MAX_ANSWER_BYTES) bounds
 * it. A replay repeats the top-level fields that are short scalars on every chunk, as the live chunks carry them, so
 * those are bounded further: MAX_EXTRA_CHUNK_FIELDS fields svc does not know, each string at most
 * MAX_CHUNK_FIELD_CHARS characters. The other top-level fields (objects, arrays, longer strings, further scalars) go
 * once, on a replay's first chunk, and a choice's own fields once, on the choice's first chunk; both are bounded in
 * size (MAX_WHOLE_FIELD_CHARS each, MAX_WHOLE_FIELDS_CHARS in all), and an answer over a bound is not stored. A
 * message's fields (a delta's, `function_call`) are replayed once, as its content is, and bounded as it is.
 *
 * The assembler runs for every chunk of every live stream: the fields above are found by key loops with a switch (no
 * Set, no array or object per chunk), and the sizes are measured once, after the stream (`storable`).
 */
import type { ChatChunk, ChatCompletion, ChatToolCall, ChatUsage } from './providers/types.ts';
import { newId } from '../core/ids.ts';
import { textPieces } from './replay-pieces.ts';
import { InvalidToolCallError } from './pipeline.ts';
import { documentLogprobs, namesModel, withDocumentTopValues } from './chat-document-values.ts';
import { isDocumentFinishReason, withDocumentFinishReason } from './finish-reasons.ts';
import type { DeclaredTools } from './tool-schemas.ts';
import { heldJsonBytes, heldTextBytes } from './answer-budget.ts';

/**
 * The text besides content a model writes into a message (or a stream's deltas): its refusal, and the reasoning of
 * providers that send it as `reasoning_content` (DeepSeek, vLLM) or `reasoning` (OpenRouter). Output tokens all the
 * same, which a reasoning model's aborted or usage-less answer was recorded without.
 */
export function reasoningText(message: { refusal?: unknown; reasoning_content?: unknown; reasoning?: unknown }): string {
  let text = '';
  if (typeof message.refusal === 'string') text += message.refusal;
  if (typeof message.reasoning_content === 'string') text += message.reasoning_content;
  if (typeof message.reasoning === 'string') text += message.reasoning;
  return text;
}

interface PendingCall {
  index: number;
  id: string;
  /** Whether `id` is the upstream's (else svc's own, given until the upstream sends one). */
  upstreamId: boolean;
  name: string;
  arguments: string;
  /** The fragments' fields beside index, id, type and function (module comment); null until one comes. */
  fields: Record<string, unknown> | null;
}

interface ChoiceState {
  content: string;
  refusal: string | null;
  hasContent: boolean;
  calls: ChatToolCall[];
  /**
   * The position in `calls` of each emitted call by its call index (a stored call carries none of its own); null until
   * a call is emitted. A map, not a search of a list: an upstream may send a great many calls.
   */
  emitted: Map<number, number> | null;
  /** The call the latest fragments were for. */
  pending: PendingCall | null;
  /**
   * Calls that were not whole when another index started (an upstream interleaving them, module comment), emitted
   * when the choice finishes, by call index; null until one is held. Once it is not null every later call of the
   * choice is held too.
   */
  held: Map<number, PendingCall> | null;
  finishReason: string | null;
  /** The deltas' url citations in order; null until a delta has `annotations`. */
  annotations: unknown[] | null;
  /** A delta's fields svc does not know (module comment); null until one comes. */
  extra: Record<string, unknown> | null;
  /** The choice's own fields beside its delta (module comment), the last value of each; null until one comes. */
  fields: Record<string, unknown> | null;
  /** The legacy `function_call` (module comment); null until a delta has one. */
  functionCall: { name: string; arguments: string } | null;
  /** Whether a delta of the choice (a passed-through one or a call svc emitted) went downstream. */
  opened: boolean;
}

/**
 * Chunk fields the assembler handles itself, or that describe one chunk only (`obfuscation`): not kept as fields. A
 * switch, not a Set: asked for every key of every chunk, and a Set's lookup took three times as long.
 */
function isAssembledChunkField(key: string): boolean {
  switch (key) {
    case 'id':
    case 'object':
    case 'created':
    case 'model':
    case 'choices':
    case 'usage':
    case 'obfuscation':
      return true;
    default:
      return false;
  }
}

/** Top-level fields of the document, kept whatever MAX_EXTRA_CHUNK_FIELDS says. */
function isDocumentedChunkField(key: string): boolean {
  return key === 'service_tier' || key === 'system_fingerprint';
}

/** Message fields a replayed stream sends in deltas of their own; the others go out in one delta (`extraDeltaOf`). */
const REPLAYED_MESSAGE_FIELDS = new Set(['role', 'content', 'refusal', 'tool_calls', 'annotations']);

/**
 * A replay repeats the top-level fields on every chunk, of which there are about 128 per text at most
 * (replay-pieces.ts): these bound what that adds per chunk (a provider name, a request id or a fingerprint is far
 * shorter), so a cached answer cannot be made to replay as a stream many times its size.
 */
export const MAX_EXTRA_CHUNK_FIELDS = 8;
export const MAX_CHUNK_FIELD_CHARS = 128;

/**
 * The bounds of the fields kept whole that a replay sends once (module comment), in characters of their JSON: each
 * field (its name and value), and all of them together. Azure's filter results are about a kilobyte, a search
 * provider's citations a few; an answer with more is not stored, rather than stored without them.
 */
export const MAX_WHOLE_FIELD_CHARS = 16 * 1024;
export const MAX_WHOLE_FIELDS_CHARS = 64 * 1024;

/** Whether a top-level value is repeated on replayed chunks: a short string, a number or a boolean. */
function isChunkScalar(value: unknown): value is string | number | boolean {
  if (typeof value === 'string') return value.length <= MAX_CHUNK_FIELD_CHARS;
  return typeof value === 'number' || typeof value === 'boolean';
}

/**
 * The top-level fields of an answer (module comment), as the assembler keeps them from the live chunks and as a replay
 * takes them from a stored answer: the last non-null value of each, split into the short scalars every replayed chunk
 * repeats (`service_tier` and `system_fingerprint` always, at most MAX_EXTRA_CHUNK_FIELDS others) and the rest, which
 * a replay sends once.
 */
class ChunkFields {
  /** The fields every replayed chunk repeats; null until one is kept. */
  values: Record<string, string | number | boolean> | null = null;
  /** The fields a replay sends once, on its first chunk (objects, arrays, longer strings); null until one is kept. */
  once: Record<string, unknown> | null = null;
  private extra = 0;

  keep(key: string, value: unknown): void {
    // `__proto__` (an own key of a parsed chunk) cannot be stored as a field: assigned, it would set the prototype.
    if (key === '__proto__' || value === null || value === undefined || isAssembledChunkField(key)) return;
    const values = this.values;
    // Most chunks repeat the values before them.
    if (values !== null && values[key] === value) return;
    if (values !== null && Object.hasOwn(values, key)) {
      if (isChunkScalar(value)) {
        values[key] = value;
        return;
      }
      // A field that was short grew: sent once from now on (rare, so `delete` is fine).
      delete values[key];
      if (!isDocumentedChunkField(key)) this.extra -= 1;
    } else if (this.once === null || !Object.hasOwn(this.once, key)) {
      if (isChunkScalar(value) && (isDocumentedChunkField(key) || this.extra < MAX_EXTRA_CHUNK_FIELDS)) {
        if (!isDocumentedChunkField(key)) this.extra += 1;
        (this.values ??= {})[key] = value;
        return;
      }
    }
    (this.once ??= {})[key] = value;
  }
}

/**
 * The characters of the JSON of `fields` (names and values) added to `total`, or Infinity when one field is over
 * MAX_WHOLE_FIELD_CHARS.
 */
function withWholeFieldChars(total: number, fields: Record<string, unknown> | null): number {
  if (fields === null) return total;
  for (const key in fields) {
    const chars = key.length + JSON.stringify(fields[key]).length;
    if (chars > MAX_WHOLE_FIELD_CHARS) return Infinity;
    total += chars;
  }
  return total;
}

/**
 * Merge one unknown delta field into a choice's kept fields (module comment): strings concatenated, numbers and
 * booleans the last, an object or an array whole. False for an object or array that a delta of the choice had before:
 * the official SDKs merge those two ways (the Node one keeps the last, the Python one merges them deeply).
 */
function keepDeltaField(state: ChoiceState, key: string, value: unknown): boolean {
  if (typeof value === 'string') {
    const extra = (state.extra ??= {});
    const before = extra[key];
    extra[key] = typeof before === 'string' ? before + value : value;
  } else if (typeof value === 'number' || typeof value === 'boolean') {
    (state.extra ??= {})[key] = value;
  } else if (typeof value === 'object' && value !== null) {
    const extra = (state.extra ??= {});
    if (Object.hasOwn(extra, key)) return false;
    extra[key] = value;
  }
  return true;
}

/**
 * Merge a delta's legacy `function_call` fragment into the choice's call (module comment): arguments concatenated, the
 * name given once. False for what the official SDKs merge two ways (a second name: the Node one keeps the last, the
 * Python one joins them) or cannot read (not an object, a name or arguments not a string).
 */
function keepFunctionCall(state: ChoiceState, fragment: unknown): boolean {
  if (fragment === null || fragment === undefined) return true;
  if (typeof fragment !== 'object' || Array.isArray(fragment)) return false;
  const { name, arguments: args } = fragment as { name?: unknown; arguments?: unknown };
  if ((name !== undefined && name !== null && typeof name !== 'string') || (args !== undefined && args !== null && typeof args !== 'string')) return false;
  const call = (state.functionCall ??= { name: '', arguments: '' });
  if (name) {
    if (call.name) return false;
    call.name = name;
  }
  if (args) call.arguments += args;
  return true;
}

/** The id of a stream that sent no chunk, or none with an id yet. */
const EMPTY_ID = 'chatcmpl-empty';

/** An id of svc's for a completion, in the chat-completions family's form (`chatcmpl-...`, not svc's `prefix_...`). */
export function newCompletionId(): string {
  return newId('chatcmpl').replace('_', '-');
}

export class StreamAssembler {
  private readonly choices = new Map<number, ChoiceState>();
  // The last chunk's id, created and model as plain fields: an object made of them per chunk would be garbage at once.
  private id = EMPTY_ID;
  private created: number | null = null;
  private model = '';
  /** The top-level fields kept (module comment). */
  private readonly fields = new ChunkFields();
  usage: ChatUsage | null = null;
  /**
   * Whether the last usage came on a chunk of its own (no choices relayed with it), as the document's usage chunk; an
   * upstream may send it on its finish chunk, or on every chunk, instead.
   */
  usageOnItsOwn = false;
  /** The choices whose finish_reason came (an index counted once, however often an upstream repeats it). */
  private readonly finishedChoices = new Set<number>();
  /** Set when a chunk had what the answer cannot keep as the client got it (module comment): not storable. */
  private lossy = false;
  /** Set when a choice finished for a reason not known (finish-reasons.ts): the answer is not stored. */
  private unknownFinish = false;
  /**
   * Text of a refused stream that went into no call: the fragment that made svc refuse it (and those after it in its
   * chunk), and the deltas of the chunks read after the refusal (`acceptRefused`). Produced all the same, so counted in
   * `completionText`.
   */
  private refusedText = '';
  /**
   * About the memory what the assembler keeps takes (answer-budget.ts): its text pieces, call arguments, annotations and
   * the delta fields it keeps; one addition where it keeps one. The top-level and choice fields are not counted: each
   * is the last value, not an accumulation.
   */
  heldBytes = 0;

  /** `model` is the one asked for: a stream's model where the upstream names none. */
  constructor(
    private readonly tools: DeclaredTools,
    model = '',
  ) {
    this.model = model;
  }

  /** The chunks to send downstream for one upstream chunk. Throws InvalidToolCallError for a bad complete call. */
  accept(chunk: ChatChunk): ChatChunk[] {
    if (typeof chunk.id === 'string' && Number.isInteger(chunk.created) && namesModel(chunk.model)) {
      this.id = chunk.id;
      this.created = chunk.created;
      this.model = chunk.model;
    } else this.withDocumentFields(chunk);
    // Before the fields are kept: a fingerprint or tier the document has not is neither relayed nor kept.
    withDocumentTopValues(chunk);
    // A key loop, not `const { id, ..., ...rest } = chunk`: no object made per chunk for the few fields kept.
    for (const key in chunk) this.fields.keep(key, chunk[key]);
    if (chunk.usage) this.usage = chunk.usage;
    const out: ChatChunk[] = [];
    const passthrough: ChatChunk['choices'] = [];
    const choices = chunk.choices ?? [];
    for (let position = 0; position < choices.length; position += 1) {
      const choice = choices[position]!;
      // A choice an upstream sent without its index (the provider takes one, as some compatible upstreams send it) is
      // the one at its position, as the index says in the document; it is kept and relayed with that index.
      const index = choice.index ?? position;
      let state = this.choices.get(index);
      if (state === undefined) {
        // An empty choice at an index that never started (`{"index":1,"delta":{}}`, `finish_reason: null` alone, as
        // real upstreams send beside or between another choice's chunks) starts nothing: skipped, as an empty choice is
        // never relayed, so that the stream's end does not wait for a finish it will never get.
        if (isEmptyChoice(choice)) continue;
        state = this.newState(index);
      }
      const { tool_calls: fragments, ...rest } = choice.delta ?? {};
      // Where the calls this chunk completes start in `out` (they go out before the chunk: below).
      const callsAt = out.length;
      // The text first: a fragment beside it may refuse the stream, and the text was produced all the same (`completionText`).
      if (typeof rest.content === 'string') {
        state.content += rest.content;
        state.hasContent = true;
        this.heldBytes += heldTextBytes(rest.content);
      }
      if (typeof rest.refusal === 'string') {
        state.refusal = (state.refusal ?? '') + rest.refusal;
        this.heldBytes += heldTextBytes(rest.refusal);
      }
      if (fragments) this.acceptFragments(index, state, fragments, out);
      // One loop over the delta's keys both finds the fields to keep and tells whether it has any (no `Object.keys`
      // array per chunk).
      let hasDelta = false;
      for (const key in rest) {
        hasDelta = true;
        switch (key) {
          case 'role':
            // A delta's role is the assistant's, as the assembled message's is (some servers send `model`); one sent
            // null is left out, as the document has a string or none (a first delta's is set below).
            if (rest.role !== 'assistant') rest.role = rest.role === null ? undefined : 'assistant';
            break;
          case 'content':
          case 'refusal':
          // An own key of a parsed delta: kept, it would set the prototype of the fields it went into.
          case '__proto__':
            break;
          case 'function_call':
            // None sent as null (LiteLLM sends it so on every delta): the document has an object or none; left out.
            if (rest[key] === null) rest[key] = undefined;
            else if (!keepFunctionCall(state, rest[key])) this.lossy = true;
            else this.heldBytes += heldTextBytes(textOf((rest[key] as { arguments?: unknown }).arguments));
            break;
          case 'annotations': {
            const value = rest[key];
            if (Array.isArray(value)) {
              const annotations = (state.annotations ??= []);
              for (const annotation of value) annotations.push(annotation);
              this.heldBytes += heldJsonBytes(value);
            }
            break;
          }
          default: {
            const value = rest[key];
            if (!keepDeltaField(state, key, value)) this.lossy = true;
            else if (typeof value === 'string') this.heldBytes += heldTextBytes(value);
            else if (typeof value === 'object' && value !== null) this.heldBytes += heldJsonBytes(value);
          }
        }
      }
      if (choice.finish_reason) {
        // Before the choice's fields are kept below: the upstream's own reason goes out and is kept as one of them.
        if (!isDocumentFinishReason(choice.finish_reason) && !withDocumentFinishReason(choice)) this.unknownFinish = true;
        this.completeAll(index, state, out);
        state.finishReason = choice.finish_reason;
        this.finishedChoices.add(index);
      }
      // The choice's fields beside its delta, by a key loop and a switch as for the delta's (no array per chunk). A
      // choice that has some goes out even with an empty delta: the client gets every value the answer keeps.
      let hasFields = false;
      for (const key in choice) {
        switch (key) {
          case 'index':
          case 'delta':
          case 'finish_reason':
          case '__proto__':
            break;
          // Relayed, not kept: an answer asked with logprobs is not cached. Some upstreams send a token's logprobs in
          // a chunk of their own, its delta empty.
          case 'logprobs':
            if (choice.logprobs !== null && choice.logprobs !== undefined) {
              // As the document has them (`{}` is none): chat-document-values.ts.
              choice.logprobs = documentLogprobs(choice.logprobs);
              if (choice.logprobs !== null) hasFields = true;
            }
            break;
          case 'message':
            // The Node SDK takes it for the whole message so far and merges later deltas into it: not kept so here.
            this.lossy = true;
            hasFields = true;
            break;
          default:
            (state.fields ??= {})[key] = choice[key];
            hasFields = true;
        }
      }
      // The calls this chunk completed go out before it; when the chunk opens the choice, its role goes with the first of
      // them, not after them: OpenAI gives a choice's role on its first delta, and clients take it from there
      // (LangChain's reads a first delta without one as no assistant message, dropping its calls). Rare (an upstream
      // that sends a whole call, or several, in its first chunk, as Ollama does), so the delete is no hot-path cost. A
      // choice whose upstream sent no role (some compatible servers and proxies) gets the assistant's there: the Node
      // SDK's stream helper fails without one ("missing role for choice 0").
      if (!state.opened && out.length > callsAt) {
        state.opened = true;
        const first = out[callsAt]!.choices[0]!;
        first.delta = { role: rest.role ?? 'assistant', tool_calls: first.delta.tool_calls };
        if (rest.role !== undefined) {
          delete rest.role;
          hasDelta = false;
          for (const _ in rest) hasDelta = true;
        }
      }
      if (hasDelta || hasFields || choice.finish_reason) {
        // Once per choice, and only for an upstream that sent no role on its first delta.
        if (!state.opened && (rest.role === undefined || rest.role === null)) rest.role = 'assistant';
        state.opened = true;
        // Object.assign, not `{ ...choice, delta, finish_reason }`: an upstream may leave finish_reason out, and a
        // spread followed by a new key is a slow, promoting path on Node 20 (docs/performance-notes.md).
        passthrough.push(Object.assign({}, choice, { index, delta: rest, finish_reason: choice.finish_reason ?? null }));
      }
    }
    // A chunk whose choices all had nothing to relay still goes out when it carries the usage (some upstreams send it
    // beside `[{}]` or an empty delta): with no choices, as the document's usage chunk, which a client that asked reads.
    if (chunk.usage) this.usageOnItsOwn = passthrough.length === 0;
    if (passthrough.length > 0 || choices.length === 0 || (chunk.usage !== undefined && chunk.usage !== null)) {
      // Tool-call chunks completed by this chunk go out before it (they precede its finish_reason). `object` as the
      // document has it, for an upstream that leaves it out (the wire tells svc's error event from a chunk by it).
      out.push({ ...chunk, object: 'chat.completion.chunk', choices: passthrough });
    }
    return out;
  }

  /**
   * A chunk's id, created and model, where an upstream left them out or sent them not of the document's type (some
   * compatible servers do; the document requires them, the SDKs type them as always there): those of the chunks
   * before, else an id of svc's, now, and the model asked for; one for the stream, as OpenAI's are. Written into the
   * upstream's parsed chunk (svc's own), so they go out with it; only such an upstream pays.
   */
  private withDocumentFields(chunk: ChatChunk): void {
    if (typeof chunk.id === 'string') this.id = chunk.id;
    else {
      if (this.id === EMPTY_ID) this.id = newCompletionId();
      chunk.id = this.id;
    }
    if (Number.isInteger(chunk.created)) this.created = chunk.created;
    else chunk.created = this.created ??= Math.floor(Date.now() / 1000);
    if (namesModel(chunk.model)) this.model = chunk.model;
    else chunk.model = this.model;
  }

  /** A usage chunk as the upstream's would be (no choices), for usage svc writes itself. */
  usageChunk(usage: ChatUsage): ChatChunk {
    const chunk = chunkOf(this.id, this.created ?? Math.floor(Date.now() / 1000), this.model, this.fields.values, []);
    chunk.usage = usage;
    return chunk;
  }

  /**
   * At the end of the stream, which the upstream ended with `[DONE]` (the provider reads one that ends otherwise as cut
   * short): emit calls still pending or held, and finish each choice the upstream left without a reason (a last chunk
   * with `finish_reason: null` before `[DONE]`, as some compatible servers send it). The answer is complete, so the
   * choice finishes as a buffered answer's null does (finish-reasons.ts: `stop`, not stored): the official Node SDK's
   * stream helper fails a stream that names none ("missing finish_reason for choice 0").
   */
  end(): ChatChunk[] {
    const out: ChatChunk[] = [];
    for (const [index, state] of this.choices) {
      const callsAt = out.length;
      this.completeAll(index, state, out);
      if (!this.finishedChoices.has(index)) this.finishUnnamed(index, state, out, callsAt);
    }
    return out;
  }

  /** A finish chunk of svc's for a choice the upstream's `[DONE]` ended without a reason (`end`). */
  private finishUnnamed(index: number, state: ChoiceState, out: ChatChunk[], callsAt: number): void {
    const choice: ChatChunk['choices'][number] = { index, delta: {}, finish_reason: null };
    if (!withDocumentFinishReason(choice)) this.unknownFinish = true;
    if (!state.opened) {
      // Its first delta carries its role (`accept`): on the first call `end` released, else on this one.
      const first = out.length > callsAt ? out[callsAt]!.choices[0]! : choice;
      first.delta = { role: 'assistant', ...first.delta };
      state.opened = true;
    }
    state.finishReason = choice.finish_reason;
    this.finishedChoices.add(index);
    out.push(chunkOf(this.id, this.created ?? Math.floor(Date.now() / 1000), this.model, this.fields.values, [choice]));
  }

  /** Whether every choice that started also finished (`end` finishes those the upstream named no reason for). */
  get finished(): boolean {
    return this.choices.size > 0 && this.finishedChoices.size === this.choices.size;
  }

  /** The text the model produced (for the local count of output tokens when the upstream reports none). */
  get completionText(): string {
    let text = '';
    for (const state of this.choices.values()) {
      text += state.content;
      if (state.refusal !== null) text += state.refusal;
      if (state.extra !== null) text += reasoningText(state.extra);
      for (const call of state.calls) text += call.function.name + call.function.arguments;
      if (state.functionCall) text += state.functionCall.name + state.functionCall.arguments;
      if (state.pending) text += state.pending.name + state.pending.arguments;
      if (state.held) for (const call of state.held.values()) text += call.name + call.arguments;
    }
    return text + this.refusedText;
  }

  /**
   * Whether the answer may be stored in the exact cache: what it keeps whole that a replay sends once is within
   * MAX_WHOLE_FIELD_CHARS and MAX_WHOLE_FIELDS_CHARS (module comment). Asked once, after the stream.
   */
  get storable(): boolean {
    if (this.lossy || this.unknownFinish) return false;
    let chars = withWholeFieldChars(0, this.fields.once);
    for (const state of this.choices.values()) chars = withWholeFieldChars(chars, state.fields);
    return chars <= MAX_WHOLE_FIELDS_CHARS;
  }

  /** The whole answer as a `chat.completion` (for the cache and the run). */
  completion(): ChatCompletion {
    const completion: ChatCompletion = {
      id: this.id,
      object: 'chat.completion',
      created: this.created ?? Math.floor(Date.now() / 1000),
      model: this.model,
      choices: [...this.choices.entries()].sort(([a], [b]) => a - b).map(([index, state]) => choiceOf(index, state)),
    };
    if (this.usage) completion.usage = this.usage;
    // Neither holds a `__proto__` key (ChunkFields), so Object.assign cannot set the completion's prototype.
    if (this.fields.values) Object.assign(completion, this.fields.values);
    if (this.fields.once) Object.assign(completion, this.fields.once);
    return completion;
  }

  private newState(index: number): ChoiceState {
    const state: ChoiceState = { content: '', refusal: null, hasContent: false, calls: [], emitted: null, pending: null, held: null, finishReason: null, annotations: null, extra: null, fields: null, functionCall: null, opened: false };
    this.choices.set(index, state);
    return state;
  }

  /**
   * A delta's `tool_calls` fragments; when one makes svc refuse the stream, its text and that of the fragments after it
   * (none of them added to a call) is kept in `refusedText`.
   */
  private acceptFragments(choiceIndex: number, state: ChoiceState, fragments: ToolCallFragment[], out: ChatChunk[]): void {
    let accepted = 0;
    try {
      for (const fragment of fragments) {
        this.acceptFragment(choiceIndex, state, fragment, out);
        accepted += 1;
      }
    } catch (error) {
      if (error instanceof InvalidToolCallError) for (let at = accepted; at < fragments.length; at += 1) this.refusedText += fragmentText(fragments[at]);
      throw error;
    }
  }

  /**
   * A chunk read after svc refused the stream (the pipeline's `trailingUsage`, for the usage that follows): not relayed
   * nor assembled, but the text its deltas carry was produced all the same (`refusedText`).
   */
  acceptRefused(chunk: ChatChunk): void {
    const choices = chunk.choices;
    if (!Array.isArray(choices)) return;
    for (const choice of choices) {
      const delta = choice?.delta;
      if (typeof delta !== 'object' || delta === null) continue;
      if (typeof delta.content === 'string') this.refusedText += delta.content;
      this.refusedText += reasoningText(delta);
      if (Array.isArray(delta.tool_calls)) for (const fragment of delta.tool_calls) this.refusedText += fragmentText(fragment);
      const legacy = delta.function_call as { name?: unknown; arguments?: unknown } | null | undefined;
      if (typeof legacy === 'object' && legacy !== null) this.refusedText += textOf(legacy.name) + textOf(legacy.arguments);
    }
  }

  /** One `tool_calls` fragment into the call it continues or starts (module comment); `out` gets the calls it completes. */
  private acceptFragment(choiceIndex: number, state: ChoiceState, fragment: ToolCallFragment, out: ChatChunk[]): void {
    let call = state.pending;
    // A fragment without an index (Gemini's compatible endpoint sends none) continues the call before it, unless it
    // carries an id of its own: then it is the next call, at the next position.
    const another = fragment.index !== undefined ? fragment.index !== call?.index : Boolean(call?.upstreamId && fragment.id && fragment.id !== call.id);
    if (call === null || another) {
      if (call !== null) {
        // Left pending until released: a call refused here is still text the model produced (`completionText`).
        this.release(choiceIndex, state, call, out);
        state.pending = null;
      }
      const index = fragment.index ?? state.calls.length + (state.held?.size ?? 0);
      call = takeHeld(state, index);
      if (call === null) {
        if (state.emitted?.has(index)) {
          this.checkRepeat(state, index, fragment);
          return;
        }
        // A call needs an id (the client answers it by that id; the SDKs refuse a call without one): an upstream
        // that sends none gets one of svc's, as the mock's calls have.
        call = { index, id: fragment.id || newId('call'), upstreamId: Boolean(fragment.id), name: fragment.function?.name ?? '', arguments: '', fields: null };
      }
      state.pending = call;
    }
    if (fragment.id) {
      call.id = fragment.id;
      call.upstreamId = true;
    }
    if (!call.name && fragment.function?.name) call.name = fragment.function.name;
    const args = fragment.function?.arguments ?? '';
    call.arguments += args;
    this.heldBytes += heldTextBytes(args);
    // A key loop and a switch, as for a delta's fields: no array per fragment.
    for (const key in fragment) {
      switch (key) {
        case 'index':
        case 'id':
        case 'type':
        case 'function':
        case '__proto__':
          break;
        default: {
          const fields = (call.fields ??= {});
          const value = (fragment as Record<string, unknown>)[key];
          // The SDKs merge an object sent twice two ways (the Node one keeps the last, the Python one merges them).
          if (typeof value === 'object' && value !== null && Object.hasOwn(fields, key)) this.lossy = true;
          fields[key] = value;
        }
      }
    }
  }

  /**
   * A call another index's fragment interrupted: emitted at once when its arguments are whole JSON and nothing is held
   * (the sequential fast path), else held until the choice finishes (module comment).
   */
  private release(choiceIndex: number, state: ChoiceState, call: PendingCall, out: ChatChunk[]): void {
    if (state.held === null && !isBlank(call.arguments)) {
      const whole = toolCall(call);
      const problem = this.tools.check(whole, call.index);
      if (problem === null) {
        out.push(this.emit(choiceIndex, state, whole, call.index));
        return;
      }
      // Whole JSON that fails its check is refused now, as it will be whatever follows; only a prefix may be waited on.
      if (isJson(call.arguments)) throw new InvalidToolCallError(problem.message);
    }
    (state.held ??= new Map()).set(call.index, call);
  }

  /**
   * A fragment for a call already emitted (an upstream interleaving calls, module comment): it may repeat the call's
   * id and name and add whitespace; anything else would make the call another than the client got.
   */
  private checkRepeat(state: ChoiceState, index: number, fragment: ToolCallFragment): void {
    const call = state.calls[state.emitted!.get(index)!]!;
    const name = fragment.function?.name;
    const args = fragment.function?.arguments;
    if ((fragment.id && fragment.id !== call.id) || (name && name !== call.function.name) || (args && !isBlank(args))) {
      throw new InvalidToolCallError(`the call of "${call.function.name}" at index ${index} went on after its arguments were complete and it was sent`);
    }
  }

  /**
   * Emit the choice's pending and held calls, in index order (its finish, or the stream's end). A call leaves pending
   * or held only once emitted: one refused (and those after it) stays, text the model produced all the same, which the
   * run's output estimate counts (`completionText`) when no usage follows.
   */
  private completeAll(choiceIndex: number, state: ChoiceState, out: ChatChunk[]): void {
    const pending = state.pending;
    const held = state.held;
    if (held === null) {
      if (pending !== null) {
        out.push(this.complete(choiceIndex, state, pending));
        state.pending = null;
      }
      return;
    }
    if (pending !== null) {
      held.set(pending.index, pending);
      state.pending = null;
    }
    const calls = [...held.values()].sort((a, b) => a.index - b.index);
    for (const call of calls) {
      out.push(this.complete(choiceIndex, state, call));
      held.delete(call.index);
    }
    state.held = null;
  }

  /** Check a whole call and emit it; InvalidToolCallError when it fails its check. */
  private complete(choiceIndex: number, state: ChoiceState, pending: PendingCall): ChatChunk {
    const call = toolCall(pending);
    const problem = this.tools.check(call, pending.index);
    if (problem) throw new InvalidToolCallError(problem.message);
    return this.emit(choiceIndex, state, call, pending.index);
  }

  /** A checked call as svc's own `tool_calls` chunk, kept for the assembled answer. */
  private emit(choiceIndex: number, state: ChoiceState, call: ChatToolCall, index: number): ChatChunk {
    state.calls.push(call);
    (state.emitted ??= new Map()).set(index, state.calls.length - 1);
    // svc's own chunk carries the top-level fields the upstream's chunks do (`service_tier`, ...), as theirs would.
    return chunkOf(this.id, this.created!, this.model, this.fields.values, [
      {
        index: choiceIndex,
        delta: { tool_calls: [withCallFields({ index, id: call.id, type: 'function', function: { name: call.function.name, arguments: call.function.arguments } }, call)] },
        finish_reason: null,
      },
    ]);
  }
}

type ToolCallFragment = NonNullable<ChatChunk['choices'][number]['delta']['tool_calls']>[number];

function toolCall(pending: PendingCall): ChatToolCall {
  const call: ChatToolCall = { id: pending.id, type: 'function', function: { name: pending.name, arguments: pending.arguments } };
  // `fields` holds no `__proto__` key nor id, type or function (`acceptFragment`).
  return pending.fields ? Object.assign(call, pending.fields) : call;
}

/** A call's delta with the call's fields beside index, id, type and function (a stored call's, or an assembled one's). */
function withCallFields(delta: ToolCallFragment, call: ChatToolCall): ToolCallFragment {
  for (const key in call) {
    switch (key) {
      case 'id':
      case 'type':
      case 'function':
      case 'index':
      case '__proto__':
        break;
      default:
        (delta as Record<string, unknown>)[key] = (call as unknown as Record<string, unknown>)[key];
    }
  }
  return delta;
}

/** The text of a tool-call fragment (its name and arguments) that went into no call. */
function fragmentText(fragment: ToolCallFragment | undefined): string {
  const fn = fragment?.function;
  return typeof fn === 'object' && fn !== null ? textOf(fn.name) + textOf(fn.arguments) : '';
}

function textOf(value: unknown): string {
  return typeof value === 'string' ? value : '';
}

/** The held call of this index, taken out of the held ones; null when none is. */
function takeHeld(state: ChoiceState, index: number): PendingCall | null {
  const call = state.held?.get(index);
  if (call === undefined) return null;
  state.held!.delete(index);
  return call;
}

/**
 * Whether a choice says nothing: no delta or an empty one, no finish_reason, no logprobs, no field of its own. A key
 * loop, as in `accept`: no array per choice.
 */
function isEmptyChoice(choice: ChatChunk['choices'][number]): boolean {
  for (const key in choice) {
    switch (key) {
      case 'index':
        break;
      case 'delta': {
        const delta = choice.delta;
        if (delta !== null && delta !== undefined) for (const _ in delta) return false;
        break;
      }
      case 'finish_reason':
      case 'logprobs':
        if (choice[key] !== null && choice[key] !== undefined) return false;
        break;
      default:
        return false;
    }
  }
  return true;
}

/** Whether arguments are empty or whitespace: a call that has sent none yet (svc's check reads '' as `{}`). */
function isBlank(text: string): boolean {
  return text.length === 0 || text.trim().length === 0;
}

function isJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

/** A choice of the assembled completion: the message with what the deltas carried (module comment). */
function choiceOf(index: number, state: ChoiceState): ChatCompletion['choices'][number] {
  // No content delta at all (beside a call, a refusal, audio, or reasoning only) is `null`, as in the upstream's
  // buffered answer and as both official SDKs accumulate it; an empty one is '', as the upstream sent it.
  const content = state.hasContent ? state.content : null;
  const message: ChatCompletion['choices'][number]['message'] = {
    role: 'assistant',
    content,
    refusal: state.refusal,
  };
  if (state.calls.length > 0) message.tool_calls = state.calls;
  if (state.functionCall) message.function_call = { name: state.functionCall.name, arguments: state.functionCall.arguments };
  if (state.annotations) message.annotations = state.annotations;
  if (state.extra) Object.assign(message, state.extra);
  const choice: ChatCompletion['choices'][number] = { index, message, finish_reason: state.finishReason ?? 'stop', logprobs: null };
  // `fields` holds no `__proto__` key nor the keys above (the switch in `accept`).
  return state.fields ? Object.assign(choice, state.fields) : choice;
}

/**
 * A chunk written out, not `{ ...base, choices }`: a spread followed by a new key is a slow, promoting path on Node 20
 * (docs/performance-notes.md, "Object spreads that add keys"). `fields` are the top-level fields every chunk repeats.
 */
function chunkOf(id: string, created: number, model: string, fields: Record<string, unknown> | null, choices: ChatChunk['choices']): ChatChunk {
  const chunk: ChatChunk = { id, object: 'chat.completion.chunk', created, model, choices };
  return fields ? Object.assign(chunk, fields) : chunk;
}

/**
 * The top-level fields of a stored completion, split as the assembler splits the live chunks' (a buffered answer was
 * stored whole): those each replayed chunk repeats, as each live chunk carried them, and those sent once.
 */
function chunkFieldsOf(completion: ChatCompletion): ChunkFields {
  const fields = new ChunkFields();
  for (const key in completion) fields.keep(key, completion[key]);
  return fields;
}

/**
 * A stored message's fields that have no delta of their own in a replay (`reasoning_content`, or what a buffered
 * answer carried, such as `audio`), in one delta: sent whole once, a client that concatenates deltas and one that
 * keeps the last get the same value.
 */
function extraDeltaOf(message: ChatCompletion['choices'][number]['message']): ChatChunk['choices'][number]['delta'] | null {
  let delta: ChatChunk['choices'][number]['delta'] | null = null;
  for (const key in message) {
    // A stored `__proto__` field (JSON.parse makes it an own one) assigned here would set the delta's prototype.
    if (REPLAYED_MESSAGE_FIELDS.has(key) || key === '__proto__') continue;
    const value = message[key];
    if (value !== null && value !== undefined) (delta ??= {})[key] = value;
  }
  return delta;
}

/** A stored choice's fields besides its message (Azure's `content_filter_results`); null when it has none. */
function choiceFieldsOf(choice: ChatCompletion['choices'][number]): Record<string, unknown> | null {
  let fields: Record<string, unknown> | null = null;
  for (const key in choice) {
    switch (key) {
      case 'index':
      case 'message':
      case 'finish_reason':
      case 'logprobs':
      case 'delta':
      case '__proto__':
        break;
      default:
        (fields ??= {})[key] = choice[key];
    }
  }
  return fields;
}

/** Replay a stored completion as a stream (a cached streamed answer is served as a stream). */
export function completionToChunks(completion: ChatCompletion, options: { id: string; created: number; includeUsage: boolean }): ChatChunk[] {
  const fields = chunkFieldsOf(completion);
  const chunk = (choices: ChatChunk['choices']): ChatChunk => chunkOf(options.id, options.created, completion.model, fields.values, choices);
  const chunks: ChatChunk[] = [];
  for (const choice of completion.choices) {
    const index = choice.index;
    const message = choice.message;
    // `content: null` for an answer without text (tool calls, a refusal), as a live stream opens it: '' would make
    // an assembler's message content ''.
    const opening: ChatChunk['choices'][number] = { index, delta: { role: 'assistant', content: message.content === null ? null : '' }, finish_reason: null };
    // The choice's own fields once, on its first chunk: the Node SDK keeps the last value the choice's chunks sent, the
    // Python one the first; sent once, first, both keep it.
    const own = choiceFieldsOf(choice);
    chunks.push(chunk([own ? Object.assign(opening, own) : opening]));
    // Before the content, where a live stream sends reasoning.
    const extra = extraDeltaOf(message);
    if (extra) chunks.push(chunk([{ index, delta: extra, finish_reason: null }]));
    for (const piece of textPieces(message.content ?? '')) chunks.push(chunk([{ index, delta: { content: piece }, finish_reason: null }]));
    for (const piece of textPieces(message.refusal ?? '')) chunks.push(chunk([{ index, delta: { refusal: piece }, finish_reason: null }]));
    for (const [at, call] of (message.tool_calls ?? []).entries()) {
      const delta = withCallFields({ index: at, id: call.id, type: 'function', function: { name: call.function.name, arguments: call.function.arguments } }, call);
      chunks.push(chunk([{ index, delta: { tool_calls: [delta] }, finish_reason: null }]));
    }
    // All of them in one delta after the text they cite, as a live stream sends them; an empty list too (OpenAI's
    // buffered answers have one), which the SDKs keep as the message's.
    if (Array.isArray(message.annotations)) {
      chunks.push(chunk([{ index, delta: { annotations: message.annotations }, finish_reason: null }]));
    }
    chunks.push(chunk([{ index, delta: {}, finish_reason: choice.finish_reason }]));
  }
  // On the first chunk only, where Azure sends its `prompt_filter_results`: the official SDKs take a field from the
  // chunk that has it and keep it while later chunks leave it out, and nothing is repeated that a replay cannot bound.
  if (fields.once) {
    if (chunks.length === 0) chunks.push(chunk([]));
    Object.assign(chunks[0]!, fields.once);
  }
  if (options.includeUsage && completion.usage) {
    const last = chunk([]);
    last.usage = completion.usage;
    chunks.push(last);
  }
  return chunks;
}
