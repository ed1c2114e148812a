/**
 * Evidence whose stored JSON is not JSON (the data file edited by hand, or damaged): svc's own reads of it are its
 * failure, never the caller's request, and the run's trace is still judged and exported.
 */
import assert from 'node:assert/strict';
import test, { type TestContext } from 'node:test';
import { build, json, newChatRun, type Built } from '../support/build.ts';

/** Set a stored JSON column of the run to text that is not JSON, once its writes are committed. */
async function damage(built: Built, runId: string, statement: string): Promise<void> {
  await built.services.store.flush();
  const changed = await built.services.store.write((sql) => sql.run(statement, ['{"cut', runId]).changes);
  assert.equal(changed, 1, statement);
}

test("a run whose stored route explanation or error is not JSON shows it as {storedText}, rather than failing the tenant's runs list and every read of the run with a 500", async (t) => {
  const built = await build(t);
  const explained = await newChatRun(built.app);
  const other = await newChatRun(built.app);
  await damage(built, explained, 'UPDATE runs SET explanation_json = ? WHERE id = ?');
  for (const url of [`/api/v1/runs/${explained}`, `/api/v1/runs/${explained}/route`, `/api/v1/runs/${explained}/economics`, `/api/v1/runs/${explained}/replay-bundle`, `/api/v1/runs/${explained}/evidence-packet`]) {
    const response = await built.app.inject({ url });
    assert.equal(response.statusCode, 200, `${url}: ${response.body}`);
  }
  const list = await built.app.inject({ url: '/api/v1/runs' });
  assert.equal(list.statusCode, 200, list.body);
  const byId = new Map(json(list).runs.map((run: any) => [run.id, run]));
  assert.deepEqual((byId.get(explained) as any).routeExplanation, { storedText: '{"cut' });
  assert.equal((byId.get(other) as any).routeExplanation.route, 'live');
  assert.deepEqual(json(await built.app.inject({ url: `/api/v1/runs/${explained}/route` })).routeExplanation, { storedText: '{"cut' });
  // Not hashed by the chain (docs/evidence.md, integrity: not covered), so the run still verifies.
  assert.equal(json(await built.app.inject({ url: `/api/v1/runs/${explained}/integrity` })).ok, true);

  // A run's error is hashed by its closing event: integrity reports the edit.
  const failedId = await newChatRun(built.app);
  await damage(built, failedId, 'UPDATE runs SET error_json = ? WHERE id = ?');
  for (const url of ['/api/v1/runs', `/api/v1/runs/${failedId}`, `/api/v1/runs/${failedId}/evidence-packet`]) {
    const response = await built.app.inject({ url });
    assert.equal(response.statusCode, 200, `${url}: ${response.body}`);
  }
  assert.deepEqual(json(await built.app.inject({ url: `/api/v1/runs/${failedId}` })).run.error, { storedText: '{"cut' });
  const verdict = json(await built.app.inject({ url: `/api/v1/runs/${failedId}/integrity` }));
  assert.deepEqual([verdict.ok, verdict.reason], [false, "the run's error_json does not match its hashed run.completed event"], JSON.stringify(verdict));
});

test("a trace event whose stored payload is not JSON is a break integrity reports at that event; the trace and the evidence packet still show the run, that payload as its stored text", async (t) => {
  const built = await build(t);
  const runId = await newChatRun(built.app);
  await damage(built, runId, 'UPDATE run_events SET payload_json = ? WHERE run_id = ? AND seq = 2');

  const integrity = await built.app.inject({ url: `/api/v1/runs/${runId}/integrity` });
  assert.equal(integrity.statusCode, 200, integrity.body);
  const verdict = json(integrity);
  assert.deepEqual([verdict.ok, verdict.brokenAt, verdict.reason], [false, 2, 'the event\'s stored payload is not JSON'], integrity.body);

  const events = await built.app.inject({ url: `/api/v1/runs/${runId}/events` });
  assert.equal(events.statusCode, 200, events.body);
  assert.deepEqual(json(events).events[1].payload, { storedText: '{"cut' });

  const packet = await built.app.inject({ url: `/api/v1/runs/${runId}/evidence-packet` });
  assert.equal(packet.statusCode, 200, packet.body);
  const { integrity: packed, events: packedEvents } = json(packet);
  assert.deepEqual({ ...packed, checkedAt: null }, { ...verdict, checkedAt: null });
  assert.deepEqual(packedEvents[1].payload, { storedText: '{"cut' });
  assert.equal((await built.app.inject({ url: `/api/v1/runs/${runId}` })).statusCode, 200);
});

