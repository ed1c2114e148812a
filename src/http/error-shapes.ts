/**
 * The only place errors become response bodies. Each surface has its own envelope:
 * - management API (`/api/v1/*`, `/health`, everything else): `{error: {code, message, details?}}`;
 * - chat-completions-family wires (`/v1/*`): `{error: {message, type, param, code}}`;
 * - messages wire (`/v1/messages*`): `{type: "error", error: {type, message}, request_id}`, the request's id also in the
 *   `request-id` header (`MESSAGES_REQUEST_ID`).
 * 5xx bodies are generic (but for a message written for the caller, `publicMessage`); the cause goes to the log only.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ZodError } from 'zod';
import { AppError, ERROR_CATALOGUE, type ErrorCode } from '../core/errors.ts';
import { messagesErrorType } from '../gateway/messages-error-types.ts';
import type { UpstreamRejectionDetails } from '../gateway/providers/errors.ts';

export type ErrorSurface = 'management' | 'chat' | 'messages';

/**
 * The header the messages wire's SDKs read a request's id from (`message._request_id`, `APIError.requestID`): the
 * value of svc's own `x-request-id`, sent on that wire only (the other wires' SDKs read `x-request-id`).
 */
export const MESSAGES_REQUEST_ID = 'request-id';

export function surfaceOfUrl(url: string): ErrorSurface {
  const path = pathOfTarget(beforeQuery(url));
  if (path === '/v1/messages' || path.startsWith('/v1/messages/')) return 'messages';
  if (path.startsWith('/v1/') || path === '/v1') return 'chat';
  return 'management';
}

/**
 * A request target up to its query, as the router reads it: at the first `?` or `#`, so that a target holding a raw `#`
 * (refused, src/http/fragment.ts) is refused in the shape of the route the router found. Two scans, no allocation for a
 * target without either (cheaper than the `split('?')` it replaced).
 */
export function beforeQuery(url: string): string {
  let end = url.indexOf('?');
  const hash = url.indexOf('#');
  if (hash !== -1 && (end === -1 || hash < end)) end = hash;
  return end === -1 ? url : url.slice(0, end);
}

