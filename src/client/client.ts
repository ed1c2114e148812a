/**
 * The reference client of svc's management API (SPEC 4.20), used by the CLI and tests. Errors become
 * `SvcApiError` with the status and the `{error: {code, message}}` of the answer.
 */
import { chatChunks, correlationOf, messagesChunks, received, SvcStreamError, type ChatChoice, type ChatStreamChunk, type MessagesStreamChunk, type MessagesToolUse, type RunCorrelation, type ToolCall, type Usage } from './streams.ts';
import { holding, isChatCompletion, isMessage, isToolCacheLookup, type AnswerShape } from './answers.ts';
import { notSvcAnswer } from './not-svc.ts';
import { isErrorCode, quoted } from './server-text.ts';
import { tracedTool, type ToolDefinition } from './tools.ts';
import { httpTransport, readBody, untilBrokenOff, type RequestOptions, type Transport, type TransportResponse } from './transport.ts';

/** SPEC 8: buffered gateway calls wait 150000 ms by default, configurable from 1 to 900000. */
export const DEFAULT_BUFFERED_TIMEOUT_MS = 150_000;
export const MAX_BUFFERED_TIMEOUT_MS = 900_000;
/**
 * Each evidence call of a traced tool (a trace append, a tool-cache check or store) waits this long by default. The
 * buffered deadline (150 s) held a tool call up to that long per call, three or more times, when svc was slow or
 * gone; evidence is swallowed when it fails, so waiting longer than an append takes only delays the app.
 */
export const DEFAULT_TRACE_TIMEOUT_MS = 5_000;
/** SPEC 8: a stream must deliver its headers within 30 s by default. */
export const DEFAULT_STREAM_HEADERS_TIMEOUT_MS = 30_000;
/**
 * The longest header deadline: the longest delay a Node timer holds (2^31 - 1 ms, ~24.8 days). A longer one was set
 * to 1 ms by Node (TimeoutOverflowWarning), so every stream failed at once with "no response headers within N ms".
 */
export const MAX_STREAM_HEADERS_TIMEOUT_MS = 2_147_483_647;
/** SPEC 8: run-event traversal stops before request 101. */
export const MAX_EVENT_PAGE_REQUESTS = 100;
/**
 * `runEvents`' page: the most an `/events` page holds (SPEC 8), so that 100 requests reach the start of any trace svc
 * keeps. A page also ends at 512 KiB of payload: a run's 16 MiB of client payload (events of up to 256 KiB) takes at
 * most 64 pages and its 10,000 events 20 more; pages of 100 events left ~3,000 of such a trace unread.
 */
const EVENT_TRAVERSAL_PAGE_SIZE = 500;
export const DEFAULT_APP = 'default-app';

export interface ClientOptions {
  /** Identity headers of gateway calls (SPEC 5.3); app defaults to `default-app`. */
  app?: string;
  agent?: string | null;
  subject?: string | null;
  bufferedTimeoutMs?: number;
  /** Deadline for a stream's response headers, 1 to MAX_STREAM_HEADERS_TIMEOUT_MS; default DEFAULT_STREAM_HEADERS_TIMEOUT_MS. */
  requestTimeoutMs?: number;
  /** Deadline of each evidence call of a traced tool (`tool`), 1 to 900000 ms; default DEFAULT_TRACE_TIMEOUT_MS. */
  traceTimeoutMs?: number;
  /**
   * Management calls act in this organization: sent as `X-Svc-Tenant`, which only a platform-admin identity that
   * is not a session (local operator, bootstrap token) may use (docs/accounts.md). See `SvcClient.inOrg`.
   */
  orgId?: string | null;
}

export interface CreateClientOptions extends ClientOptions {
  baseUrl?: string;
  apiKey?: string | null;
  /** Environment for the `SVC_*` fallbacks (default process.env). */
  env?: Record<string, string | undefined>;
}

/**
 * A client from options with the SPEC 4.20 environment fallbacks: SVC_BASE_URL (default http://127.0.0.1:8787),
 * SVC_API_KEY, SVC_APP, SVC_AGENT, SVC_SUBJECT.
 */
export function createSvcClient(options: CreateClientOptions = {}): SvcClient {
  const environment = options.env ?? process.env;
  // As svc reads its own environment (src/config.ts): a variable set to nothing (`SVC_APP=` in a compose file) is
  // unset, not the empty value, which svc's identity takes for no app at all rather than default-app.
  const env = (name: string): string | undefined => environment[name]?.trim() || undefined;
  const baseUrl = options.baseUrl ?? env('SVC_BASE_URL') ?? 'http://127.0.0.1:8787';
  const apiKey = options.apiKey !== undefined ? options.apiKey : (env('SVC_API_KEY') ?? null);
  return new SvcClient(httpTransport(baseUrl, apiKey), {
    ...options,
    app: options.app ?? env('SVC_APP') ?? DEFAULT_APP,
    agent: options.agent !== undefined ? options.agent : (env('SVC_AGENT') ?? null),
    subject: options.subject !== undefined ? options.subject : (env('SVC_SUBJECT') ?? null),
  });
}

/** What svc takes in an identity header (src/identity/service.ts), once trimmed. */
const IDENTITY_VALUE = /^[\x20-\x7e]{0,200}$/;

/** The options the client sends as headers: the identity of gateway calls and the organization of management calls. */
const HEADER_OPTIONS = ['app', 'agent', 'subject', 'orgId'] as const;

/**
 * A header value svc would refuse is refused at creation, naming its option and never sending it: a line break made
 * every call fail as "cannot reach svc" (undici cannot send it), a control or non-ASCII character or an overlong value
 * drew svc's 400 on each call. The value is kept trimmed, as svc reads it.
 */
function checkedHeaderValue(name: (typeof HEADER_OPTIONS)[number], value: string | null | undefined): string | null | undefined {
  if (value == null) return value;
  const trimmed = value.trim();
  if (!IDENTITY_VALUE.test(trimmed)) throw new TypeError(`${name} must be printable ASCII of at most 200 characters`);
  return trimmed;
}

/** A choice of a buffered answer as a stream's done chunk has it (streams.ts). */
function bufferedChoice(choice: any, position: number): ChatChoice {
  return {
    // Its position when it has no index of its own (an answer from a server that is not svc).
    index: Number.isInteger(choice?.index) ? choice.index : position,
    content: typeof choice?.message?.content === 'string' ? choice.message.content : '',
    toolCalls: (Array.isArray(choice?.message?.tool_calls) ? choice.message.tool_calls : []).map((call: any) => ({ id: call?.id ?? '', name: call?.function?.name ?? '', arguments: call?.function?.arguments ?? '' })),
    finishReason: choice?.finish_reason ?? null,
  };
}

