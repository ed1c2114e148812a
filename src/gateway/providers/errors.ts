/**
 * The one place where upstream failures are classified (STYLE.md section 4, after openai-node's `APIError.generate`):
 * an HTTP status and body, a thrown undici/abort error, or a broken stream becomes a `ProviderError` of one kind, with
 * retryability and `retry-after`. `providerErrorStatus` is the matching table from kind to the status a wire answers.
 * Upstream messages are relayed only after any API key in them has been masked.
 */
import type { Dispatcher } from 'undici';
import type { CallSignal } from '../call-signal.ts';
import { AppError, ERROR_CATALOGUE } from '../../core/errors.ts';
import { BUDGET_REFUSAL_MESSAGE } from '../answer-budget.ts';
import { decodedErrorBody, discardBody, MAX_ERROR_BODY_BYTES, readLimited } from './bodies.ts';
import { failedAfterRequestWritten } from './request-written.ts';
import { ProviderError, type ProviderFailureKind, type Wire } from './types.ts';

/** Longest retry-after we relay; anything larger is clamped (a broken upstream must not park clients for days). */
const MAX_RETRY_AFTER_SECONDS = 3600;

type HeaderBag = Record<string, string | string[] | undefined> | Headers;

function headerValue(headers: HeaderBag | undefined, name: string): string | undefined {
  if (!headers) return undefined;
  if (headers instanceof Headers) return headers.get(name) ?? undefined;
  const value = headers[name] ?? headers[name.toLowerCase()];
  return Array.isArray(value) ? value[0] : value;
}

/**
 * Seconds to wait from `retry-after-ms` (not a standard header; the chat-completions family sends it) or
 * `retry-after` (delta-seconds or an HTTP date). Undefined when absent or unparseable; at least 1 when present.
 */
export function parseRetryAfter(headers: HeaderBag | undefined, nowMs: number = Date.now()): number | undefined {
  const ms = headerValue(headers, 'retry-after-ms');
  if (ms !== undefined && /^\s*\d+(\.\d+)?\s*$/.test(ms)) return clampRetry(Math.ceil(Number(ms) / 1000));
  const raw = headerValue(headers, 'retry-after')?.trim();
  if (!raw) return undefined;
  if (/^\d+(\.\d+)?$/.test(raw)) return clampRetry(Math.ceil(Number(raw)));
  const date = Date.parse(raw);
  if (Number.isNaN(date)) return undefined;
  return clampRetry(Math.ceil((date - nowMs) / 1000));
}

function clampRetry(seconds: number): number {
  return Math.min(MAX_RETRY_AFTER_SECONDS, Math.max(1, seconds));
}

const KEY_PATTERN = /\b(sk|svc)[-_][A-Za-z0-9_\-*]{6,}/g;

/**
 * The fewest characters of a given secret, in a row, that are masked where they stand alone: an upstream refusing a
 * key often quotes its start ("Incorrect API key provided: gsk_Zq8RkLm2****"), which KEY_PATTERN catches only for
 * `sk-` keys. Eight random characters are not met by chance; a well-known prefix (`sk-proj-`) masked costs nothing.
 */
const QUOTED_SECRET_RUN = 8;

/** Mask anything that looks like an API key, and the given secrets, whole or in part, in a message relayed to a client. */
export function redactSecrets(message: string, secrets: ReadonlyArray<string | null | undefined> = []): string {
  let out = message;
  for (const secret of secrets) if (secret && secret.length >= 4) out = maskSecret(out, secret);
  return out.replace(KEY_PATTERN, '[redacted]');
}

/**
 * `message` with each stretch made of runs of QUOTED_SECRET_RUN characters of `secret` (or of the whole of a shorter
 * one) replaced by one `[redacted]`. Runs only on an upstream's error message, never on a request that succeeds.
 */
function maskSecret(message: string, secret: string): string {
  const run = Math.min(secret.length, QUOTED_SECRET_RUN);
  const spans: Array<[start: number, end: number]> = [];
  for (let from = 0; from + run <= secret.length; from++) {
    const piece = secret.slice(from, from + run);
    for (let at = message.indexOf(piece); at !== -1; at = message.indexOf(piece, at + 1)) spans.push([at, at + run]);
  }
  if (spans.length === 0) return message;
  spans.sort((a, b) => a[0] - b[0]);
  let out = '';
  let copied = 0;
  for (let i = 0; i < spans.length; ) {
    let [start, end] = spans[i++]!;
    // Overlapping or touching runs are one stretch of the secret.
    while (i < spans.length && spans[i]![0] <= end) end = Math.max(end, spans[i++]![1]);
    out += `${message.slice(copied, start)}[redacted]`;
    copied = end;
  }
  return out + message.slice(copied);
}

