/** Run rollups: backfilled by migrations 3, 8, 10 and 12 from runs recorded before them, and equal to a scan of the ledger. */
import assert from 'node:assert/strict';
import test from 'node:test';
import { MIGRATIONS, ROLLUP_BACKFILL_SQL } from '../../src/store/migrations.ts';
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

test('a ranked page of attribution holds the sums of a ledger scan, in a month, over all time, and for one app', async (t) => {
  // Three days of three apps: each (day, value) of a dimension has rows of several apps, which the reads sum per day
  // and value before they rank or total them.
  let now = Date.UTC(2026, 10, 10, 12);
  const { app, services } = await build(t, { overrides: { clock: { now: () => now } } });
  for (let i = 0; i < 24; i++) {
    if (i % 8 === 0 && i > 0) now += 86_400_000;
    await app.inject({
      method: 'POST',
      url: '/v1/chat/completions',
      headers: { 'x-svc-app': `app-${i % 3}`, 'x-svc-subject': `user-${i % 7}`, 'x-svc-agent': `agent-${i % 2}` },
      payload: { model: i % 5 === 0 ? 'mock-5xx' : 'gpt-4o-mini', messages: [{ role: 'user', content: `question ${i} ${'x'.repeat(i)}` }] },
    });
  }
  await services.store.flush();
  const scan = (column: 'subject' | 'agent', appId?: string) =>
    services.store.read((sql) =>
      sql.all<{ value: string; runs: number; promptTokens: number; completionTokens: number }>(
        `SELECT ${column} AS value, COUNT(*) AS runs, SUM(prompt_tokens) AS promptTokens, SUM(completion_tokens) AS completionTokens
         FROM runs WHERE status != 'running' ${appId ? 'AND app_id = ?' : ''} GROUP BY ${column} ORDER BY ${column}`,
        appId ? [appId] : [],
      ),
    );
  // The totals of finished runs, of every status and route (failed ones included), as attribution reports them.
  const scanTotals = (appId?: string, since = 0) =>
    services.store.read((sql) =>
      totalsOf(
        sql.get(
          `SELECT COUNT(*) AS runs, SUM(cost_usd) AS costUsd, SUM(prompt_tokens) AS promptTokens, SUM(completion_tokens) AS completionTokens,
             SUM(priced = 0) AS unpricedRuns FROM runs WHERE status != 'running' AND created_at >= ? ${appId ? 'AND app_id = ?' : ''}`,
          appId ? [since, appId] : [since],
        ),
      ),
    );
  const totalsOf = (totals: any) => ({
    runs: totals.runs,
    costUsd: Math.round(totals.costUsd * 1e9) / 1e9,
    promptTokens: totals.promptTokens,
    completionTokens: totals.completionTokens,
    unpricedRuns: totals.unpricedRuns,
  });
  const sorted = (entries: Array<{ value: string }>) => [...entries].sort((a, b) => (a.value < b.value ? -1 : 1));
  const pageOf = (entries: any[]) => sorted(entries.map((e) => ({ value: e.value, runs: e.runs, promptTokens: e.promptTokens, completionTokens: e.completionTokens })));
  // Two pages of three: the page's sums are read for the values the ranking chose, whichever window reads them.
  for (const window of ['', '&since=0']) {
    const first = json(await app.inject({ url: `/api/v1/usage/attribution?subjectLimit=3${window}` }));
    const second = json(await app.inject({ url: `/api/v1/usage/attribution?subjectLimit=4&subjectOffset=3${window}` }));
    assert.equal(first.bySubjectWindow.total, 7);
    assert.deepEqual(pageOf([...first.bySubject, ...second.bySubject]), await scan('subject'));
    const costs = [...first.bySubject, ...second.bySubject].map((e: any) => e.costUsd);
    assert.deepEqual(costs, [...costs].sort((a, b) => b - a), 'ranked by cost');
    // A dimension of few values: its page holds every row of the window.
    assert.deepEqual(pageOf(first.byAgent), await scan('agent'));
    assert.deepEqual(totalsOf(first.totals), await scanTotals());
  }
  const { rankedValues, totalsInScope } = await import('../../src/evidence/rollups.ts');
  const today = Math.floor(now / 86_400_000);
  for (const fromDay of [today - 30, 0]) {
    const scope = { tenantId: 'default', appId: 'app-1', fromDay, toDay: today };
    for (const dim of ['subject', 'agent'] as const) {
      const page = await services.store.read((sql) => rankedValues(sql, scope, dim, { limit: 50, offset: 0 }));
      assert.deepEqual(pageOf(page.entries), await scan(dim, 'app-1'));
    }
    assert.deepEqual(totalsOf(await services.store.read((sql) => totalsInScope(sql, scope))), await scanTotals('app-1'));
  }
  // Two days of the three: the totals are of the window's days only.
  const yesterday = new Date((today - 1) * 86_400_000).toISOString();
  const lastTwoDays = json(await app.inject({ url: `/api/v1/usage/attribution?since=${yesterday}` }));
  assert.deepEqual(totalsOf(lastTwoDays.totals), await scanTotals(undefined, (today - 1) * 86_400_000));
  assert.equal(lastTwoDays.totals.runs, 16);
});

