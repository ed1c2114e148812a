/** Retention: runs (with events and attempts) and cache entries older than `retention_days` are pruned in batches. */
import assert from 'node:assert/strict';
import test from 'node:test';
import { build, json } from '../support/build.ts';
import { RETENTION_BATCH } from '../../src/retention/service.ts';
import { createRunsRepository, PRUNE_EVENTS_PER_WRITE } from '../../src/evidence/repo.ts';
import { createLedger } from '../../src/evidence/ledger.ts';
import { openStore } from '../../src/store/store.ts';
import { completedOutcome, runStart } from '../support/run-outcome.ts';
import { deletesPerWrite, overriding } from '../support/counting-store.ts';
import type { Sql, SqlParams } from '../../src/store/sql.ts';
import type { Store } from '../../src/store/store.ts';
import { createSecretCipher } from '../../src/secrets/vault-cipher.ts';

const DAY = 86_400_000;

/** Runs started by hand are finished (the retention pass leaves runs still running alone). */
const FINISHED = completedOutcome('m');

test('retention prunes old runs, their trace events and attempts, and old cache entries, per tenant window', async (t) => {
  let now = Date.UTC(2026, 0, 1);
  const { app, services } = await build(t, { overrides: { clock: { now: () => now } } });
  const ask = (content: string) =>
    app.inject({ method: 'POST', url: '/v1/chat/completions', payload: { model: 'gpt-4o-mini', messages: [{ role: 'user', content }] } });

  const old = (await ask('old question')).headers['x-svc-run-id'] as string;
  // Many old runs so the pass needs several batches.
  for (let i = 0; i < RETENTION_BATCH * 2 + 5; i++) {
    const run = services.ledger.start(runStart({ model: 'm' }));
    run.event('x', { i });
    run.finish(FINISHED);
  }
  now += 31 * DAY;
  const fresh = (await ask('new question')).headers['x-svc-run-id'] as string;
  await services.store.flush();

  const report = await services.retention.runOnce();
  assert.equal(report.runsDeleted, RETENTION_BATCH * 2 + 6);
  assert.equal(report.cacheEntriesDeleted, 1);
  assert.equal((await app.inject({ url: `/api/v1/runs/${old}` })).statusCode, 404);
  assert.equal((await app.inject({ url: `/api/v1/runs/${fresh}` })).statusCode, 200);
  const leftovers = await services.store.read((sql) => ({
    events: sql.get<{ n: number }>('SELECT COUNT(*) AS n FROM run_events WHERE run_id = ?', [old])!.n,
    attempts: sql.get<{ n: number }>('SELECT COUNT(*) AS n FROM run_attempts WHERE run_id = ?', [old])!.n,
    runs: sql.get<{ n: number }>('SELECT COUNT(*) AS n FROM runs')!.n,
  }));
  assert.deepEqual(leftovers, { events: 0, attempts: 0, runs: 1 });
  const savings = json(await app.inject({ url: '/api/v1/savings' }));
  assert.equal(savings.totalRuns, 1, 'pruned runs leave the savings rollup too');
  assert.equal(savings.liveRuns, 1);
  assert.equal((await ask('old question')).headers['x-svc-route'], 'live', 'the pruned cache entry no longer serves');
  assert.equal((await ask('new question')).headers['x-svc-route'], 'exact_cache', 'a fresh entry stays');

  // A shorter window set through the settings API applies on the next pass.
  const put = await app.inject({ method: 'PUT', url: '/api/v1/settings', payload: { key: 'retention_days', value: 1 } });
  assert.equal(put.statusCode, 200, put.body);
  now += 2 * DAY;
  await services.retention.runOnce();
  assert.equal(json(await app.inject({ url: '/api/v1/runs' })).pagination.total, 0);
});

