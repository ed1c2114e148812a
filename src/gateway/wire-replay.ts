/**
 * A complete answer written out as its wire's event stream: a cached streamed answer is replayed this way, and the
 * mock provider streams its answers this way. Pure functions of the answer.
 */
import type { MessagesResponse, MessagesStreamEvent, ResponseObject, ResponseStreamEvent } from './providers/types.ts';
import { jsonPieces, textPieces } from './replay-pieces.ts';

/** Replay a stored message as the wire's event stream (a cached streamed answer is served as a stream). */
export function messageToEvents(message: MessagesResponse): MessagesStreamEvent[] {
  // Blocks are copied by spreads, never Object.assign: a stored block's own `__proto__` member (an upstream's, as
  // JSON.parse keeps it) is a member like any other there, where assigned it set the copy's prototype and was lost.
  // An answer stored without usage (by a version that kept an upstream's as it came) is replayed with zeros.
  const usage = message.usage ?? { input_tokens: 0, output_tokens: 0 };
  const events: MessagesStreamEvent[] = [
    { type: 'message_start', message: { ...message, content: [], stop_reason: null, stop_sequence: null, usage: { ...usage, output_tokens: 1 } } },
    { type: 'ping' },
  ];
  for (const [index, block] of message.content.entries()) {
    if (block.type === 'text') {
      // The block's own fields beside its text on its start (`citations: null` too, as the SDKs keep it); citations
      // one `citations_delta` each after the text, as a live stream sends them and the SDKs gather them.
      const citations = Array.isArray(block.citations) && block.citations.length > 0 ? (block.citations as unknown[]) : null;
      events.push({ type: 'content_block_start', index, content_block: { ...block, text: '', ...(citations ? { citations: [] } : null) } });
      for (const piece of textPieces(String(block.text))) {
        events.push({ type: 'content_block_delta', index, delta: { type: 'text_delta', text: piece } });
      }
      for (const citation of citations ?? []) events.push({ type: 'content_block_delta', index, delta: { type: 'citations_delta', citation } });
    } else if (block.type === 'tool_use' || block.type === 'server_tool_use' || block.type === 'mcp_tool_use') {
      // The block's own fields (`caller`, ...) on its start; its input in pieces, as a live stream sends a call's, a
      // server tool's and an MCP tool's (the SDKs' `inputJson` events come from those pieces).
      events.push({ type: 'content_block_start', index, content_block: { ...block, input: {} } });
      const json = JSON.stringify(block.input ?? {});
      for (const piece of jsonPieces(json)) events.push({ type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: piece } });
    } else if (block.type === 'thinking') {
      // Its thinking in deltas and its signature in a `signature_delta`, as a live stream sends them: the SDKs emit
      // their `thinking` and `signature` events from those deltas, not from the block's start.
      const signature = typeof block.signature === 'string' && block.signature !== '' ? block.signature : null;
      events.push({ type: 'content_block_start', index, content_block: { ...block, thinking: '', ...(signature !== null ? { signature: '' } : null) } });
      for (const piece of textPieces(String(block.thinking ?? ''))) {
        events.push({ type: 'content_block_delta', index, delta: { type: 'thinking_delta', thinking: piece } });
      }
      if (signature !== null) events.push({ type: 'content_block_delta', index, delta: { type: 'signature_delta', signature } });
    } else {
      events.push({ type: 'content_block_start', index, content_block: block });
    }
    events.push({ type: 'content_block_stop', index });
  }
  // The SDKs take `stop_details` from the message_delta only (absent there, they drop the message_start's).
  const delta: Record<string, unknown> = { stop_reason: message.stop_reason, stop_sequence: message.stop_sequence };
  if (message.stop_details !== undefined) delta.stop_details = message.stop_details;
  events.push({ type: 'message_delta', delta, usage: { output_tokens: usage.output_tokens } });
  events.push({ type: 'message_stop' });
  return events;
}


/**
 * Replay a stored response as the wire's event stream (sequence numbers are assigned by the route), with the events
 * a live stream has for each kind of item, so that a client reading them sees what it saw live: text, refusal,
 * reasoning summary and reasoning text in deltas, citations as `annotation.added`, a function call's arguments and a
 * custom tool call's input in one delta each.
 */