/**
 * The correlation of a failed answer, checked as a result's is (correlationOf): the headers may come from a proxy,
 * and an unchecked `x-request-id` carried whatever it sent into the caller's logs.
 */
function errorCorrelation(headers: Record<string, string>): { requestId: string | null; runId: string } {
  const { requestId, runId } = correlationOf(headers);
  return { requestId: requestId || null, runId };
}

/** A provider name as svc gives them (chatcomp, chatcomp-tenant, messages, mock): up to 200 characters of this set. */
const PROVIDER_NAME = /^[A-Za-z0-9._:-]{1,200}$/;

/**
 * The provider of a gateway answer (`x-svc-provider`), null when absent or not a provider name: the header may come from
 * a server that is not svc, and was returned whatever it held (kilobytes, non-ASCII text, markup).
 */
function providerOf(headers: Record<string, string>): string | null {
  const provider = headers['x-svc-provider'];
  return provider !== undefined && PROVIDER_NAME.test(provider) ? provider : null;
}

/** A buffered chat completion as the reference client returns it (SPEC 4.20). */
export interface ChatResult extends RunCorrelation {
  content: string;
  usage: Usage | null;
  model: string;
  /** The provider that answered, when the gateway says (`x-svc-provider`); null otherwise. */
  provider: string | null;
  finishReason: string | null;
  toolCalls: ToolCall[];
  /** Every choice in index order (several when the request asked for `n` > 1); the fields above are choice 0's. */
  choices: ChatChoice[];
  raw: Record<string, any>;
}

export interface MessagesResult extends RunCorrelation {
  content: string;
  usage: Usage | null;
  model: string;
  provider: string | null;
  stopReason: string | null;
  toolUses: MessagesToolUse[];
  raw: Record<string, any>;
}

/**
 * A non-2xx answer. `code` comes from the `{error: {code, message}}` envelope when there is one (`http_<status>`
 * otherwise; a code that is not one, such as one with a line break, is `http_<status>` too). The message names the
 * call: `GET /api/v1/keys: HTTP 404 not_found: <the server's message>`, quoting at most 500 characters of the
 * server's, its control characters escaped (server-text.ts). Per SPEC 4.20 the error also carries the method, the path, the status and the first 500
 * characters of the body, quoted as the message is: the body may be a proxy's page with an escape sequence in it.
 */
export class SvcApiError extends Error {
  readonly status: number;
  readonly code: string;
  readonly method: string;
  readonly path: string;
  /** The first 500 characters of the response body (`…` when cut), its unsafe characters as `\u` escapes (server-text.ts). */
  readonly body: string;
  /** `x-request-id` of the answer, when the server sent a well-formed one. */
  readonly requestId: string | null;
  /** `x-svc-run-id` of a failed gateway call that created a run (empty otherwise). */
  readonly runId: string;

  constructor(init: { status: number; code: string; message: string; method: string; path: string; body: string; requestId: string | null; runId?: string }) {
    super(init.message);
    this.name = 'SvcApiError';
    this.status = init.status;
    this.code = init.code;
    this.method = init.method;
    this.path = init.path;
    this.body = quoted(init.body);
    this.requestId = init.requestId;
    this.runId = init.runId ?? '';
  }
}

export interface ApiKey {
  id: string;
  name: string;
  mode: KeyMode;
  appId: string | null;
  admin: boolean;
  tokenPrefix: string;
  status: 'active' | 'revoked';
  createdAt: string;
  revokedAt: string | null;
}

/** The pagination object of every management list (`limit`, `offset`, `total`, `hasMore`). */
export interface Pagination {
  limit: number;
  offset: number;
  total: number;
  hasMore: boolean;
}

export type KeyMode = 'observe' | 'optimize';

export interface AuditEvent {
  id: string;
  seq: number;
  action: string;
  decision: 'allow' | 'deny';
  /** Who acted, e.g. `{kind: 'local'}` or `{kind: 'key', keyId: 'key_...'}`. */
  actor: Record<string, string>;
  target: string | null;
  details: Record<string, unknown>;
  createdAt: string;
  hash: string;
  prevHash: string | null;
}

/** Where a page of the audit log ends: `nextBefore` is the `before` of the next (older) page, null on the last. */
export interface AuditWindow {
  limit: number;
  count: number;
  hasMore: boolean;
  nextBefore: number | null;
}

/** The result of `verify=true`: whether the tenant's hash chain recomputes, and where it breaks if not. */
export interface AuditIntegrity {
  ok: boolean;
  /** Events in the chain; null for a reader some events are withheld from (docs/api.md, Audit log). */
  count: number | null;
  brokenAt: number | null;
}

export interface CacheStat {
  cacheType: string;
  entries: number;
  hits: number;
}

/** A run row as listed by `GET /api/v1/runs` and shown by `GET /api/v1/runs/:id`. */
export interface RunSummary {
  id: string;
  status: string;
  route: string | null;
  wire: string;
  model: string;
  provider: string | null;
  mode: KeyMode;
  stream: boolean;
  appId: string | null;
  agent: string | null;
  subject: string | null;
  requestId: string | null;
  usage: { promptTokens: number; completionTokens: number; totalTokens: number };
  costUsd: number;
  priced: boolean;
  savedUsd: number;
  ghostSavedUsd: number;
  savedMs: number;
  latencyMs: number | null;
  /** `{storedText}` (as the explanation) when the stored value is not JSON: the data file edited (docs/evidence.md). */
  error: null | { kind: string; message: string } | { storedText: string };
  eventCount: number;
  /** An SDK-ingested prompt (route `live`, handled outside svc); absent from servers older than the marker. */
  ingested?: boolean;
  routeExplanation: Record<string, unknown> | null;
  /** null when the stored time is not one (the data file edited). */
  createdAt: string | null;
  completedAt: string | null;
}

export interface TraceEventView {
  seq: number;
  type: string;
  payload: Record<string, unknown>;
  /** null when the stored time is not one (the data file edited; integrity reports the event). */
  createdAt: string | null;
  prevHash: string;
  hash: string;
}

export interface EventWindow {
  limit: number;
  count: number;
  hasMore: boolean;
  nextBefore: number | null;
  truncatedByBytes: boolean;
}

/** A run's status and route, as svc records them (src/evidence/types.ts). */
export type RunStatus = 'running' | 'completed' | 'failed' | 'blocked';
export type RunRoute = 'live' | 'exact_cache' | 'artifact' | 'blocked';

