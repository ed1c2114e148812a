/**
 * The gateway ledger commits after the answer (within the deferred window); a graceful shutdown must still write
 * every run that was answered, and the bundle must serve the gateway from any working directory.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import test, { before } from 'node:test';
import { ensureBundle, startServe, tempDir } from '../support/process.ts';

before(ensureBundle);

/** One buffered chat completion through svc (the built-in mock model answers); its body read. */
async function ask(address: string, content: string): Promise<Response> {
  const response = await fetch(`${address}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content }] }),
  });
  assert.equal(response.status, 200);
  await response.arrayBuffer();
  return response;
}

test('runs answered right before SIGTERM are all there after a restart', async (t) => {
  const dataDir = tempDir(t);
  const server = await startServe(t, dataDir);
  const ids = await Promise.all(
    Array.from({ length: 25 }, async (_, i) => (await ask(server.address, `shutdown ${i}`)).headers.get('x-svc-run-id')!),
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

test('SVC_TRACE_COMMITS notes each deferred window\'s commit: its length from the first write, how it fell due, and how long after the first answer that did not wait for it', async (t) => {
  const dataDir = tempDir(t);
  const trace = join(tempDir(t), 'commits.trace');
  const server = await startServe(t, dataDir, { SVC_TRACE_COMMITS: trace });
  // A process's first 5 s of traffic: each answer waits for its run's commit, which is due at once.
  for (let i = 0; i < 3; i++) await ask(server.address, `waited ${i}`);
  await new Promise((resolve) => setTimeout(resolve, 5_300));
  for (let i = 0; i < 3; i++) {
    await ask(server.address, `traced ${i}`);
    // Each in a window of its own: the window is ~17 ms.
    await new Promise((resolve) => setTimeout(resolve, 60));
  }
  server.child.kill('SIGTERM');
  assert.equal(await server.exited, 0);
  const lines = readFileSync(trace, 'utf8').trim().split('\n');
  assert.ok(lines.length >= 6, `${lines.length} windows noted`);
  const windows = lines.map((line) => {
    const match = /^(\d+\.\d{2}) (timed|held) (\d+\.\d{2}|-)$/.exec(line);
    assert.ok(match, `a line of the trace: ${JSON.stringify(line)}`);
    // Long before a second has passed, either way.
    assert.ok(Number(match[1]) >= 0 && Number(match[1]) < 1_000, line);
    return { lengthMs: Number(match[1]), exposedMs: match[3] === '-' ? null : Number(match[3]) };
  });
  assert.ok(windows.slice(0, 3).every((w) => w.exposedMs === null), 'the first answers waited for their commits');
  // Once answers go out first, a window committed by its timer ends after it: ~17 ms for a quiet server (a store
  // assumes a 10 ms overrun until its first timed windows, so 1-7 ms at first).
  const exposed = windows.filter((w) => w.exposedMs !== null);
  assert.ok(exposed.length >= 3, `${exposed.length} windows with answers out first`);
  assert.ok(exposed.every((w) => w.exposedMs! <= w.lengthMs + 0.01 && w.exposedMs! < 1_000));
  assert.ok(exposed.some((w) => w.exposedMs! >= 1), 'windows that waited for their timer');
});

test('an SVC_TRACE_COMMITS file that cannot be opened stops svc serve with a message naming it', async (t) => {
  const dataDir = tempDir(t);
  const server = startServe(t, dataDir, { SVC_TRACE_COMMITS: join(tempDir(t), 'missing', 'commits.trace') });
  await assert.rejects(server, /SVC_TRACE_COMMITS: cannot open .*missing\/commits\.trace for appending \(ENOENT\)/);
});
