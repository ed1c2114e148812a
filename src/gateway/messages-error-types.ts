/**
 * The messages wire's error types: the vocabulary its SDKs read (`APIError.type`) and its clients retry by, and the
 * type of each status svc answers with. Wire knowledge, owned here: the gateway's relay names a mid-stream failure's
 * type with it, and src/http/error-shapes.ts an error body's.
 */

/** The error types of the messages wire, which its SDKs read (`APIError.type`) and its clients retry by. */
export const MESSAGES_ERROR_TYPES: ReadonlySet<string> = new Set([
  'invalid_request_error',
  'authentication_error',
  'billing_error',
  'permission_error',
  'not_found_error',
  'conflict_error',
  'request_too_large',
  'rate_limit_error',
  'timeout_error',
  'api_error',
  'overloaded_error',
]);

/**
 * The messages wire's `error.type` of a status, as its provider types it (its SDKs' `ErrorType`; their error classes go
 * by the status). A 4xx it has no type of its own for (405, 414, an upstream's 422 relayed) is `invalid_request_error`,
 * anything else `api_error` (`messagesErrorType`).
 */
const TYPE_OF_STATUS: Partial<Record<number, string>> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  // Never svc's own, nor an upstream's relayed (src/gateway/providers/errors.ts `refusedGatewayAccount`).
  402: 'billing_error',
  403: 'permission_error',
  404: 'not_found_error',
  409: 'conflict_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  431: 'request_too_large',
  503: 'overloaded_error',
  // An upstream that did not answer in time, as the provider types its own 504 (its SDKs' GatewayTimeoutError).
  504: 'timeout_error',
  529: 'overloaded_error',
};

/** The messages wire's `error.type` of an answer of `status` (`TYPE_OF_STATUS`). */
export function messagesErrorType(status: number): string {
  return TYPE_OF_STATUS[status] ?? (status >= 400 && status < 500 ? 'invalid_request_error' : 'api_error');
}
