/**
 * The one rule for a path parameter (an id or a token: `/api/v1/keys/:id`, `/runs/:id/events`, `/invites/:token`,
 * `/v1/models/{model}`), so that every route answers the same input the same way (docs/api.md "Path parameters"):
 * - longer than `PATH_PARAMETER_MAX_LENGTH` characters: 414 `uri_too_long`, from the router before any hook or
 *   lookup (src/http/app.ts);
 * - empty (`/keys//revoke`), or a `.` or `..` segment: 400 `invalid_request` naming the parameter;
 * - anything else is looked up as it is, whatever its length up to that limit: one naming nothing of the caller's is
 *   the route's not-found answer. Each route had its own bound (100 characters for keys, users and members, 200 for
 *   runs and tokens), so an unknown id of 150 characters was a 400 on one route and a 404 on the next.
 *
 * A dot segment: every URL parser (WHATWG's, curl's, fastify's inject) resolves one before the request goes out, and
 * the official clients refuse to build one, so only a raw request holds one; the router does not resolve them, and
 * read `/api/v1/keys/../revoke` as the key `..`, an id the URL does not name. Refused rather than resolved: resolving
 * could not reach the route the URL would. `%2E` is refused before routing (src/http/percent-encoding.ts), so a
 * parameter is `.` or `..` only as sent raw; an id holding one, encoded (`.%2Fx`), is one segment like any other.
 */
import { z } from 'zod';
import { RUN_MODEL_MAX_LENGTH } from '../evidence/types.ts';

/**
 * The router's bound (fastify's default is 100): as long as a gateway request's `model` may be, so that
 * `GET /v1/models/{id}` answers every id a chat request may name with the model or `model_not_found` (SPEC 4.2).
 */
export const PATH_PARAMETER_MAX_LENGTH = RUN_MODEL_MAX_LENGTH;

export function isDotSegment(segment: string): boolean {
  return segment === '.' || segment === '..';
}

export const DOT_SEGMENT_PROBLEM = "is a dot segment ('.' or '..'), which a URL resolves before it is sent";

/** A management route's path parameter, as its params schema names it (`z.object({ id: pathParameter })`). */
export const pathParameter = z
  .string()
  .min(1, 'is empty')
  .refine((value) => !isDotSegment(value), DOT_SEGMENT_PROBLEM);
