/**
 * The wait for a gateway run to be finalised (test/support/finished-runs.ts) is a deadline grown with the load, not a
 * count of polls: a run finalised late on a loaded machine is still read finished.
 */
import assert from 'node:assert/strict';
import test from 'node:test';
import { finishedRun, finishedRuns } from '../support/finished-runs.ts';

/** An app whose one run reads `running` for its first `runningReads` reads (300 reads of 10 ms: 3 s and more). */
function appFinalisingAfter(runningReads: number) {
  let reads = 0;
  const run = () => ({ id: 'run_1', status: ++reads > runningReads ? 'completed' : 'running' });
  const inject = async ({ url }: { url: string }) => ({ body: JSON.stringify(url === '/api/v1/runs/run_1' ? { run: run(), events: [] } : { runs: [run()] }) });
  return { inject } as never;
}

test('a run still running after 300 reads is waited for, by id or as the latest in the list', async () => {
  assert.equal((await finishedRun(appFinalisingAfter(300), 'run_1')).run.status, 'completed');
  assert.equal((await finishedRuns(appFinalisingAfter(300)))[0].status, 'completed');
});
