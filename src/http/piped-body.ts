/**
 * A request body piped through a stream of svc's before fastify reads it (the one src/http/gathered-body.ts gathers and
 * counts it in).
 */
import type { ServerResponse } from 'node:http';
import type { Transform } from 'node:stream';
import type { RequestPayload } from 'fastify';

/**
 * `payload` piped into `through`, which is returned for fastify to read. A call answered without its body being read
 * (a GET with one, a 404, a 415) leaves `through` unread, and the pipe would then hold the request paused: node
 * discards an unread body once the answer is sent, so that the connection serves its next request, but not one being
 * piped. Discarded here likewise.
 */
export function pipeBody<T extends Transform>(response: ServerResponse, payload: RequestPayload, through: T): T {
  response.once('finish', () => {
    if (payload.readableEnded) return;
    payload.unpipe(through);
    payload.resume();
  });
  return payload.pipe(through);
}