export function responseToEvents(response: ResponseObject): ResponseStreamEvent[] {
  const events: Array<Omit<ResponseStreamEvent, 'sequence_number'>> = [];
  const { usage: _usage, ...rest } = response;
  const inProgress = { ...rest, status: 'in_progress', output: [], ...('completed_at' in rest ? { completed_at: null } : {}) };
  events.push({ type: 'response.created', response: inProgress }, { type: 'response.in_progress', response: inProgress });
  for (const [outputIndex, item] of response.output.entries()) {
    const at = { item_id: item.id, output_index: outputIndex };
    if (item.type === 'message') {
      const content = (item.content as Part[] | undefined) ?? [];
      events.push({ type: 'response.output_item.added', output_index: outputIndex, item: { ...item, status: 'in_progress', content: [] } });
      for (const [contentIndex, part] of content.entries()) {
        const base = { ...at, content_index: contentIndex };
        if (part.type === 'output_text') {
          const annotations = Array.isArray(part.annotations) ? part.annotations : [];
          const text = String(part.text ?? '');
          const logprobs = Array.isArray(part.logprobs) ? (part.logprobs as unknown[]) : [];
          events.push({ type: 'response.content_part.added', ...base, part: { ...part, text: '', annotations: [], ...(logprobs.length > 0 ? { logprobs: [] } : {}) } });
          // An answer asked with `message.output_text.logprobs` as a live stream gives it: a delta per token with that
          // token's log probabilities, all of them on the done event.
          if (spellsText(logprobs, text)) for (const logprob of logprobs) events.push({ type: 'response.output_text.delta', ...base, delta: logprob.token, logprobs: [logprob] });
          else for (const delta of textPieces(text)) events.push({ type: 'response.output_text.delta', ...base, delta, logprobs: [] });
          for (const [annotationIndex, annotation] of annotations.entries()) {
            events.push({ type: 'response.output_text.annotation.added', ...base, annotation_index: annotationIndex, annotation });
          }
          events.push({ type: 'response.output_text.done', ...base, text: part.text ?? '', logprobs });
        } else if (part.type === 'refusal') {
          events.push({ type: 'response.content_part.added', ...base, part: { ...part, refusal: '' } });
          for (const delta of textPieces(String(part.refusal ?? ''))) events.push({ type: 'response.refusal.delta', ...base, delta });
          events.push({ type: 'response.refusal.done', ...base, refusal: part.refusal ?? '' });
        } else {
          events.push({ type: 'response.content_part.added', ...base, part });
        }
        events.push({ type: 'response.content_part.done', ...base, part });
      }
    } else if (item.type === 'reasoning') {
      const summary = (item.summary as Part[] | undefined) ?? [];
      const content = item.content as Part[] | undefined;
      events.push({ type: 'response.output_item.added', output_index: outputIndex, item: { ...item, summary: [], ...(content ? { content: [] } : {}) } });
      for (const [summaryIndex, part] of summary.entries()) {
        const base = { ...at, summary_index: summaryIndex };
        events.push({ type: 'response.reasoning_summary_part.added', ...base, part: { ...part, text: '' } });
        for (const delta of textPieces(String(part.text ?? ''))) events.push({ type: 'response.reasoning_summary_text.delta', ...base, delta });
        events.push({ type: 'response.reasoning_summary_text.done', ...base, text: part.text ?? '' });
        events.push({ type: 'response.reasoning_summary_part.done', ...base, part });
      }
      for (const [contentIndex, part] of (content ?? []).entries()) {
        const base = { ...at, content_index: contentIndex };
        events.push({ type: 'response.content_part.added', ...base, part: { ...part, text: '' } });
        for (const delta of textPieces(String(part.text ?? ''))) events.push({ type: 'response.reasoning_text.delta', ...base, delta });
        events.push({ type: 'response.reasoning_text.done', ...base, text: part.text ?? '' });
        events.push({ type: 'response.content_part.done', ...base, part });
      }
    } else if (item.type === 'function_call') {
      events.push({ type: 'response.output_item.added', output_index: outputIndex, item: { ...item, status: 'in_progress', arguments: '' } });
      events.push({ type: 'response.function_call_arguments.delta', ...at, delta: item.arguments });
      events.push({ type: 'response.function_call_arguments.done', ...at, name: item.name, arguments: item.arguments });
    } else if (item.type === 'custom_tool_call') {
      events.push({ type: 'response.output_item.added', output_index: outputIndex, item: { ...item, input: '' } });
      events.push({ type: 'response.custom_tool_call_input.delta', ...at, delta: item.input });
      events.push({ type: 'response.custom_tool_call_input.done', ...at, input: item.input });
    } else {
      events.push({ type: 'response.output_item.added', output_index: outputIndex, item });
    }
    events.push({ type: 'response.output_item.done', output_index: outputIndex, item });
  }
  events.push({ type: response.status === 'incomplete' ? 'response.incomplete' : 'response.completed', response });
  return events.map((event, index) => ({ ...event, sequence_number: index }) as ResponseStreamEvent);
}

/** Whether an output text part's per-token log probabilities spell its text (so its deltas can be cut by them). */
function spellsText(logprobs: unknown[], text: string): logprobs is Array<{ token: string }> {
  if (logprobs.length === 0) return false;
  let spelled = '';
  for (const logprob of logprobs as Array<{ token?: unknown } | null>) {
    if (typeof logprob?.token !== 'string') return false;
    spelled += logprob.token;
  }
  return spelled === text;
}

/** A content, summary or reasoning-text part of a stored output item. */
type Part = { type: string; text?: string; refusal?: string; annotations?: unknown; [field: string]: unknown };
