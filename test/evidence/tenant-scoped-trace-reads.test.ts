/**
 * The ledger's reads of a run's trace and attempts are tenant scoped like every other query (run ids are global):
 * given another tenant's id for a real run they find nothing, though callers look the run up in its tenant first.
 */
import assert from 'node:assert/strict';
import test from 'node:test';
import { systemClock } from '../../src/core/clock.ts';
import { createLedger } from '../../src/evidence/ledger.ts';
import { createRunsRepository } from '../../src/evidence/repo.ts';
import { openStore } from '../../src/store/store.ts';
import { completedOutcome, runStart } from '../support/run-outcome.ts';

test("a run's events, attempts and keyed events are read in its tenant only", async (t) => {
  const store = openStore({ dataDir: null });
  t.after(() => store.close());
  const repo = createRunsRepository(store);
  const ledger = createLedger({ repo, clock: systemClock });
  const run = ledger.start(runStart({ appId: 'app-a', model: 'm' }));
  run.event('chorus.receipt', { idempotencyKey: 'k-1' });
  run.attempt({ provider: 'p', model: 'm', outcome: 'success', errorKind: null, upstreamStatus: null, promptTokens: 1, completionTokens: 1, costUsd: 0, latencyMs: 1 });
  run.finish(completedOutcome());
  await repo.settle();
  const key = { type: 'chorus.receipt', idempotencyKey: 'k-1' };

  const own = 'default';
  assert.ok((await repo.eventsAfter(own, run.id, 0, 10)).length > 0);
  assert.ok((await repo.eventsBefore(own, run.id, { limit: 10 })).length > 0);
  assert.ok((await repo.allEvents(own, run.id)).length > 0);
  assert.equal((await repo.lastEventOfType(own, run.id, 'chorus.receipt', 10))?.type, 'chorus.receipt');
  assert.equal((await repo.keyedEvent(own, run.id, key))?.type, 'chorus.receipt');
  assert.equal((await repo.attempts(own, run.id)).length, 1);

  const other = 'org_other';
  assert.deepEqual(await repo.eventsAfter(other, run.id, 0, 10), []);
  assert.deepEqual(await repo.eventsBefore(other, run.id, { limit: 10 }), []);
  assert.deepEqual(await repo.allEvents(other, run.id), []);
  assert.equal(await repo.lastEventOfType(other, run.id, 'chorus.receipt', 10), null);
  assert.equal(await repo.keyedEvent(other, run.id, key), null);
  assert.deepEqual(await repo.attempts(other, run.id), []);
});