/** The human message of an upstream error body (`{error:{message}}`, `{message}`, `{detail}` or plain text). */
export function upstreamMessage(body: string): string {
  const text = body.trim();
  if (!text) return '';
  try {
    const parsed = JSON.parse(text) as { error?: unknown; message?: unknown; detail?: unknown };
    const error = parsed.error;
    if (error && typeof error === 'object' && typeof (error as { message?: unknown }).message === 'string') {
      return (error as { message: string }).message;
    }
    if (typeof error === 'string') return error;
    if (typeof parsed.message === 'string') return parsed.message;
    if (typeof parsed.detail === 'string') return parsed.detail;
  } catch {
    // Not JSON: fall through to the raw text.
  }
  return text.slice(0, 500);
}

/**
 * What an embeddings backend says when a batch has more inputs than it takes (several compatible servers' words), or
 * more tokens than it takes in one request: OpenAI past 300,000 tokens of all inputs together ("Requested 453357
 * tokens, max 300000 tokens per request"), Mistral past 16,384 ("Too many tokens overall, split into more batches.",
 * formerly "Too many tokens in batch. Max is 16384 got 17555"), Voyage AI past its model's tokens per batch ("The max
 * allowed tokens per submitted batch is 120000. Your batch has 124302 tokens after truncation. ..."; its cap on inputs,
 * "The batch size limit is 128. ...", is a batch size). A smaller batch is accepted either way.
 */
const BATCH_TOO_LARGE =
  /array too long|too many inputs|batch size|batch (is )?too (large|big)|maximum (batch|number of inputs|allowed batch)|input.*(must have|at most|maximum length) \d+|exceeds? (the )?max(imum)? (batch|number)|tokens per request|tokens in batch|tokens per submitted batch|split into more batches/i;

export interface HttpFailure {
  provider: string;
  wire: Wire;
  status: number;
  headers?: HeaderBag;
  body: string;
  /** Secrets to mask in the relayed message (the provider's own key). */
  secrets?: ReadonlyArray<string | null | undefined>;
  nowMs?: number;
}

/** Classify a non-2xx upstream answer. */
export function classifyHttpFailure(failure: HttpFailure): ProviderError {
  const message = redactSecrets(upstreamMessage(failure.body), failure.secrets) || `upstream answered HTTP ${failure.status}`;
  const said = failure.status >= 400 && failure.status < 500 ? upstreamErrorFields(failure.body, failure.secrets) : {};
  return failureOfStatus(failure, message, said);
}

/** What an upstream said of its failure besides its message, relayed to the client. */
interface UpstreamSaid {
  upstreamCode?: string;
  upstreamParam?: string;
  upstreamDetails?: Readonly<Record<string, unknown>>;
}

/** The most characters of an upstream's `error.details` relayed: a few fields; a larger one is left out, the message kept. */
const MAX_DETAILS_CHARS = 4096;

/**
 * The fields of an upstream 4xx's `error` relayed beside its message, secrets masked: the request field it names
 * (`{"error": {"param": "temperature"}}`, the client's `param`: a short line of printable text, else none) and its
 * `details` (`{"error": {"details": {"error_code": "thread_not_found"}}}`: an object, else none).
 */
function upstreamErrorFields(body: string, secrets: HttpFailure['secrets']): UpstreamSaid {
  let error: unknown;
  try {
    error = (JSON.parse(body) as { error?: unknown } | null)?.error;
  } catch {
    return {};
  }
  if (typeof error !== 'object' || error === null) return {};
  const { param, details } = error as { param?: unknown; details?: unknown };
  const said: UpstreamSaid = {};
  if (typeof param === 'string' && param.length > 0 && param.length <= 200 && /^[\x20-\x7e]+$/.test(param)) said.upstreamParam = redactSecrets(param, secrets);
  if (typeof details === 'object' && details !== null && !Array.isArray(details)) {
    if (JSON.stringify(details).length <= MAX_DETAILS_CHARS) said.upstreamDetails = redactedStrings(details, secrets) as Record<string, unknown>;
  }
  return said;
}

