/**
 * What request logs may say about a URL. One-time tokens travel in some paths and queries (invitation lookup and
 * acceptance, e-mail verification, and the `?token=` of the pages the e-mails link to); they are secrets, so the
 * request log shows `[redacted]` in their place. A target in absolute form (`http://host/api/v1/invites/...`) is
 * logged by its path as well.
 */
import { pathOfTarget } from './error-shapes.ts';

/**
 * The token's segment after `/api/v1/invites/` and `/api/v1/auth/verify/`, also in spellings the router does not take
 * (a doubled slash, another case, an encoded slash: 404s, whose URL still carries what the client meant as a token).
 */
const SLASH = '(?:\\/|%2f)+';
const TOKEN_PATHS = [
  new RegExp(`^(${SLASH}api${SLASH}v1${SLASH}invites${SLASH})[^/?#]+`, 'i'),
  new RegExp(`^(${SLASH}api${SLASH}v1${SLASH}auth${SLASH}verify${SLASH})[^/?#]+`, 'i'),
];
const TOKEN_QUERY = /([?&]token=)[^&#]*/gi;

export function redactUrl(url: string): string {
  let out = pathOfTarget(url);
  for (const pattern of TOKEN_PATHS) out = out.replace(pattern, '$1[redacted]');
  return out.replace(TOKEN_QUERY, '$1[redacted]');
}

/** pino serializer for fastify's `req`: the default fields, with the URL redacted. */
export function requestLogSerializer(request: { method: string; url: string; hostname?: string; ip?: string }) {
  return { method: request.method, url: redactUrl(request.url), hostname: request.hostname, remoteAddress: request.ip };
}
