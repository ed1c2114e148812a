/**
 * The 404 of a path no route serves, given before the request's body is read.
 *
 * fastify takes a request to an unknown path through its not-found handler's whole lifecycle, body parsing included,
 * and a not-found context has no route's body limit: the app's, the larger of the surfaces' limits (32 MiB by default).
 * `POST /nope` was read and parsed before its 404 (broken JSON was a 400 `invalid_json`) without any credential and
 * outside the gateway's body budget (src/http/body-budget.ts): sixteen such uploads at once took a server's peak RSS
 * from 105 to 451 MB; the same to `/v1/chat/completions` without a key, refused by the identity hook before its body,
 * to 107 MB. An authenticated `POST /api/v1/nope` was read the same way, 2 MiB of it a 400 `invalid_json` where any
 * route of the management API answers a 413.
 *
 * No unknown path reads a body, so its 404 waits for none: it is answered in an onRequest hook of the not-found
 * handler's own context, through that context's error handler. Registered in a surface, that context inherits the
 * surface's onRequest hooks (those added before it is registered), which run first: a caller without a credential is
 * still refused 401 in the surface's shape (a failed token counted), and `/api/v1`'s answers keep their `no-store`. The
 * surface's rate limit is a hook of each route (@fastify/rate-limit adds it on `onRoute`), which a 404 never was. A
 * 404 to a body still coming closes its connection, as the surfaces' 401s do, lingering within its bounds
 * (src/http/surface.ts, src/http/lingering-close.ts): what the client still sends is read and dropped, never parsed,
 * and one sending without end is cut. A request without a body keeps its connection.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { AppError } from '../core/errors.ts';
import { beforeQuery, replyError } from './error-shapes.ts';

/** The `404 route_not_found` of `request`; the path is named without its query (which may hold a token). */
export function routeNotFound(request: FastifyRequest): AppError {
  return new AppError('route_not_found', { message: `No route for ${request.method} ${beforeQuery(request.url)}.` });
}

/**
 * The not-found handler of the context it is registered in (the app, unprefixed, or a surface, under its prefix), as a
 * plugin of its own: fastify gives a 404 the hooks of the context its handler is set in (docs/Reference/Server.md,
 * setNotFoundHandler), so this context's onRequest hook is the 404's alone, and no route pays for it. An unknown path
 * arriving is answered there, before its body (module comment); the handler answers `reply.callNotFound()` (`GET /`
 * for an API client), which runs no onRequest hook.
 */
export async function notFoundBeforeBody(app: FastifyInstance): Promise<void> {
  app.addHook('onRequest', (request, _reply, done) => done(routeNotFound(request)));
  app.setNotFoundHandler((request, reply) => replyError(request, reply, routeNotFound(request)));
}
