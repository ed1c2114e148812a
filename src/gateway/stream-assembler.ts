/**
 * Relays a chat-completions chunk stream while assembling it: content deltas pass through at once; `tool_calls`
 * fragments are held until the call is complete (the next call index starts, the choice finishes, or the stream
 * ends), validated against the declared tool's schema, and emitted as one whole call. The assembled completion is
 * what the run records and the exact cache stores.
 */
import type { ChatChunk, ChatCompletion, ChatToolCall, ChatUsage } from './providers/types.ts';
import { newId } from '../core/ids.ts';
import { InvalidToolCallError } from './pipeline.ts';
import type { DeclaredTools } from './tool-schemas.ts';

interface PendingCall {
  index: number;
  id: string;
  name: string;
  arguments: string;
}

interface ChoiceState {
  content: string;
  refusal: string | null;
  hasContent: boolean;
  calls: ChatToolCall[];
  pending: PendingCall | null;
  finishReason: string | null;
}


export class StreamAssembler {
  private readonly choices = new Map<number, ChoiceState>();
  private meta: Pick<ChatChunk, 'id' | 'created' | 'model'> & { system_fingerprint?: unknown } | null = null;
  usage: ChatUsage | null = null;
  /** The choices whose finish_reason came (an index counted once, however often an upstream repeats it). */
  private readonly finishedChoices = new Set<number>();

  constructor(private readonly tools: DeclaredTools) {}

  /** The chunks to send downstream for one upstream chunk. Throws InvalidToolCallError for a bad complete call. */
  accept(chunk: ChatChunk): ChatChunk[] {
    this.meta = { id: chunk.id, created: chunk.created, model: chunk.model, ...(chunk.system_fingerprint ? { system_fingerprint: chunk.system_fingerprint } : {}) };
    if (chunk.usage) this.usage = chunk.usage;
    const out: ChatChunk[] = [];
    const passthrough: ChatChunk['choices'] = [];
    for (const choice of chunk.choices ?? []) {
      const state = this.state(choice.index);
      const { tool_calls: fragments, ...rest } = choice.delta ?? {};
      for (const fragment of fragments ?? []) {
        if (state.pending && fragment.index !== state.pending.index) out.push(this.complete(choice.index, state));
        if (!state.pending) {
          // A call needs an id (the client answers it by that id; the SDKs refuse a call without one): an upstream
          // that sends none gets one of svc's, as the mock's calls have.
          state.pending = { index: fragment.index, id: fragment.id || newId('call'), name: fragment.function?.name ?? '', arguments: '' };
        } else {
          if (fragment.id) state.pending.id = fragment.id;
          if (!state.pending.name && fragment.function?.name) state.pending.name = fragment.function.name;
        }
        state.pending.arguments += fragment.function?.arguments ?? '';
      }
      if (typeof rest.content === 'string') {
        state.content += rest.content;
        state.hasContent = true;
      }
      if (typeof rest.refusal === 'string') state.refusal = (state.refusal ?? '') + rest.refusal;
      const hasDelta = Object.keys(rest).length > 0;
      if (choice.finish_reason) {
        if (state.pending) out.push(this.complete(choice.index, state));
        state.finishReason = choice.finish_reason;
        this.finishedChoices.add(choice.index);
      }
      if (hasDelta || choice.finish_reason) {
        // Object.assign, not `{ ...choice, delta, finish_reason }`: an upstream may leave finish_reason out, and a
        // spread followed by a new key is a slow, promoting path on Node 20 (docs/performance-notes.md).
        passthrough.push(Object.assign({}, choice, { delta: rest, finish_reason: choice.finish_reason ?? null }));
      }
    }
    if (passthrough.length > 0 || (chunk.choices ?? []).length === 0) {
      // Tool-call chunks completed by this chunk go out before it (they precede its finish_reason).
      out.push({ ...chunk, choices: passthrough });
    }
    return out;
  }

  /** At the end of the stream: emit calls still pending. */
  end(): ChatChunk[] {
    const out: ChatChunk[] = [];
    for (const [index, state] of this.choices) if (state.pending) out.push(this.complete(index, state));
    return out;
  }