test('a pruned unpriced run leaves the count of unpriced runs of the rollup rows it shared with a run kept', async (t) => {
  const day0 = Date.UTC(2026, 0, 1);
  let now = day0 + 1 * 3_600_000;
  const { app, services } = await build(t, { overrides: { clock: { now: () => now } } });
  const start = runStart({ model: 'm' });
  services.ledger.start(start).finish({ ...FINISHED, priced: false });
  now = day0 + 13 * 3_600_000;
  services.ledger.start(start).finish(FINISHED);
  await services.store.flush();
  const since = `since=${new Date(day0).toISOString()}`;
  assert.equal(json(await app.inject({ url: `/api/v1/savings?${since}` })).unpricedRuns, 1);

  // Retention's cut-off (30 days back) falls between the two runs of the same UTC day: their rows keep the later one.
  now = day0 + 30 * DAY + 7 * 3_600_000;
  assert.equal((await services.retention.runOnce()).runsDeleted, 1);
  const savings = json(await app.inject({ url: `/api/v1/savings?${since}` }));
  assert.equal(savings.totalRuns, 1);
  assert.equal(savings.unpricedRuns, 0);
  assert.equal(savings.costIsLowerBound, false);
  const left = await services.store.read((sql) => sql.get<{ n: number }>('SELECT SUM(unpriced_runs) AS n FROM run_rollups')!.n);
  assert.equal(left, 0, 'no row of any dimension counts the pruned run');
});

test('a pruned live run takes the tokens providers processed out of the rollup rows it shared with a cache hit of it that is kept', async (t) => {
  const day0 = Date.UTC(2026, 0, 1);
  let now = day0 + 1 * 3_600_000;
  const { app, services } = await build(t, { overrides: { clock: { now: () => now } } });
  const ask = () => app.inject({ method: 'POST', url: '/v1/chat/completions', payload: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'asked twice' }] } });
  assert.equal((await ask()).headers['x-svc-route'], 'live');
  now = day0 + 13 * 3_600_000;
  assert.equal((await ask()).headers['x-svc-route'], 'exact_cache');
  await services.store.flush();
  const since = `since=${new Date(day0).toISOString()}`;
  const totals = async () => json(await app.inject({ url: `/api/v1/usage/attribution?${since}` })).totals;
  const before = await totals();
  assert.equal(before.actualTotalTokens * 2, before.totalTokens, 'answered twice, processed once');

  // Retention's cut-off (30 days back) falls between the two runs of the same UTC day: their rows keep the hit.
  now = day0 + 30 * DAY + 7 * 3_600_000;
  assert.equal((await services.retention.runOnce()).runsDeleted, 1);
  const after = await totals();
  assert.equal(after.runs, 1);
  assert.equal(after.totalTokens, before.totalTokens / 2);
  assert.equal(after.actualTotalTokens, 0, 'the hit processed nothing');
  const left = await services.store.read((sql) => sql.get<{ n: number }>('SELECT SUM(actual_prompt_tokens + actual_completion_tokens) AS n FROM run_rollups')!.n);
  assert.equal(left, 0, 'no row of any dimension counts the pruned run');
});

test("pruned runs leave the model and provider rollups: the runs list by model or provider counts the runs left", async (t) => {
  let now = Date.UTC(2026, 0, 1);
  const { app, services } = await build(t, { overrides: { clock: { now: () => now } } });
  const record = (model: string, provider: string | null, status: 'completed' | 'failed', route: 'live' | 'exact_cache') => {
    const run = services.ledger.start(runStart({ appId: route === 'live' ? 'shop' : null, model }));
    run.finish({ ...completedOutcome(model), status, route, provider });
  };
  // The same models, providers, statuses and routes before and after the window: pruning must take exactly the old.
  const traffic = () => {
    record('a', 'chatcomp', 'completed', 'live');
    record('a', 'chatcomp', 'failed', 'live');
    record('a', null, 'completed', 'exact_cache');
    record('b', 'messages', 'completed', 'live');
  };
  traffic();
  traffic();
  now += 31 * DAY;
  traffic();
  await services.store.flush();
  assert.equal((await services.retention.runOnce()).runsDeleted, 8);

  for (const [query, total, status] of [
    ['model=a', 3, { completed: 2, failed: 1 }],
    ['model=b', 1, { completed: 1 }],
    ['provider=chatcomp', 2, { completed: 1, failed: 1 }],
    ['provider=messages&status=failed', 0, { completed: 1 }],
    ['model=a&route=live', 2, { completed: 1, failed: 1 }],
  ] as const) {
    const body = json(await app.inject({ url: `/api/v1/runs?${query}` }));
    assert.equal(body.pagination.total, total, query);
    assert.deepEqual(body.facets.status, status, query);
  }
  // No row is left of the pruned day.
  const rows = await services.store.read((sql) =>
    sql.all<{ dim: string; day: number; runs: number }>("SELECT dim, day, runs FROM run_rollups WHERE dim IN ('model', 'provider')"),
  );
  assert.ok(rows.length > 0 && rows.every((row) => row.day === Math.floor(now / DAY) && row.runs > 0), JSON.stringify(rows));
});