/**
 * A parsed JSON value with every string in it, names and values, masked as a message is. Masked in the parsed value,
 * not its JSON text: there a secret holding a character JSON escapes (`"`, `\`) would be written otherwise and missed.
 */
function redactedStrings(value: unknown, secrets: HttpFailure['secrets']): unknown {
  if (typeof value === 'string') return redactSecrets(value, secrets);
  if (Array.isArray(value)) return value.map((item) => redactedStrings(item, secrets));
  if (typeof value !== 'object' || value === null) return value;
  return Object.fromEntries(Object.entries(value).map(([name, item]) => [redactSecrets(name, secrets), redactedStrings(item, secrets)]));
}

/** The 5xx statuses whose `retry-after` is relayed: unavailable (503), and overloaded (the messages family's 529). */
const SAYS_WHEN_TO_RETRY: ReadonlySet<number> = new Set([503, 529]);

/** The statuses of an upstream's refusal of svc's own account (`refusedGatewayAccount`). */
const GATEWAY_ACCOUNT_STATUSES: ReadonlySet<number> = new Set([401, 402, 403]);

function failureOfStatus(failure: Omit<HttpFailure, 'body'>, message: string, said: UpstreamSaid = {}): ProviderError {
  const { provider, status } = failure;
  const base = { provider, upstreamStatus: status, ...said };
  if (status === 429) {
    const retryAfterSeconds = parseRetryAfter(failure.headers, failure.nowMs);
    return new ProviderError('rate_limited', message, { ...base, ...(retryAfterSeconds !== undefined ? { retryAfterSeconds } : {}) });
  }
  if (status === 408) return new ProviderError('timeout', message, base);
  if (status >= 500) {
    // An unavailable or overloaded upstream may say when to come back, as a rate limit does: relayed the same way.
    const retryAfterSeconds = SAYS_WHEN_TO_RETRY.has(status) ? parseRetryAfter(failure.headers, failure.nowMs) : undefined;
    return new ProviderError('upstream_error', message, { ...base, ...(retryAfterSeconds !== undefined ? { retryAfterSeconds } : {}) });
  }
  if (failure.wire === 'embeddings' && (status === 413 || (status === 400 && BATCH_TOO_LARGE.test(message)))) {
    return new ProviderError('batch_too_large', message, base);
  }
  // A refusal of svc's own account is no fault of the request: another key (the fallback's) may well be taken.
  if (status >= 400) return new ProviderError('rejected', message, { ...base, retryable: GATEWAY_ACCOUNT_STATUSES.has(status) });
  return new ProviderError('bad_response', `unexpected upstream status ${status}`, base);
}

/** What a provider knows of a call whose upstream answered a status other than 2xx (`readHttpFailure`). */
export interface FailedAnswerContext {
  provider: string;
  wire: Wire;
  /** Secrets to mask in the message of the error body (the provider's own key). */
  secrets: ReadonlyArray<string | null | undefined>;
  /** The caller's signal: a client gone while the error body is read makes the call an abort. */
  clientSignal: CallSignal;
  /** How long the error body is read for its message (`SVC_PROVIDER_STREAM_HEADERS_TIMEOUT_MS`). */
  errorBodyMs: number;
}

/**
 * The failure an upstream answer of a status other than 2xx stands for (`classifyHttpFailure`), its body read for the
 * message up to MAX_ERROR_BODY_BYTES and within `errorBodyMs`, decoded when it came in a content coding svc asked it
 * not to use (`decodedErrorBody`); the status alone classifies a body that breaks off, does not decode or is in a
 * coding svc does not know. A client that went away meanwhile makes the call an abort, as anywhere else in the call,
 * not the upstream's failure.
 */
export async function readHttpFailure(response: Dispatcher.ResponseData, context: FailedAnswerContext): Promise<ProviderError> {
  let text = '';
  try {
    const body = decodedErrorBody(response.body, headerValue(response.headers, 'content-encoding'));
    if (body) text = await readLimited(body, MAX_ERROR_BODY_BYTES, context.errorBodyMs);
  } catch (error) {
    if (context.clientSignal.aborted) return classifyThrown(context.provider, error, context.clientSignal);
  }
  return classifyHttpFailure({ provider: context.provider, wire: context.wire, status: response.statusCode, headers: response.headers, body: text, secrets: context.secrets });
}

