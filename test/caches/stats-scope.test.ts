/**
 * `GET /api/v1/cache/stats` (SPEC 4.11) counts what the caller may see: an app-pinned key the entries its own app's
 * requests stored (the exact cache's key holds the app, docs/gateway.md), as runs lists are scoped to the pinned
 * app; a tenant-wide identity every entry of the tenant.
 */
import assert from 'node:assert/strict';
import test from 'node:test';
import { createCacheRepository, type CacheEntry } from '../../src/caches/repo.ts';
import { MIGRATIONS } from '../../src/store/migrations.ts';
import type { Sql, SqlParams } from '../../src/store/sql.ts';
import { openStore, type Store } from '../../src/store/store.ts';
import { DEFAULT_TENANT_ID } from '../../src/tenants/defaults.ts';
import { bearer, build, json } from '../support/build.ts';
import { overriding } from '../support/counting-store.ts';
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

/**
 * `statsOf` answers a caller's stats, and `reads`: the reads of the cache's table (cache_entries) it made, with the
 * loop's turns between them; `direct` what the entries count to, in one query.
 */
async function watchedStats(t: test.TestContext) {
  let log: string[] | null = null;
  let store: Store | null = null;
  const { app, services } = await build(t, {
    env: { SVC_API_KEY: BOOT },
    wrapStore: (inner) =>
      (store = overriding(inner, {
        read: (target) => (fn) =>
          target.read((sql) => {
            let cached = false;
            const watched: Sql = {
              secureDelete: (on) => sql.secureDelete(on),
              run: (text, params) => sql.run(text, params),
              get: (text, params) => ((cached ||= text.includes('FROM cache_entries')), sql.get(text, params)),
              all: <T>(text: string, params?: SqlParams) => ((cached ||= text.includes('FROM cache_entries')), sql.all<T>(text, params)),
            };
            const result = fn(watched);
            if (cached) log?.push('read');
            return result;
          }),
      })),
  });
  await services.cache.loaded();
  const key = await app.inject({ method: 'POST', url: '/api/v1/keys', headers: bearer(BOOT), payload: { name: 'pinned', appId: 'app-pinned' } });
  assert.equal(key.statusCode, 201, key.body);
  const statsOf = async (token: string) => {
    log = [];
    const response = await app.inject({ url: '/api/v1/cache/stats', headers: bearer(token) });
    const reads = log.join(' ');
    log = null;
    assert.equal(response.statusCode, 200, response.body);
    const rows = (json(response).stats as Array<{ cacheType: string; entries: number; hits: number }>).filter((row) => row.entries > 0);
    return { rows, reads };
  };
  const direct = (appId: string | null) => directCount(store!, DEFAULT_TENANT_ID, appId);
  return { app, store: store!, pinned: json(key).token as string, statsOf, direct };
}

/** What a tenant's (or its app's) entries count to, counted from the entries themselves. */
const directCount = (store: Store, tenantId: string, appId: string | null) =>
  store.read((sql) =>
    sql.all<{ cacheType: string; entries: number; hits: number }>(
      `SELECT cache_type AS cacheType, COUNT(*) AS entries, SUM(hits) AS hits FROM cache_entries
       WHERE tenant_id = ? AND (? IS NULL OR app_id = ?) GROUP BY cache_type ORDER BY cache_type`,
      [tenantId, appId, appId],
    ),
  );

test("a large cache's stats read no entry (they cost the same at any size), and equal a direct count", async (t) => {
  const { app, store, pinned, statsOf, direct } = await watchedStats(t);
  // The tenant's entries interleaved with another tenant's (same apps, same tiers), some with no app.
  const count = 2_500;
  await store.write((sql) => {
    for (let i = 0; i < count; i++) {
      for (const tenantId of i % 3 === 0 ? [DEFAULT_TENANT_ID, 'ten_other'] : [DEFAULT_TENANT_ID]) {
        sql.run('INSERT INTO cache_entries (tenant_id, cache_type, key, app_id, value_json, hits, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)', [
          tenantId,
          i % 5 === 0 ? 'tool_result' : 'exact_response',
          `key-${i}`,
          i % 4 === 0 ? 'app-pinned' : i % 4 === 1 ? null : 'app-other',
          '{"answer":1}',
          i % 7,
          1_000 + i,
        ]);
      }
    }
  });
  const fixture = (await direct('app-pinned')).find((row) => row.cacheType === 'exact_response');
  assert.ok(fixture && fixture.entries > 0 && fixture.hits > 0, 'the fixture counts to something');
  // Answered just before the stats, its entry not committed yet: counted (the stats flush first).
  const chat = await app.inject({
    method: 'POST',
    url: '/v1/chat/completions',
    headers: bearer(pinned),
    payload: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'stored just before the stats' }] },
  });
  assert.equal(chat.statusCode, 200, chat.body);

  for (const [caller, token, appId] of [
    ['the tenant-wide token', BOOT, null],
    ['the app-pinned key', pinned, 'app-pinned'],
  ] as const) {
    const { rows, reads } = await statsOf(token);
    assert.deepEqual(rows, await direct(appId), `stats of ${caller}`);
    assert.equal(reads, '', `the entries read for ${caller}`);
  }
  assert.equal((await statsOf(pinned)).rows.find((row) => row.cacheType === 'exact_response')?.entries, fixture.entries + 1);
});

