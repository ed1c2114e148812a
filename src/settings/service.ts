/**
 * Tenant settings (SPEC 2.4, 4.8): read by any identity of the tenant (secrets masked, connector grants withheld
 * from app-pinned identities), written one key at a time by a tenant-wide admin only.
 */
import { canonicalJson } from '../core/canonical-json.ts';
import type { Clock } from '../core/clock.ts';
import { AppError, invalid, notFound } from '../core/errors.ts';
import type { AuditRecord, AuditService } from '../audit/service.ts';
import type { AuthContext } from '../identity/auth-context.ts';
import type { KeysService } from '../keys/service.ts';
import type { SecretCipher } from '../secrets/vault-cipher.ts';
import type { SettingsRepository, StoredSetting } from './repo.ts';
import { findUndecryptableSecrets, type UndecryptableSecrets } from './undecryptable-secrets.ts';
import {
  SECRET_MASK,
  SETTINGS,
  WEBHOOK_URL_MAX,
  defaultSettings,
  isSecretSetting,
  isSettingKey,
  type ConnectorGrants,
  type SettingKey,
  type SettingsMap,
} from './schema.ts';

/**
 * Checks that a URL is a public http(s) target; throws an AppError otherwise (src/net/url-guard.ts). `tenantId`: the
 * organization the URL is saved for, whose share of the check's DNS lookups it counts against. Resolves with the URL
 * as the check parsed it (its WHATWG serialisation), which is what is stored: what is used later is what was checked.
 */
export type PublicUrlCheck = (url: string, tenantId: string) => Promise<string>;

export type SettingsView = Partial<Record<SettingKey, unknown>>;

/** What an app-pinned identity reads as the value of a `settings.update` of a setting withheld from it. */
export const WITHHELD_MASK = '[withheld]';

/** Settings app-pinned identities do not receive: the connector grants name other apps' keys, agents and subjects. */
function withheldFrom(auth: AuthContext, key: unknown): boolean {
  return key === 'managed_connector_grants' && !auth.tenantWide;
}

/**
 * An audit row as `auth` may read it (the audit service's `view`): the log is readable by any identity of the tenant
 * (SPEC 4.12), and a `settings.update` row holds the new value, so a withheld setting's value is masked there too.
 */
export function auditRowView(auth: AuthContext, record: AuditRecord): AuditRecord {
  if (record.action !== 'settings.update' || !withheldFrom(auth, record.target)) return record;
  return { ...record, details: { ...record.details, value: WITHHELD_MASK } };
}

export interface SettingsService {
  /** What an identity may see: secrets as `[set]` (or null when unset), grants withheld from app-pinned callers. */
  view(auth: AuthContext): Promise<SettingsView>;
  update(auth: AuthContext, key: string, value: unknown): Promise<SettingsView>;
  /** Decrypted effective settings for internal use (webhooks, gateway); never returned over HTTP. */
  effective(tenantId: string): Promise<SettingsMap>;
  /**
   * One effective setting, the others left unread: a reader of `retention_days` (the retention pass) does not depend
   * on decrypting the tenant's secrets, which fails once the master key changed (docs/configuration.md).
   */
  effectiveValue<K extends SettingKey>(tenantId: string, key: K): Promise<SettingsMap[K]>;
  /**
   * Of the first `limit` stored secrets of `tenantId` (every organization's: null), those the current master key does
   * not decrypt (src/settings/undecryptable-secrets.ts): readiness and `svc serve`'s start report them.
   */
  undecryptableSecrets(tenantId: string | null, limit: number): Promise<UndecryptableSecrets>;
}

