/**
 * A chat choice's `finish_reason` as the OpenAPI document allows it (stop, length, tool_calls, content_filter,
 * function_call): the official SDKs type it as that union, and some compatible upstreams send others (TGI's
 * `eos_token`, Together's `eos`, an Anthropic proxy's `end_turn` or `max_tokens`, vLLM's `abort`, Gemini's native
 * `SAFETY`), or none (a buffered answer's null, a stream's choice `[DONE]` ended without one). docs/gateway.md gives
 * the mapping.
 */

/** Whether `value` is one of the document's finish reasons: the one check a conforming answer pays. */
export function isDocumentFinishReason(value: unknown): boolean {
  switch (value) {
    case 'stop':
    case 'length':
    case 'tool_calls':
    case 'content_filter':
    case 'function_call':
      return true;
    default:
      return false;
  }
}

/** The document's finish reason another server's means, by its lower-cased name, or null for one not known. */
function synonymOf(value: string): string | null {
  switch (value.toLowerCase()) {
    case 'stop':
    case 'eos':
    case 'eos_token':
    case 'end_turn':
    case 'stop_sequence':
    case 'end':
    case 'complete':
      return 'stop';
    case 'length':
    case 'max_tokens':
    case 'max_length':
    case 'model_length':
      return 'length';
    case 'tool_calls':
    case 'tool_call':
    case 'tool_use':
      return 'tool_calls';
    case 'content_filter':
    case 'safety':
    case 'recitation':
    case 'refusal':
      return 'content_filter';
    case 'function_call':
      return 'function_call';
    default:
      return null;
  }
}

/**
 * Writes the document's finish reason into a choice whose `finish_reason` is not one (call it only then): its
 * synonym, else `stop` (the model stopped; why, svc cannot tell). What the upstream sent is kept as the choice's
 * `native_finish_reason` (OpenRouter's name for it; the document lets a choice carry fields of its own), unless the
 * upstream sent one itself. Returns whether the reason was a known one: an answer with an unknown one (`abort`,
 * `error`, none) is not cached, as one cut short is not.
 */
export function withDocumentFinishReason(choice: { finish_reason: unknown; [field: string]: unknown }): boolean {
  const sent = choice.finish_reason;
  const known = typeof sent === 'string' ? synonymOf(sent) : null;
  choice.finish_reason = known ?? 'stop';
  if (sent !== undefined && sent !== null && (choice.native_finish_reason === undefined || choice.native_finish_reason === null)) {
    choice.native_finish_reason = sent;
  }
  return known !== null;
}