/** The filters of `GET /api/v1/runs` (docs/gateway.md); svc answers 400 naming one out of its range. */
export interface RunFilters {
  /** 1 to 200, default 50. */
  limit?: number;
  offset?: number;
  route?: RunRoute;
  status?: RunStatus;
  /** Up to 200 characters. */
  provider?: string;
  /** Up to 256 characters. */
  model?: string;
  /** ISO 8601 or epoch milliseconds. */
  since?: string | number;
  /** true: only SDK-ingested prompts; false: every run but them (both are on the live route). */
  ingested?: boolean;
  /**
   * A run id, the previous page's `pagination.nextBefore`: the page lists the runs after it. A walk following it lists
   * each run once while runs are recorded; one by `offset` repeats or skips runs then.
   */
  before?: string;
}

/** The runs list's pagination: `nextBefore` is the `before` of the next page, null on the last (absent from older svc). */
export interface RunsPagination extends Pagination {
  nextBefore?: string | null;
}

/** A window of a run's trace (`/events`, and run detail's `events`): `limit` 1 to 500 (default 100), `before` an exclusive seq. */
export interface EventWindowQuery {
  limit?: number;
  before?: number;
}

/** Run detail's windows (docs/evidence.md, "Run detail windows"): its trace's, its side effects' and its feedback's. */
export interface RunDetailQuery extends EventWindowQuery {
  /** 1 to 500, default 50. */
  sideEffectLimit?: number;
  /** An exclusive side-effect seq: the previous `sideEffectWindow.nextBefore`. */
  sideEffectBefore?: number;
  /** 1 to 200, default 50. */
  feedbackLimit?: number;
  /** An exclusive 1-based feedback position: the previous `feedbackWindow.nextBefore`. */
  feedbackBefore?: number;
}

/** What run detail left out of its side effects or feedback (`total`: the records the run holds). */
export interface SectionWindow {
  limit: number;
  count: number;
  total: number;
  hasMore: boolean;
  nextBefore: number | null;
  truncatedByBytes: boolean;
}

export interface RunIntegrity {
  runId: string;
  ok: boolean;
  eventCount: number;
  brokenAt: number | null;
  reason: string | null;
  headHash: string;
  checkedAt: string;
}

/** A platform role (`role` of a user). */
export type PlatformRole = 'admin' | 'member';
/** A role in an organization. */
export type OrgRole = 'owner' | 'admin' | 'member';
export type InviteStatus = 'pending' | 'accepted' | 'revoked' | 'expired';

/** A user as `/api/v1/users` answers (docs/accounts.md). */
export interface User {
  id: string;
  email: string;
  name: string | null;
  role: PlatformRole;
  emailVerified: boolean;
  mustChangePassword: boolean;
  createdAt: string;
  /** The user's role in the caller's organization (null when not a member). */
  orgRole: OrgRole | null;
  /** Every membership; only in answers to a platform admin. */
  memberships?: Array<{ orgId: string; orgName: string; role: OrgRole }>;
}

/** An organization as `GET /api/v1/orgs` lists it; `role` is the caller's (null for a non-session platform admin). */
export interface OrgSummary {
  id: string;
  name: string;
  role: OrgRole | null;
  active: boolean;
  createdAt: string;
}

export interface OrgMember {
  userId: string;
  email: string;
  name: string | null;
  role: OrgRole;
  joinedAt: string;
}

export interface OrgPlan {
  effective: string;
  base: string;
  trial: null | { plan: string; startedAt: string; endsAt: string; active: boolean; awaitingVerification: boolean };
}

/** `GET /api/v1/orgs/active`: the organization, the caller's role, its members and seats. */
export interface ActiveOrg {
  org: { id: string; name: string; createdAt: string; plan: OrgPlan };
  role: OrgRole | null;
  members: OrgMember[];
  seats: { members: number; pendingInvites: number; used: number };
}

/** An invitation; its token is e-mailed and never returned. */
export interface Invite {
  id: string;
  email: string;
  role: OrgRole;
  status: InviteStatus;
  createdAt: string;
  expiresAt: string;
  invitedBy: { userId: string; name: string | null; email: string } | null;
  acceptedAt: string | null;
}

/** A page of a management list (`limit` 1 to 200, default 50; `offset` from 0). */
export interface PageQuery {
  limit?: number;
  offset?: number;
}

/** The filters of `GET /api/v1/users`: a page, and `email` (exact, case-insensitive; up to 254 characters). */
export interface UserFilters extends PageQuery {
  email?: string;
}

/** The filters of `GET /api/v1/orgs/active/invites`: a page, and an invitation status. */
export interface InviteFilters extends PageQuery {
  status?: InviteStatus;
}

/** A page of `GET /api/v1/audit`, newest first (docs/api.md). */
export interface AuditQuery {
  /** 1 to 500, default 50. */
  limit?: number;
  /** An exclusive seq: the previous page's `window.nextBefore`. */
  before?: number;
  decision?: 'allow' | 'deny';
  /** Recompute the tenant's hash chain (the answer's `integrity`). */
  verify?: boolean;
}

/** A window of time of the economics calls: ISO 8601 or epoch milliseconds; `since` not after `until`. */
export interface TimeWindow {
  since?: string | number;
  until?: string | number;
}

/** The dimensions of `GET /api/v1/usage/attribution`, each paged on its own (src/evidence/savings.ts). */
export const ATTRIBUTION_DIMENSIONS = ['route', 'workflow', 'subject', 'fingerprint', 'app', 'pattern', 'model', 'agent', 'executionMethod', 'reason', 'fallback'] as const;
export type AttributionDimension = (typeof ATTRIBUTION_DIMENSIONS)[number];

/** A time window and, per dimension, `<dimension>Limit` (1 to 200, default 10) and `<dimension>Offset`. */
export type AttributionQuery = TimeWindow & { [D in AttributionDimension as `${D}Limit` | `${D}Offset`]?: number };

/** What a query parameter takes; svc checks the ranges, and answers 400 naming the parameter. */
type QueryValue = 'positive integer' | 'non-negative integer' | 'string' | 'instant' | 'boolean';

const QUERY_VALUES: Record<QueryValue, (value: unknown) => boolean> = {
  'positive integer': (value) => Number.isInteger(value) && (value as number) >= 1,
  'non-negative integer': (value) => Number.isInteger(value) && (value as number) >= 0,
  string: (value) => typeof value === 'string',
  instant: (value) => typeof value === 'string' || (typeof value === 'number' && Number.isFinite(value)),
  boolean: (value) => typeof value === 'boolean',
};