test('the retention query plans use the tenant/created_at indexes', async (t) => {
  const { services } = await build(t);
  const plans = await services.store.read((sql) => ({
    cache: sql.all<{ detail: string }>('EXPLAIN QUERY PLAN SELECT rowid FROM cache_entries WHERE tenant_id = ? AND created_at < ? LIMIT ?', ['default', 1, 1]),
    list: sql.all<{ detail: string }>('EXPLAIN QUERY PLAN SELECT * FROM runs WHERE tenant_id = ? ORDER BY created_at DESC, id DESC LIMIT 50', ['default']),
  }));
  assert.match(plans.cache.map((row) => row.detail).join(' '), /USING (COVERING )?INDEX cache_entries_tenant_created/);
  assert.doesNotMatch(plans.list.map((row) => row.detail).join(' '), /SCAN runs(?! USING)/);
});

test('a retention pass seeks the expired finished runs through the status index, never reading the runs left running', async (t) => {
  // Every query of runs the pass makes in its writes, to read its plan after.
  let selects: Array<{ text: string; params: SqlParams | undefined }> | null = null;
  const watched = (sql: Sql): Sql => ({
    secureDelete: (on) => sql.secureDelete(on),
    run: (text, params) => sql.run(text, params),
    get: (text, params) => sql.get(text, params),
    all: (text, params) => {
      if (/^\s*SELECT\b[\s\S]*\bFROM runs\b/.test(text)) selects?.push({ text, params });
      return sql.all(text, params);
    },
  });
  const wrapStore = (inner: Store): Store => overriding(inner, { write: (store) => (fn) => store.write((sql) => fn(watched(sql))) });
  let now = Date.UTC(2026, 0, 1);
  const { services } = await build(t, { overrides: { clock: { now: () => now } }, wrapStore });
  const start = () =>
    services.ledger.start(runStart({ model: 'm' }));
  // The oldest runs of the tenant are left running (as a crash leaves them, should start-up not finish them), then
  // expired runs of every finished status.
  const running = Array.from({ length: 5 }, () => start());
  now += 1;
  for (const status of ['completed', 'failed', 'blocked'] as const) {
    for (let i = 0; i < 3; i++) start().finish({ ...FINISHED, status });
  }
  await services.store.flush();
  now += 31 * DAY;
  selects = [];
  assert.equal((await services.retention.runOnce()).runsDeleted, 9, 'the finished runs of every status are deleted');
  const done = selects;
  selects = null;
  assert.ok(done.length > 0);
  for (const { text, params } of done) {
    const plan = (await services.store.read((sql) => sql.all<{ detail: string }>(`EXPLAIN QUERY PLAN ${text}`, params))).map((row) => row.detail).join(' | ');
    // The index seeks a finished status's expired runs only: a condition on status the index cannot use (a row
    // read and skipped) would read the running ones in every batch.
    assert.match(plan, /INDEX runs_tenant_status \(tenant_id=\? AND status=\? AND created_at<\?\)/, `${text}: ${plan}`);
    assert.doesNotMatch(plan, /TEMP B-TREE/, `${text}: ${plan}`);
  }
  const left = await services.store.read((sql) => sql.all<{ id: string; status: string }>('SELECT id, status FROM runs ORDER BY id'));
  assert.deepEqual(left, running.map((run) => ({ id: run.id, status: 'running' })).sort((a, b) => a.id.localeCompare(b.id)));
});

