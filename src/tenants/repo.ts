/** Tenants (organizations). The default tenant `default` / `Default` exists from the first start (SPEC 2.1). */
import type { Store } from '../store/store.ts';
import { DEFAULT_TENANT_ID, DEFAULT_TENANT_NAME } from './defaults.ts';

export { DEFAULT_TENANT_ID, DEFAULT_TENANT_NAME };

export interface Tenant {
  id: string;
  name: string;
  createdAt: number;
}

export interface TenantsRepository {
  ensureDefault(now: number): Promise<void>;
  find(id: string): Promise<Tenant | null>;
  /** Every tenant id (background jobs such as retention walk them). */
  listIds(): Promise<string[]>;
}

export function createTenantsRepository(store: Store): TenantsRepository {
  return {
    ensureDefault(now) {
      return store.write((sql) => {
        sql.run('INSERT OR IGNORE INTO tenants (id, name, created_at) VALUES (?, ?, ?)', [
          DEFAULT_TENANT_ID,
          DEFAULT_TENANT_NAME,
          now,
        ]);
      });
    },
    listIds() {
      return store.read((sql) => sql.all<{ id: string }>('SELECT id FROM tenants ORDER BY id').map((row) => row.id));
    },
    find(id) {
      return store.read((sql) => {
        const row = sql.get<{ id: string; name: string; created_at: number }>(
          'SELECT id, name, created_at FROM tenants WHERE id = ?',
          [id],
        );
        return row ? { id: row.id, name: row.name, createdAt: row.created_at } : null;
      });
    },
  };
}
