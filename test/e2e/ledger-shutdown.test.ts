/**
 * The gateway ledger commits after the answer (within the deferred window); a graceful shutdown must still write
 * every run that was answered, and the bundle must serve the gateway from any working directory.
 */
import assert from 'node:assert/strict';
import test, { before } from 'node:test';
import { ensureBundle, startServe, tempDir } from '../support/process.ts';

before(ensureBundle);

test('runs answered right before SIGTERM are all there after a restart', async (t) => {
  const dataDir = tempDir(t);
  const server = await startServe(t, dataDir);
  const ids = await Promise.all(
    Array.from({ length: 25 }, async (_, i) => {
      const response = await fetch(`${server.address}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: `shutdown ${i}` }] }),
      });
      assert.equal(response.status, 200);
      await response.arrayBuffer();
      return response.headers.get('x-svc-run-id')!;
    }),
  );
  server.child.kill('SIGTERM');
  assert.equal(await server.exited, 0);

  const restarted = await startServe(t, dataDir);
  const listed = await (await fetch(`${restarted.address}/api/v1/runs?limit=200`)).json() as { runs: Array<{ id: string; status: string }> };
  const stored = new Map(listed.runs.map((run) => [run.id, run.status]));
  for (const id of ids) assert.equal(stored.get(id), 'completed', `run ${id} must survive a graceful shutdown`);
  for (const id of ids.slice(0, 3)) {
    const integrity = await (await fetch(`${restarted.address}/api/v1/runs/${id}/integrity`)).json() as { ok: boolean };
    assert.equal(integrity.ok, true);
  }
});
