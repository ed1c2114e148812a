/**
 * The reference client of svc's management API (SPEC 4.20), used by the CLI and tests. Errors become
 * `SvcApiError` with the status and the `{error: {code, message}}` of the answer.
 */
import type { Transport } from './transport.ts';

/**
 * A non-2xx answer. `code` and `message` come from the `{error: {code, message}}` envelope when there is one
 * (`http_<status>` and a generic message otherwise); per SPEC 4.20 the error also carries the method, the path,
 * the status and the first 500 characters of the body.
 */
export class SvcApiError extends Error {
  readonly status: number;
  readonly code: string;
  readonly method: string;
  readonly path: string;
  /** The first 500 characters of the response body. */
  readonly body: string;
  /** `x-request-id` of the answer, when the server sent one. */
  readonly requestId: string | null;

  constructor(init: { status: number; code: string; message: string; method: string; path: string; body: string; requestId: string | null }) {
    super(init.message);
    this.name = 'SvcApiError';
    this.status = init.status;
    this.code = init.code;
    this.method = init.method;
    this.path = init.path;
    this.body = init.body.slice(0, 500);
    this.requestId = init.requestId;
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

/** The result of `verify=true`: whether the tenant's hash chain recomputes, and where it breaks if not. */
export interface AuditIntegrity {
  ok: boolean;
  count: number;
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
  error: null | { kind: string; message: string };
  eventCount: number;
  routeExplanation: Record<string, unknown> | null;
  createdAt: string;
  completedAt: string | null;
}

export interface TraceEventView {
  seq: number;
  type: string;
  payload: Record<string, unknown>;
  createdAt: string;
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

export interface RunFilters {
  limit?: number;
  offset?: number;
  route?: string;
  status?: string;
  provider?: string;
  model?: string;
  /** ISO 8601 or epoch milliseconds. */
  since?: string | number;
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

function query(params: Record<string, string | number | boolean | undefined>): string {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) if (value !== undefined) search.set(name, String(value));
  const text = search.toString();
  return text ? `?${text}` : '';
}

/**
 * Typed calls to the management API over any `Transport`. No retries (SPEC 4.20): a failure is thrown once, as
 * `SvcApiError` for an answer outside 2xx, or the transport's own error when svc could not be reached.
 */
export class SvcClient {
  constructor(private readonly transport: Transport) {}

  /** Send one request; resolves with the parsed JSON body of a 2xx answer. */
  async call<T>(method: string, path: string, body?: unknown): Promise<T> {
    const response = await this.transport.request(method, path, body);
    if (response.status >= 200 && response.status < 300) return response.body as T;
    const envelope = response.body as { error?: { code?: unknown; message?: unknown } } | null;
    const error = typeof envelope === 'object' && envelope !== null ? envelope.error : undefined;
    throw new SvcApiError({
      status: response.status,
      code: typeof error?.code === 'string' ? error.code : `http_${response.status}`,
      message: typeof error?.message === 'string' ? error.message : `${method} ${path} failed with HTTP ${response.status}`,
      method,
      path,
      body: response.text,
      requestId: response.headers['x-request-id'] ?? null,
    });
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
      this.call<{ key: ApiKey; token: string }>('POST', '/api/v1/keys', input),
    list: (page: { limit?: number; offset?: number } = {}) =>
      this.call<{ keys: ApiKey[]; pagination: Pagination }>('GET', `/api/v1/keys${query(page)}`),
    setMode: (id: string, mode: KeyMode) =>
      this.call<{ key: ApiKey }>('PATCH', `/api/v1/keys/${encodeURIComponent(id)}`, { mode }),
    revoke: (id: string) => this.call<{ key: ApiKey }>('POST', `/api/v1/keys/${encodeURIComponent(id)}/revoke`),
  };

  readonly settings = {
    /** Every setting; secrets read back as `[set]` (or null when unset). */
    get: () => this.call<{ settings: Record<string, unknown> }>('GET', '/api/v1/settings'),
    /** Change one setting (`null` clears it); answers with every setting. */
    set: (key: string, value: unknown) => this.call<{ settings: Record<string, unknown> }>('PUT', '/api/v1/settings', { key, value }),
  };

  readonly audit = {
    list: (options: { limit?: number; decision?: 'allow' | 'deny'; verify?: boolean } = {}) =>
      this.call<{ events: AuditEvent[]; integrity?: AuditIntegrity }>(
        'GET',
        `/api/v1/audit${query({ limit: options.limit, decision: options.decision, verify: options.verify ? 'true' : undefined })}`,
      ),
  };

  readonly runs = {
    list: (filters: RunFilters = {}) =>
      this.call<{ runs: RunSummary[]; pagination: Pagination; facets: { route: Record<string, number>; status: Record<string, number> } }>(
        'GET',
        `/api/v1/runs${query({ ...filters })}`,
      ),
    get: (id: string, window: { limit?: number; before?: number } = {}) =>
      this.call<{ run: RunSummary; events: TraceEventView[]; window: EventWindow; attempts: Array<Record<string, unknown>>; sideEffects: Array<Record<string, unknown>>; feedback: Array<Record<string, unknown>> }>(
        'GET',
        `/api/v1/runs/${encodeURIComponent(id)}${query(window)}`,
      ),
    events: (id: string, window: { limit?: number; before?: number } = {}) =>
      this.call<{ runId: string; events: TraceEventView[]; window: EventWindow }>('GET', `/api/v1/runs/${encodeURIComponent(id)}/events${query(window)}`),
    route: (id: string) => this.call<{ runId: string; status: string; route: string | null; routeExplanation: Record<string, unknown> | null }>('GET', `/api/v1/runs/${encodeURIComponent(id)}/route`),
    integrity: (id: string) => this.call<RunIntegrity>('GET', `/api/v1/runs/${encodeURIComponent(id)}/integrity`),
    economics: (id: string) => this.call<Record<string, any>>('GET', `/api/v1/runs/${encodeURIComponent(id)}/economics`),
    receipt: (id: string) => this.call<Record<string, unknown>>('GET', `/api/v1/runs/${encodeURIComponent(id)}/receipt`),
    replayBundle: (id: string) => this.call<Record<string, unknown>>('GET', `/api/v1/runs/${encodeURIComponent(id)}/replay-bundle`),
    evidencePacket: (id: string) => this.call<Record<string, unknown>>('GET', `/api/v1/runs/${encodeURIComponent(id)}/evidence-packet`),
  };

  readonly economics = {
    savings: (window: { since?: string | number; until?: string | number } = {}) => this.call<Record<string, any>>('GET', `/api/v1/savings${query(window)}`),
    usage: () => this.call<Record<string, any>>('GET', '/api/v1/usage'),
    attribution: (params: Record<string, string | number> = {}) => this.call<Record<string, any>>('GET', `/api/v1/usage/attribution${query(params)}`),
  };

  readonly cache = {
    stats: () => this.call<{ stats: CacheStat[] }>('GET', '/api/v1/cache/stats'),
    invalidate: (body: { cacheType?: string; keyPrefix?: string; all?: boolean }) =>
      this.call<{ invalidated: number; cacheType: string | null; keyPrefix: string | null }>('POST', '/api/v1/cache/invalidate', body),
  };
}