test("a trace event whose stored payload nests deeper than svc ever stores is reported by integrity, not a 500 of every read of the run", async (t) => {
  const built = await build(t);
  const runId = await newChatRun(built.app);
  const deep = `${'['.repeat(100_000)}${']'.repeat(100_000)}`;
  await built.services.store.flush();
  await built.services.store.write((sql) => sql.run('UPDATE run_events SET payload_json = ? WHERE run_id = ? AND seq = 2', [deep, runId]));

  const integrity = await built.app.inject({ url: `/api/v1/runs/${runId}/integrity` });
  assert.equal(integrity.statusCode, 200, integrity.body);
  const verdict = json(integrity);
  assert.deepEqual([verdict.ok, verdict.brokenAt, verdict.reason], [false, 2, 'the event\'s stored payload nests more than 128 levels deep'], integrity.body);
  for (const url of [`/api/v1/runs/${runId}/events`, `/api/v1/runs/${runId}`, `/api/v1/runs/${runId}/evidence-packet`]) {
    const response = await built.app.inject({ url });
    assert.equal(response.statusCode, 200, `${url}: ${response.body.slice(0, 200)}`);
  }
  const packet = json(await built.app.inject({ url: `/api/v1/runs/${runId}/evidence-packet` }));
  assert.equal(packet.events[1].payload.storedText, deep);
  assert.equal(packet.integrity.reason, verdict.reason);
});

test("a trace event whose stored time is not a time svc writes is reported by integrity; the trace, run detail and the evidence packet show it with createdAt null, not a 500", async (t) => {
  // Text, a number past what a Date holds, an integer past 2^53 (read back as a BigInt): each an edit of the data file.
  for (const stored of ['x', 1e20, 2n ** 60n]) {
    const built = await build(t);
    const runId = await newChatRun(built.app);
    await built.services.store.flush();
    await built.services.store.write((sql) => sql.run('UPDATE run_events SET created_at = ? WHERE run_id = ? AND seq = 2', [stored as never, runId]));

    const integrity = await built.app.inject({ url: `/api/v1/runs/${runId}/integrity` });
    assert.equal(integrity.statusCode, 200, `${stored}: ${integrity.body}`);
    assert.deepEqual([json(integrity).ok, json(integrity).brokenAt], [false, 2], integrity.body);

    const events = await built.app.inject({ url: `/api/v1/runs/${runId}/events` });
    assert.equal(events.statusCode, 200, `${stored}: ${events.body}`);
    assert.equal(json(events).events[1].createdAt, null);
    assert.match(json(events).events[0].createdAt, /^\d{4}-\d\d-\d\dT/);
    const detail = await built.app.inject({ url: `/api/v1/runs/${runId}` });
    assert.equal(detail.statusCode, 200, `${stored}: ${detail.body}`);
    assert.equal(json(detail).events[1].createdAt, null);
    const packet = await built.app.inject({ url: `/api/v1/runs/${runId}/evidence-packet` });
    assert.equal(packet.statusCode, 200, `${stored}: ${packet.body}`);
    assert.equal(json(packet).events[1].createdAt, null);
    assert.deepEqual([json(packet).integrity.ok, json(packet).integrity.brokenAt], [false, 2]);
  }
});

