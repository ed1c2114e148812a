/**
 * `GET /api/v1/cache/stats` (SPEC 4.11) counts what the caller may see: an app-pinned key the entries its own app's
 * requests stored (the exact cache's key holds the app, docs/gateway.md), as runs lists are scoped to the pinned
 * app; a tenant-wide identity every entry of the tenant.
 */
import assert from 'node:assert/strict';
import test from 'node:test';
import { createCacheRepository } from '../../src/caches/repo.ts';
import { MIGRATIONS } from '../../src/store/migrations.ts';
import { openStore } from '../../src/store/store.ts';
import { bearer, build, json } from '../support/build.ts';
import { tempDir } from '../support/process.ts';

const BOOT = 'bootstrap-token-cache-stats-scope-01';

test("an app-pinned key's cache stats count its own app's entries; a tenant-wide identity's every app's", async (t) => {
  const { app } = await build(t, { env: { SVC_API_KEY: BOOT } });
  const keyOf = async (appId: string) => {
    const created = await app.inject({ method: 'POST', url: '/api/v1/keys', headers: bearer(BOOT), payload: { name: appId, appId } });
    assert.equal(created.statusCode, 201, created.body);
    return json(created).token as string;
  };
  const [ofA, ofB] = [await keyOf('app-a'), await keyOf('app-b')];
  const chat = await app.inject({
    method: 'POST',
    url: '/v1/chat/completions',
    headers: bearer(ofA),
    payload: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'cached for app-a only' }] },
  });
  assert.equal(chat.statusCode, 200, chat.body);
  assert.equal(chat.headers['x-svc-route'], 'live');

  const exactOf = async (token: string) => {
    const stats = await app.inject({ url: '/api/v1/cache/stats', headers: bearer(token) });
    assert.equal(stats.statusCode, 200, stats.body);
    return json(stats).stats.find((row: { cacheType: string }) => row.cacheType === 'exact_response');
  };
  assert.deepEqual(await exactOf(ofB), { cacheType: 'exact_response', entries: 0, hits: 0 });
  assert.deepEqual(await exactOf(ofA), { cacheType: 'exact_response', entries: 1, hits: 0 });
  assert.deepEqual(await exactOf(BOOT), { cacheType: 'exact_response', entries: 1, hits: 0 });
});

test("migration 15 gives the entries of an older data file the app of the run that stored them, for the pinned keys' stats", async (t) => {
  const dataDir = tempDir(t);
  const older = openStore({ dataDir, migrations: MIGRATIONS.filter((migration) => migration.version < 15) });
  await older.write((sql) => {
    const run = (id: string, tenant: string, app: string | null) =>
      sql.run(
        `INSERT INTO runs (id, tenant_id, app_id, mode, wire, model, status, created_at, last_hash) VALUES (?, ?, ?, 'optimize', 'chat_completions', 'm', 'completed', 1, '')`,
        [id, tenant, app],
      );
    run('run_a', 'ten_a', 'app-a');
    run('run_b', 'ten_a', 'app-b');
    run('run_other', 'ten_b', 'app-a');
    const entry = (key: string, tenant: string, source: string | null) =>
      sql.run("INSERT INTO cache_entries (tenant_id, cache_type, key, value_json, source_run_id, created_at) VALUES (?, 'exact_response', ?, '{}', ?, 1)", [tenant, key, source]);
    entry('of-a', 'ten_a', 'run_a');
    entry('of-b', 'ten_a', 'run_b');
    // Another tenant's run of the same name of app: not this entry's app.
    entry('foreign-source', 'ten_a', 'run_other');
    entry('run-gone', 'ten_a', 'run_pruned');
  });
  await older.close();
  const store = openStore({ dataDir });
  t.after(() => store.close());
  const repo = createCacheRepository(store);
  const entries = async (appId: string | null) => (await repo.stats('ten_a', appId)).find((row) => row.cacheType === 'exact_response')?.entries ?? 0;
  assert.equal(await entries('app-a'), 1);
  assert.equal(await entries('app-b'), 1);
  assert.equal(await entries(null), 4);
});
