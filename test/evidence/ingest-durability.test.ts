/**
 * An SDK-ingested prompt is a management write: its 201 says the run is on the disk, power loss included, as any
 * awaited write's answer does (DESIGN.md section 3), though the run goes through the gateway's deferred ledger; a run
 * that could not be put there is a retryable 503, never a 201.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import test, { mock } from 'node:test';
import type { FastifyInstance } from 'fastify';
import type { Store } from '../../src/store/store.ts';
import { bearer, build, json } from '../support/build.ts';
import { overriding } from '../support/counting-store.ts';
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

/** The answer svc gives an ingestion whose run it could not put on the disk: retryable, in the management shape. */
function assertNotRecorded(response: { statusCode: number; headers: Record<string, unknown>; body: string }): void {
  assert.equal(response.statusCode, 503, response.body);
  assert.equal(json(response).error.code, 'write_failed');
  assert.equal(response.headers['retry-after'], '1');
}

/** The ids of the runs svc lists. */
async function listedRunIds(app: FastifyInstance): Promise<string[]> {
  const listed = await app.inject({ method: 'GET', url: '/api/v1/runs?limit=200', headers: bearer(BOOT) });
  return (json(listed).runs as Array<{ id: string }>).map((run) => run.id);
}

test('POST /api/v1/ingest/prompt answers 503 write_failed, not 201 with the id of a run that does not exist, when its ledger write fails', async (t) => {
  let failing = false;
  // The ledger's write failing as SQLite's does on a full disk: the store drops it (a gateway run's answer went first).
  const failingLedger = (store: Store) =>
    overriding(store, {
      writeDeferredSteps: (inner) => (plan) =>
        inner.writeDeferredSteps((final) =>
          plan(final).map((step) =>
            failing
              ? () => {
                  throw new Error('SQLITE_FULL: database or disk is full');
                }
              : step,
          ),
        ),
    });
  const { app } = await build(t, { dataDir: tempDir(t), env: { SVC_API_KEY: BOOT }, wrapStore: failingLedger });
  const ingest = () => app.inject({ method: 'POST', url: '/api/v1/ingest/prompt', headers: bearer(BOOT), payload: { source: 'langchain', prompt: 'kept?' } });

  failing = true;
  assertNotRecorded(await ingest());
  assert.deepEqual(await listedRunIds(app), []);

  failing = false;
  const kept = await ingest();
  assert.equal(kept.statusCode, 201, kept.body);
  assert.deepEqual(await listedRunIds(app), [json(kept).runId]);
});

test('POST /api/v1/ingest/prompt answers 503 write_failed when the flush of the log holding its run fails', async (t) => {
  const { app } = await build(t, { dataDir: tempDir(t), env: { SVC_API_KEY: BOOT } });
  const ingest = () => app.inject({ method: 'POST', url: '/api/v1/ingest/prompt', headers: bearer(BOOT), payload: { source: 'langchain', prompt: 'on the disk?' } });
  assert.equal((await ingest()).statusCode, 201);
  // The disk reporting a failed write-back, as fdatasync does (EIO).
  mock.method(fs, 'fdatasync', (_fd: number, callback: (error: NodeJS.ErrnoException | null) => void) =>
    callback(Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' })),
  );
  syncBuiltinESMExports();
  t.after(() => {
    mock.restoreAll();
    syncBuiltinESMExports();
  });
  assertNotRecorded(await ingest());
});
