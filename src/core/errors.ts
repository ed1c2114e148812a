/**
 * The one error model of svc. Services throw `AppError`s carrying a catalogue code; each HTTP surface
 * (management API, chat-completions wire, messages wire) renders them in its own shape, in one place
 * (src/http/error-shapes.ts). Every code is listed in docs/errors.md.
 */

/** Catalogue entry: HTTP status and the default human message of a code. */
interface CatalogueEntry {
  status: number;
  message: string;
}

export const ERROR_CATALOGUE = {
  invalid_request: { status: 400, message: 'The request is invalid.' },
  invalid_json: { status: 400, message: 'The request body is not valid JSON.' },
  unsupported_setting: { status: 400, message: 'Unknown or unsupported setting.' },
  wrong_password: { status: 400, message: 'The current password is not correct.' },
  invalid_token: { status: 400, message: 'The link is invalid, already used or expired.' },
  confirm_required: { status: 400, message: 'Deleting an organization needs {"confirm": true}.' },
  default_org: { status: 400, message: 'The default organization cannot be deleted.' },
  unauthorized: { status: 401, message: 'Missing or invalid bearer token.' },
  invalid_credentials: { status: 401, message: 'Invalid e-mail or password.' },
  forbidden: { status: 403, message: 'This identity is not allowed to do that.' },
  admin_required: { status: 403, message: 'An admin identity is required.' },
  tenant_admin_required: { status: 403, message: 'A tenant-wide admin identity is required; app-pinned keys are rejected.' },
  private_url_blocked: { status: 403, message: 'The URL points at a private, loopback or otherwise non-public address.' },
  session_required: { status: 403, message: 'This endpoint needs a signed-in user session.' },
  password_change_required: { status: 403, message: 'Change your temporary password first (POST /api/v1/auth/change-password).' },
  no_organization: { status: 403, message: 'Your account belongs to no organization; create one or accept an invitation.' },
  signup_disabled: { status: 403, message: 'Public signup is disabled on this installation.' },
  owner_required: { status: 403, message: 'Only an owner of the organization may do that.' },
  platform_admin_required: { status: 403, message: 'Only a platform admin may do that.' },
  not_a_member: { status: 403, message: 'You are not a member of that organization.' },
  sign_in_required: { status: 403, message: 'Sign in as the invited user to accept this invitation.' },
  csrf_rejected: { status: 403, message: 'The request did not come from an allowed origin.' },
  not_found: { status: 404, message: 'Not found.' },
  route_not_found: { status: 404, message: 'No such route.' },
  model_not_found: { status: 404, message: 'The model does not exist.' },
  unsupported_model: { status: 400, message: 'The model is not offered on this wire.' },
  method_not_allowed: { status: 405, message: 'Method not allowed.' },
  conflict: { status: 409, message: 'The request conflicts with the current state.' },
  last_owner: { status: 409, message: 'An organization needs at least one owner.' },
  email_taken: { status: 409, message: 'An account with this e-mail address already exists.' },
  already_member: { status: 409, message: 'That user is already a member of the organization.' },
  already_verified: { status: 409, message: 'The e-mail address is already verified.' },
  request_timeout: { status: 408, message: 'The request did not arrive within the request timeout.' },
  expectation_failed: { status: 417, message: 'The only expectation svc meets is Expect: 100-continue.' },
  payload_too_large: { status: 413, message: 'The request body is too large.' },
  uri_too_long: { status: 414, message: 'A path segment of the URL is too long.' },
  unsupported_media_type: { status: 415, message: 'The request body must be JSON.' },
  headers_too_large: { status: 431, message: "The request's header section is too large." },
  rate_limited: { status: 429, message: 'Rate limit exceeded.' },
  data_dir_locked: { status: 503, message: 'The data directory is owned by another running process.' },
  internal: { status: 500, message: 'Internal server error.' },
  not_implemented: { status: 501, message: 'svc decodes no transfer coding but chunked; send the body as it is, chunked or with Content-Length.' },
  upstream_error: { status: 502, message: 'The upstream model provider failed.' },
  // The messages wire answers it as its provider does, 529 `overloaded_error` (src/http/error-shapes.ts `statusOn`).
  upstream_overloaded: { status: 502, message: 'The upstream model provider is overloaded; retry shortly.' },
  upstream_rejected: { status: 400, message: 'The upstream model provider rejected the request.' },
  upstream_timeout: { status: 504, message: 'The upstream model provider did not answer in time.' },
  unavailable: { status: 503, message: 'The service is temporarily unavailable.' },
  busy: { status: 503, message: 'svc holds as many request bodies in progress as SVC_GATEWAY_INFLIGHT_BODY_BYTES allows; retry shortly.' },
  shutting_down: { status: 503, message: 'The server is shutting down; retry the request on another instance or once it is back.' },
  email_delivery_failed: { status: 503, message: 'The e-mail could not be delivered; try again shortly.' },
  write_failed: { status: 503, message: 'svc could not write the record to its data file; try again shortly.' },
} as const satisfies Record<string, CatalogueEntry>;

export type ErrorCode = keyof typeof ERROR_CATALOGUE;

export interface AppErrorOptions {
  message?: string;
  details?: unknown;
  cause?: unknown;
  /** Extra response headers (e.g. `retry-after` for 429). */
  headers?: Record<string, string>;
  /** Overrides the catalogue status (an upstream's own 4xx relayed as `upstream_rejected`). */
  status?: number;
  /**
   * A 5xx answers with the catalogue's generic message, as its own may carry svc's insides (a cause, an address);
   * set for a 5xx whose message was written for the caller and says only what happened and what to do.
   */
  publicMessage?: boolean;
}

export class AppError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly details: unknown;
  readonly headers: Record<string, string>;
  /** Whether the message is shown on a 5xx too (`AppErrorOptions.publicMessage`). */
  readonly publicMessage: boolean;

  constructor(code: ErrorCode, options: AppErrorOptions = {}) {
    super(options.message ?? ERROR_CATALOGUE[code].message, { cause: options.cause });
    this.name = 'AppError';
    this.code = code;
    this.status = options.status ?? ERROR_CATALOGUE[code].status;
    this.details = options.details;
    this.headers = options.headers ?? {};
    this.publicMessage = options.publicMessage ?? false;
  }
}

export function isAppError(value: unknown): value is AppError {
  return value instanceof AppError;
}

/** Shorthand for the most common error: a 400 with a message and optional field-level details. */
export function invalid(message: string, details?: unknown): AppError {
  return new AppError('invalid_request', { message, details });
}

export function notFound(what: string): AppError {
  return new AppError('not_found', { message: `${what} not found.` });
}
