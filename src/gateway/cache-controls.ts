/**
 * The cache request controls of SPEC 4.2 and the exact-response cache key.
 *
 * | header                        | serve from cache | write the fresh answer |
 * | X-Svc-Cache-Bypass: true      | no               | yes (refresh)          |
 * | Cache-Control: no-cache       | no               | yes (refresh)          |
 * | Cache-Control: max-age=0      | no               | yes (refresh)          |
 * | Cache-Control: no-store       | no               | no (takes precedence)  |
 */
import { canonicalJson } from '../core/canonical-json.ts';
import { sha256Hex } from '../core/ids.ts';

export interface CacheControls {
  serve: boolean;
  store: boolean;
  /** The header that caused a skip or suppression, for the trace and route explanation. */
  control: string | null;
}

/** The answer for a request without either header (nearly all of them): shared, never mutated by callers. */
const DEFAULT_CONTROLS: CacheControls = Object.freeze({ serve: true, store: true, control: null });

export function parseCacheControls(headers: { bypass?: string | undefined; cacheControl?: string | undefined }): CacheControls {
  if (headers.bypass === undefined && headers.cacheControl === undefined) return DEFAULT_CONTROLS;
  const directives = (headers.cacheControl ?? '')
    .toLowerCase()
    .split(',')
    .map((part) => part.trim().replace(/\s+/g, ''))
    .filter(Boolean);
  if (directives.includes('no-store')) return { serve: false, store: false, control: 'cache-control: no-store' };
  if ((headers.bypass ?? '').trim().toLowerCase() === 'true') return { serve: false, store: true, control: 'x-svc-cache-bypass: true' };
  if (directives.includes('no-cache')) return { serve: false, store: true, control: 'cache-control: no-cache' };
  if (directives.includes('max-age=0')) return { serve: false, store: true, control: 'cache-control: max-age=0' };
  return { serve: true, store: true, control: null };
}

/**
 * Request fields that cannot change the model's output. Everything else in the body is part of the key: listing
 * what to leave out (rather than what to include) means a field svc does not know yet can never make two different
 * requests share an answer, the cache-key bug peers shipped.
 */
const NON_OUTPUT_FIELDS = new Set(['stream', 'stream_options', 'user', 'metadata', 'store', 'prompt_cache_key', 'safety_identifier', 'service_tier']);

export interface CacheScope {
  tenantId: string;
  appId: string | null;
  subject: string | null;
}

/**
 * `sha256(canonical_json({wire, scope, output-affecting body fields, headers}))`, prefixed by the wire for key-prefix
 * invalidation. `headers`: those of the request that can change the answer (WireAdapter.cacheHeaders), beside the body
 * rather than among its fields, which a client names as it likes. `mock`: the request is answered by the mock provider
 * (no live one configured). Its made-up answers key apart, so that once a provider is configured the same request goes
 * to it instead of getting the mock's answer as the model's. A live request's key has no such member, so entries
 * stored by live providers stay valid.
 */
export function exactCacheKey(wire: string, scope: CacheScope, body: Record<string, unknown>, headers: Record<string, unknown> | undefined, mock: boolean): string {
  const fields: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(body)) {
    if (!NON_OUTPUT_FIELDS.has(name)) fields[name] = value;
  }
  // `parallel_tool_calls` defaults to true upstream: an explicit true and an omitted field are the same request,
  // while `false` stays apart (serial and parallel tool plans must never share an answer).
  if (fields.parallel_tool_calls === true) delete fields.parallel_tool_calls;
  // A response's items are stored upstream unless its request said `store: false` (true is the default): an answer
  // whose items were never stored must not serve a request that stores, whose next turn names them by id. Set always,
  // so that no entry keyed without it (filled by either) is served.
  if (wire === 'responses') fields.store = body.store !== false;
  const identity: Record<string, unknown> = { wire, tenant: scope.tenantId, app: scope.appId, subject: scope.subject, body: fields };
  if (headers !== undefined) identity.headers = headers;
  if (mock) identity.provider = 'mock';
  const digest = sha256Hex(canonicalJson(identity));
  return `${wire}:${digest}`;
}
