/** The ledger's group-commit batching: runs merged per commit stay exact, and one bad change does not sink the rest. */
import assert from 'node:assert/strict';
import test, { type TestContext } from 'node:test';
import { systemClock } from '../../src/core/clock.ts';
import { verifyChain } from '../../src/evidence/chain.ts';
import { createLedger } from '../../src/evidence/ledger.ts';
import { createRunsRepository } from '../../src/evidence/repo.ts';
import { openStore } from '../../src/store/store.ts';
import { build, json } from '../support/build.ts';
import { tempDir } from '../support/process.ts';
import { runStart } from '../support/run-outcome.ts';

const explanation = {
  route: 'live' as const,
  reason: 'served',
  rejectedAlternatives: [],
  policyVerdict: { decision: 'allow' as const, policy: null, reason: null },
  cache: [],
  artifact: null,
  estimatedSavings: { usd: 0, ms: 0, ghost: false },
  fallback: null,
  provider: 'p',
  model: 'm',
  executionMethod: { id: 'live_model', referenceGrade: 'not_applicable' as const },
};

/** A ledger over its own store (a data file, or in memory), closed when the test ends. */
function ledgerOn(t: TestContext, dataDir: string | null) {
  const store = openStore({ dataDir });
  t.after(() => store.close());
  const repo = createRunsRepository(store);
  return { store, repo, ledger: createLedger({ repo, clock: systemClock }) };
}

function startRun(ledger: ReturnType<typeof createLedger>, app: string) {
  return ledger.start(runStart({ appId: app, model: 'm' }));
}

test('runs started and finished within one commit are stored in their final state, chains intact, rollups exact', async (t) => {
  const { store, repo, ledger } = ledgerOn(t, tempDir(t));
  const ids: string[] = [];
  for (let i = 0; i < 40; i++) {
    const run = startRun(ledger, `app-${i % 3}`);
    run.event('policy.verdict', { decision: 'allow' });
    run.attempt({ provider: 'p', model: 'm', outcome: 'success', errorKind: null, upstreamStatus: null, promptTokens: 10, completionTokens: i, costUsd: 0.25, latencyMs: 3 });
    run.replay({ request: { i }, identity: {}, inputs: {} });
    run.finish({ status: 'completed', route: 'live', provider: 'p', routeExplanation: explanation, usage: { promptTokens: 10, completionTokens: i, totalTokens: 10 + i }, costUsd: 0.25, priced: true, responseHash: `hash-${i}` });
    ids.push(run.id);
  }
  await repo.settle();
  assert.deepEqual([...ids].sort(), ids, 'run ids sort by creation');
  for (const [i, id] of ids.entries()) {
    const run = (await repo.get('default', id))!;
    assert.equal(run.status, 'completed');
    assert.equal(run.usage.completionTokens, i);
    assert.equal(run.eventCount, 3);
    const events = await repo.allEvents('default', id);
    assert.equal(verifyChain(id, events, run.eventCount).ok, true);
    assert.equal(run.lastHash, events.at(-1)!.hash);
    assert.equal((await repo.attempts('default', id)).length, 1);
    assert.equal((await repo.replay('default', id))!.responseHash, `hash-${i}`);
  }
  const cells = await store.read((sql) =>
    sql.all<{ value: string; runs: number; completion: number; cost: number }>(
      "SELECT value, runs, completion_tokens AS completion, cost_usd AS cost FROM run_rollups WHERE dim = 'app' ORDER BY value",
    ),
  );
  const expected = [0, 1, 2].map((app) => {
    const mine = ids.map((_, i) => i).filter((i) => i % 3 === app);
    return { value: `app-${app}`, runs: mine.length, completion: mine.reduce((sum, i) => sum + i, 0), cost: mine.length * 0.25 };
  });
  assert.deepEqual(cells, expected);
});

test('asked, the ledger commits its window once it is due, within the turn: a gateway request asks as it starts', async (t) => {
  const { store, repo, ledger } = ledgerOn(t, tempDir(t));
  const run = startRun(ledger, 'a');
  // What the connection holds now: a commit's writes are visible to it from the moment they are written.
  const written = () => {
    let rows = -1;
    void store.read((sql) => (rows = sql.get<{ n: number }>('SELECT COUNT(*) AS n FROM runs WHERE id = ?', [run.id])!.n));
    return rows;
  };
  assert.equal(written(), 0, 'queued, not written');
  // A turn of the event loop past the window's end (at most 20 ms): its timer cannot fire meanwhile.
  const until = performance.now() + 60;
  while (performance.now() < until);
  ledger.commitIfOverdue();
  assert.equal(written(), 1, 'the commit began in the call, within the turn');
  await repo.settle();
  assert.equal((await repo.get('default', run.id))!.status, 'running');
});