test("migration 8 rebuilds the 'model' rows with status and route and adds 'provider' rows, on a data file written before it", async (t) => {
  const dir = tempDir(t);
  const day = 86_400_000;
  const now = Date.now();
  // model, provider, status, route, app, days back
  const runs: Array<[string, string | null, string, string | null, string | null, number]> = [
    ['gpt-4o-mini', 'chatcomp', 'completed', 'live', 'shop', 0],
    ['gpt-4o-mini', 'chatcomp', 'completed', 'live', 'shop', 0],
    ['gpt-4o-mini', null, 'completed', 'exact_cache', 'shop', 0],
    ['gpt-4o-mini', 'chatcomp', 'failed', 'live', null, 1],
    ['claude-x', 'messages', 'completed', 'live', 'shop', 1],
    ['claude-x', 'messages', 'completed', 'live', null, 9],
    ['claude-x', null, 'blocked', 'blocked', null, 9],
    ['claude-x', 'messages', 'running', null, 'shop', 0],
  ];
  const old = openStore({ dataDir: dir, migrations: MIGRATIONS.filter((m) => m.version <= 2) });
  await old.write((sql) => {
    runs.forEach(([model, provider, status, route, app, back], i) =>
      sql.run(
        `INSERT INTO runs (id, tenant_id, app_id, mode, wire, model, provider, status, route, cost_usd, created_at, last_hash)
         VALUES (?, 'default', ?, 'optimize', 'chat_completions', ?, ?, ?, ?, 0.25, ?, 'h')`,
        [`run_${i}`, app, model, provider, status, route, now - back * day - i * 1000],
      ),
    );
  });
  await old.close();
  // Up to migration 7, as a data file of the last release: its rollups backfilled by migration 3, without status and
  // route on the 'model' rows and without 'provider' rows.
  const before = openStore({ dataDir: dir, migrations: MIGRATIONS.filter((m) => m.version <= 7) });
  const shape = (store: typeof before) =>
    store.read((sql) =>
      sql.all<{ dim: string; value: string; day: number; app: string; status: string; route: string; runs: number; cost: number }>(
        `SELECT dim, value, day, app_id AS app, status, route, runs, cost_usd AS cost FROM run_rollups WHERE dim IN ('model', 'provider')
         ORDER BY dim, value, day, app_id, status, route`,
      ),
    );
  const rowsBefore = await shape(before);
  assert.ok(rowsBefore.length > 0 && rowsBefore.every((row) => row.dim === 'model' && row.status === '' && row.route === ''));
  await before.close();

  const { app, services } = await build(t, { dataDir: dir });
  const expected = new Map<string, { dim: string; value: string; day: number; app: string; status: string; route: string; runs: number; cost: number }>();
  runs.forEach(([model, provider, status, route, appId, back], i) => {
    if (status === 'running') return;
    for (const [dim, value] of [['model', model], ['provider', provider ?? '']] as const) {
      const row = { dim, value, day: Math.floor((now - back * day - i * 1000) / day), app: appId ?? '', status, route: route ?? '', runs: 0, cost: 0 };
      const key = JSON.stringify([row.dim, row.value, row.day, row.app, row.status, row.route]);
      const held = expected.get(key) ?? row;
      held.runs += 1;
      held.cost += 0.25;
      expected.set(key, held);
    }
  });
  const order = (rows: Array<{ dim: string; value: string; day: number; app: string; status: string; route: string }>) =>
    [...rows].sort((a, b) => JSON.stringify([a.dim, a.value, a.day, a.app, a.status, a.route]).localeCompare(JSON.stringify([b.dim, b.value, b.day, b.app, b.status, b.route])));
  assert.deepEqual(order(await shape(services.store)), order([...expected.values()]));

  // Each model once in attribution (the rows of before the migration are gone, not added to), and the runs list's
  // counts by model and provider from the rebuilt rows, the running run counted from the runs.
  const attribution = json(await app.inject({ url: `/api/v1/usage/attribution?since=${new Date(now - 30 * day).toISOString()}` }));
  assert.deepEqual(attribution.byModel.map((e: any) => [e.value, e.runs]).sort(), [['claude-x', 3], ['gpt-4o-mini', 4]]);
  for (const [query, total, status] of [
    ['model=claude-x', 4, { completed: 2, blocked: 1, running: 1 }],
    ['provider=messages', 3, { completed: 2, running: 1 }],
    ['provider=chatcomp&status=completed', 2, { completed: 2, failed: 1 }],
    ['model=gpt-4o-mini&route=live', 3, { completed: 2, failed: 1 }],
  ] as const) {
    const body = json(await app.inject({ url: `/api/v1/runs?${query}` }));
    assert.equal(body.pagination.total, total, query);
    assert.deepEqual(body.facets.status, status, query);
  }
});

