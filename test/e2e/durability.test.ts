/** Nothing acknowledged is lost: writes answered 2xx survive a kill -9 of the server right after their answers. */
import assert from 'node:assert/strict';
import test, { before } from 'node:test';
import { ensureBundle, startServe, tempDir } from '../support/process.ts';

before(ensureBundle);

const BOOT = 'bootstrap-token-durability-0000001';
const auth = { authorization: `Bearer ${BOOT}`, 'content-type': 'application/json' };

test('acknowledged key creations and settings survive kill -9', async (t) => {
  const dataDir = tempDir(t);
  const server = await startServe(t, dataDir, { SVC_API_KEY: BOOT });
  const created = await Promise.all(
    Array.from({ length: 40 }, async (_, i) => {
      const response = await fetch(`${server.address}/api/v1/keys`, { method: 'POST', headers: auth, body: JSON.stringify({ name: `durable-${i}` }) });
      assert.equal(response.status, 201);
      return ((await response.json()) as { key: { id: string } }).key.id;
    }),
  );
  // One commit each: more than the store's checkpoint interval, so the kill lands after a checkpoint too.
  for (let i = 0; i < 70; i++) {
    const response = await fetch(`${server.address}/api/v1/settings`, { method: 'PUT', headers: auth, body: JSON.stringify({ key: 'retention_days', value: 20 + (i % 10) }) });
    assert.equal(response.status, 200);
  }
  const setting = await fetch(`${server.address}/api/v1/settings`, { method: 'PUT', headers: auth, body: JSON.stringify({ key: 'retention_days', value: 11 }) });
  assert.equal(setting.status, 200);
  server.child.kill('SIGKILL');
  await server.exited;

  const restarted = await startServe(t, dataDir, { SVC_API_KEY: BOOT });
  const listed = (await (await fetch(`${restarted.address}/api/v1/keys?limit=200`, { headers: auth })).json()) as { keys: Array<{ id: string }> };
  const ids = new Set(listed.keys.map((key) => key.id));
  for (const id of created) assert.ok(ids.has(id), `key ${id} was acknowledged and must survive`);
  const settings = (await (await fetch(`${restarted.address}/api/v1/settings`, { headers: auth })).json()) as { settings: { retention_days: number } };
  assert.equal(settings.settings.retention_days, 11);
  const audit = (await (await fetch(`${restarted.address}/api/v1/audit?verify=true&limit=500`, { headers: auth })).json()) as { integrity: { ok: boolean } };
  assert.equal(audit.integrity.ok, true);
});
