/** Stored tenant settings: one row per explicitly set key; unset keys take their defaults in the service. */
import type { AlsoStep } from '../store/sql.ts';
import type { Store } from '../store/store.ts';

export interface StoredSetting {
  key: string;
  /** JSON of the value; for encrypted settings, JSON of the ciphertext string (or null). */
  valueJson: string;
  encrypted: boolean;
}

export interface SettingsRepository {
  list(tenantId: string): Promise<StoredSetting[]>;
  /**
   * Store one setting, with `also` (its audit row) in the same transaction. False when the organization is gone
   * (deleted while the request was under way): nothing is written. `unchanged` is asked, in the write, about the row
   * stored for the key: when it holds the value already, nothing is written and `also` does not run.
   */
  put(tenantId: string, setting: StoredSetting, now: number, also?: AlsoStep, unchanged?: (stored: StoredSetting) => boolean): Promise<boolean>;
  /**
   * The first `limit` stored secrets (encrypted settings holding a value, not null), in storage order: of the
   * organization `tenantId`, or of every organization for the platform's operator (null), which the check of the
   * master key needs (src/settings/undecryptable-secrets.ts). Their ciphertexts, never decrypted here.
   */
  storedSecrets(tenantId: string | null, limit: number): Promise<Array<{ tenantId: string; ciphertext: string }>>;
}

export function createSettingsRepository(store: Store): SettingsRepository {
  return {
    list(tenantId) {
      return store.read((sql) =>
        sql
          .all<{ key: string; value_json: string; encrypted: number }>(
            'SELECT key, value_json, encrypted FROM settings WHERE tenant_id = ?',
            [tenantId],
          )
          .map((row) => ({ key: row.key, valueJson: row.value_json, encrypted: row.encrypted === 1 })),
      );
    },
    storedSecrets(tenantId, limit) {
      return store.read((sql) =>
        sql
          .all<{ tenant_id: string; value_json: string }>(
            `SELECT tenant_id, value_json FROM settings WHERE encrypted = 1 AND value_json <> 'null'
             ${tenantId === null ? '' : 'AND tenant_id = ?'} ORDER BY rowid LIMIT ?`,
            tenantId === null ? [limit] : [tenantId, limit],
          )
          .map((row) => ({ tenantId: row.tenant_id, ciphertext: JSON.parse(row.value_json) as string })),
      );
    },
    put(tenantId, setting, now, also, unchanged) {
      return store.write((sql) => {
        if (!sql.get('SELECT 1 FROM tenants WHERE id = ?', [tenantId])) return false;
        const current = sql.get<{ value_json: string; encrypted: number }>('SELECT value_json, encrypted FROM settings WHERE tenant_id = ? AND key = ?', [
          tenantId,
          setting.key,
        ]);
        if (current && unchanged?.({ key: setting.key, valueJson: current.value_json, encrypted: current.encrypted === 1 })) return true;
        sql.run(
          `INSERT INTO settings (tenant_id, key, value_json, encrypted, updated_at) VALUES (?, ?, ?, ?, ?)
           ON CONFLICT (tenant_id, key) DO UPDATE SET value_json = excluded.value_json, encrypted = excluded.encrypted,
             updated_at = excluded.updated_at`,
          [tenantId, setting.key, setting.valueJson, setting.encrypted ? 1 : 0, now],
        );
        also?.(sql);
        return true;
      });
    },
  };
}