test('migration 10 counts the unpriced runs of every rollup row of a data file written before it, as a rebuild of the rollups would', async (t) => {
  const dir = tempDir(t);
  const day = 86_400_000;
  const now = Date.now();
  // model, provider, status, route, app, priced, days back
  const runs: Array<[string, string | null, string, string | null, string | null, 0 | 1, number]> = [
    ['gpt-4o-mini', 'chatcomp', 'completed', 'live', 'shop', 1, 0],
    ['house-model', 'chatcomp', 'completed', 'live', 'shop', 0, 0],
    ['house-model', null, 'completed', 'exact_cache', 'shop', 0, 0],
    ['gpt-4o-mini', 'chatcomp', 'failed', 'live', null, 0, 1],
    ['gpt-4o-mini', 'chatcomp', 'failed', 'live', null, 1, 1],
    ['house-model', 'chatcomp', 'completed', 'live', null, 0, 9],
    ['house-model', 'chatcomp', 'running', null, 'shop', 0, 0],
  ];
  const old = openStore({ dataDir: dir, migrations: MIGRATIONS.filter((m) => m.version <= 2) });
  await old.write((sql) => {
    runs.forEach(([model, provider, status, route, app, priced, back], i) =>
      sql.run(
        `INSERT INTO runs (id, tenant_id, app_id, mode, wire, model, provider, status, route, cost_usd, priced, created_at, last_hash)
         VALUES (?, 'default', ?, 'optimize', 'chat_completions', ?, ?, ?, ?, ?, ?, ?, 'h')`,
        [`run_${i}`, app, model, provider, status, route, priced ? 0.25 : 0, priced, now - back * day - i * 1000],
      ),
    );
  });
  await old.close();
  // Up to migration 9, as a data file of the last release: its rollups without a count of unpriced runs.
  await openStore({ dataDir: dir, migrations: MIGRATIONS.filter((m) => m.version <= 9) }).close();

  const { app, services } = await build(t, { dataDir: dir });
  const since = `since=${new Date(now - 30 * day).toISOString()}`;
  const savings = json(await app.inject({ url: `/api/v1/savings?${since}` }));
  assert.equal(savings.totalRuns, 7);
  assert.equal(savings.unpricedRuns, 4, 'the finished unpriced runs; the running one is not costed yet');
  assert.equal(savings.costIsLowerBound, true);
  const attribution = json(await app.inject({ url: `/api/v1/usage/attribution?${since}` }));
  assert.deepEqual(attribution.byModel.map((e: any) => [e.value, e.runs, e.unpricedRuns]).sort(), [['gpt-4o-mini', 3, 1], ['house-model', 3, 3]]);
  assert.deepEqual(attribution.byApp.map((e: any) => [e.value, e.runs, e.unpricedRuns]).sort(), [['shop', 3, 2], [null, 3, 2]].sort());

  // Every row, of every dimension, holds the count a rebuild from the runs gives it.
  const rows = () =>
    services.store.read((sql) =>
      sql.all('SELECT tenant_id, dim, value, day, app_id, status, route, runs, unpriced_runs FROM run_rollups ORDER BY tenant_id, dim, day, value, app_id, status, route'),
    );
  const migrated = await rows();
  assert.ok(migrated.some((row: any) => row.dim === 'provider' && row.unpriced_runs > 0));
  await services.store.write((sql) => {
    sql.run('DELETE FROM run_rollups');
    for (const statement of ROLLUP_BACKFILL_SQL.split(';').filter((part) => part.trim())) sql.run(statement);
  });
  assert.deepEqual(migrated, await rows());
});