/**
 * The failure of a 2xx answer in a content coding (gzip, br, ...), its body released; null for one as it is. The
 * providers ask for none (`accept-encoding: identity`: a request without the header takes any coding, RFC 9110
 * section 12.5.3, and an upstream or a proxy before it may compress) and decode none, so its bytes would be read as
 * JSON or SSE that is not, failed as "not valid JSON" or "ended without [DONE]". One header read per answer.
 */
export function encodedAnswerFailure(provider: string, response: Dispatcher.ResponseData): ProviderError | null {
  const coding = headerValue(response.headers, 'content-encoding')?.trim().toLowerCase();
  if (!coding || coding === 'identity') return null;
  discardBody(response.body);
  return new ProviderError('bad_response', `the upstream answer is in content coding ${JSON.stringify(coding.slice(0, 64))}, which svc asked it not to use (accept-encoding: identity) and does not decode`, {
    provider,
    upstreamStatus: response.statusCode,
  });
}

/** The messages family's status for an overloaded upstream (its `overloaded_error`). */
const OVERLOADED_STATUS = 529;

/**
 * The HTTP status an upstream's error code or type stands for: the status the chat-completions family (`code`s and
 * `type`s) or the messages family (`type`s) answers that error with over HTTP.
 */
const STATUS_OF_ERROR_CODE: ReadonlyMap<string, number> = new Map([
  ['rate_limit_exceeded', 429],
  ['rate_limit_error', 429],
  ['insufficient_quota', 429],
  ['server_error', 500],
  ['api_error', 500],
  ['internal_error', 500],
  ['service_unavailable', 503],
  ['server_overloaded', 503],
  ['overloaded_error', OVERLOADED_STATUS],
  ['timeout_error', 408],
  ['invalid_request_error', 400],
  ['invalid_prompt', 400],
  ['invalid_value', 400],
  ['context_length_exceeded', 400],
  ['string_above_max_length', 400],
  ['authentication_error', 401],
  ['invalid_api_key', 401],
  ['billing_error', 402],
  ['permission_error', 403],
  ['not_found_error', 404],
  ['conflict_error', 409],
  ['model_not_found', 404],
  ['request_too_large', 413],
]);

/**
 * Classify an upstream's failure said in an answer of HTTP 200 (a stream's error event, a failed response) as the HTTP
 * answer its error `codes` stand for (the first one that stands for one), so that before anything reached the client
 * it is answered and failed over as that answer would be (a rate limit 429 with retry-after, a server error failed
 * over, an invalid request the upstream's 4xx), and recorded with that status. A failure of no code svc knows is the
 * upstream's, answered 502 and not retried. `message` is the upstream's, its secrets masked. The code it was classified
 * by (or else its first) is the failure's `upstreamCode`.
 */
export function classifyErrorCodes(failure: { provider: string; wire: Wire; codes: readonly unknown[]; message: string }): ProviderError {
  for (const code of failure.codes) {
    const status = typeof code === 'string' ? STATUS_OF_ERROR_CODE.get(code) : undefined;
    if (status !== undefined) return failureOfStatus({ provider: failure.provider, wire: failure.wire, status }, failure.message, { upstreamCode: code as string });
  }
  const said = failure.codes.find((code): code is string => typeof code === 'string' && code !== '');
  return new ProviderError('upstream_error', failure.message, { provider: failure.provider, upstreamStatus: 200, retryable: false, ...(said !== undefined ? { upstreamCode: said } : {}) });
}

/**
 * Classify an upstream stream's error event (`data` parsed from `body`, its raw text) by its `code`, or its `error`'s
 * `code` or `type` (`classifyErrorCodes`).
 */
export function classifyErrorEvent(failure: Omit<HttpFailure, 'status'> & { data: object }): ProviderError {
  const data = failure.data as { code?: unknown; error?: unknown };
  const nested = typeof data.error === 'object' && data.error !== null ? (data.error as { code?: unknown; type?: unknown }) : null;
  const message = redactSecrets(upstreamMessage(failure.body), failure.secrets) || 'the upstream reported an error mid-stream';
  return classifyErrorCodes({ provider: failure.provider, wire: failure.wire, codes: [data.code, nested?.code, nested?.type], message });
}

