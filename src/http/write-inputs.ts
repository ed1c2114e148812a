/**
 * The inputs of a management write (POST, PUT, PATCH, DELETE under /api/v1) are its path and its body, and nothing
 * else: a query parameter sent to one is a 400 naming it (src/core/query-parameters.ts), checked here for every write
 * rather than in each handler. Dropped, it read as applied where it could only have narrowed the action:
 * `DELETE /users/:id?tenant=...` deleted, `POST /users?role=admin` created a member, `POST /keys/:id/revoke?tenant=...`
 * revoked. No write takes one (the e-mailed links that trackers add parameters to are GETs, which keep their own rule).
 *
 * A JSON `null` body is a body that is not an object, a 400 as `[]` or `5` is. Handlers read an absent body as `{}`
 * (the resend of a verification e-mail, the acceptance of an invitation, the clear of every cache tier), and a `null`
 * went the same way through `?? {}` and `.nullish()`; a request without a body keeps that meaning.
 *
 * Registered on the management surface only: the /v1 wires pay nothing for it.
 */
import type { FastifyRequest } from 'fastify';
import { z } from 'zod';
import { noQuery } from '../core/query-parameters.ts';
import { MUTATING } from './surface.ts';

/**
 * The body of a write whose inputs are its path alone (a revocation, a deletion, a logout): none, or `{}`. A field
 * sent in one could only have narrowed the action (`{"tenant": ...}` on a revocation), so it is refused, not dropped.
 */
export const noBody = z.object({}).strict().optional();

/** Any JSON object: its fields are the handler's to check. A `null` fails it as `body: ... expected object, received null`. */
const anObject = z.looseObject({});

/** A `preValidation` hook: after identity, the rate limit and the body's parsing, before the handler reads anything. */
export async function checkWriteInputs(request: FastifyRequest): Promise<void> {
  if (!MUTATING.has(request.method)) return;
  noQuery.parse(request.query);
  if (request.body === null) anObject.parse(request.body);
}
