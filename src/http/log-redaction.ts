/**
 * What request logs may say about a URL. One-time tokens travel in some paths and queries (invitation lookup and
 * acceptance, e-mail verification, and the `?token=` of the pages the e-mails link to); they are secrets, so the
 * request log shows `[redacted]` in their place. So is a credential a client puts in the query (`?api_key=sk-...`,
 * `?key=`, `?access_token=`, the way some SDKs and providers take keys): svc reads keys from headers only, but the
 * URL is logged whatever svc makes of it. A target in absolute form (`http://host/api/v1/invites/...`) is logged by
 * its path as well (its user info, a credential too, is never logged).
 */
import type { FastifyRequest } from 'fastify';
import { API_KEY_PREFIX } from '../keys/service.ts';
import { pathOfTarget } from './error-shapes.ts';
import { countedClientIp } from './surface.ts';

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

/**
 * A query parameter's name that says its value is a credential: `token`, `api_key`, `apiKey`, `x-api-key`, `key`,
 * `access_token`, `client_secret`, `password`, `auth`, `session`, `sig`, ... Broad on purpose: a filter it catches
 * by mistake costs a log line its value, a credential it misses stays in the log.
 */
const SECRET_NAME = /key|token|secret|passw|pwd|auth|session|credential|signature|^sig$/i;

/**
 * An svc key, whole or its start (the prefix, `_` as it is or percent-encoded, and 8 characters of the secret part),
 * anywhere in the URL: a key pasted where a model id goes (`/v1/models/svc_...`), into a base URL's path, or within a
 * query value under any name (`?q=Bearer%20svc_...`). Fewer characters (`svc_session`) are no key.
 */
const KEY_STEM = API_KEY_PREFIX.slice(0, -1);
const SVC_KEY_RUN = new RegExp(`${KEY_STEM}(?:_|%5[fF])[A-Za-z0-9_-]{8,}`, 'g');

/** The name as the router reads it: percent-decoded (`api%5Fkey` is `api_key`); as sent when it does not decode. */
function decodedName(name: string): string {
  if (!name.includes('%')) return name;
  try {
    return decodeURIComponent(name);
  } catch {
    return name;
  }
}

/** One `name=value` of a query, its value redacted when the name or the value says it is a credential. */
function redactParameter(parameter: string): string {
  const equals = parameter.indexOf('=');
  if (equals === -1) return parameter.startsWith(API_KEY_PREFIX) ? '[redacted]' : parameter;
  const name = parameter.slice(0, equals);
  if (!SECRET_NAME.test(decodedName(name)) && !parameter.startsWith(API_KEY_PREFIX, equals + 1)) return parameter;
  return `${name}=[redacted]`;
}

export function redactUrl(url: string): string {
  let out = pathOfTarget(url);
  for (const pattern of TOKEN_PATHS) out = out.replace(pattern, '$1[redacted]');
  // The pattern only where its stem is (no route of svc holds it): ~25 ns a logged request, ~100 ns otherwise.
  if (out.includes(KEY_STEM)) out = out.replace(SVC_KEY_RUN, '[redacted]');
  // A raw `#` is refused (src/http/fragment.ts), but logged as sent: what follows it names nothing svc serves and is
  // where a URL carries a credential on its way to a browser (`#access_token=...`), so none of it is logged.
  const fragment = out.indexOf('#');
  if (fragment !== -1) out = `${out.slice(0, fragment)}#[redacted]`;
  // Most requests carry no query: nothing more to read.
  const query = out.indexOf('?');
  if (query === -1) return out;
  return `${out.slice(0, query + 1)}${out.slice(query + 1).split('&').map(redactParameter).join('&')}`;
}

/**
 * pino serializer for fastify's `req`: the default fields, with the URL redacted, and the client address the
 * per-address limits count. Behind a trusted proxy an X-Forwarded-For entry that is no IP address (`unknown`,
 * `005.5.5.5`) counts as the proxy; logged as the client it read as an address of its own, which no limit counted. The
 * entry is logged beside it, under a name that says what it is.
 */
export function requestLogSerializer(request: FastifyRequest) {
  const remoteAddress = countedClientIp(request);
  const line = { method: request.method, url: redactUrl(request.url), hostname: request.hostname, remoteAddress };
  return request.ip === remoteAddress ? line : { ...line, forwardedForNotAnIp: request.ip };
}
