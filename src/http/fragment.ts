/**
 * A request target holding a raw `#` is refused, checked by the first request hook (src/http/app.ts). RFC 9112's
 * request-target has no fragment and no URL parser sends one (a client keeps it), yet node passes it on in the URL
 * and the router splits the query off at `?` or `#`, whichever comes first: `GET /api/v1/runs#limit=1` was served as
 * `?limit=1`, a read applying a parameter its URL does not carry. A `#` meant as a character is sent as `%23`.
 */
import { AppError } from '../core/errors.ts';

const FRAGMENT_REFUSAL_MESSAGE = 'The URL holds a # (a fragment, which a request target never carries): send a # as %23.';

/** The refusal of a request target holding a `#`, or null: one scan of the URL. */
export function fragmentRefusal(url: string): AppError | null {
  return url.indexOf('#') === -1 ? null : new AppError('invalid_request', { message: FRAGMENT_REFUSAL_MESSAGE });
}