const TIMEOUT_CODES = new Set(['UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'ETIMEDOUT']);
/** No connection could be made. */
const UNREACHABLE_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']);
/** A connection that broke. */
const NETWORK_CODES = new Set(['ECONNRESET', 'EPIPE', 'UND_ERR_SOCKET', 'UND_ERR_CLOSED', 'UND_ERR_DESTROYED']);

function codeChain(error: unknown): string[] {
  const codes: string[] = [];
  let current: unknown = error;
  for (let depth = 0; current && typeof current === 'object' && depth < 5; depth += 1) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string') codes.push(code);
    const name = (current as { name?: unknown }).name;
    if (typeof name === 'string') codes.push(name);
    current = (current as { cause?: unknown }).cause;
  }
  return codes;
}

/**
 * Classify anything thrown while calling an upstream. `clientSignal` is the caller's signal: when it fired, the failure
 * is an abort whatever undici reports; a fired deadline signal of our own is a timeout. `afterRequestSent`: whether
 * the request had reached the upstream's connection (request-written.ts notes it on undici's failures; a failure while
 * an answer's body is read is after it for certain).
 */
export function classifyThrown(provider: string, error: unknown, clientSignal?: CallSignal, afterRequestSent = failedAfterRequestWritten(error)): ProviderError {
  if (error instanceof ProviderError) return error;
  const cause = { provider, cause: error, afterRequestSent };
  if (clientSignal?.aborted) return new ProviderError('aborted', 'the client went away', cause);
  const codes = codeChain(error);
  if (codes.some((code) => TIMEOUT_CODES.has(code) || code === 'TimeoutError')) {
    return new ProviderError('timeout', 'the upstream did not answer in time', cause);
  }
  if (codes.some((code) => UNREACHABLE_CODES.has(code) || code.startsWith('UND_ERR_CONNECT'))) {
    return new ProviderError('network', `could not reach the upstream (${codes[0]})`, cause);
  }
  if (codes.some((code) => NETWORK_CODES.has(code))) {
    // The connection was there and broke (a reset, also after the upstream's status and headers).
    return new ProviderError('network', `the connection to the upstream failed (${codes[0]})`, cause);
  }
  if (codes.includes('AbortError') || codes.includes('UND_ERR_ABORTED')) {
    return new ProviderError('aborted', 'the upstream call was aborted', cause);
  }
  if (error instanceof SyntaxError) return new ProviderError('bad_response', 'the upstream answer is not valid JSON', cause);
  return new ProviderError('network', `upstream call failed: ${error instanceof Error ? error.message : String(error)}`, cause);
}

/** How a wire answers a provider failure. */
export interface ProviderErrorHttp {
  status: number;
  /** The chat-completions error `type`. */
  type: string;
  /** The chat-completions error `code`. */
  code: string;
  /** Safe to show the client: upstream 4xx messages are relayed (keys masked), 5xx-class failures are generic. */
  message: string;
  /** Seconds for the `retry-after` response header. */
  retryAfter?: number;
}

const STATUS_OF: Record<ProviderFailureKind, number> = {
  rate_limited: 429,
  upstream_error: 502,
  bad_response: 502,
  network: 502,
  timeout: 504,
  rejected: 400,
  batch_too_large: 413,
  unsupported: 400,
  // nginx's "client closed request"; nobody is there to read it, but the run records it.
  aborted: 499,
  busy: 503,
};

/**
 * An upstream's refusal of svc's own provider account, not of the caller's request: a credential it does not take
 * (401), a permission it lacks (403), an account it will not bill (402, the messages family's `billing_error`). The
 * caller can do nothing about it (relayed, a 402 would tell an SDK user their own billing failed): svc's failure, 502.
 * It is retryable (`failureOfStatus`): the next candidate, another key, is tried before anything reached the client.
 */
export function refusedGatewayAccount(error: ProviderError): boolean {
  return error.kind === 'rejected' && error.upstreamStatus !== undefined && GATEWAY_ACCOUNT_STATUSES.has(error.upstreamStatus);
}

/**
 * The HTTP answer to a provider failure: 429 with retry-after; 5xx (with the retry-after of a 503 or 529), bad_response
 * and network -> 502; timeout -> 504; rejected -> the upstream's own 4xx, except a refusal of svc's own account (401,
 * 402, 403: `refusedGatewayAccount`), which becomes 502; unsupported -> 400.
 */
export function providerErrorStatus(error: ProviderError): ProviderErrorHttp {
  switch (error.kind) {
    case 'rate_limited':
      return {
        status: 429,
        type: 'rate_limit_error',
        code: 'rate_limit_exceeded',
        message: `The upstream provider is rate limiting requests${error.retryAfterSeconds ? `; retry after ${error.retryAfterSeconds} s` : ''}.`,
        retryAfter: error.retryAfterSeconds ?? 1,
      };
    case 'rejected': {
      const upstream = error.upstreamStatus ?? 400;
      if (refusedGatewayAccount(error)) {
        const message = upstream === 402 ? "The upstream provider refused to bill the gateway's account." : 'The upstream provider refused the gateway credentials.';
        return { status: 502, type: 'server_error', code: 'upstream_error', message };
      }
      return { status: upstream >= 400 && upstream < 500 ? upstream : 400, type: 'invalid_request_error', code: 'upstream_rejected', message: error.message };
    }
    case 'batch_too_large':
      return { status: 413, type: 'invalid_request_error', code: 'upstream_rejected', message: error.message };
    case 'unsupported':
      return { status: 400, type: 'invalid_request_error', code: 'unsupported_model', message: error.message };
    case 'timeout':
      return { status: 504, type: 'server_error', code: 'upstream_timeout', message: 'The upstream provider did not answer in time.' };
    case 'aborted':
      return { status: STATUS_OF.aborted, type: 'server_error', code: 'aborted', message: 'The request was aborted.' };
    case 'busy':
      return { status: STATUS_OF.busy, type: 'server_error', code: 'busy', message: BUDGET_REFUSAL_MESSAGE, retryAfter: 1 };
    default:
      return {
        status: STATUS_OF[error.kind],
        type: 'server_error',
        code: 'upstream_error',
        // An overloaded upstream says so, as the answer to it before a stream started does (`upstream_overloaded`):
        // a stream failing midway carries this message beside the wire's own type (the messages wire's overloaded_error).
        message: error.upstreamStatus === OVERLOADED_STATUS ? ERROR_CATALOGUE.upstream_overloaded.message : 'The upstream provider failed.',
        ...(error.retryAfterSeconds !== undefined ? { retryAfter: error.retryAfterSeconds } : {}),
      };
  }
}

/**
 * What an upstream's rejection said besides its message, as the `details` of its `upstream_rejected` AppError: the
 * field it names (the chat wires' `param`) and its own `error.details` (`upstream`, the messages wire's `details`).
 */
export interface UpstreamRejectionDetails {
  param?: string;
  upstream?: Readonly<Record<string, unknown>>;
}

function upstreamRejectionDetails(error: ProviderError): UpstreamRejectionDetails | undefined {
  if (error.upstreamParam === undefined && error.upstreamDetails === undefined) return undefined;
  return {
    ...(error.upstreamParam !== undefined ? { param: error.upstreamParam } : {}),
    ...(error.upstreamDetails !== undefined ? { upstream: error.upstreamDetails } : {}),
  };
}

/** The same mapping as an AppError, for wires that throw and let their plugin render (embeddings). */
export function providerErrorToAppError(error: ProviderError): AppError {
  const http = providerErrorStatus(error);
  const headers: Record<string, string> = http.retryAfter !== undefined ? { 'retry-after': String(http.retryAfter) } : {};
  switch (error.kind) {
    case 'rate_limited':
      return new AppError('rate_limited', { message: http.message, headers, cause: error });
    case 'rejected':
    case 'batch_too_large':
      // svc's 502 for a refusal of its own provider account (`refusedGatewayAccount`). The official clients retry every
      // 5xx unless the answer says `x-should-retry: false` (openai-node's and the Anthropic SDK's `shouldRetry` read it
      // first), and a retry a second later meets the same refused credential: one more failed run each time.
      if (http.status >= 500) return new AppError('upstream_error', { headers: { 'x-should-retry': 'false' }, cause: error });
      return new AppError('upstream_rejected', { message: http.message, status: http.status, details: upstreamRejectionDetails(error), cause: error });
    case 'unsupported':
      return new AppError('unsupported_model', { message: http.message, details: { param: 'model' }, cause: error });
    case 'timeout':
      return new AppError('upstream_timeout', { cause: error });
    case 'busy':
      return new AppError('busy', { message: http.message, publicMessage: true, headers, cause: error });
    case 'upstream_error':
      // An upstream's 529 (or the `overloaded_error` event that stands for it): its own wire tells the client so.
      return new AppError(error.upstreamStatus === OVERLOADED_STATUS ? 'upstream_overloaded' : 'upstream_error', { headers, cause: error });
    default:
      return new AppError('upstream_error', { cause: error });
  }
}
