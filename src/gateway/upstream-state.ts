/**
 * What in a request names state its upstream holds between requests, so that the answer depends on that state and
 * not on the request alone: a message thread (`thread: create` starts one at the answer's id, `continue` adds to the
 * one ending at `previous_message_id`) or prompt-cache diagnostics (compared with the request of a message id the
 * upstream keeps). An exact-cache hit's message has an id svc made up, which the upstream never held, so the next turn
 * that names it (the thread's continue, the next diagnostics) finds nothing there; a `continue` served from the cache
 * also leaves the upstream's thread where it was. Such a request is neither served from nor stored into the exact
 * cache (pipeline.ts, docs/gateway.md "Not cached"). One predicate per wire that has such fields: the responses wire
 * refuses `previous_response_id`, `conversation` and stored `prompt`s (wires/responses-schema.ts), and the chat wire
 * has none.
 */
import type { MessagesRequest } from './providers/types.ts';

/** A messages request's `thread` or `diagnostics` (`null` is unset). */
export function messagesUpstreamState(request: MessagesRequest): string | undefined {
  if (request.thread !== undefined && request.thread !== null) return 'thread';
  if (request.diagnostics !== undefined && request.diagnostics !== null) return 'diagnostics';
  return undefined;
}
