/** Cache administration (SPEC 4.11, 8): per-tier stats and audited invalidation. */
import { AppError, invalid } from '../core/errors.ts';
import type { AuditService } from '../audit/service.ts';
import type { AuthContext } from '../identity/auth-context.ts';
import type { CacheEntry, CacheRepository } from './repo.ts';

/** Tiers svc knows (SPEC 2.5 names the first four); invalidating an unknown tier is a 400, not a silent no-op. */
export const CACHE_TYPES = ['exact_response', 'tool_result', 'som', 'negative', 'tool_plan', 'semantic_response'] as const;
export type CacheType = (typeof CACHE_TYPES)[number];

export const KEY_PREFIX_MAX = 512;

/** SPEC 8's rule for an invalidation's key prefix, as its refusals word it; the CLI checks it before asking to confirm. */
export const KEY_PREFIX_RULE = `non-empty, without surrounding whitespace, and at most ${KEY_PREFIX_MAX} characters`;

export function keyPrefixHolds(keyPrefix: string): boolean {
  return keyPrefix.length > 0 && keyPrefix.trim() === keyPrefix && keyPrefix.length <= KEY_PREFIX_MAX;
}

export interface InvalidateRequest {
  cacheType?: string | undefined;
  keyPrefix?: string | undefined;
  all?: boolean | undefined;
}

export interface CacheService {
  stats(auth: AuthContext): Promise<{ stats: Array<{ cacheType: string; entries: number; hits: number }> }>;
  invalidate(auth: AuthContext, request: InvalidateRequest): Promise<{ invalidated: number; cacheType: string | null; keyPrefix: string | null }>;
  /** Settles once every entry stored before the start can be found (the key index is loaded after start-up). */
  loaded(): Promise<void>;
}

export function createCacheService(deps: { repo: CacheRepository; audit: AuditService }): CacheService {
  const { repo, audit } = deps;
  return {
    async stats(auth) {
      // An app-pinned key sees its own app's entries, as it sees its own app's runs (docs/gateway.md).
      const rows = await repo.stats(auth.tenantId, auth.tenantWide ? null : auth.appId);
      const byType = new Map(rows.map((row) => [row.cacheType, row]));
      // Every known tier is listed, empty ones with zeros, so dashboards have stable rows.
      const stats = CACHE_TYPES.map((cacheType) => byType.get(cacheType) ?? { cacheType, entries: 0, hits: 0 });
      for (const row of rows) if (!CACHE_TYPES.includes(row.cacheType as CacheType)) stats.push(row);
      return { stats };
    },

    async invalidate(auth, request) {
      if (!auth.admin) throw new AppError('admin_required');
      if (!auth.tenantWide) throw new AppError('tenant_admin_required');
      const cacheType = request.cacheType ?? null;
      const keyPrefix = request.keyPrefix ?? null;
      if (cacheType !== null && !CACHE_TYPES.includes(cacheType as CacheType)) {
        throw invalid(`Unknown cacheType "${cacheType}"; expected one of ${CACHE_TYPES.join(', ')}.`);
      }
      if (keyPrefix !== null) {
        if (!keyPrefixHolds(keyPrefix)) throw invalid(`keyPrefix must be ${KEY_PREFIX_RULE}.`);
        if (cacheType === null) throw invalid('keyPrefix requires cacheType.');
      }
      if (request.all === true && (cacheType !== null || keyPrefix !== null)) {
        throw invalid('all: true clears every tier of the tenant; it cannot be combined with cacheType or keyPrefix.');
      }
      if (request.all === false && cacheType === null) {
        throw invalid('Omitting cacheType clears every tier; pass all: true (or omit all) to confirm, or name a cacheType.');
      }
      // The row in the last write of the invalidation: appended after it, a crash between the two lost it.
      const invalidated = await repo.invalidate(auth.tenantId, { cacheType, keyPrefix }, (invalidated) =>
        audit.staged(auth, 'cache.invalidate', { target: cacheType ?? 'all', details: { cacheType, keyPrefix, invalidated } }),
      );
      return { invalidated, cacheType, keyPrefix };
    },

    loaded: () => repo.loaded(),
  };
}

/**
 * What the gateway pipeline needs of the caches: look up, store (deferred to the next group commit, visible to
 * lookups at once) and count hits. Services use this, never the repository.
 */
export interface ResponseCache {
  /** The most bytes an entry's value may have written out as JSON (`SVC_CACHE_MAX_ENTRY_BYTES`); a larger one is not stored. */
  readonly maxEntryBytes: number;
  get(tenantId: string, cacheType: string, key: string): Promise<CacheEntry | null>;
  /** Store an entry, its value given written out as JSON (UTF-8) too: stored as it is (CacheRepository.putDeferred). */
  putDeferred(entry: Omit<CacheEntry, 'hits' | 'lastHitAt'>, valueJson: Uint8Array): void;
  /** Drop the entry of a key (lookups miss it at once), as the next group commit deletes its row. */
  dropDeferred(tenantId: string, cacheType: string, key: string): void;
  recordHitDeferred(tenantId: string, cacheType: string, key: string, at: number): void;
}

/**
 * The default of `SVC_CACHE_MAX_ENTRY_BYTES`. Text answers are far below it (the longest chat completions, ~128,000
 * tokens, are ~0.5 MB as JSON); what comes near it is media as base64: a chat answer's audio (about a minute of 24 kHz
 * PCM is ~3.8 MB, of MP3 ~1.3 MB) or a generated image (a 1024x1024 PNG ~1.5-3 MB). SQLite, in WebAssembly, takes
 * about three times a value's bytes of memory to write it, and that memory never goes back to the system: a 60 MB
 * answer stored left svc ~200 MB larger for good.
 */
export const DEFAULT_CACHE_MAX_ENTRY_BYTES = 8 * 1024 * 1024;

export function createResponseCache(repo: CacheRepository, options: { maxEntryBytes?: number } = {}): ResponseCache {
  return {
    maxEntryBytes: options.maxEntryBytes ?? DEFAULT_CACHE_MAX_ENTRY_BYTES,
    get: (tenantId, cacheType, key) => repo.get(tenantId, cacheType, key),
    putDeferred: (entry, valueJson) => repo.putDeferred(entry, valueJson),
    dropDeferred: (tenantId, cacheType, key) => repo.dropDeferred(tenantId, cacheType, key),
    recordHitDeferred: (tenantId, cacheType, key, at) => repo.recordHitDeferred(tenantId, cacheType, key, at),
  };
}