/** Each call's options as its route's query schema has them (the routes of src/keys, src/accounts, src/audit, src/evidence). */
const PAGE: Record<keyof PageQuery, QueryValue> = { limit: 'positive integer', offset: 'non-negative integer' };
const USER_FILTERS: Record<keyof UserFilters, QueryValue> = { ...PAGE, email: 'string' };
const INVITE_FILTERS: Record<keyof InviteFilters, QueryValue> = { ...PAGE, status: 'string' };
const AUDIT_QUERY: Record<keyof AuditQuery, QueryValue> = { limit: 'positive integer', before: 'positive integer', decision: 'string', verify: 'boolean' };
const TIME_WINDOW: Record<keyof TimeWindow, QueryValue> = { since: 'instant', until: 'instant' };
const ATTRIBUTION_QUERY = {
  ...TIME_WINDOW,
  ...Object.fromEntries(ATTRIBUTION_DIMENSIONS.flatMap((dim) => [[`${dim}Limit`, 'positive integer'], [`${dim}Offset`, 'non-negative integer']])),
} as Record<keyof AttributionQuery, QueryValue>;
const RUN_FILTERS: Record<keyof RunFilters, QueryValue> = { ...PAGE, route: 'string', status: 'string', provider: 'string', model: 'string', since: 'instant', ingested: 'boolean', before: 'string' };
const EVENT_WINDOW: Record<keyof EventWindowQuery, QueryValue> = { limit: 'positive integer', before: 'positive integer' };
const RUN_DETAIL: Record<keyof RunDetailQuery, QueryValue> = { ...EVENT_WINDOW, sideEffectLimit: 'positive integer', sideEffectBefore: 'positive integer', feedbackLimit: 'positive integer', feedbackBefore: 'positive integer' };

/**
 * The query of a call, checked before anything is sent: an option svc does not have (`users.list({role})`) was sent
 * anyway and ignored by svc, which answered as if filtered; a value no query can carry (NaN, 1.5, an object) was sent
 * as its text. Either is a TypeError naming the call and the option.
 */
function checkedQuery(call: string, params: object, takes: Record<string, QueryValue>): string {
  for (const [name, value] of Object.entries(params)) {
    const kind = takes[name];
    if (kind === undefined) throw new TypeError(`${call} has no option ${JSON.stringify(name)}; it takes ${Object.keys(takes).join(', ')}`);
    if (value !== undefined && !QUERY_VALUES[kind](value)) throw new TypeError(`${name} of ${call} must be a${kind === 'instant' ? 'n ISO 8601 string or epoch milliseconds' : ` ${kind}`}`);
  }
  return query(params as Record<string, string | number | boolean | undefined>);
}

function query(params: Record<string, string | number | boolean | undefined>): string {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) if (value !== undefined) search.set(name, String(value));
  const text = search.toString();
  return text ? `?${text}` : '';
}

/**
 * What each management call's answer holds at its top level, as svc answers it: the fields the CLI's tables and
 * messages read (`answered` refuses an answer without them). The runs' answers are read field by field where shown
 * (cli/tui/run-answers.ts) and not checked here.
 */
const ANSWERS = {
  key: holding('an API key', { key: 'object' }),
  createdKey: holding('an API key and its token', { key: 'object', token: 'string' }),
  keys: holding('a page of API keys', { keys: 'rows', pagination: 'object' }),
  settings: holding("the tenant's settings", { settings: 'object' }),
  audit: holding('a page of the audit log', { events: 'rows' }),
  cacheStats: holding('cache statistics', { stats: 'rows' }),
  invalidated: holding('a cache invalidation', { invalidated: 'count' }),
  user: holding('a user', { user: 'object' }),
  userWithPassword: holding('a user and a temporary password', { user: 'object', tempPassword: 'string' }),
  users: holding('a page of users', { users: 'rows', pagination: 'object' }),
  deleted: holding('a deletion', { deleted: 'true', id: 'string' }),
  org: holding('an organization', { org: 'object' }),
  activeOrg: holding("an organization with its members", { org: 'object', members: 'rows', seats: 'object' }),
  orgs: holding('a page of organizations', { orgs: 'rows', pagination: 'object' }),
  invite: holding('an invitation', { invite: 'object' }),
  invites: holding('a page of invitations', { invites: 'rows', pagination: 'object' }),
} as const;

/**
 * Typed calls to the management API over any `Transport`. No retries (SPEC 4.20): a failure is thrown once, as
 * `SvcApiError` for an answer outside 2xx, or the transport's own error when svc could not be reached.
 */
export class SvcClient {
  private readonly options: Required<Pick<ClientOptions, 'bufferedTimeoutMs' | 'requestTimeoutMs' | 'traceTimeoutMs'>> & ClientOptions;

  constructor(
    private readonly transport: Transport,
    options: ClientOptions = {},
  ) {
    const bufferedTimeoutMs = options.bufferedTimeoutMs ?? DEFAULT_BUFFERED_TIMEOUT_MS;
    if (!Number.isInteger(bufferedTimeoutMs) || bufferedTimeoutMs < 1 || bufferedTimeoutMs > MAX_BUFFERED_TIMEOUT_MS) {
      throw new RangeError(`bufferedTimeoutMs must be an integer from 1 to ${MAX_BUFFERED_TIMEOUT_MS}`);
    }
    const requestTimeoutMs = options.requestTimeoutMs ?? DEFAULT_STREAM_HEADERS_TIMEOUT_MS;
    if (!Number.isInteger(requestTimeoutMs) || requestTimeoutMs < 1 || requestTimeoutMs > MAX_STREAM_HEADERS_TIMEOUT_MS) {
      throw new RangeError(`requestTimeoutMs must be an integer from 1 to ${MAX_STREAM_HEADERS_TIMEOUT_MS}`);
    }
    const traceTimeoutMs = options.traceTimeoutMs ?? DEFAULT_TRACE_TIMEOUT_MS;
    if (!Number.isInteger(traceTimeoutMs) || traceTimeoutMs < 1 || traceTimeoutMs > MAX_BUFFERED_TIMEOUT_MS) {
      throw new RangeError(`traceTimeoutMs must be an integer from 1 to ${MAX_BUFFERED_TIMEOUT_MS}`);
    }
    const headerValues: Record<string, string | null> = {};
    for (const name of HEADER_OPTIONS) {
      const value = checkedHeaderValue(name, options[name]);
      if (value !== undefined) headerValues[name] = value;
    }
    this.options = { ...options, ...headerValues, bufferedTimeoutMs, requestTimeoutMs, traceTimeoutMs };
  }