test("migration 12 sums the tokens of each rollup row's runs' attempts, as a rebuild of the rollups would, on a data file written before it", async (t) => {
  const dir = tempDir(t);
  const day = 86_400_000;
  const now = Date.now();
  // route, status, app, tokens answered (prompt, completion), each attempt's tokens, days back
  const runs: Array<[string | null, string, string | null, [number, number], Array<[number, number]>, number]> = [
    ['live', 'completed', 'shop', [100, 50], [[100, 50]], 0],
    ['exact_cache', 'completed', 'shop', [100, 50], [], 0],
    ['live', 'completed', null, [100, 50], [[7, 0], [100, 50]], 1], // served after a failed attempt that was billed
    ['live', 'failed', null, [0, 0], [[0, 0]], 1],
    ['exact_cache', 'completed', null, [30, 20], [], 9],
    [null, 'running', 'shop', [0, 0], [[40, 0]], 0],
  ];
  // Runs (and their attempts) recorded before the rollups: the migrations from 3 on backfill them, 12 last.
  const old = openStore({ dataDir: dir, migrations: MIGRATIONS.filter((m) => m.version <= 2) });
  await old.write((sql) =>
    runs.forEach(([route, status, app, [prompt, completion], attempts, back], i) => {
      sql.run(
        `INSERT INTO runs (id, tenant_id, app_id, mode, wire, model, status, route, prompt_tokens, completion_tokens, created_at, last_hash)
         VALUES (?, 'default', ?, 'optimize', 'chat_completions', 'gpt-4o-mini', ?, ?, ?, ?, ?, 'h')`,
        [`run_${i}`, app, status, route, prompt, completion, now - back * day - i * 1000],
      );
      attempts.forEach(([p, c], seq) =>
        sql.run(
          `INSERT INTO run_attempts (run_id, seq, provider, model, outcome, prompt_tokens, completion_tokens, latency_ms, created_at)
           VALUES (?, ?, 'chatcomp', 'gpt-4o-mini', 'success', ?, ?, 1, ?)`,
          [`run_${i}`, seq + 1, p, c, now],
        ),
      );
    }),
  );
  await old.close();

  const { app, services } = await build(t, { dataDir: dir });
  const since = `since=${new Date(now - 30 * day).toISOString()}`;
  const attribution = json(await app.inject({ url: `/api/v1/usage/attribution?${since}` }));
  const tokens = (entry: any) => [entry.promptTokens, entry.completionTokens, entry.actualPromptTokens, entry.actualCompletionTokens];
  assert.deepEqual(tokens(attribution.totals), [330, 170, 207, 100]);
  assert.deepEqual(attribution.byRoute.map((e: any) => [e.value, ...tokens(e)]).sort(), [['exact_cache', 130, 70, 0, 0], ['live', 200, 100, 207, 100]]);
  assert.deepEqual(attribution.byApp.map((e: any) => [e.value, ...tokens(e)]).sort(), [['shop', 200, 100, 100, 50], [null, 130, 70, 107, 50]].sort());

  // Every row, of every dimension, holds the sums a rebuild from the runs gives it.
  const rows = () =>
    services.store.read((sql) =>
      sql.all(
        `SELECT tenant_id, dim, value, day, app_id, status, route, runs, prompt_tokens, completion_tokens, actual_prompt_tokens,
           actual_completion_tokens FROM run_rollups ORDER BY tenant_id, dim, day, value, app_id, status, route`,
      ),
    );
  const migrated = await rows();
  await services.store.write((sql) => {
    sql.run('DELETE FROM run_rollups');
    for (const statement of ROLLUP_BACKFILL_SQL.split(';').filter((part) => part.trim())) sql.run(statement);
  });
  assert.deepEqual(migrated, await rows());
});

