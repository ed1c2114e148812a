/** Stored tenant settings: one row per explicitly set key; unset keys take their defaults in the service. */
import type { Store } from '../store/store.ts';

export interface StoredSetting {
  key: string;
  /** JSON of the value; for encrypted settings, JSON of the ciphertext string (or null). */
  valueJson: string;
  encrypted: boolean;
}

export interface SettingsRepository {
  list(tenantId: string): Promise<StoredSetting[]>;
  put(tenantId: string, setting: StoredSetting, now: number): Promise<void>;
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
    put(tenantId, setting, now) {
      return store.write((sql) => {
        sql.run(
          `INSERT INTO settings (tenant_id, key, value_json, encrypted, updated_at) VALUES (?, ?, ?, ?, ?)
           ON CONFLICT (tenant_id, key) DO UPDATE SET value_json = excluded.value_json, encrypted = excluded.encrypted,
             updated_at = excluded.updated_at`,
          [tenantId, setting.key, setting.valueJson, setting.encrypted ? 1 : 0, now],
        );
      });
    },
  };
}