test('a run finished after its start was committed is patched in place', async (t) => {
  const { repo, ledger } = ledgerOn(t, null);
  const run = startRun(ledger, 'a');
  await repo.settle();
  assert.equal((await repo.get('default', run.id))!.status, 'running');
  run.finish({ status: 'failed', route: 'live', provider: 'p', routeExplanation: explanation, usage: { promptTokens: 1, completionTokens: 0, totalTokens: 1 }, costUsd: 0, priced: true, error: { kind: 'timeout', message: 'late' } });
  await repo.settle();
  const stored = (await repo.get('default', run.id))!;
  assert.equal(stored.status, 'failed');
  assert.deepEqual(stored.error, { kind: 'timeout', message: 'late' });
  assert.equal(stored.eventCount, 2);
});

test('one change that cannot be written is dropped alone; its neighbours in the commit are kept', async (t) => {
  const { repo, ledger } = ledgerOn(t, null);
  const first = startRun(ledger, 'a');
  await repo.settle();
  const second = startRun(ledger, 'b');
  // A second insert of an existing run (a primary-key conflict) in the same commit as a healthy run.
  repo.recordDeferred({ insert: { ...(await repo.get('default', first.id))! } });
  const third = startRun(ledger, 'c');
  await repo.settle();
  assert.ok(await repo.get('default', second.id));
  assert.ok(await repo.get('default', third.id));
  assert.equal((await repo.allEvents('default', second.id)).length, 1);
});

test('concurrent gateway requests committed together agree with a scan of the ledger', async (t) => {
  const { app, services } = await build(t);
  await Promise.all(
    Array.from({ length: 40 }, (_, i) =>
      app.inject({
        method: 'POST',
        url: '/v1/chat/completions',
        headers: { 'x-svc-app': `app-${i % 4}` },
        payload: { model: i % 5 === 0 ? 'mock-5xx' : 'gpt-4o-mini', messages: [{ role: 'user', content: `q ${i % 7}` }] },
      }),
    ),
  );
  await services.store.flush();
  const scan = await services.store.read((sql) =>
    sql.all<{ app: string; runs: number; tokens: number }>(
      "SELECT app_id AS app, COUNT(*) AS runs, SUM(prompt_tokens + completion_tokens) AS tokens FROM runs WHERE status != 'running' GROUP BY app_id ORDER BY app_id",
    ),
  );
  assert.equal(scan.reduce((sum, row) => sum + row.runs, 0), 40);
  const attribution = json(await app.inject({ url: '/api/v1/usage/attribution?appLimit=50' }));
  const fromRollups = attribution.byApp.map((e: any) => ({ app: e.value, runs: e.runs, tokens: e.totalTokens })).sort((a: any, b: any) => (a.app < b.app ? -1 : 1));
  assert.deepEqual(fromRollups, scan);
});

test('runs recorded while a commit is under way (between its slices) are all stored, in their final state', async (t) => {
  const { repo, ledger } = ledgerOn(t, tempDir(t));
  const complete = (i: number) => {
    const run = startRun(ledger, `app-${i % 2}`);
    run.event('policy.verdict', { decision: 'allow' });
    run.attempt({ provider: 'p', model: 'm', outcome: 'success', errorKind: null, upstreamStatus: null, promptTokens: 1, completionTokens: 1, costUsd: 0, latencyMs: 1 });
    run.finish({ status: 'completed', route: 'live', provider: 'p', routeExplanation: explanation, usage: { promptTokens: 1, completionTokens: 1, totalTokens: 2 }, costUsd: 0, priced: true, responseHash: `h-${i}` });
    return run.id;
  };
  const ids: string[] = [];
  for (let i = 0; i < 300; i++) ids.push(complete(i));
  let settled = false;
  const first = repo.settle().then(() => (settled = true));
  // While that commit runs in slices, more runs start and finish, one per turn of the event loop.
  let during = 0;
  for (let i = 300; !settled && i < 600; i++) {
    await new Promise((resolve) => setImmediate(resolve));
    ids.push(complete(i));
    during += 1;
  }
  await first;
  await repo.settle();
  assert.ok(during > 0, 'some runs were recorded while the commit was under way');
  for (const id of ids) {
    const run = (await repo.get('default', id))!;
    assert.equal(run?.status, 'completed', id);
    assert.equal(run.eventCount, 3);
    assert.equal(verifyChain(id, await repo.allEvents('default', id), run.eventCount).ok, true);
  }
});