  /**
   * Send one request; resolves with the parsed JSON body of a 2xx answer. Without a signal of the caller's, the
   * buffered deadline (`bufferedTimeoutMs`) bounds the whole exchange: a server that never answers, or sends its body a
   * byte at a time, must not hold the caller (an admin command) forever.
   */
  call<T>(method: string, path: string, body?: unknown, options?: RequestOptions): Promise<T> {
    return this.send<T>(method, path, body, options, null);
  }

  /** A management call whose 2xx answer must also be of `answer`'s shape (what its callers read), else invalid_response. */
  private answered<T>(answer: AnswerShape, method: string, path: string, body?: unknown): Promise<T> {
    return this.send<T>(method, path, body, undefined, answer);
  }

  private async send<T>(method: string, path: string, body: unknown, options: RequestOptions | undefined, answer: AnswerShape | null): Promise<T> {
    // encodeURIComponent leaves `.` alone, and URLs resolve the segments `.` and `..`: the id `..` would address
    // another endpoint (orgs.removeMember('..') was DELETE /api/v1/orgs/active, the organization's deletion).
    const dots = /\/(\.\.?)(?=[/?]|$)/.exec(path);
    if (dots) throw new TypeError(`"${dots[1]}" is not an id (${method} ${path})`);
    const orgId = this.options.orgId;
    const deadline = options?.signal ? null : AbortSignal.timeout(this.options.bufferedTimeoutMs);
    const sent: RequestOptions = {
      ...options,
      ...(orgId ? { headers: { 'x-svc-tenant': orgId, ...options?.headers } } : {}),
      ...(deadline ? { signal: deadline } : {}),
    };
    let response: TransportResponse;
    try {
      response = await this.transport.request(method, path, body, sent);
    } catch (error) {
      if (deadline?.aborted) throw this.timedOut(method, path, error);
      throw error;
    }
    if (response.status < 200 || response.status >= 300) throw this.failure(method, path, response.status, response.headers, response.body, response.text);
    if (typeof response.body !== 'object' || response.body === null) throw this.notJson(method, path, response);
    if (answer && !answer.is(response.body)) throw this.notTheAnswer(method, path, response, answer.what);
    return response.body as T;
  }

  /** A buffered call that passed its deadline (`bufferedTimeoutMs`), named. */
  private timedOut(method: string, path: string, cause: unknown): Error {
    return new Error(`no answer to ${method} ${path} within ${this.options.bufferedTimeoutMs} ms`, { cause });
  }

  /** Every answer of svc's API is a JSON object; anything else (an HTML page, an empty body) is not svc answering. */
  private notJson(method: string, path: string, response: TransportResponse): SvcApiError {
    return new SvcApiError({
      status: response.status,
      code: 'invalid_response',
      message: `the server answered ${method} ${path} with HTTP ${response.status} but no JSON: is it svc?`,
      method,
      path,
      body: response.text,
      ...errorCorrelation(response.headers),
    });
  }

  /**
   * A 2xx JSON answer that is not what the call answers (`what`: "a chat completion"), from a server that is not svc.
   * The run it names, if any, is in the message: the run svc (or whatever answered) recorded for the call.
   */
  private notTheAnswer(method: string, path: string, response: Pick<TransportResponse, 'status' | 'headers' | 'text'>, what: string): SvcApiError {
    const correlation = errorCorrelation(response.headers);
    const run = correlation.runId ? ` (run ${correlation.runId})` : '';
    return new SvcApiError({
      status: response.status,
      code: 'invalid_response',
      message: `the server answered ${method} ${path}${run} with HTTP ${response.status} but not ${what}: is it svc?`,
      method,
      path,
      body: response.text,
      ...correlation,
    });
  }

  private failure(method: string, path: string, status: number, headers: Record<string, string>, body: unknown, text: string): SvcApiError {
    const envelope = body as { error?: { code?: unknown; type?: unknown; message?: unknown } } | null;
    const error = typeof envelope === 'object' && envelope !== null && typeof envelope.error === 'object' ? envelope.error : undefined;
    const code = isErrorCode(error?.code) ? error.code : isErrorCode(error?.type) ? error.type : `http_${status}`;
    // The message names the call (SPEC 4.20), as a log line of the message alone must tell which call failed; the
    // code only when it says more than the status does.
    const named = `${method} ${path}: HTTP ${status}${code === `http_${status}` ? '' : ` ${code}`}`;
    const notSvc = notSvcAnswer({ status, headers, body, text, enveloped: error !== undefined && error !== null });
    return new SvcApiError({
      status,
      code,
      message:
        notSvc !== null
          ? `${named}${notSvc}`
          : typeof error?.message === 'string' && error.message !== ''
            ? `${named}: ${quoted(error.message)}`
            : named,
      method,
      path,
      body: text,
      ...errorCorrelation(headers),
    });
  }

  /** Identity headers of gateway calls (SPEC 4.20). */
  private identityHeaders(): Record<string, string> {
    const headers: Record<string, string> = { 'x-svc-app': this.options.app ?? DEFAULT_APP };
    if (this.options.agent) headers['x-svc-agent'] = this.options.agent;
    if (this.options.subject) headers['x-svc-subject'] = this.options.subject;
    return headers;
  }

  /**
   * A buffered gateway call under the buffered deadline, with the correlation headers of its answer; `answer` is the
   * shape the caller reads (`what` names it in the error when the answer is not of it).
   */
  private async gatewayCall(path: string, body: unknown, answer: { is: (body: Record<string, unknown>) => boolean; what: string }): Promise<{ body: Record<string, any>; headers: Record<string, string> }> {
    const signal = AbortSignal.timeout(this.options.bufferedTimeoutMs);
    let response: TransportResponse;
    try {
      response = await this.transport.request('POST', path, body, { headers: this.identityHeaders(), signal });
    } catch (error) {
      // Said as a management call's deadline is: a bare TimeoutError named neither the call nor the deadline.
      if (signal.aborted) throw this.timedOut('POST', path, error);
      throw error;
    }
    if (response.status < 200 || response.status >= 300) throw this.failure('POST', path, response.status, response.headers, response.body, response.text);
    // A proxy's HTML page or an empty 200 was read as an answer: a TypeError on its `choices`, or an empty one.
    if (typeof response.body !== 'object' || response.body === null || Array.isArray(response.body)) throw this.notJson('POST', path, response);
    if (!answer.is(response.body as Record<string, unknown>)) throw this.notTheAnswer('POST', path, response, answer.what);
    return { body: response.body as Record<string, any>, headers: response.headers };
  }

