/**
 * The 404 of a path no route serves, and, outside the surfaces, that 404 given before the request's body is read.
 *
 * fastify takes a request to an unknown path through its not-found handler's whole lifecycle, body parsing included:
 * `POST /nope` was read and parsed before its 404 (broken JSON was a 400 `invalid_json`), up to the larger of the
 * surfaces' body limits (32 MiB by default), without any credential and outside the gateway's body budget
 * (src/http/body-budget.ts). Sixteen such uploads at once took a server's peak RSS from 105 to 451 MB; the same to
 * `/v1/chat/completions` without a key, refused by the identity hook before its body, to 107 MB.
 *
 * No route outside the surfaces reads a body (the pages, their assets and `/health` are GET only), so the root's 404
 * waits for none: it is answered in an onRequest hook of its own context, through the app's error handler. node then
 * reads and discards the rest of the body as it does after any answer given before the body came (the surfaces'
 * 401s), so a request pipelined behind it is read where it starts, never out of the body; an answer that closes its
 * connection lingers (src/http/lingering-close.ts). The surfaces' unknown paths (`/api/v1/*`, `/v1/*`) keep their own
 * not-found handlers, behind their identity and rate limit, which refuse a caller without a credential before its body
 * as well (an authenticated caller's body is read there, up to the root's body limit, before the 404).
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { AppError } from '../core/errors.ts';
import { replyError } from './error-shapes.ts';

/** The `404 route_not_found` of `request`; the path is named without its query (which may hold a token). */
export function routeNotFound(request: FastifyRequest): AppError {
  return new AppError('route_not_found', { message: `No route for ${request.method} ${request.url.split('?', 1)[0]}.` });
}

/**
 * The app's not-found handler, registered as a plugin of the app (unprefixed): fastify gives the default 404 the hooks
 * of the context its handler is set in (docs/Reference/Server.md, setNotFoundHandler), so this context's onRequest
 * hook is the root 404's alone, and no route pays for it. An unknown path arriving is answered there, before its body
 * (module comment); the handler answers `reply.callNotFound()` (`GET /` for an API client), which runs no onRequest hook.
 */
export async function rootNotFound(app: FastifyInstance): Promise<void> {
  app.addHook('onRequest', (request, _reply, done) => done(routeNotFound(request)));
  app.setNotFoundHandler((request, reply) => replyError(request, reply, routeNotFound(request)));
}