test('runs recorded before migration 3 get their execution method, reason and fallback from what each recorded, in the run and in attribution', async (t) => {
  const dir = tempDir(t);
  const day = 86_400_000;
  const now = Date.now();
  const explanation = (method: string, fallback: object | null) =>
    JSON.stringify({ route: 'live', reason: 'r', rejectedAlternatives: [], cache: [], artifact: null, fallback, executionMethod: { id: method, referenceGrade: 'not_applicable' } });
  const toFallback = { from: 'chatcomp', to: 'chatcomp-fallback', reason: 'upstream_error' };
  // status, route, execution method, fallback, error kind, days back: the runs of a data file of migration 2, whose
  // explanation and error say what migration 3's columns hold.
  const runs: Array<[string, string | null, string, object | null, string | null, number]> = [
    ['completed', 'live', 'live_model', null, null, 0],
    ['completed', 'exact_cache', 'exact_cache', null, null, 0],
    ['completed', 'live', 'live_model', toFallback, null, 0],
    ['failed', 'live', 'live_model', toFallback, 'upstream_error', 1],
    ['failed', 'live', 'mock_model', null, 'rate_limited', 3],
    ['completed', 'live', 'mock_model', null, null, 3],
  ];
  const old = openStore({ dataDir: dir, migrations: MIGRATIONS.filter((m) => m.version <= 2) });
  await old.write((sql) =>
    runs.forEach(([status, route, method, fallback, errorKind, back], i) =>
      sql.run(
        `INSERT INTO runs (id, tenant_id, mode, wire, model, status, route, explanation_json, error_json, cost_usd, prompt_tokens,
           completion_tokens, created_at, last_hash)
         VALUES (?, 'default', 'optimize', 'chat_completions', 'gpt-4o-mini', ?, ?, ?, ?, 0.25, 10, 5, ?, 'h')`,
        [`run_${i}`, status, route, explanation(method, fallback), errorKind ? JSON.stringify({ kind: errorKind, message: 'm' }) : null, now - back * day - i * 1000],
      ),
    ),
  );
  // A run still in flight: it has no reason yet, and no rollup rows until it finishes.
  await old.write((sql) =>
    sql.run(
      `INSERT INTO runs (id, tenant_id, mode, wire, model, status, created_at, last_hash)
       VALUES ('run_running', 'default', 'optimize', 'chat_completions', 'gpt-4o-mini', 'running', ?, 'h')`,
      [now],
    ),
  );
  await old.close();

  const { app, services } = await build(t, { dataDir: dir });
  const detail = async (id: string) => {
    const { run } = json(await app.inject({ url: `/api/v1/runs/${id}` }));
    return [run.executionMethod, run.reasonCode, run.fallback];
  };
  assert.deepEqual(await detail('run_0'), ['live_model', 'live', null]);
  assert.deepEqual(await detail('run_1'), ['exact_cache', 'exact_cache_hit', null]);
  assert.deepEqual(await detail('run_2'), ['live_model', 'live_fallback', 'chatcomp->chatcomp-fallback']);
  assert.deepEqual(await detail('run_3'), ['live_model', 'failed:upstream_error', 'chatcomp->chatcomp-fallback']);
  assert.deepEqual(await detail('run_4'), ['mock_model', 'failed:rate_limited', null]);

  const since = `since=${new Date(now - 30 * day).toISOString()}`;
  const attribution = json(await app.inject({ url: `/api/v1/usage/attribution?${since}` }));
  const entries = (list: any[]) => list.map((e: any) => [e.value, e.runs]).sort((a, b) => String(a[0]).localeCompare(String(b[0])));
  assert.deepEqual(entries(attribution.byExecutionMethod), [['exact_cache', 1], ['live_model', 3], ['mock_model', 2]]);
  assert.deepEqual(
    entries(attribution.byReason),
    [['exact_cache_hit', 1], ['failed:rate_limited', 1], ['failed:upstream_error', 1], ['live', 2], ['live_fallback', 1]],
  );
  assert.deepEqual(entries(attribution.byFallback), [['chatcomp->chatcomp-fallback', 2], [null, 4]]);
  assert.deepEqual(await detail('run_running'), [null, null, null]);

  // Every row, of every dimension, holds the sums a rebuild from the runs gives it.
  const rows = () => services.store.read((sql) => sql.all('SELECT * FROM run_rollups ORDER BY tenant_id, dim, day, value, app_id, status, route'));
  const migrated = await rows();
  await services.store.write((sql) => {
    sql.run('DELETE FROM run_rollups');
    for (const statement of ROLLUP_BACKFILL_SQL.split(';').filter((part) => part.trim())) sql.run(statement);
  });
  assert.deepEqual(migrated, await rows());
});
