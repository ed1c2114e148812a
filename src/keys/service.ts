/**
 * API key management (SPEC 2.2, 4.6). Keys belong to a tenant, not to a user: no account operation revokes them.
 *
 * Who may do what (docs/api.md):
 * - a tenant-wide admin (unpinned admin key, bootstrap token, owner/admin session, local operator) manages every
 *   key of its tenant;
 * - an app-pinned admin key manages only keys pinned to its own app, and cannot mint admin keys, so a pinned
 *   key never widens its own authority;
 * - non-admin identities manage nothing.
 */
import type { Clock } from '../core/clock.ts';
import { AppError, invalid, notFound } from '../core/errors.ts';
import { newId, newToken, sha256Hex } from '../core/ids.ts';
import type { Page } from '../core/pagination.ts';
import { pageOf } from '../core/pagination.ts';
import type { AuditService } from '../audit/service.ts';
import type { AuthContext, KeyMode } from '../identity/auth-context.ts';
import type { AlsoStep } from '../store/sql.ts';
import type { ApiKey, ApiKeysRepository } from './repo.ts';

/** Every svc API key starts with this; the rest is 256 random bits, base64url. */
export const API_KEY_PREFIX = 'svc_';
const SHOWN_PREFIX_LENGTH = API_KEY_PREFIX.length + 6;

export interface CreateKeyInput {
  name: string;
  mode: KeyMode;
  appId?: string | null;
  admin?: boolean;
}

export interface KeysService {
  create(auth: AuthContext, input: CreateKeyInput): Promise<{ key: ApiKey; token: string }>;
  list(auth: AuthContext, page: { limit: number; offset: number }): Promise<{ keys: ApiKey[]; pagination: Page }>;
  setMode(auth: AuthContext, id: string, mode: KeyMode): Promise<ApiKey>;
  revoke(auth: AuthContext, id: string): Promise<ApiKey>;
  /**
   * The live (unrevoked) key a presented token belongs to, or null. `tokenHash` is the token's `sha256Hex`: the caller
   * has it already (it tests the same hash against the bootstrap token first).
   */
  authenticate(token: string, tokenHash: string): Promise<ApiKey | null>;
  /** True when the token has our prefix: a caller presenting it meant an svc key, so a miss is a hard 401. */
  looksLikeKey(token: string): boolean;
  /** A key of the tenant by id, for other services' checks (e.g. connector grants); not an authorisation. */
  findById(tenantId: string, id: string): Promise<ApiKey | null>;
}

/** A mode change of a revoked key: checked before the write and, for a revocation made meanwhile, after it. */
function revokedConflict(): AppError {
  return new AppError('conflict', { message: 'The API key is revoked.' });
}

function requireAdmin(auth: AuthContext): void {
  if (!auth.admin) throw new AppError('admin_required');
}

/** An app-pinned admin only sees and touches keys of its own app. */
function visibleTo(auth: AuthContext, key: ApiKey): boolean {
  return auth.tenantWide || key.appId === auth.appId;
}

export interface KeysDeps {
  repo: ApiKeysRepository;
  audit: AuditService;
  clock: Clock;
  /**
   * What else a key's revocation does in its write: the invitations the key sent lapse with it (src/accounts, wired
   * in src/services.ts, so keys import nothing of accounts).
   */
  revokedAlso?: (tenantId: string, keyId: string) => AlsoStep;
}

export function createKeysService(deps: KeysDeps): KeysService {
  const { repo, audit, clock, revokedAlso } = deps;

  async function findVisible(auth: AuthContext, id: string): Promise<ApiKey> {
    const key = await repo.findById(auth.tenantId, id);
    if (!key || !visibleTo(auth, key)) throw notFound('API key');
    return key;
  }

  return {
    async create(auth, input) {
      requireAdmin(auth);
      let appId = input.appId ?? null;
      if (!auth.tenantWide) {
        if (input.admin) throw new AppError('tenant_admin_required', { message: 'An app-pinned key cannot create admin keys.' });
        if (appId !== null && appId !== auth.appId) {
          throw new AppError('forbidden', { message: 'An app-pinned key can only create keys pinned to its own app.' });
        }
        appId = auth.appId;
      }
      const token = newToken(API_KEY_PREFIX);
      const id = newId('key');
      const key = await repo.insert(
        {
          id,
          tenantId: auth.tenantId,
          name: input.name,
          mode: input.mode,
          appId,
          admin: input.admin ?? false,
          tokenHash: sha256Hex(token),
          tokenPrefix: token.slice(0, SHOWN_PREFIX_LENGTH),
          createdAt: clock.now(),
        },
        audit.staged(auth, 'key.create', { target: id, details: { name: input.name, mode: input.mode, appId, admin: input.admin ?? false } }),
      );
      if (!key) throw notFound('Organization');
      return { key, token };
    },

    async list(auth, { limit, offset }) {
      requireAdmin(auth);
      const { keys, total } = await repo.list(auth.tenantId, {
        limit,
        offset,
        ...(auth.tenantWide ? {} : { appId: auth.appId ?? '' }),
      });
      return { keys, pagination: pageOf(limit, offset, total) };
    },

    async setMode(auth, id, mode) {
      requireAdmin(auth);
      const existing = await findVisible(auth, id);
      if (existing.revokedAt !== null) throw revokedConflict();
      if (existing.mode === mode) return existing;
      // Checked again inside the write: only a change of mode is made and audited, once, whatever raced it.
      const key = await repo.setMode(auth.tenantId, id, mode, audit.staged(auth, 'key.mode_change', { target: id, details: { from: existing.mode, to: mode, appId: existing.appId } }));
      if (!key) throw notFound('API key');
      if (key.revokedAt !== null) throw revokedConflict();
      return key;
    },

    async revoke(auth, id) {
      requireAdmin(auth);
      const existing = await findVisible(auth, id);
      if (existing.revokedAt !== null) return existing;
      const ownRow = audit.staged(auth, 'key.revoke', { target: id, details: { name: existing.name, appId: existing.appId } });
      const also = revokedAlso?.(auth.tenantId, id);
      const key = await repo.revoke(auth.tenantId, id, clock.now(), also ? (sql) => (ownRow(sql), also(sql)) : ownRow);
      if (!key) throw notFound('API key');
      return key;
    },

    async authenticate(token, tokenHash) {
      if (!token.startsWith(API_KEY_PREFIX)) return null;
      const key = await repo.findByTokenHash(tokenHash);
      return key && key.revokedAt === null ? key : null;
    },

    findById: (tenantId, id) => repo.findById(tenantId, id),
    looksLikeKey(token) {
      return token.startsWith(API_KEY_PREFIX);
    },
  };
}

export function assertKeyName(name: string): string {
  const trimmed = name.trim();
  if (!trimmed) throw invalid('name must be a non-empty string');
  return trimmed;
}