  /**
   * Open a gateway stream: the header deadline applies until the response headers arrived, then it is lifted. The
   * connection failing after that is a SvcStreamError with the run's correlation (`received`).
   */
  private async gatewayStream(path: string, body: unknown, signal?: AbortSignal) {
    // A signal aborted already fires no 'abort' event: the request would have gone out regardless.
    signal?.throwIfAborted();
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(new Error(`no response headers within ${this.options.requestTimeoutMs} ms`)), this.options.requestTimeoutMs);
    const onAbort = () => controller.abort(signal?.reason);
    signal?.addEventListener('abort', onAbort, { once: true });
    // Removed once the stream is over: an application's one signal (its shutdown) given to every stream would
    // otherwise hold each stream's listener until it fires (and Node warns of a leak from the eleventh on).
    const release = () => signal?.removeEventListener('abort', onAbort);
    try {
      const response = await this.transport.stream('POST', path, body, { headers: this.identityHeaders(), signal: controller.signal });
      if (response.status < 200 || response.status >= 300) {
        const read = await readBody(untilBrokenOff(response.body, `POST ${path} (HTTP ${response.status})`, controller.signal), `POST ${path}`);
        throw this.failure('POST', path, response.status, response.headers, read.body, read.text);
      }
      const chunks = received(response.body, correlationOf(response.headers), controller.signal);
      async function* releasing(): AsyncGenerator<Uint8Array> {
        try {
          yield* chunks;
        } finally {
          release();
        }
      }
      return { ...response, body: releasing() };
    } catch (error) {
      release();
      throw error;
    } finally {
      clearTimeout(timer);
    }
  }

  /** Buffered chat completion (`stream: false` is forced). */
  async chat(request: Record<string, unknown>): Promise<ChatResult> {
    const { body, headers } = await this.gatewayCall('/v1/chat/completions', { ...request, stream: false }, { is: isChatCompletion, what: 'a chat completion' });
    const choices: ChatChoice[] = Array.isArray(body.choices) ? body.choices.map(bufferedChoice) : [];
    choices.sort((a, b) => a.index - b.index);
    const first = choices[0] ?? { content: '', toolCalls: [], finishReason: null };
    const usage = body.usage ? { promptTokens: body.usage.prompt_tokens, completionTokens: body.usage.completion_tokens, totalTokens: body.usage.total_tokens } : null;
    return {
      content: first.content,
      ...correlationOf(headers),
      usage,
      model: body.model ?? '',
      provider: providerOf(headers),
      finishReason: first.finishReason,
      toolCalls: first.toolCalls,
      choices,
      raw: body,
    };
  }

  /** Streamed chat completion: `delta` chunks, then one `done` chunk; a provider error raises SvcStreamError. */
  async *chatStream(request: Record<string, unknown>, options: { signal?: AbortSignal } = {}): AsyncGenerator<ChatStreamChunk> {
    // The caller's other stream options (include_obfuscation) are kept; usage is asked for, for the done chunk.
    const streamOptions = typeof request.stream_options === 'object' && request.stream_options !== null ? request.stream_options : {};
    const response = await this.gatewayStream('/v1/chat/completions', { ...request, stream: true, stream_options: { ...streamOptions, include_usage: true } }, options.signal);
    yield* chatChunks(response.body, correlationOf(response.headers));
  }

  /** Buffered messages call. */
  async messages(request: Record<string, unknown>): Promise<MessagesResult> {
    const { body, headers } = await this.gatewayCall('/v1/messages', { ...request, stream: false }, { is: isMessage, what: 'a message' });
    const blocks: any[] = Array.isArray(body.content) ? body.content : [];
    return {
      content: blocks.filter((block) => block.type === 'text').map((block) => block.text).join(''),
      ...correlationOf(headers),
      usage: body.usage ? { promptTokens: body.usage.input_tokens, completionTokens: body.usage.output_tokens, totalTokens: body.usage.input_tokens + body.usage.output_tokens } : null,
      model: body.model ?? '',
      provider: providerOf(headers),
      stopReason: body.stop_reason ?? null,
      toolUses: blocks.filter((block) => block.type === 'tool_use').map((block) => ({ id: block.id, name: block.name, input: block.input })),
      raw: body,
    };
  }

  /** Streamed messages call: text and tool_use deltas, then one `done` chunk with stopReason. */
  async *messagesStream(request: Record<string, unknown>, options: { signal?: AbortSignal } = {}): AsyncGenerator<MessagesStreamChunk> {
    const response = await this.gatewayStream('/v1/messages', { ...request, stream: true }, options.signal);
    yield* messagesChunks(response.body, correlationOf(response.headers));
  }

  /** Append an SDK trace event to a run (SPEC 4.19); with a signal, it bounds the call instead of bufferedTimeoutMs. */
  trace(runId: string, type: string, payload: Record<string, unknown>, options: { signal?: AbortSignal } = {}) {
    return this.call<{ ok: true; runId: string; seq: number; hash: string }>('POST', '/api/v1/trace', { runId, type, payload }, options);
  }

  /** Record a prompt handled outside svc as a completed observed run (SPEC 4.19). */
  ingestPrompt(body: { source: string; prompt: string; sessionId?: string; metadata?: Record<string, string | number | boolean | null> }) {
    return this.call<{ runId: string }>('POST', '/api/v1/ingest/prompt', body, { headers: this.identityHeaders() });
  }

  /**
   * Wrap a tool so each call is traced on the run that asked for it (SPEC 4.20 order; src/client/tools.ts). Each
   * evidence call waits at most `traceTimeoutMs`, less when the call's own signal (`{runId, signal}`) aborts first.
   */
  tool<A, R>(definition: ToolDefinition<A>, fn: (args: A) => R | Promise<R>) {
    const bounded = (signal: AbortSignal | undefined) => {
      const deadline = AbortSignal.timeout(this.options.traceTimeoutMs);
      return { signal: signal ? AbortSignal.any([deadline, signal]) : deadline };
    };
    return tracedTool(
      {
        trace: (runId, type, payload, signal) => this.trace(runId, type, payload, bounded(signal)),
        cacheCheck: (body, signal) => this.toolCacheCheck(body, bounded(signal)),
        cacheStore: (body, signal) => this.call('POST', '/api/v1/tool-cache/store', body, { headers: this.identityHeaders(), ...bounded(signal) }),
      },
      definition,
      fn,
    );
  }

  /**
   * A tool-cache lookup, checked: an answer that is neither a miss nor a hit with its result (`{hit: true}` alone,
   * `{hit: 'yes'}`) was served as a hit whose result was undefined, or whatever it held. It is an invalid_response,
   * which the traced tool swallows as any cache failure: the tool runs.
   */
  private async toolCacheCheck(body: unknown, options: RequestOptions): Promise<{ hit: boolean; result?: unknown }> {
    const path = '/api/v1/tool-cache/check';
    const lookup = await this.call<unknown>('POST', path, body, { headers: this.identityHeaders(), ...options });
    if (isToolCacheLookup(lookup)) return lookup;
    throw this.notTheAnswer('POST', path, { status: 200, headers: {}, text: JSON.stringify(lookup) }, 'a tool-cache lookup');
  }

  /**
   * Every trace event of a run, newest first, paged through `/events` (`before` = the previous page's
   * `nextBefore`). Stops before request 101 (SPEC 8), so a `pageSize` below the default may end before the oldest
   * events of a long trace. Falls back to the run detail's events on an older gateway that lacks the bounded event
   * window (SPEC 9.4).
   */
  async *runEvents(runId: string, options: { pageSize?: number } = {}): AsyncGenerator<TraceEventView> {
    const limit = options.pageSize ?? EVENT_TRAVERSAL_PAGE_SIZE;
    let before: number | undefined;
    for (let request = 1; request <= MAX_EVENT_PAGE_REQUESTS; request++) {
      let page: { events: TraceEventView[]; window?: EventWindow };
      try {
        page = await this.runs.events(runId, { limit, ...(before !== undefined ? { before } : {}) });
      } catch (error) {
        if (request === 1 && error instanceof SvcApiError && error.status === 404 && error.code === 'route_not_found') {
          const detail = await this.runs.get(runId);
          yield* [...detail.events].reverse();
          return;
        }
        throw error;
      }
      yield* [...page.events].reverse();
      if (!page.window?.hasMore || page.window.nextBefore === null) return;
      before = page.window.nextBefore;
    }
  }

  readonly feedback = {
    /** `{type:'rating', rating, correction?}`; ratings go from -1 to 5. */
    rate: (runId: string, rating: number, correction?: string) =>
      this.call<{ feedback: Record<string, unknown> }>('POST', `/api/v1/runs/${encodeURIComponent(runId)}/feedback`, {
        type: 'rating',
        rating,
        ...(correction !== undefined ? { correction } : {}),
      }),
    /** Thumbs up is rating 5 (SPEC 4.9). */
    thumbsUp: (runId: string) => this.feedback.rate(runId, 5),
    /** Thumbs down is rating -1, optionally with the correct answer (the strongest learning signal). */
    thumbsDown: (runId: string, correction?: string) => this.feedback.rate(runId, -1, correction),
    metrics: (runId: string, body: { metrics: Record<string, unknown>; optimize: 'max' | 'min'; source: string; tags?: Record<string, unknown>; evaluator?: unknown }) =>
      this.call<{ feedback: Record<string, unknown> }>('POST', `/api/v1/runs/${encodeURIComponent(runId)}/feedback/metrics`, body),
  };

  /**
   * A view of this client whose management calls act in organization `orgId` (the `X-Svc-Tenant` header; for a
   * platform-admin identity that is not a session: the local operator or the bootstrap token). It shares this
   * client's transport: close one of them, once.
   */
  inOrg(orgId: string): SvcClient {
    return new SvcClient(this.transport, { ...this.options, orgId });
  }

  /** Release the transport (for the in-process transport: close the app and the store, release the lock). */
  close(): Promise<void> {
    return this.transport.close();
  }

  /** Liveness (SPEC 4.1). */
  health() {
    return this.call<Record<string, unknown>>('GET', '/health');
  }

  /** Readiness and its checks (SPEC 4.1; admin). */
  readiness() {
    return this.call<Record<string, unknown>>('GET', '/api/v1/readiness');
  }

  readonly keys = {
    /** The token is in this answer only; svc keeps its hash. */
    create: (input: { name: string; admin?: boolean; appId?: string; mode?: KeyMode }) =>
      this.answered<{ key: ApiKey; token: string }>(ANSWERS.createdKey, 'POST', '/api/v1/keys', input),
    list: async (page: PageQuery = {}) =>
      this.answered<{ keys: ApiKey[]; pagination: Pagination }>(ANSWERS.keys, 'GET', `/api/v1/keys${checkedQuery('keys.list', page, PAGE)}`),
    setMode: (id: string, mode: KeyMode) =>
      this.answered<{ key: ApiKey }>(ANSWERS.key, 'PATCH', `/api/v1/keys/${encodeURIComponent(id)}`, { mode }),
    revoke: (id: string) => this.answered<{ key: ApiKey }>(ANSWERS.key, 'POST', `/api/v1/keys/${encodeURIComponent(id)}/revoke`),
  };

  readonly settings = {
    /** Every setting; secrets read back as `[set]` (or null when unset). */
    get: () => this.answered<{ settings: Record<string, unknown> }>(ANSWERS.settings, 'GET', '/api/v1/settings'),
    /** Change one setting (`null` clears it); answers with every setting. */
    set: (key: string, value: unknown) => this.answered<{ settings: Record<string, unknown> }>(ANSWERS.settings, 'PUT', '/api/v1/settings', { key, value }),
  };

  readonly audit = {
    /** A page, newest first; `before` (the previous page's `window.nextBefore`) reads the older events. */
    list: async (options: AuditQuery = {}) =>
      this.answered<{ events: AuditEvent[]; window: AuditWindow; integrity?: AuditIntegrity }>(ANSWERS.audit, 'GET', `/api/v1/audit${checkedQuery('audit.list', options, AUDIT_QUERY)}`),
  };

  readonly runs = {
    list: async (filters: RunFilters = {}) =>
      this.call<{ runs: RunSummary[]; pagination: RunsPagination; facets: { route: Record<string, number>; status: Record<string, number> } }>(
        'GET',
        `/api/v1/runs${checkedQuery('runs.list', filters, RUN_FILTERS)}`,
      ),
    /** The run with its newest events, side effects and feedback, each a window (`RunDetailQuery` pages back). */
    get: async (id: string, window: RunDetailQuery = {}) =>
      this.call<{
        run: RunSummary;
        events: TraceEventView[];
        window: EventWindow;
        attempts: Array<Record<string, unknown>>;
        sideEffects: Array<Record<string, unknown>>;
        sideEffectWindow: SectionWindow;
        feedback: Array<Record<string, unknown>>;
        feedbackWindow: SectionWindow;
      }>('GET', `/api/v1/runs/${encodeURIComponent(id)}${checkedQuery('runs.get', window, RUN_DETAIL)}`),
    events: async (id: string, window: EventWindowQuery = {}) =>
      this.call<{ runId: string; events: TraceEventView[]; window: EventWindow }>('GET', `/api/v1/runs/${encodeURIComponent(id)}/events${checkedQuery('runs.events', window, EVENT_WINDOW)}`),
    route: (id: string) => this.call<{ runId: string; status: string; route: string | null; routeExplanation: Record<string, unknown> | null }>('GET', `/api/v1/runs/${encodeURIComponent(id)}/route`),
    integrity: (id: string) => this.call<RunIntegrity>('GET', `/api/v1/runs/${encodeURIComponent(id)}/integrity`),
    economics: (id: string) => this.call<Record<string, any>>('GET', `/api/v1/runs/${encodeURIComponent(id)}/economics`),
    receipt: (id: string) => this.call<Record<string, unknown>>('GET', `/api/v1/runs/${encodeURIComponent(id)}/receipt`),
    replayBundle: (id: string) => this.call<Record<string, unknown>>('GET', `/api/v1/runs/${encodeURIComponent(id)}/replay-bundle`),
    evidencePacket: (id: string) => this.call<Record<string, unknown>>('GET', `/api/v1/runs/${encodeURIComponent(id)}/evidence-packet`),
  };

  readonly economics = {
    savings: async (window: TimeWindow = {}) => this.call<Record<string, any>>('GET', `/api/v1/savings${checkedQuery('economics.savings', window, TIME_WINDOW)}`),
    usage: () => this.call<Record<string, any>>('GET', '/api/v1/usage'),
    attribution: async (params: AttributionQuery = {}) =>
      this.call<Record<string, any>>('GET', `/api/v1/usage/attribution${checkedQuery('economics.attribution', params, ATTRIBUTION_QUERY)}`),
  };

  readonly cache = {
    stats: () => this.answered<{ stats: CacheStat[] }>(ANSWERS.cacheStats, 'GET', '/api/v1/cache/stats'),
    invalidate: (body: { cacheType?: string; keyPrefix?: string; all?: boolean }) =>
      this.answered<{ invalidated: number; cacheType: string | null; keyPrefix: string | null }>(ANSWERS.invalidated, 'POST', '/api/v1/cache/invalidate', body),
  };

  /**
   * Users (docs/accounts.md): a platform admin sees every user, an organization admin the members of its
   * organization. Passwords are temporary: the user must change them at first sign-in.
   */
  readonly users = {
    list: async (filter: UserFilters = {}) =>
      this.answered<{ users: User[]; pagination: Pagination }>(ANSWERS.users, 'GET', `/api/v1/users${checkedQuery('users.list', filter, USER_FILTERS)}`),
    /** The user with this e-mail (exact, case-insensitive) among those the caller may see, or null. */
    findByEmail: async (email: string): Promise<User | null> => (await this.users.list({ email })).users[0] ?? null,
    /** `tempPassword` is generated when not given; the answer holds it, once. */
    create: (input: { email: string; name?: string; role?: PlatformRole; orgRole?: OrgRole; tempPassword?: string }) =>
      this.answered<{ user: User; tempPassword: string }>(ANSWERS.userWithPassword, 'POST', '/api/v1/users', input),
    update: (id: string, input: { name?: string; role?: PlatformRole }) =>
      this.answered<{ user: User }>(ANSWERS.user, 'PATCH', `/api/v1/users/${encodeURIComponent(id)}`, input),
    delete: (id: string) => this.answered<{ deleted: true; id: string }>(ANSWERS.deleted, 'DELETE', `/api/v1/users/${encodeURIComponent(id)}`),
    /** Ends the user's sessions and sets a one-time temporary password (in this answer only). */
    resetPassword: (id: string) => this.answered<{ user: User; tempPassword: string }>(ANSWERS.userWithPassword, 'POST', `/api/v1/users/${encodeURIComponent(id)}/reset-password`),
  };

  /**
   * Organizations (docs/accounts.md). Calls on "the active organization" act, for a session, in its active one; for
   * the local operator or the bootstrap token, in the organization of `inOrg(orgId)` (else the default one).
   */
  readonly orgs = {
    list: async (page: PageQuery = {}) =>
      this.answered<{ orgs: OrgSummary[]; pagination: Pagination }>(ANSWERS.orgs, 'GET', `/api/v1/orgs${checkedQuery('orgs.list', page, PAGE)}`),
    /** A session becomes the owner; a non-session platform admin names an existing user as `ownerEmail`. */
    create: (input: { name: string; ownerEmail?: string }) =>
      this.answered<{ org: OrgSummary }>(ANSWERS.org, 'POST', '/api/v1/orgs', input),
    /** Sessions only: make `orgId` the session's active organization. */
    switch: (orgId: string) => this.answered<{ org: OrgSummary }>(ANSWERS.org, 'POST', '/api/v1/orgs/switch', { orgId }),
    active: () => this.answered<ActiveOrg>(ANSWERS.activeOrg, 'GET', '/api/v1/orgs/active'),
    rename: (name: string) => this.answered<ActiveOrg>(ANSWERS.activeOrg, 'PATCH', '/api/v1/orgs/active', { name }),
    /** Deletes the organization and everything in it (users are kept); sends the API's `{confirm: true}`. */
    delete: () => this.answered<{ deleted: true; id: string }>(ANSWERS.deleted, 'DELETE', '/api/v1/orgs/active', { confirm: true }),
    setMemberRole: (userId: string, role: OrgRole) =>
      this.answered<ActiveOrg>(ANSWERS.activeOrg, 'PATCH', `/api/v1/orgs/active/members/${encodeURIComponent(userId)}`, { role }),
    /** Ends the member's sessions; the last owner cannot be removed (409 `last_owner`). */
    removeMember: (userId: string) => this.answered<ActiveOrg>(ANSWERS.activeOrg, 'DELETE', `/api/v1/orgs/active/members/${encodeURIComponent(userId)}`),
    /** The accept link is e-mailed to the address; the token is never returned. */
    invite: (input: { email: string; role?: OrgRole }) => this.answered<{ invite: Invite }>(ANSWERS.invite, 'POST', '/api/v1/orgs/active/invites', input),
    listInvites: async (filter: InviteFilters = {}) =>
      this.answered<{ invites: Invite[]; pagination: Pagination }>(ANSWERS.invites, 'GET', `/api/v1/orgs/active/invites${checkedQuery('orgs.listInvites', filter, INVITE_FILTERS)}`),
    revokeInvite: (id: string) => this.answered<{ invite: Invite }>(ANSWERS.invite, 'POST', `/api/v1/orgs/active/invites/${encodeURIComponent(id)}/revoke`),
    onboarding: () => this.call<{ workflowCount: number; agentCount: number; hasRuns: boolean; dismissed: boolean }>('GET', '/api/v1/orgs/active/onboarding'),
  };
}
