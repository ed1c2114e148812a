/**
 * Values of a chat answer (buffered, or a stream's chunk) that the OpenAPI document types narrower than some
 * compatible upstreams send them, as the document has them: `system_fingerprint` (a string; `null` sent by some
 * servers), `service_tier` (the document's tiers or null; Groq's `on_demand` is none of them) and a choice's
 * `logprobs` (null or an object with `content` and `refusal`; `{}` sent by some servers). Each is a type check or a
 * switch on a value the answer already holds: every chunk of every stream pays for the first two. docs/gateway.md
 * gives the mapping.
 */

/** Whether `value` is one of the document's service tiers (null aside, which the document allows too). */
function isDocumentServiceTier(value: unknown): boolean {
  switch (value) {
    case 'auto':
    case 'default':
    case 'flex':
    case 'scale':
    case 'priority':
    case 'fast':
      return true;
    default:
      return false;
  }
}

/**
 * An answer's or chunk's `system_fingerprint` that is not a string, and `service_tier` that is not one of the
 * document's nor null, left out (undefined: JSON drops it, and a stream's kept fields skip it): a fingerprint of
 * null says nothing, and another server's tier names no tier of the document's (Groq's `on_demand` is its standard
 * one, its `performance` no tier of OpenAI's), so none is guessed.
 */
export function withDocumentTopValues(answer: { [field: string]: unknown }): void {
  const fingerprint = answer.system_fingerprint;
  if (fingerprint !== undefined && typeof fingerprint !== 'string') answer.system_fingerprint = undefined;
  const tier = answer.service_tier;
  if (tier !== undefined && tier !== null && !isDocumentServiceTier(tier)) answer.service_tier = undefined;
}

/**
 * Whether an upstream's `model` names a model: a string that is not empty nor blank. Some compatible servers send
 * `model: ""`, which names none; the answer then says the model asked for, as where the upstream sent no model.
 */
export function namesModel(value: unknown): value is string {
  return typeof value === 'string' && value.trim() !== '';
}

/** Whether a logprobs list is as the document has it: an array (its tokens are relayed as sent) or null. */
function isLogprobsList(value: unknown): boolean {
  return value === null || Array.isArray(value);
}

/**
 * A choice's `logprobs` (not null: only an answer asked with them has them) as the document has it: an object whose
 * `content` and `refusal` are each a list or null. One with neither list (`{}`, a string) is null, as no log
 * probabilities; one with a list and the other missing (vLLM sends no `refusal`) gets null for the other.
 */
export function documentLogprobs(value: unknown): unknown {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return null;
  const logprobs = value as { content?: unknown; refusal?: unknown };
  const content = isLogprobsList(logprobs.content);
  const refusal = isLogprobsList(logprobs.refusal);
  if (content && refusal) return value;
  if (!Array.isArray(logprobs.content) && !Array.isArray(logprobs.refusal)) return null;
  if (!content) logprobs.content = null;
  if (!refusal) logprobs.refusal = null;
  return value;
}