test('a run still running is left to finish: retention and a deleted organization\'s purge delete it after it ended, leaving nothing behind', async (t) => {
  let now = Date.UTC(2026, 0, 1);
  const { services } = await build(t, { overrides: { clock: { now: () => now } } });
  const start = (tenantId: string) =>
    services.ledger.start(runStart({ tenantId, model: 'm' }));
  const inFlight = start('default');
  inFlight.event('x', {});
  await services.store.flush();
  now += 31 * DAY;
  assert.equal((await services.retention.runOnce()).runsDeleted, 0, 'a running run is not deleted');
  inFlight.attempt({ provider: 'mock', model: 'm', outcome: 'success', errorKind: null, upstreamStatus: null, promptTokens: 1, completionTokens: 1, costUsd: 0, latencyMs: 1 });
  inFlight.finish(FINISHED);
  await services.store.flush();
  assert.equal((await services.retention.runOnce()).runsDeleted, 1, 'deleted once it ended');

  // An organization deleted while one of its runs is under way: the purge waits for it, then takes all of it.
  const orgId = 'ten_gone';
  await services.store.write((sql) => sql.run("INSERT INTO tenants (id, name, created_at) VALUES (?, 'Gone', ?)", [orgId, now]));
  const late = start(orgId);
  await services.store.flush();
  await services.store.write((sql) => {
    sql.run('DELETE FROM tenants WHERE id = ?', [orgId]);
    sql.run('INSERT INTO tenant_purges (tenant_id, deleted_at) VALUES (?, ?)', [orgId, now]);
  });
  assert.equal((await services.retention.runOnce()).orgsPurged, 0, 'not done while a run of it is under way');
  late.event('late', {});
  late.finish(FINISHED);
  const report = await services.retention.runOnce();
  assert.equal(report.orgsPurged, 1);
  const count = (sql: import('../../src/store/sql.ts').Sql, from: string, params: string[]) => sql.get<{ n: number }>(`SELECT COUNT(*) AS n FROM ${from}`, params)!.n;
  const left = await services.store.read((sql) => ({
    runs: count(sql, 'runs WHERE tenant_id = ?', [orgId]),
    events: count(sql, 'run_events WHERE run_id = ?', [late.id]),
    rollups: count(sql, 'run_rollups WHERE tenant_id = ?', [orgId]),
    cache: count(sql, 'cache_entries WHERE tenant_id = ?', [orgId]),
    purges: count(sql, 'tenant_purges WHERE tenant_id = ?', [orgId]),
  }));
  assert.deepEqual(left, { runs: 0, events: 0, rollups: 0, cache: 0, purges: 0 });
});

test("a retention pass finds the rollup rows of the runs it prunes by their keys, never walking the tenant's rollups", async (t) => {
  // Every statement the pass writes over run_rollups, to read its plan after.
  let statements: Array<{ text: string; params: SqlParams | undefined }> | null = null;
  const watched = (sql: Sql): Sql => ({
    secureDelete: (on) => sql.secureDelete(on),
    run: (text, params) => {
      if (/\brun_rollups\b/.test(text)) statements?.push({ text, params });
      return sql.run(text, params);
    },
    get: (text, params) => sql.get(text, params),
    all: (text, params) => sql.all(text, params),
  });
  const wrapStore = (inner: Store): Store => overriding(inner, { write: (store) => (fn) => store.write((sql) => fn(watched(sql))) });
  let now = Date.UTC(2026, 0, 1);
  const { services } = await build(t, { overrides: { clock: { now: () => now } }, wrapStore });
  // Many subjects over many days: many rollup rows, few of them the pruned runs'.
  for (let day = 0; day < 40; day++) {
    for (let i = 0; i < 20; i++) {
      const run = services.ledger.start(runStart({ subject: `user-${i}`, model: 'm', startedAt: now + day * DAY }));
      run.finish(FINISHED);
    }
  }
  await services.store.flush();
  now += 40 * DAY;
  statements = [];
  assert.equal((await services.retention.runOnce()).runsDeleted, 10 * 20);
  const done = statements;
  statements = null;
  assert.ok(done.length > 0);
  for (const { text, params } of done) {
    const plan = await services.store.read((sql) => sql.all<{ detail: string }>(`EXPLAIN QUERY PLAN ${text}`, params));
    for (const { detail } of plan.filter((row) => /\brun_rollups\b/.test(row.detail))) {
      assert.match(detail, /dim=\? AND day=\? AND value=\?/, `${text}: ${detail}`);
    }
  }
  // Deleting the pruned runs' rows by their keys leaves the others: 30 days of 20 subjects are still counted.
  const rows = await services.store.read((sql) => sql.get<{ runs: number }>("SELECT SUM(runs) AS runs FROM run_rollups WHERE dim = 'subject'")!);
  assert.equal(rows.runs, 30 * 20);
  assert.equal((await services.store.read((sql) => sql.get<{ n: number }>('SELECT COUNT(*) AS n FROM runs')!)).n, 30 * 20);
});

