/**
 * The origin of the page a browser's request came from, as the request names it: its `Origin` header, else its
 * `Referer`. Read by the CSRF check (src/http/surface.ts), which holds it to svc's own origin or SVC_APP_BASE_URL's,
 * and by the session cookie (src/http/session-cookie.ts), which is Secure when that page is on https.
 */
import type { FastifyRequest } from 'fastify';

/** The `Origin` (else `Referer`) header as sent, or undefined when the request has neither. */
export function presentedOrigin(request: FastifyRequest): string | undefined {
  return request.headers.origin ?? request.headers.referer;
}

/** The serialized origin of a URL (scheme, host, non-default port; lowercased), or 'null' when it has none. */
export function originOf(url: string): string {
  try {
    return new URL(url).origin.toLowerCase();
  } catch {
    return 'null';
  }
}
