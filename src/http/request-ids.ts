/**
 * Request ids (docs/api.md, request ids): every answer carries one, in `x-request-id` (and on the messages wire in
 * `request-id` and an error body's `request_id`), and svc's log lines name the request by it.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { newId } from '../core/ids.ts';

/** A client-sent `x-request-id` is kept when it is well formed (no byte that could end a header line). */
const CLIENT_REQUEST_ID = /^[A-Za-z0-9._:@\/+=-]{1,128}$/;

/** A generated request id, `req_` and 24 hex digits. */
export function newRequestId(): string {
  return newId('req');
}

/** The id of a request whose headers were read: the client's own when well formed, else a generated one. */
export function requestIdOf(headers: IncomingHttpHeaders): string {
  const sent = headers['x-request-id'];
  return typeof sent === 'string' && CLIENT_REQUEST_ID.test(sent) ? sent : newRequestId();
}
