/** Run rollups: backfilled by migration 3 from runs recorded before it, and equal to a scan of the ledger. */
import assert from 'node:assert/strict';
import test from 'node:test';
import { MIGRATIONS } from '../../src/store/migrations.ts';
import { openStore } from '../../src/store/store.ts';
import { build, json } from '../support/build.ts';
import { tempDir } from '../support/process.ts';

test('migration 3 backfills the rollups from finished runs of an older data file', async (t) => {
  const dir = tempDir(t);
  const old = openStore({ dataDir: dir, migrations: MIGRATIONS.filter((m) => m.version <= 2) });
  await old.write((sql) => {
    const insert = (id: string, status: string, route: string | null, cost: number, app: string | null) =>
      sql.run(
        `INSERT INTO runs (id, tenant_id, app_id, mode, wire, model, status, route, cost_usd, saved_usd, prompt_tokens, completion_tokens, created_at, last_hash)
         VALUES (?, 'default', ?, 'optimize', 'chat_completions', 'gpt-4o-mini', ?, ?, ?, ?, 10, 5, ?, 'h')`,
        [id, app, status, route, cost, route === 'exact_cache' ? 0.5 : 0, Date.now()],
      );
    insert('run_a', 'completed', 'live', 0.5, 'shop');
    insert('run_b', 'completed', 'exact_cache', 0, 'shop');
    insert('run_c', 'failed', 'live', 0.1, null);
    insert('run_d', 'running', null, 0, null);
  });
  await old.close();

  const { app } = await build(t, { dataDir: dir });
  const savings = json(await app.inject({ url: '/api/v1/savings' }));
  assert.equal(savings.totalRuns, 4);
  assert.equal(savings.liveRuns, 1);
  assert.equal(savings.optimizedRuns, 1);
  assert.equal(savings.failedRuns, 1);
  assert.equal(savings.runningRuns, 1);
  assert.equal(savings.totalCostUsd, 0.6);
  assert.equal(savings.totalSavedUsd, 0.5);
  const attribution = json(await app.inject({ url: '/api/v1/usage/attribution' }));
  assert.deepEqual(attribution.byApp.map((e: any) => [e.value, e.runs]), [['shop', 2], [null, 1]]);
});

test('rollups agree with a full scan of the ledger after mixed traffic', async (t) => {
  const { app, services } = await build(t);
  for (let i = 0; i < 30; i++) {
    const model = i % 3 === 0 ? 'mock-5xx' : 'gpt-4o-mini';
    await app.inject({
      method: 'POST',
      url: '/v1/chat/completions',
      headers: { 'x-svc-app': `app-${i % 4}`, 'x-svc-subject': `user-${i % 5}` },
      payload: { model, messages: [{ role: 'user', content: `q ${i % 10}` }] },
    });
  }
  await services.store.flush();
  const scan = await services.store.read((sql) =>
    sql.all<{ app: string | null; runs: number; tokens: number }>(
      "SELECT app_id AS app, COUNT(*) AS runs, SUM(prompt_tokens + completion_tokens) AS tokens FROM runs WHERE status != 'running' GROUP BY app_id ORDER BY app_id",
    ),
  );
  const attribution = json(await app.inject({ url: '/api/v1/usage/attribution?appLimit=50' }));
  const fromRollups = attribution.byApp.map((e: any) => ({ app: e.value, runs: e.runs, tokens: e.totalTokens })).sort((a: any, b: any) => (a.app < b.app ? -1 : 1));
  assert.deepEqual(fromRollups, scan);
  const statuses = await services.store.read((sql) => sql.all<{ status: string; n: number }>('SELECT status, COUNT(*) AS n FROM runs GROUP BY status'));
  const savings = json(await app.inject({ url: '/api/v1/savings' }));
  const count = (status: string) => statuses.find((row) => row.status === status)?.n ?? 0;
  assert.equal(savings.failedRuns, count('failed'));
  assert.equal(savings.liveRuns + savings.optimizedRuns, count('completed'));
});
