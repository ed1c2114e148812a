/** Retention: runs (with events and attempts) and cache entries older than `retention_days` are pruned in batches. */
import assert from 'node:assert/strict';
import test from 'node:test';
import { build, json } from '../support/build.ts';
import { RETENTION_BATCH } from '../../src/retention/service.ts';

const DAY = 86_400_000;

test('retention prunes old runs, their trace events and attempts, and old cache entries, per tenant window', async (t) => {
  let now = Date.UTC(2026, 0, 1);
  const { app, services } = await build(t, { overrides: { clock: { now: () => now } } });
  const ask = (content: string) =>
    app.inject({ method: 'POST', url: '/v1/chat/completions', payload: { model: 'gpt-4o-mini', messages: [{ role: 'user', content }] } });

  const old = (await ask('old question')).headers['x-svc-run-id'] as string;
  // Many old runs so the pass needs several batches.
  for (let i = 0; i < RETENTION_BATCH * 2 + 5; i++) {
    const run = services.ledger.start({ tenantId: 'default', appId: null, agent: null, subject: null, keyId: null, mode: 'optimize', wire: 'chat_completions', model: 'm', stream: false, requestId: null });
    run.event('x', { i });
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

test('the retention query plans use the tenant/created_at indexes', async (t) => {
  const { services } = await build(t);
  const plans = await services.store.read((sql) => ({
    runs: sql.all<{ detail: string }>('EXPLAIN QUERY PLAN SELECT id FROM runs WHERE tenant_id = ? AND created_at < ? ORDER BY created_at LIMIT ?', ['default', 1, 1]),
    cache: sql.all<{ detail: string }>('EXPLAIN QUERY PLAN SELECT rowid FROM cache_entries WHERE tenant_id = ? AND created_at < ? LIMIT ?', ['default', 1, 1]),
    list: sql.all<{ detail: string }>('EXPLAIN QUERY PLAN SELECT * FROM runs WHERE tenant_id = ? ORDER BY created_at DESC, id DESC LIMIT 50', ['default']),
  }));
  assert.match(plans.runs.map((row) => row.detail).join(' '), /USING (COVERING )?INDEX runs_tenant_created/);
  assert.match(plans.cache.map((row) => row.detail).join(' '), /USING (COVERING )?INDEX cache_entries_tenant_created/);
  assert.doesNotMatch(plans.list.map((row) => row.detail).join(' '), /SCAN runs(?! USING)/);
});