test('a secret setting that no longer decrypts (the master key changed) does not stop retention, of its tenant or the next', async (t) => {
  let now = Date.UTC(2026, 0, 1);
  const { app, services } = await build(t, { overrides: { clock: { now: () => now } } });
  const other = 'ten_zz_after_default';
  await services.store.write((sql) => sql.run("INSERT INTO tenants (id, name, created_at) VALUES (?, 'Other', ?)", [other, now]));
  for (const tenantId of ['default', other]) {
    const run = services.ledger.start(runStart({ tenantId, model: 'm' }));
    run.finish(FINISHED);
  }
  assert.equal((await app.inject({ method: 'PUT', url: '/api/v1/settings', payload: { key: 'retention_days', value: 10 } })).statusCode, 200);
  await services.store.write((sql) => sql.run("INSERT INTO settings (tenant_id, key, value_json, encrypted, updated_at) VALUES (?, 'retention_days', '10', 0, ?)", [other, now]));
  // The default tenant's webhook secret, as a data file keeps it after svc restarted under another master key.
  const foreign = createSecretCipher(Buffer.alloc(32, 7), 'env').encrypt('s3cret');
  await services.store.write((sql) =>
    sql.run("INSERT INTO settings (tenant_id, key, value_json, encrypted, updated_at) VALUES ('default', 'webhook_secret', ?, 1, ?)", [JSON.stringify(foreign), now]),
  );
  await services.store.flush();
  now += 20 * DAY;
  assert.equal((await services.retention.runOnce()).runsDeleted, 2, 'both tenants pruned at their 10-day window');
});

test('runs with long traces are pruned in several writes, each deleting a bounded number of trace events', async (t) => {
  // Trace events each write of the pass deletes.
  let perWrite: number[] = [];
  const wrapStore = (inner: Store): Store => {
    const watched = deletesPerWrite(inner, 'run_events');
    perWrite = watched.perWrite;
    return watched.store;
  };
  let now = Date.UTC(2026, 0, 1);
  const { services } = await build(t, { overrides: { clock: { now: () => now } }, wrapStore });
  const EVENTS = 4_000;
  for (let i = 0; i < 10; i++) {
    const run = services.ledger.start(runStart({ model: 'm' }));
    for (let seq = 2; seq < EVENTS; seq++) run.event('tool.called', { name: 'search', args: { seq } });
    run.finish(FINISHED);
    await services.store.flush();
  }
  now += 31 * DAY;
  assert.equal((await services.retention.runOnce()).runsDeleted, 10);
  assert.equal(perWrite.reduce((a, b) => a + b, 0), 10 * EVENTS, 'every event is deleted');
  assert.ok(perWrite.every((events) => events <= PRUNE_EVENTS_PER_WRITE), JSON.stringify(perWrite));
  assert.equal((await services.store.read((sql) => sql.get<{ n: number }>('SELECT COUNT(*) AS n FROM run_events')!)).n, 0);
});

