/**
 * Integer columns of the evidence edited past 2^53 in the data file: the store answers such a value as a BigInt,
 * which no JSON writer takes, so every read that shows it failed with a 500 rather than showing the value.
 */
import assert from 'node:assert/strict';
import test from 'node:test';
import { build, json, newChatRun } from '../support/build.ts';

const BIG = 2n ** 60n;

test('integer columns of a run, its events, attempts and side-effect records, and the rollups edited past 2^53 are shown as numbers, not a 500 of the reads that show them', async (t) => {
  for (const statement of [
    'UPDATE runs SET prompt_tokens = ? WHERE id = ?',
    'UPDATE runs SET completion_tokens = ? WHERE id = ?',
    'UPDATE runs SET saved_ms = ? WHERE id = ?',
    'UPDATE runs SET latency_ms = ? WHERE id = ?',
    'UPDATE runs SET event_count = ? WHERE id = ?',
    'UPDATE runs SET cost_usd = ? WHERE id = ?',
    'UPDATE run_events SET seq = ? WHERE run_id = ? AND seq = 2',
    'UPDATE run_attempts SET prompt_tokens = ? WHERE run_id = ?',
    'UPDATE run_attempts SET latency_ms = ? WHERE run_id = ?',
    'UPDATE run_attempts SET upstream_status = ? WHERE run_id = ?',
    'UPDATE run_attempts SET seq = ? WHERE run_id = ?',
    'UPDATE run_side_effects SET seq = ? WHERE run_id = ?',
    'UPDATE run_side_effects SET level = ? WHERE run_id = ?',
    'UPDATE run_rollups SET prompt_tokens = ? WHERE tenant_id = (SELECT tenant_id FROM runs WHERE id = ?)',
    'UPDATE run_rollups SET runs = ? WHERE tenant_id = (SELECT tenant_id FROM runs WHERE id = ?)',
    'UPDATE run_rollups SET saved_ms = ? WHERE tenant_id = (SELECT tenant_id FROM runs WHERE id = ?)',
    'UPDATE run_rollups SET cost_usd = ? WHERE tenant_id = (SELECT tenant_id FROM runs WHERE id = ?)',
  ]) {
    const built = await build(t);
    const runId = await newChatRun(built.app);
    const planned = await built.app.inject({ method: 'POST', url: '/api/v1/trace', payload: { runId, type: 'side_effect.planned', payload: { toolName: 'mail', level: 2, payload: {} } } });
    assert.equal(planned.statusCode, 201, planned.body);
    await built.services.store.flush();
    const changed = await built.services.store.write((sql) => sql.run(statement, [BIG as never, runId]).changes);
    assert.ok(changed >= 1, statement);
    for (const url of ['/api/v1/runs', `/api/v1/runs/${runId}`, `/api/v1/runs/${runId}/events`, `/api/v1/runs/${runId}/route`, `/api/v1/runs/${runId}/economics`, `/api/v1/runs/${runId}/integrity`, `/api/v1/runs/${runId}/replay-bundle`, `/api/v1/runs/${runId}/evidence-packet`, '/api/v1/savings', '/api/v1/usage', '/api/v1/usage/attribution']) {
      const response = await built.app.inject({ url });
      assert.equal(response.statusCode, 200, `${statement}, ${url}: ${response.body.slice(0, 200)}`);
    }
    // Shown as the number it is (the nearest double), where it shows.
    const shown: Record<string, () => Promise<unknown>> = {
      'UPDATE runs SET prompt_tokens': async () => json(await built.app.inject({ url: '/api/v1/runs' })).runs[0].usage.promptTokens,
      'UPDATE run_events SET seq': async () => json(await built.app.inject({ url: `/api/v1/runs/${runId}/events` })).events.at(-1).seq,
      'UPDATE run_attempts SET latency_ms': async () => json(await built.app.inject({ url: `/api/v1/runs/${runId}` })).attempts[0].latencyMs,
    };
    const read = Object.entries(shown).find(([prefix]) => statement.startsWith(prefix))?.[1];
    if (read) assert.equal(await read(), Number(BIG), statement);
  }
});

test("a run left running whose recorded attempt's tokens were edited past 2^53 is still finished as interrupted at the next start, not left running by a BigInt its closing event cannot hash", async (t) => {
  const built = await build(t);
  const runId = await newChatRun(built.app);
  await built.services.store.flush();
  // As a killed process leaves it: still running, with an attempt it committed; the attempt's count then edited.
  await built.services.store.write((sql) => {
    sql.run("UPDATE runs SET status = 'running', completed_at = NULL WHERE id = ?", [runId]);
    sql.run('UPDATE run_attempts SET prompt_tokens = ? WHERE run_id = ?', [BIG as never, runId]);
  });
  const left = await built.services.interruptedRuns.find();
  assert.deepEqual(left, [runId]);
  assert.equal(await built.services.interruptedRuns.finish(left), 1);
  const detail = json(await built.app.inject({ url: `/api/v1/runs/${runId}` }));
  assert.deepEqual([detail.run.status, detail.run.error.kind, detail.run.usage.promptTokens], ['failed', 'interrupted', Number(BIG)]);
});