test("a side-effect record whose stored payload is not JSON is shown as its stored text, marked payloadUnreadable, in run detail and the evidence packet, not a 500", async (t) => {
  const built = await build(t);
  const runId = await newChatRun(built.app);
  for (const toolName of ['kept', 'damaged']) {
    const planned = await built.app.inject({ method: 'POST', url: '/api/v1/trace', payload: { runId, type: 'side_effect.planned', payload: { toolName, level: 2, payload: { to: 'a@example.com' } } } });
    assert.equal(planned.statusCode, 201, planned.body);
  }
  await damage(built, runId, "UPDATE run_side_effects SET payload_json = ? WHERE run_id = ? AND tool_name = 'damaged'");

  const detail = await built.app.inject({ url: `/api/v1/runs/${runId}` });
  assert.equal(detail.statusCode, 200, detail.body);
  const packet = await built.app.inject({ url: `/api/v1/runs/${runId}/evidence-packet` });
  assert.equal(packet.statusCode, 200, packet.body);
  for (const sideEffects of [json(detail).sideEffects, json(packet).sideEffects]) {
    assert.deepEqual(
      sideEffects.map((record: any) => [record.toolName, record.payload, record.payloadUnreadable]),
      [['kept', { to: 'a@example.com' }, null], ['damaged', { storedText: '{"cut' }, 'the stored payload is not JSON']],
    );
  }
  // The trace the records derive from is intact: integrity vouches for it, not for the records.
  assert.equal(json(packet).integrity.ok, true);
});

test("a stored time edited to one svc never writes (a run's, an attempt's, a side effect's, a feedback record's, a replay bundle's) is answered as null, not a 500 of the runs list, run detail, the replay bundle or the evidence packet", async (t) => {
  const columns = [
    ['runs', 'created_at', 'id'],
    ['runs', 'completed_at', 'id'],
    ['run_attempts', 'created_at', 'run_id'],
    ['run_side_effects', 'created_at', 'run_id'],
    ['run_side_effects', 'updated_at', 'run_id'],
    ['run_feedback', 'created_at', 'run_id'],
    ['run_replays', 'created_at', 'run_id'],
  ] as const;
  for (const [table, column, key] of columns) {
    const built = await build(t);
    const runId = await newChatRun(built.app);
    await built.app.inject({ method: 'POST', url: '/api/v1/trace', payload: { runId, type: 'side_effect.planned', payload: { toolName: 'mail', level: 2, payload: {} } } });
    await built.app.inject({ method: 'POST', url: `/api/v1/runs/${runId}/feedback`, payload: { type: 'rating', rating: 5 } });
    await built.services.store.flush();
    const changed = await built.services.store.write((sql) => sql.run(`UPDATE ${table} SET ${column} = ? WHERE ${key} = ?`, ['x', runId]).changes);
    assert.equal(changed, 1);

    const answers: Record<string, any> = {};
    for (const [name, url] of [['list', '/api/v1/runs'], ['detail', `/api/v1/runs/${runId}`], ['replay', `/api/v1/runs/${runId}/replay-bundle`], ['packet', `/api/v1/runs/${runId}/evidence-packet`]]) {
      const response = await built.app.inject({ url: url! });
      assert.equal(response.statusCode, 200, `${table}.${column}, ${url}: ${response.body.slice(0, 200)}`);
      answers[name!] = json(response);
    }
    const { list, detail, replay, packet } = answers;
    const shown = {
      runs: { created_at: [list.runs[0].createdAt, detail.run.createdAt, packet.run.createdAt], completed_at: [list.runs[0].completedAt, detail.run.completedAt, packet.run.completedAt] },
      run_attempts: { created_at: [detail.attempts[0].createdAt, packet.attempts[0].createdAt] },
      run_side_effects: { created_at: [detail.sideEffects[0].createdAt, packet.sideEffects[0].createdAt], updated_at: [detail.sideEffects[0].updatedAt, packet.sideEffects[0].updatedAt] },
      run_feedback: { created_at: [detail.feedback[0].createdAt, packet.feedback[0].createdAt] },
      run_replays: { created_at: [replay.createdAt, packet.replayBundle.createdAt] },
    } as Record<string, Record<string, unknown[]>>;
    const values = shown[table]![column]!;
    assert.deepEqual(values, values.map(() => null), `${table}.${column}`);
    assert.equal(packet.replayBundleError, null, `${table}.${column}`);
  }
});

/** The JSON columns of a run's feedback records and replay bundle, each with the statement that sets it for a run. */
const FEEDBACK_AND_REPLAY_JSON = [
  ['feedback body', 'UPDATE run_feedback SET body_json = ? WHERE run_id = ?'],
  ['feedback actor', 'UPDATE run_feedback SET actor_json = ? WHERE run_id = ?'],
  ['replay identity', 'UPDATE run_replays SET identity_json = ? WHERE run_id = ?'],
  ['replay route inputs', 'UPDATE run_replays SET inputs_json = ? WHERE run_id = ?'],
] as const;

