/**
 * Runs a killed process left running are finished as failed (`interrupted`) by the next `svc serve`, with a closing
 * event on their chain and in the rollups (src/evidence/interrupted.ts); runs of the new process are not touched.
 */
import assert from 'node:assert/strict';
import test from 'node:test';
import { startFakeUpstream } from '../support/fake-upstream.ts';
import { loadScaled } from '../support/load-scaled.ts';
import { ensureBundle, startServe, tempDir } from '../support/process.ts';
import { runStart } from '../support/run-outcome.ts';
import { build, json } from '../support/build.ts';

const ask = (address: string, content: string) =>
  fetch(`${address}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content }] }),
  });

const getJson = async (url: string) => {
  const response = await fetch(url);
  assert.equal(response.status, 200, url);
  return (await response.json()) as any;
};

test('runs in flight when svc is killed are finished as failed (interrupted) at the next start', async (t) => {
  await ensureBundle();
  const dataDir = tempDir(t);
  // An upstream that never answers: each request's run is opened (its upstream call is on the wire) and stays open.
  const upstream = await startFakeUpstream(t, () => undefined);
  const env = { CHATCOMP_API_KEY: 'sk-upstream', CHATCOMP_BASE_URL: upstream.baseUrl };
  const first = await startServe(t, dataDir, env);
  const pending = [1, 2, 3].map((n) => ask(first.address, `in flight ${n}`).catch(() => null));
  const deadline = Date.now() + loadScaled(10_000);
  // Opened runs are committed by the next group commit (within 20 ms); wait until all three are readable as running.
  while ((await getJson(`${first.address}/api/v1/runs?status=running`)).pagination.total < 3) {
    assert.ok(Date.now() < deadline, 'three runs running before the kill');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  first.child.kill('SIGKILL');
  await first.exited;
  await Promise.all(pending);

  upstream.handle((_request, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ id: 'c', object: 'chat.completion', created: 1, model: 'gpt-4o-mini', choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } }));
  });
  const second = await startServe(t, dataDir, env);
  // A run of the new process, answered while the old ones are being finished, stays completed.
  const fresh = await ask(second.address, 'after the restart');
  assert.equal(fresh.status, 200);
  while ((await getJson(`${second.address}/api/v1/runs?status=running`)).pagination.total > 0) {
    assert.ok(Date.now() < deadline + loadScaled(10_000), 'the interrupted runs are finished');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  const failed = (await getJson(`${second.address}/api/v1/runs?status=failed`)).runs as Array<{ id: string }>;
  assert.equal(failed.length, 3);
  for (const { id } of failed) {
    const detail = await getJson(`${second.address}/api/v1/runs/${id}`);
    assert.equal(detail.run.status, 'failed');
    assert.equal(detail.run.error.kind, 'interrupted');
    assert.equal(detail.run.reasonCode, 'failed:interrupted');
    assert.equal(detail.events.at(-1).type, 'run.failed');
    assert.equal(detail.events.at(-1).payload.error.kind, 'interrupted');
    const integrity = await getJson(`${second.address}/api/v1/runs/${id}/integrity`);
    assert.equal(integrity.ok, true, JSON.stringify(integrity));
  }
  const kept = await getJson(`${second.address}/api/v1/runs/${fresh.headers.get('x-svc-run-id')}`);
  assert.equal(kept.run.status, 'completed');
  const savings = await getJson(`${second.address}/api/v1/savings`);
  assert.equal(savings.runningRuns, 0);
  assert.equal(savings.failedRuns, 3);
  assert.equal(savings.totalRuns, 4);
});

test('an interrupted run keeps what its committed attempts spent: its cost, tokens, economics and the rollups agree', async (t) => {
  const { app, services } = await build(t);
  // A process stopped after an upstream answered (its attempt committed) and before the run was finished.
  const run = services.ledger.start(runStart());
  run.attempt({ provider: 'chatcomp', model: 'gpt-4o-mini', outcome: 'success', errorKind: null, upstreamStatus: null, promptTokens: 1000, completionTokens: 500, costUsd: 0.00045, latencyMs: 12 });
  await services.store.flush();
  assert.equal(await services.interruptedRuns.finish(await services.interruptedRuns.find()), 1);

  const get = async (url: string) => json(await app.inject({ url }));
  const finished = (await get(`/api/v1/runs/${run.id}`)).run;
  assert.equal(finished.error.kind, 'interrupted');
  assert.equal(finished.costUsd, 0.00045);
  assert.deepEqual(finished.usage, { promptTokens: 1000, completionTokens: 500, totalTokens: 1500 });
  // A lower bound: what a call in flight at the stop spent is unknown (docs/gateway.md, "Cost").
  assert.equal(finished.priced, false);
  const economics = await get(`/api/v1/runs/${run.id}/economics`);
  assert.equal(economics.cost.providerUsd, finished.costUsd);
  assert.equal(economics.priced, false);
  const savings = await get('/api/v1/savings');
  assert.equal(savings.totalCostUsd, 0.00045, 'the failed run\'s cost counts (SPEC 4.9)');
  assert.deepEqual([savings.unpricedRuns, savings.costIsLowerBound], [1, true], 'and is said to be a lower bound');
  const usage = (await get('/api/v1/usage')).usage;
  assert.deepEqual([usage.costUsd, usage.promptTokens, usage.completionTokens, usage.unpricedRuns], [0.00045, 1000, 500, 1]);
  const integrity = await get(`/api/v1/runs/${run.id}/integrity`);
  assert.equal(integrity.ok, true, JSON.stringify(integrity));
});
