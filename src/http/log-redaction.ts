/**
 * What request logs may say about a URL. One-time tokens travel in some paths and queries (invitation lookup and
 * acceptance, e-mail verification, and the `?token=` of the pages the e-mails link to); they are secrets, so the
 * request log shows `[redacted]` in their place. A target in absolute form (`http://host/api/v1/invites/...`) is
 * logged by its path as well.
 */
import { pathOfTarget } from './error-shapes.ts';

/**
 * The token's segment after `/api/v1/invites/` and `/api/v1/auth/verify/`, also in spellings the router does not take
 * (a doubled slash, another case, an encoded slash: 404s, whose URL still carries what the client meant as a token)
 * and in those it does: any character percent-encoded (`/%61pi/v1/%69nvites/<token>` is the invitation lookup).
 */
const SLASH = '(?:\\/|%2f)+';
/** `word` with each of its characters either as it is or percent-encoded (the pattern's `i` flag covers both cases). */
const spelled = (word: string) =>
  [...word].map((c) => `(?:${c}|%${c.toLowerCase().charCodeAt(0).toString(16)}|%${c.toUpperCase().charCodeAt(0).toString(16)})`).join('');
const tokenPath = (...segments: string[]) => new RegExp(`^(${SLASH}${segments.map(spelled).join(SLASH)}${SLASH})[^/?#]+`, 'i');
const TOKEN_PATHS = [tokenPath('api', 'v1', 'invites'), tokenPath('api', 'v1', 'auth', 'verify')];
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