  /** Whether every choice that started also finished (a stream that ends otherwise was truncated). */
  get finished(): boolean {
    return this.choices.size > 0 && this.finishedChoices.size === this.choices.size;
  }

  get completionText(): string {
    let text = '';
    for (const state of this.choices.values()) {
      text += state.content;
      for (const call of state.calls) text += call.function.name + call.function.arguments;
      if (state.pending) text += state.pending.name + state.pending.arguments;
    }
    return text;
  }

  /** The whole answer as a `chat.completion` (for the cache and the run). */
  completion(): ChatCompletion {
    const meta = this.meta ?? { id: 'chatcmpl-empty', created: Math.floor(Date.now() / 1000), model: '' };
    return {
      id: meta.id,
      object: 'chat.completion',
      created: meta.created,
      model: meta.model,
      choices: [...this.choices.entries()]
        .sort(([a], [b]) => a - b)
        .map(([index, state]) => ({
          index,
          message: {
            role: 'assistant' as const,
            content: state.hasContent ? state.content : state.calls.length > 0 ? null : state.content,
            refusal: state.refusal,
            ...(state.calls.length > 0 ? { tool_calls: state.calls } : {}),
          },
          finish_reason: state.finishReason ?? 'stop',
          logprobs: null,
        })),
      ...(this.usage ? { usage: this.usage } : {}),
      ...(meta.system_fingerprint ? { system_fingerprint: meta.system_fingerprint } : {}),
    };
  }

  private state(index: number): ChoiceState {
    let state = this.choices.get(index);
    if (!state) {
      state = { content: '', refusal: null, hasContent: false, calls: [], pending: null, finishReason: null };
      this.choices.set(index, state);
    }
    return state;
  }

  private complete(choiceIndex: number, state: ChoiceState): ChatChunk {
    const pending = state.pending!;
    state.pending = null;
    const call: ChatToolCall = { id: pending.id, type: 'function', function: { name: pending.name, arguments: pending.arguments } };
    const problem = this.tools.check(call, pending.index);
    if (problem) throw new InvalidToolCallError(problem.message);
    state.calls.push(call);
    const meta = this.meta!;
    return {
      id: meta.id,
      object: 'chat.completion.chunk',
      created: meta.created,
      model: meta.model,
      choices: [
        {
          index: choiceIndex,
          delta: { tool_calls: [{ index: pending.index, id: call.id, type: 'function', function: { name: call.function.name, arguments: call.function.arguments } }] },
          finish_reason: null,
        },
      ],
    };
  }
}

/** Replay a stored completion as a stream (a cached streamed answer is served as a stream). */
export function completionToChunks(completion: ChatCompletion, options: { id: string; created: number; includeUsage: boolean }): ChatChunk[] {
  // Each chunk written out, not `{ ...base, choices }`: a spread followed by a new key is a slow, promoting path on
  // Node 20 (docs/performance-notes.md, "Object spreads that add keys").
  const chunkOf = (choices: ChatChunk['choices']): ChatChunk => ({
    id: options.id,
    object: 'chat.completion.chunk',
    created: options.created,
    model: completion.model,
    choices,
  });
  const chunks: ChatChunk[] = [];
  for (const choice of completion.choices) {
    chunks.push(chunkOf([{ index: choice.index, delta: { role: 'assistant', content: '' }, finish_reason: null }]));
    const text = choice.message.content ?? '';
    // Word-sized pieces, as a live stream would arrive.
    for (const piece of text.match(/\S+\s*|\s+/g) ?? []) {
      chunks.push(chunkOf([{ index: choice.index, delta: { content: piece }, finish_reason: null }]));
    }
    for (const [index, call] of (choice.message.tool_calls ?? []).entries()) {
      chunks.push(
        chunkOf([{ index: choice.index, delta: { tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.function.name, arguments: call.function.arguments } }] }, finish_reason: null }]),
      );
    }
    chunks.push(chunkOf([{ index: choice.index, delta: {}, finish_reason: choice.finish_reason }]));
  }
  if (options.includeUsage && completion.usage) {
    const last = chunkOf([]);
    last.usage = completion.usage;
    chunks.push(last);
  }
  return chunks;
}