test("a retention write whose time is up leaves the rest of its batch to the next write, a run at least", async (t) => {
  // A budget of 0 ms: every write is up after its first run, as a cold process's first writes are (several times
  // the cost of a warm one's: docs/performance-notes.md, "The retention pass's first batches").
  const inner = openStore({ dataDir: null });
  t.after(() => inner.close());
  const { store, perWrite } = deletesPerWrite(inner, 'runs');
  let now = Date.UTC(2026, 0, 1);
  const repo = createRunsRepository(store, { pruneWriteMs: 0 });
  const ledger = createLedger({ repo, clock: { now: () => now } });
  const RUNS = 5;
  for (let i = 0; i < RUNS; i++) {
    const run = ledger.start(runStart({ appId: `app-${i % 3}`, model: 'm' }));
    run.event('x', { i });
    run.attempt({ provider: 'mock', model: 'm', outcome: 'success', errorKind: null, upstreamStatus: null, promptTokens: 1, completionTokens: 1, costUsd: 0.001, latencyMs: 1 });
    run.finish(FINISHED);
  }
  await repo.settle();
  now += 31 * DAY;
  assert.equal(await repo.pruneTenantRuns('default', now - 30 * DAY, RETENTION_BATCH), RUNS, 'the whole batch is deleted, over several writes');
  assert.deepEqual(perWrite, [1, 1, 1, 1, 1]);
  const left = await inner.read((sql) => ({
    runs: sql.get<{ n: number }>('SELECT COUNT(*) AS n FROM runs')!.n,
    events: sql.get<{ n: number }>('SELECT COUNT(*) AS n FROM run_events')!.n,
    attempts: sql.get<{ n: number }>('SELECT COUNT(*) AS n FROM run_attempts')!.n,
    rollups: sql.get<{ n: number }>('SELECT COUNT(*) AS n FROM run_rollups')!.n,
  }));
  assert.deepEqual(left, { runs: 0, events: 0, attempts: 0, rollups: 0 }, 'each write took its runs whole, with their rollup counts');
});

test("a retention write's rollup update counts within its time budget: rows slow to update leave the next runs to the next write", async (t) => {
  // Every update of a rollup row takes 10 ms once the pass runs (as a cold process's first ones take several times a
  // warm one's): a run's ten rows alone take the write past its 40 ms budget, its deletes well within it.
  const ROW_MS = 10;
  let slow = false;
  const slowRollups = (sql: Sql): Sql => ({
    secureDelete: (on) => sql.secureDelete(on),
    run: (text, params) => {
      if (slow && /^\s*UPDATE run_rollups\b/.test(text)) for (const until = performance.now() + ROW_MS; performance.now() < until; );
      return sql.run(text, params);
    },
    get: (text, params) => sql.get(text, params),
    all: (text, params) => sql.all(text, params),
  });
  const inner = openStore({ dataDir: null });
  t.after(() => inner.close());
  const watched = deletesPerWrite(inner, 'runs');
  const store = overriding(watched.store, { write: (below) => (fn) => below.write((sql) => fn(slowRollups(sql))) });
  let now = Date.UTC(2026, 0, 1);
  const repo = createRunsRepository(store, { pruneWriteMs: 40 });
  const ledger = createLedger({ repo, clock: { now: () => now } });
  const runs = (count: number, costUsd: number) => {
    for (let i = 0; i < count; i++) {
      const run = ledger.start(runStart({ model: 'm' }));
      run.attempt({ provider: 'mock', model: 'm', outcome: 'success', errorKind: null, upstreamStatus: null, promptTokens: 1, completionTokens: 1, costUsd, latencyMs: 1 });
      run.finish({ ...FINISHED, costUsd });
    }
  };
  runs(4, 0.001);
  now += 2 * DAY;
  runs(2, 0.01);
  await repo.settle();
  now += 30 * DAY;
  slow = true;
  assert.equal(await repo.pruneTenantRuns('default', now - 30 * DAY, RETENTION_BATCH), 4);
  slow = false;
  assert.deepEqual(watched.perWrite, [1, 1, 1, 1], 'each write stopped once its first run\'s rollup rows had used its budget');
  // The rollups count the runs kept, and only them.
  const rollups = await inner.read((sql) =>
    sql.all<{ dim: string; runs: number; cost: number }>('SELECT dim, SUM(runs) AS runs, ROUND(SUM(cost_usd), 6) AS cost FROM run_rollups GROUP BY dim ORDER BY dim'),
  );
  assert.ok(rollups.length > 0);
  for (const row of rollups) assert.deepEqual({ runs: row.runs, cost: row.cost }, { runs: 2, cost: 0.02 }, row.dim);
});

