/**
 * What in a request names state its upstream holds between requests, so that the answer depends on that state and
 * not on the request alone: a message thread (`thread: create` starts one at the answer's id, `continue` adds to the
 * one ending at `previous_message_id`), prompt-cache diagnostics (compared with the request of a message id the
 * upstream keeps), a stored response continued (`previous_response_id`) or a conversation added to (`conversation`).
 * An exact-cache hit's answer has an id svc made up, which the upstream never held, so the next turn that names it
 * finds nothing there; one served from the cache also leaves the upstream's thread or conversation where it was. Such
 * a request is neither served from nor stored into the exact cache, and is never failed over to another provider: the
 * state lives in the one upstream account that made it (pipeline.ts, docs/gateway.md "Not cached"). The chat wire has
 * no such field; the responses wire still refuses stored `prompt`s (wires/responses-schema.ts).
 */
import { invalid, type AppError } from '../core/errors.ts';
import type { MessagesRequest, ResponsesRequest } from './providers/types.ts';

/** A messages request's `thread` or `diagnostics` (`null` is unset). */
export function messagesUpstreamState(request: MessagesRequest): string | undefined {
  if (request.thread !== undefined && request.thread !== null) return 'thread';
  if (request.diagnostics !== undefined && request.diagnostics !== null) return 'diagnostics';
  return undefined;
}

/** A responses request's `previous_response_id` or `conversation` (the schema has dropped nulls). */
export function responsesUpstreamState(request: ResponsesRequest): string | undefined {
  if (request.previous_response_id !== undefined) return 'previous_response_id';
  if (request.conversation !== undefined) return 'conversation';
  return undefined;
}

/**
 * The mock's refusal of a responses request naming upstream state: the mock keeps no responses and no conversations,
 * so it could only answer as if the conversation began with this request, which is no answer to it.
 */
export function responsesStateRefusedByMock(field: string): AppError {
  return invalid(
    `${field} continues state a live responses upstream keeps, and the mock provider keeps none: configure one (CHATCOMP_API_KEY, CHATCOMP_BASE_URL), or send the whole conversation in input.`,
    { param: field },
  );
}