/** A chat run with a feedback record, so that every table a run has rows in holds one of its. */
async function runWithFeedback(t: TestContext) {
  const built = await build(t);
  const runId = await newChatRun(built.app);
  await built.app.inject({ method: 'POST', url: `/api/v1/runs/${runId}/feedback`, payload: { type: 'rating', rating: 5 } });
  return { built, runId };
}

test("a feedback record or replay bundle whose stored JSON is not JSON shows it as {storedText}, not a 500 of run detail, the replay bundle or the evidence packet", async (t) => {
  for (const [column, statement] of FEEDBACK_AND_REPLAY_JSON) {
    const { built, runId } = await runWithFeedback(t);
    await damage(built, runId, statement);
    const answers: Record<string, any> = {};
    for (const [name, url] of [['detail', `/api/v1/runs/${runId}`], ['replay', `/api/v1/runs/${runId}/replay-bundle`], ['packet', `/api/v1/runs/${runId}/evidence-packet`]] as const) {
      const response = await built.app.inject({ url });
      assert.equal(response.statusCode, 200, `${column}, ${url}: ${response.body.slice(0, 200)}`);
      answers[name] = json(response);
    }
    const { detail, replay, packet } = answers;
    assert.equal(packet.replayBundleError, null, column);
    const shown = {
      'feedback body': [detail.feedback[0].storedText, packet.feedback[0].storedText],
      'feedback actor': [detail.feedback[0].actor.storedText, packet.feedback[0].actor.storedText],
      'replay identity': [replay.identity.storedText, packet.replayBundle.identity.storedText],
      'replay route inputs': [replay.routeInputs.storedText, packet.replayBundle.routeInputs.storedText],
    }[column];
    assert.deepEqual(shown, ['{"cut', '{"cut'], column);
  }
});

test("a run's, feedback record's or replay bundle's stored JSON nested deeper than svc ever stores shows as {storedText}, not a stack overflow (500) of the runs list, the run's reads or the evidence packet", async (t) => {
  const deep = `${'['.repeat(100_000)}${']'.repeat(100_000)}`;
  for (const [column, statement] of [
    ['explanation', 'UPDATE runs SET explanation_json = ? WHERE id = ?'],
    ['error', 'UPDATE runs SET error_json = ? WHERE id = ?'],
    ...FEEDBACK_AND_REPLAY_JSON,
  ] as const) {
    const { built, runId } = await runWithFeedback(t);
    await built.services.store.flush();
    const changed = await built.services.store.write((sql) => sql.run(statement, [deep, runId]).changes);
    assert.equal(changed, 1, statement);
    const answers: Record<string, any> = {};
    for (const [name, url] of [['list', '/api/v1/runs'], ['detail', `/api/v1/runs/${runId}`], ['route', `/api/v1/runs/${runId}/route`], ['integrity', `/api/v1/runs/${runId}/integrity`], ['replay', `/api/v1/runs/${runId}/replay-bundle`], ['packet', `/api/v1/runs/${runId}/evidence-packet`]] as const) {
      const response = await built.app.inject({ url });
      assert.equal(response.statusCode, 200, `${column}, ${url}: ${response.body.slice(0, 200)}`);
      answers[name] = json(response);
    }
    const { list, detail, route, replay, packet } = answers;
    assert.equal(packet.replayBundleError, null, column);
    const shown = {
      explanation: [list.runs[0].routeExplanation, detail.run.routeExplanation, route.routeExplanation, packet.run.routeExplanation],
      error: [list.runs[0].error, detail.run.error, packet.run.error],
      'feedback body': [detail.feedback[0], packet.feedback[0]].map(({ storedText }: any) => ({ storedText })),
      'feedback actor': [detail.feedback[0].actor, packet.feedback[0].actor],
      'replay identity': [replay.identity, packet.replayBundle.identity],
      'replay route inputs': [replay.routeInputs, packet.replayBundle.routeInputs],
    }[column];
    assert.deepEqual(shown, shown.map(() => ({ storedText: deep })), column);
    if (column === 'error') assert.equal(answers.integrity.ok, false, column);
  }
});
