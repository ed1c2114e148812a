/**
 * The reference client of svc's management API (SPEC 4.20), used by the CLI and tests. Errors become
 * `SvcApiError` with the status and the `{error: {code, message}}` of the answer.
 */
import type { Transport } from './transport.ts';

export class SvcApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly requestId: string | null,
  ) {
    super(message);
    this.name = 'SvcApiError';
  }
}

export interface ApiKey {
  id: string;
  name: string;
  mode: 'observe' | 'optimize';
  appId: string | null;
  admin: boolean;
  tokenPrefix: string;
  status: 'active' | 'revoked';
  createdAt: string;
  revokedAt: string | null;
}

export interface AuditEvent {
  id: string;
  seq: number;
  action: string;
  decision: string;
  actor: Record<string, string>;
  target: string | null;
  details: Record<string, unknown>;
  createdAt: string;
}

export interface CacheStat {
  cacheType: string;
  entries: number;
  hits: number;
}

function query(params: Record<string, string | number | boolean | undefined>): string {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) if (value !== undefined) search.set(name, String(value));
  const text = search.toString();
  return text ? `?${text}` : '';
}

export class SvcClient {
  constructor(private readonly transport: Transport) {}

  async call<T>(method: string, path: string, body?: unknown): Promise<T> {
    const response = await this.transport.request(method, path, body);
    if (response.status >= 200 && response.status < 300) return response.body as T;
    const error = (response.body as { error?: { code?: string; message?: string } } | null)?.error;
    throw new SvcApiError(
      response.status,
      error?.code ?? `http_${response.status}`,
      error?.message ?? `HTTP ${response.status}`,
      response.headers['x-request-id'] ?? null,
    );
  }

  close(): Promise<void> {
    return this.transport.close();
  }

  health() {
    return this.call<Record<string, unknown>>('GET', '/health');
  }

  readonly keys = {
    create: (input: { name: string; admin?: boolean; appId?: string; mode?: 'observe' | 'optimize' }) =>
      this.call<{ key: ApiKey; token: string }>('POST', '/api/v1/keys', input),
    list: (page: { limit?: number; offset?: number } = {}) =>
      this.call<{ keys: ApiKey[]; pagination: Record<string, unknown> }>('GET', `/api/v1/keys${query(page)}`),
    setMode: (id: string, mode: 'observe' | 'optimize') =>
      this.call<{ key: ApiKey }>('PATCH', `/api/v1/keys/${encodeURIComponent(id)}`, { mode }),
    revoke: (id: string) => this.call<{ key: ApiKey }>('POST', `/api/v1/keys/${encodeURIComponent(id)}/revoke`),
  };

  readonly settings = {
    get: () => this.call<{ settings: Record<string, unknown> }>('GET', '/api/v1/settings'),
    set: (key: string, value: unknown) => this.call<{ settings: Record<string, unknown> }>('PUT', '/api/v1/settings', { key, value }),
  };

  readonly audit = {
    list: (options: { limit?: number; decision?: 'allow' | 'deny'; verify?: boolean } = {}) =>
      this.call<{ events: AuditEvent[]; integrity?: { ok: boolean; count: number; brokenAt: number | null } }>(
        'GET',
        `/api/v1/audit${query({ limit: options.limit, decision: options.decision, verify: options.verify ? 'true' : undefined })}`,
      ),
  };

  readonly cache = {
    stats: () => this.call<{ stats: CacheStat[] }>('GET', '/api/v1/cache/stats'),
    invalidate: (body: { cacheType?: string; keyPrefix?: string; all?: boolean }) =>
      this.call<{ invalidated: number; cacheType: string | null; keyPrefix: string | null }>('POST', '/api/v1/cache/invalidate', body),
  };
}