test('feedback on a run that retention deletes while the feedback is being saved is a 404, not a record left without its run', async (t) => {
  // The next write after arming waits for a whole retention pass first: the run was found, then pruned, then written to.
  let armed: (() => Promise<unknown>) | null = null;
  const wrapStore = (inner: Store): Store =>
    overriding(inner, {
      write: (store) => (fn) => {
        const before = armed;
        armed = null;
        return before ? before().then(() => store.write(fn)) : store.write(fn);
      },
    });
  let now = Date.UTC(2026, 0, 1);
  const { app, services } = await build(t, { overrides: { clock: { now: () => now } }, wrapStore });
  const runId = (await app.inject({ method: 'POST', url: '/v1/chat/completions', payload: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'rate me' }] } }))
    .headers['x-svc-run-id'] as string;
  await services.store.flush();
  now += 31 * DAY;
  armed = () => services.retention.runOnce();
  const rated = await app.inject({ method: 'POST', url: `/api/v1/runs/${runId}/feedback`, payload: { type: 'rating', rating: 5 } });
  assert.equal(armed, null, 'the feedback was written after the pass');
  assert.equal(rated.statusCode, 404, rated.body);
  const left = await services.store.read((sql) => sql.get<{ n: number }>('SELECT COUNT(*) AS n FROM run_feedback')!.n);
  assert.equal(left, 0);
});

test("each organization's runs go by its own retention_days, and the audit log is kept whole, its chain verifying", async (t) => {
  let now = Date.UTC(2026, 0, 1);
  const { app, services } = await build(t, { overrides: { clock: { now: () => now } } });
  const other = 'ten_short_window';
  await services.store.write((sql) => sql.run("INSERT INTO tenants (id, name, created_at) VALUES (?, 'Short', ?)", [other, now]));
  await services.store.write((sql) => sql.run("INSERT INTO settings (tenant_id, key, value_json, encrypted, updated_at) VALUES (?, 'retention_days', '5', 0, ?)", [other, now]));
  // Audit rows of the default tenant written before the runs the pass deletes.
  for (const value of [40, 35, 30]) assert.equal((await app.inject({ method: 'PUT', url: '/api/v1/settings', payload: { key: 'retention_days', value } })).statusCode, 200);
  const record = (tenantId: string) =>
    services.ledger.start(runStart({ tenantId, model: 'm' })).finish(FINISHED);
  for (const tenantId of ['default', other, other]) record(tenantId);
  await services.store.flush();

  now += 6 * DAY;
  assert.equal((await services.retention.runOnce()).runsDeleted, 2, "only the 5-day organization's runs are past its window");
  const runsOf = (tenantId: string) => services.store.read((sql) => sql.get<{ n: number }>('SELECT COUNT(*) AS n FROM runs WHERE tenant_id = ?', [tenantId])!.n);
  assert.deepEqual([await runsOf('default'), await runsOf(other)], [1, 0]);
  now += 25 * DAY;
  assert.equal((await services.retention.runOnce()).runsDeleted, 1, 'the default organization at its 30 days');

  const audit = json(await app.inject({ url: '/api/v1/audit?verify=true' }));
  assert.deepEqual(audit.integrity, { ok: true, count: 3, brokenAt: null });
  assert.deepEqual(audit.events.map((event: { seq: number }) => event.seq), [3, 2, 1], 'retention deletes no audit event');
});
