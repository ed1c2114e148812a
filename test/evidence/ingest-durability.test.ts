/**
 * An SDK-ingested prompt is a management write: its 201 says the run is on the disk, power loss included, as any
 * awaited write's answer does (DESIGN.md section 3), though the run goes through the gateway's deferred ledger.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import test, { mock } from 'node:test';
import { bearer, build, json } from '../support/build.ts';
import { tempDir } from '../support/process.ts';

const BOOT = 'bootstrap-token-ingest-durability-1';

/** Count the `fdatasync` calls of this process that have called back (the store's flushes of its files). */
function countFlushes(): { completed: () => number } {
  let completed = 0;
  const original = fs.fdatasync;
  mock.method(fs, 'fdatasync', (fd: number, callback: (error: NodeJS.ErrnoException | null) => void) =>
    original(fd, (error) => {
      completed += 1;
      callback(error);
    }),
  );
  // file-sync.ts imports `fdatasync` by name: its binding follows the module's export only once synced.
  syncBuiltinESMExports();
  return { completed: () => completed };
}

test('POST /api/v1/ingest/prompt answers 201 only after the log holding its run was flushed to the disk', async (t) => {
  const { app } = await build(t, { dataDir: tempDir(t), env: { SVC_API_KEY: BOOT } });
  const ingest = () => app.inject({ method: 'POST', url: '/api/v1/ingest/prompt', headers: bearer(BOOT), payload: { source: 'langchain', prompt: 'kept' } });
  // The first request opens the log and flushes its directory once; settled before the one under test.
  assert.equal((await ingest()).statusCode, 201);
  const flushes = countFlushes();
  t.after(() => {
    mock.restoreAll();
    syncBuiltinESMExports();
  });
  const before = flushes.completed();
  const response = await ingest();
  const flushedBeforeTheAnswer = flushes.completed() - before;
  assert.equal(response.statusCode, 201, response.body);
  assert.ok(flushedBeforeTheAnswer > 0, 'the 201 went out before any flush of the log holding its run');
  const run = await app.inject({ method: 'GET', url: `/api/v1/runs/${json(response).runId}`, headers: bearer(BOOT) });
  assert.equal(run.statusCode, 200);
});
