/**
 * Walking GET /api/v1/runs page by page while the gateway keeps recording runs: a walk that follows
 * `pagination.nextBefore` lists every run it passes exactly once, in the list's order (newest first, runs of one
 * millisecond by id), when runs are added above it and runs change status between its pages; an offset walk repeated
 * a run for each one added (seen through svc serve under gateway traffic: 53 of 201 runs twice) and skipped one for
 * each that left a `status` filter. A cursor names a run of the caller's own list: any other is a 400 that says no
 * more about another tenant's or app's run than about an id never made.
 */
import assert from 'node:assert/strict';
import test from 'node:test';
import type { RunRecorder } from '../../src/evidence/ledger.ts';
import type { Services } from '../../src/services.ts';
import { bearer, build, json } from '../support/build.ts';
import { completedOutcome, runStart } from '../support/run-outcome.ts';

const NOW = Date.UTC(2026, 5, 15, 12);

function startRun(services: Services, at: number, options: { tenantId?: string; appId?: string | null } = {}): RunRecorder {
  return services.ledger.start(runStart({ tenantId: options.tenantId ?? 'default', appId: options.appId ?? null, startedAt: at }));
}

const finish = (run: RunRecorder) => run.finish(completedOutcome('gpt-4o-mini'));

type Inject = Awaited<ReturnType<typeof build>>['app']['inject'];

/** Every page of the list by `nextBefore`, calling `between` after each page: the ids in the order listed. */
async function walk(inject: Inject, query: string, between: (page: number) => void = () => {}, headers: Record<string, string> = {}): Promise<string[]> {
  const ids: string[] = [];
  let before: string | null = null;
  for (let page = 1; page <= 50; page++) {
    const response: { statusCode: number; body: string } = await inject({ url: `/api/v1/runs?${query}${before === null ? '' : `&before=${before}`}`, headers });
    assert.equal(response.statusCode, 200, response.body);
    const body = json(response);
    ids.push(...body.runs.map((run: { id: string }) => run.id));
    assert.equal(body.pagination.hasMore, body.pagination.nextBefore !== null);
    if (body.pagination.nextBefore === null) return ids;
    assert.equal(body.pagination.nextBefore, ids.at(-1), 'the cursor is the last run of the page');
    before = body.pagination.nextBefore;
    between(page);
  }
  throw new Error('the walk did not end');
}

test('a walk by nextBefore lists each run once while runs are added above it and finish between its pages', async (t) => {
  const { app, services } = await build(t);
  // Newest first: two running, four of one millisecond (a page boundary falls among them), three older finished.
  const running = [startRun(services, NOW), startRun(services, NOW - 1)];
  const sameMs = [0, 1, 2, 3].map(() => startRun(services, NOW - 5));
  sameMs.forEach(finish);
  const older = [NOW - 60_000, NOW - 120_000, NOW - 180_000].map((at) => startRun(services, at));
  older.forEach(finish);
  // Runs of one millisecond are listed by id, descending (time-ordered ids: the later started first).
  const expected = [...running, ...[...sameMs].reverse(), ...older].map((run) => run.id);

  let added = 0;
  const ids = await walk(app.inject.bind(app), 'limit=3', (page) => {
    startRun(services, NOW + 1000 + added++);
    startRun(services, NOW + 1000 + added++);
    if (page === 1) running.forEach(finish);
  });
  assert.deepEqual(ids, expected);
});

test('a status walk by nextBefore skips no run when the runs it listed leave the filter between its pages', async (t) => {
  const { app, services } = await build(t);
  const running = [0, 1, 2, 3, 4].map((i) => startRun(services, NOW - i * 1000));
  const ids = await walk(app.inject.bind(app), 'limit=2&status=running', (page) => {
    // The runs of the page just read finish (the cursor's own run among them): the walk goes on below them.
    if (page === 1) running.slice(0, 2).forEach(finish);
  });
  assert.deepEqual(ids, running.map((run) => run.id));
});

test('idle, a walk by nextBefore lists the total and the facets count it, with and without a filter', async (t) => {
  const { app, services } = await build(t);
  for (let i = 0; i < 7; i++) {
    const run = startRun(services, NOW - i * 1000);
    if (i % 3 !== 0) finish(run);
  }
  for (const query of ['limit=2', 'limit=2&status=completed', 'limit=200&status=running']) {
    const ids = await walk(app.inject.bind(app), query);
    const first = json(await app.inject({ url: `/api/v1/runs?${query}` }));
    assert.equal(new Set(ids).size, ids.length);
    assert.equal(ids.length, first.pagination.total, query);
  }
  const all = json(await app.inject({ url: '/api/v1/runs' }));
  assert.deepEqual(all.facets.status, { completed: 4, running: 3 });
});

test('a cursor not of the caller\'s list (never made, another tenant\'s, another app\'s) is a 400 that tells them apart by nothing', async (t) => {
  const { app, services } = await build(t);
  const own = startRun(services, NOW, { appId: 'shop' });
  const otherApp = startRun(services, NOW - 1, { appId: 'blog' });
  const otherTenant = startRun(services, NOW - 2, { tenantId: 'bravo' });
  [own, otherApp, otherTenant].forEach(finish);
  const pinned = json(await app.inject({ method: 'POST', url: '/api/v1/keys', payload: { name: 'shop', appId: 'shop' } })).token as string;

  const refusal = async (before: string, headers: Record<string, string> = {}) => {
    const response = await app.inject({ url: `/api/v1/runs?before=${before}`, headers });
    assert.equal(response.statusCode, 400, response.body);
    const body = json(response);
    assert.equal(body.error.code, 'invalid_request');
    return JSON.stringify(body).replaceAll(before, '<id>');
  };
  const neverMade = `run_${'0'.repeat(24)}`;
  const answers = [
    await refusal(neverMade),
    await refusal(otherTenant.id),
    await refusal(neverMade, bearer(pinned)),
    await refusal(otherApp.id, bearer(pinned)),
    await refusal(otherTenant.id, bearer(pinned)),
  ];
  assert.equal(new Set(answers).size, 1, answers.join('\n'));
  assert.match(answers[0]!, /before/);
  // The tenant's own cursor, as the pinned key's: its list is below it.
  assert.deepEqual(json(await app.inject({ url: `/api/v1/runs?before=${own.id}` })).runs.map((run: { id: string }) => run.id), [otherApp.id]);
  assert.deepEqual(json(await app.inject({ url: `/api/v1/runs?before=${own.id}`, headers: bearer(pinned) })).runs, []);
});
