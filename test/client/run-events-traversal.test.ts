/**
 * The reference client's run-event traversal (`runEvents`) over a trace at svc's limits. It stops before request 101
 * (SPEC 8), and each `/events` page is also bound to 512 KiB of payload, so pages of 100 events (its old default)
 * left the oldest events of a trace svc accepts unread: 64 tool results of 250 KiB took 32 pages, and ~7,000 small
 * events the other 68 requests, so the walk ended ~3,000 events short of `run.started`, saying nothing. Pages of 500,
 * the most a page holds, reach the start of any trace svc keeps.
 */
import assert from 'node:assert/strict';
import test from 'node:test';
import { createSvcClient } from '../../src/client/index.ts';
import { build } from '../support/build.ts';
import { completedOutcome, runStart } from '../support/run-outcome.ts';

const SMALL_EVENTS = 7_000;
const LARGE_RESULTS = 64;
/** Within a client event's 256 KiB, 64 of them within a run's 16 MiB of client payload. */
const LARGE_RESULT = 'x'.repeat(250 * 1024);

test('runEvents reaches run.started of a trace of thousands of events and 16 MB of tool results', async (t) => {
  const { app, services } = await build(t);
  const run = services.ledger.start(runStart());
  // Recorded as the gateway records its events (one request's traffic through HTTP would take minutes).
  for (let i = 0; i < SMALL_EVENTS; i++) run.event('tool.completed', { name: 'lookup', result: i });
  run.finish(completedOutcome('gpt-4o-mini'));
  const baseUrl = await app.listen({ port: 0, host: '127.0.0.1' });
  const client = createSvcClient({ baseUrl, env: {} });
  t.after(() => client.close());
  // The newest events are an SDK's large tool results, appended through the API.
  for (let i = 0; i < LARGE_RESULTS; i++) await client.trace(run.id, 'tool.completed', { name: 'read_file', result: LARGE_RESULT });

  const { eventCount } = await client.runs.integrity(run.id);
  const seqs: number[] = [];
  for await (const event of client.runEvents(run.id)) seqs.push(event.seq);
  assert.equal(seqs.length, eventCount);
  assert.deepEqual(seqs, Array.from({ length: eventCount }, (_, i) => eventCount - i), 'each event once, newest first');
});