test('the counts stay equal to the entries through stores, hits, refreshes under another app, invalidation, retention and a purge', async (t) => {
  const store = openStore({ dataDir: null, loadedTurnMs: 0 });
  t.after(() => store.close());
  const repo = createCacheRepository(store);
  await repo.loaded();
  const entry = (tenantId: string, key: string, appId: string | null, createdAt: number, cacheType = 'exact_response'): Omit<CacheEntry, 'hits' | 'lastHitAt'> => ({
    tenantId,
    cacheType,
    key,
    appId,
    value: { answer: key },
    sourceRunId: null,
    costUsd: 0,
    latencyMs: 1,
    createdAt,
  });
  const agree = async (step: string) => {
    for (const tenantId of ['ten_a', 'ten_b']) {
      for (const appId of [null, 'app-1', 'app-2']) {
        assert.deepEqual(await repo.stats(tenantId, appId), await directCount(store, tenantId, appId), `${step}: ${tenantId}, app ${appId}`);
      }
    }
  };
  for (let i = 0; i < 30; i++) {
    repo.putDeferred(entry('ten_a', `k${i}`, i % 3 === 0 ? null : i % 3 === 1 ? 'app-1' : 'app-2', 1_000 + i, i % 4 === 0 ? 'tool_result' : 'exact_response'));
    repo.putDeferred(entry('ten_b', `k${i}`, 'app-1', 1_000 + i));
  }
  await agree('stored');
  for (let i = 0; i < 30; i += 2) repo.recordHitDeferred('ten_a', 'exact_response', `k${i}`, 5_000);
  repo.recordHitDeferred('ten_a', 'exact_response', 'k1', 5_001);
  repo.recordHitDeferred('ten_b', 'exact_response', 'k1', 5_001);
  await agree('hits');
  assert.ok((await repo.stats('ten_a', 'app-1')).some((row) => row.hits > 0));
  // A refresh keeps the row and its hits, under the app of the request that stored it this time.
  repo.putDeferred(entry('ten_a', 'k1', 'app-2', 2_000));
  repo.putDeferred(entry('ten_a', 'k2', null, 2_000));
  repo.putDeferred(entry('ten_a', 'k5', 'app-2', 2_000));
  await agree('refreshed');
  repo.recordHitDeferred('ten_a', 'exact_response', 'k1', 5_002);
  repo.dropDeferred('ten_a', 'exact_response', 'k7');
  await agree('a hit after the refresh, a dropped entry');
  assert.ok((await repo.invalidate('ten_a', { cacheType: 'exact_response', keyPrefix: 'k1' })) > 0);
  await agree('invalidated by prefix');
  assert.ok((await repo.pruneTenant('ten_a', 1_020, 100)) > 0);
  await agree('pruned by retention');
  // Rows written behind the repository's back count too.
  await store.write((sql) => sql.run("INSERT INTO cache_entries (tenant_id, cache_type, key, app_id, value_json, hits, created_at) VALUES ('ten_b', 'tool_result', 'raw', 'app-2', '{}', 4, 1)"));
  await agree('a row written directly');
  // A deleted organization's purge deletes everything it had: no count of it is left.
  await repo.pruneTenant('ten_b', Number.MAX_SAFE_INTEGER, 1_000);
  assert.deepEqual(await repo.stats('ten_b', null), []);
  await agree('purged');
  assert.deepEqual(await store.read((sql) => sql.all("SELECT * FROM cache_counts WHERE tenant_id = 'ten_b'")), []);
  assert.equal(await repo.invalidate('ten_a', { cacheType: null, keyPrefix: null }) > 0, true);
  assert.deepEqual(await repo.stats('ten_a', null), []);
  await agree('all invalidated');
});

test('migration 17 counts the entries of an older data file', async (t) => {
  const dataDir = tempDir(t);
  const older = openStore({ dataDir, migrations: MIGRATIONS.filter((migration) => migration.version < 17) });
  await older.write((sql) => {
    for (let i = 0; i < 20; i++) {
      sql.run('INSERT INTO cache_entries (tenant_id, cache_type, key, app_id, value_json, hits, created_at) VALUES (?, ?, ?, ?, ?, ?, 1)', [
        i % 2 === 0 ? 'ten_a' : 'ten_b',
        i % 5 === 0 ? 'tool_result' : 'exact_response',
        `k${i}`,
        i % 3 === 0 ? null : `app-${i % 3}`,
        '{}',
        i,
      ]);
    }
  });
  await older.close();
  const store = openStore({ dataDir });
  t.after(() => store.close());
  const repo = createCacheRepository(store);
  for (const tenantId of ['ten_a', 'ten_b']) {
    for (const appId of [null, 'app-1', 'app-2']) assert.deepEqual(await repo.stats(tenantId, appId), await directCount(store, tenantId, appId));
  }
  assert.ok((await repo.stats('ten_a', null)).length > 0);
});