export function createSettingsService(deps: {
  repo: SettingsRepository;
  keys: Pick<KeysService, 'findById'>;
  audit: AuditService;
  cipher: SecretCipher;
  checkPublicUrl: PublicUrlCheck;
  clock: Clock;
}): SettingsService {
  const { repo, keys, audit, cipher, checkPublicUrl, clock } = deps;

  function decoded(stored: StoredSetting): unknown {
    const value = JSON.parse(stored.valueJson) as unknown;
    return stored.encrypted && typeof value === 'string' ? cipher.decrypt(value) : value;
  }

  /** The tenant's stored settings over the defaults, each stored one read by `read`. */
  async function storedOverDefaults(tenantId: string, read: (stored: StoredSetting) => unknown): Promise<SettingsMap> {
    const settings = defaultSettings() as Record<string, unknown>;
    for (const stored of await repo.list(tenantId)) {
      if (!isSettingKey(stored.key)) continue; // a key retired by a later version
      settings[stored.key] = read(stored);
    }
    return settings as SettingsMap;
  }

  function effective(tenantId: string): Promise<SettingsMap> {
    return storedOverDefaults(tenantId, decoded);
  }

  /**
   * What an identity sees. A secret shows only whether it is set, so it is left encrypted (its ciphertext or null):
   * one stored under another master key, which no longer decrypts, reads `[set]` and leaves the other settings
   * readable and writable (it is repaired by setting it again).
   */
  async function visible(auth: AuthContext): Promise<SettingsView> {
    return mask(auth, await storedOverDefaults(auth.tenantId, (stored) => JSON.parse(stored.valueJson) as unknown));
  }

  async function effectiveValue<K extends SettingKey>(tenantId: string, key: K): Promise<SettingsMap[K]> {
    const stored = (await repo.list(tenantId)).find((setting) => setting.key === key);
    return (stored ? decoded(stored) : structuredClone(SETTINGS[key].default)) as SettingsMap[K];
  }

  async function validateGrants(tenantId: string, grants: ConnectorGrants): Promise<void> {
    const bindingByKey = new Map<string, string>();
    for (const [index, grant] of grants.grants.entries()) {
      for (const [position, keyId] of grant.keyIds.entries()) {
        const key = await keys.findById(tenantId, keyId);
        // Named by its place, not its value: what was sent may be a key's token pasted in place of its id, and an
        // error answer (or a log of it) must not carry a credential.
        if (!key || key.revokedAt !== null) {
          throw invalid(`grants[${index}].keyIds[${position}]: unknown or revoked key (keyIds are key ids, never tokens)`);
        }
        if (key.appId === null) throw invalid(`grants[${index}]: key ${keyId} is not app-pinned; grants need app-pinned keys`);
        if (key.appId !== grant.appId) throw invalid(`grants[${index}]: key ${keyId} is pinned to another app`);
        const binding = JSON.stringify([grant.agentId, grant.subject]);
        const previous = bindingByKey.get(keyId);
        if (previous !== undefined && previous !== binding) {
          throw invalid(`grants[${index}]: every grant naming key ${keyId} must bind the same agentId and subject`);
        }
        bindingByKey.set(keyId, binding);
      }
    }
  }

  function mask(auth: AuthContext, settings: SettingsMap): SettingsView {
    const view: SettingsView = {};
    for (const key of Object.keys(SETTINGS) as SettingKey[]) {
      if (withheldFrom(auth, key)) continue;
      const value = settings[key];
      view[key] = isSecretSetting(key) ? (value === null ? null : SECRET_MASK) : value;
    }
    return view;
  }

  return {
    view: visible,

    async update(auth, key, rawValue) {
      if (!auth.admin) throw new AppError('admin_required');
      if (!auth.tenantWide) throw new AppError('tenant_admin_required');
      if (!isSettingKey(key)) {
        throw new AppError('unsupported_setting', { message: `Unknown setting "${key}".`, details: { key } });
      }
      const parsed = SETTINGS[key].schema.safeParse(rawValue);
      if (!parsed.success) {
        throw invalid(`Invalid value for ${key}: ${parsed.error.issues.map((issue) => issue.message).join('; ')}`, {
          key,
          issues: parsed.error.issues.map((issue) => ({ path: issue.path.join('.'), message: issue.message })),
        });
      }
      let value: unknown = parsed.data;
      if (key === 'webhook_url' && typeof value === 'string') {
        const trimmed = value.trim();
        value = trimmed === '' ? null : trimmed;
        // Webhooks must be public in every mode, open dev mode included (SPEC 2.4).
        if (value !== null) value = await checkPublicUrl(value as string, auth.tenantId);
        // Percent-encoding and punycode lengthen a URL: what is stored keeps the setting's own bound.
        if (typeof value === 'string' && value.length > WEBHOOK_URL_MAX) {
          throw invalid(`Invalid value for webhook_url: longer than ${WEBHOOK_URL_MAX} characters once serialised (percent-encoded, the host in punycode).`, { key });
        }
      }
      if (key === 'managed_connector_grants') await validateGrants(auth.tenantId, value as ConnectorGrants);
      const secret = isSecretSetting(key);
      const stored = secret && value !== null ? cipher.encrypt(value as string) : value;
      const written = await repo.put(
        auth.tenantId,
        { key, valueJson: JSON.stringify(stored), encrypted: secret },
        clock.now(),
        audit.staged(auth, 'settings.update', { target: key, details: { key, value: secret ? (value === null ? null : SECRET_MASK) : value } }),
        // The value the setting has is no change (a secret compared decrypted: its ciphertext differs every time), so
        // of two identical puts at once one is recorded (docs/api.md "A row per change made"). A stored value that
        // no longer decrypts (another master key) differs: setting it again is how it is repaired.
        (current) => {
          try {
            return canonicalJson(decoded(current)) === canonicalJson(value);
          } catch {
            return false;
          }
        },
      );
      if (!written) throw notFound('Organization');
      return visible(auth);
    },

    effective,
    effectiveValue,
    undecryptableSecrets: (tenantId, limit) => findUndecryptableSecrets({ repo, cipher }, tenantId, limit),
  };
}
