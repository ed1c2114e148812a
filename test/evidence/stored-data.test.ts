/**
 * Evidence whose stored JSON is not JSON (the data file edited by hand, or damaged): svc's own reads of it are its
 * failure, never the caller's request, and the run's trace is still judged and exported.
 */
import assert from 'node:assert/strict';
import test from 'node:test';
import { build, json, newChatRun, type Built } from '../support/build.ts';

/** Set a stored JSON column of the run to text that is not JSON, once its writes are committed. */
async function damage(built: Built, runId: string, statement: string): Promise<void> {
  await built.services.store.flush();
  const changed = await built.services.store.write((sql) => sql.run(statement, ['{"cut', runId]).changes);
  assert.equal(changed, 1, statement);
}

test("a run whose stored route explanation is not JSON is svc's 500, not a 400 saying the request body is not JSON", async (t) => {
  const built = await build(t);
  const runId = await newChatRun(built.app);
  await damage(built, runId, 'UPDATE runs SET explanation_json = ? WHERE id = ?');
  for (const url of [`/api/v1/runs/${runId}`, `/api/v1/runs/${runId}/route`, '/api/v1/runs']) {
    const response = await built.app.inject({ url });
    assert.equal(response.statusCode, 500, `${url}: ${response.body}`);
    assert.equal(json(response).error.code, 'internal', url);
  }
});