/** Scheme and authority of an absolute-form request target, as the router takes them (http and https only). */
const ABSOLUTE_FORM = /^https?:\/\/[^/?#]*/i;

/**
 * The path (and query) of a request target. A client may send the absolute form (`POST http://host/v1/messages
 * HTTP/1.1`, RFC 9112 section 3.2.2, which a server must accept); the router routes it by its path, so what svc decides
 * by the path (the surface, which tokens to keep out of the log) reads that path too, not the scheme and host.
 */
export function pathOfTarget(target: string): string {
  // '/': the origin form, what nearly every request sends.
  if (target.charCodeAt(0) === 47) return target;
  const authority = ABSOLUTE_FORM.exec(target);
  if (authority === null) return target;
  const rest = target.slice(authority[0].length);
  return rest.charCodeAt(0) === 47 ? rest : `/${rest}`;
}

interface FastifyLikeError {
  code?: string;
  statusCode?: number;
  message: string;
  validation?: unknown;
}

/** Map anything thrown during a request onto an AppError (unknown errors become a generic 500). */
export function toAppError(error: unknown): AppError {
  if (error instanceof AppError) return error;
  if (error instanceof ZodError) {
    return new AppError('invalid_request', {
      message: error.issues.map((issue) => `${issueLabel(issue.path)}: ${issue.message}`).join('; '),
      details: { issues: error.issues.map((issue) => ({ path: issue.path.join('.'), message: issue.message })) },
    });
  }
  const err = error as FastifyLikeError;
  switch (err.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new AppError('payload_too_large');
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new AppError('unsupported_media_type');
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new AppError('invalid_json', { message: 'The request body is empty but declared as JSON.' });
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new AppError('invalid_request', { message: 'Content-Length does not match the body.' });
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      // Also what a `__proto__` / `constructor.prototype` key yields: secure-json-parse refuses them.
      return new AppError('invalid_json', {
        message: 'The request body is not valid JSON or contains a forbidden key (__proto__, constructor.prototype).',
      });
  }
  // No raw SyntaxError comes from a request body (the JSON parser answers FST_ERR_CTP_INVALID_JSON_BODY, json-body.ts its
  // own AppErrors): one is svc's own JSON.parse of what it stored or made, a run's evidence damaged in the data file
  // say, which is its failure (500 below), not a 400 telling the caller its valid body is not JSON.
  if (err.statusCode === 404) return new AppError('route_not_found');
  if (err.statusCode === 405) return new AppError('method_not_allowed');
  if (err.statusCode === 429) return new AppError('rate_limited');
  if (typeof err.statusCode === 'number' && err.statusCode >= 400 && err.statusCode < 500) {
    return new AppError('invalid_request', { message: err.message });
  }
  return new AppError('internal', { cause: error });
}

/**
 * What an issue's message names: `body` for the body as a whole (no path), else the path. A path that joins to ''
 * (a query parameter or key with an empty name, `/audit?=1`) is written `""`: it names that empty name, not the body
 * (the 400 of a GET blamed a body it never had), and an empty name printed bare is invisible.
 */
export function issueLabel(path: readonly PropertyKey[]): string {
  if (path.length === 0) return 'body';
  return path.join('.') || '""';
}

const CHAT_TYPES: Partial<Record<number, string>> = {
  400: 'invalid_request_error',
  401: 'invalid_request_error',
  403: 'permission_error',
  404: 'invalid_request_error',
  409: 'invalid_request_error',
  413: 'invalid_request_error',
  415: 'invalid_request_error',
  429: 'rate_limit_error',
};

const CHAT_CODES: Partial<Record<ErrorCode, string>> = {
  // An overloaded upstream is the upstream's failure to these clients, as ever (529 is the messages family's).
  upstream_overloaded: 'upstream_error',
  unauthorized: 'invalid_api_key',
  rate_limited: 'rate_limit_exceeded',
  route_not_found: 'unknown_url',
};

/**
 * The status a surface answers an error with: the catalogue's, but for an overloaded upstream on the messages wire,
 * answered as its provider answers it (529 `overloaded_error`), which its SDKs raise as their `OverloadedError` and
 * its clients back off on; the other wires keep the 502 of any upstream failure.
 */
export function statusOn(surface: ErrorSurface, error: AppError): number {
  return surface === 'messages' && error.code === 'upstream_overloaded' ? 529 : error.status;
}

/** `requestId`: the request's id (`request.id`; for an answer given before there was a request, a parser error, a fresh one). */
export function renderError(surface: ErrorSurface, error: AppError, requestId: string): unknown {
  const message = error.status >= 500 && !error.publicMessage ? ERROR_CATALOGUE[error.code].message : error.message;
  switch (surface) {
    case 'management':
      return { error: { code: error.code, message, ...(error.details !== undefined ? { details: error.details } : {}) } };
    case 'chat':
      return {
        error: {
          message,
          type: CHAT_TYPES[error.status] ?? (error.status >= 500 ? 'server_error' : 'invalid_request_error'),
          param: paramOf(error),
          code: CHAT_CODES[error.code] ?? error.code,
        },
      };
    case 'messages': {
      const upstream = upstreamDetailsOf(error);
      return { type: 'error', error: { type: messagesErrorType(statusOn(surface, error)), message, ...(upstream ? { details: upstream } : {}) }, request_id: requestId };
    }
  }
}

/**
 * Answer a request with an error in its surface's shape (and, on the messages wire, its id in `request-id`). A gateway
 * wire's error is `cache-control: no-store`, as the embeddings wire's answers are (SPEC 4.2) and every management
 * answer is (its own hook, src/http/app.ts): it is about one caller's request, and a 404 is cacheable by default
 * (RFC 9111 4.2.2). Set here, on the error path only, so no answer that succeeds pays for it.
 */
export function replyError(request: FastifyRequest, reply: FastifyReply, error: AppError, surface: ErrorSurface = surfaceOfUrl(request.url)): FastifyReply {
  if (surface !== 'management') reply.header('cache-control', 'no-store');
  if (surface === 'messages') reply.header(MESSAGES_REQUEST_ID, request.id);
  return reply.status(statusOn(surface, error)).send(renderError(surface, error, request.id));
}

/**
 * An upstream's rejection's own `error.details`, relayed as it wrote them (its secrets masked): the messages family's
 * SDKs type the error by its `error_code` and recover by it (a message thread the upstream lost is replayed whole).
 */
function upstreamDetailsOf(error: AppError): UpstreamRejectionDetails['upstream'] {
  return error.code === 'upstream_rejected' ? (error.details as UpstreamRejectionDetails | undefined)?.upstream : undefined;
}

/**
 * The request field an error is about: the one it names, else the first failed check's (a validation error's
 * `messages.0.content` as the wire writes it, `messages[0].content`), so an SDK user sees which field, as with the
 * upstream's own 400s.
 */
function paramOf(error: AppError): string | null {
  const details = error.details as { param?: unknown; issues?: unknown } | undefined;
  if (typeof details?.param === 'string') return details.param;
  const first = Array.isArray(details?.issues) ? (details.issues[0] as { path?: unknown } | undefined) : undefined;
  return typeof first?.path === 'string' && first.path !== '' ? first.path.replace(/\.(\d+)(?=\.|$)/g, '[$1]') : null;
}
