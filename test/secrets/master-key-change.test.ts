/**
 * svc started under another master key than its secrets were stored under (docs/configuration.md "Master key"):
 * readiness item `vault` and `svc serve`'s start say how many no longer decrypt, never a secret or its ciphertext.
 */
import assert from 'node:assert/strict';
import test from 'node:test';
import { bearer, json } from '../support/build.ts';
import { ADMIN, buildAccounts, operator } from '../support/accounts.ts';
import { loadScaled } from '../support/load-scaled.ts';
import { ensureBundle, startServe, tempDir } from '../support/process.ts';

const BOOT = 'bootstrap-token-master-key-tests-01';
const KEY_A = 'a'.repeat(64);
const KEY_B = 'b'.repeat(64);
const SECRETS = ['whsec-default-under-a', 'whsec-acme-under-a'];

function vaultOf(readiness: { items: Array<{ id: string; status: string; message: string; action: string | null }> }) {
  return readiness.items.find((item) => item.id === 'vault')!;
}

test('readiness: secrets stored under another master key make item vault attention, counted, until set again', async (t) => {
  const dataDir = tempDir(t);
  const env = { SVC_API_KEY: BOOT, SVC_ADMIN_EMAIL: ADMIN.email, SVC_ADMIN_PASSWORD: ADMIN.password };
  const start = (masterKey: string) => buildAccounts(t, { env: { ...env, SVC_MASTER_KEY: masterKey }, dataDir });
  const first = await start(KEY_A);
  const acme = json(await first.app.inject({ method: 'POST', url: '/api/v1/orgs', headers: bearer(BOOT), payload: { name: 'Acme', ownerEmail: ADMIN.email } })).org.id;
  const acmeAdmin = json(await first.app.inject({ method: 'POST', url: '/api/v1/keys', headers: operator(BOOT, acme), payload: { name: 'acme-admin', admin: true } })).token;
  for (const [tenant, secret] of [[undefined, SECRETS[0]], [acme, SECRETS[1]]] as const) {
    const put = await first.app.inject({ method: 'PUT', url: '/api/v1/settings', headers: operator(BOOT, tenant), payload: { key: 'webhook_secret', value: secret } });
    assert.equal(put.statusCode, 200, put.body);
  }
  const underA = vaultOf(json(await first.app.inject({ url: '/api/v1/readiness', headers: bearer(BOOT) })));
  assert.equal(underA.status, 'ready', 'every secret decrypts under the key it was stored under');
  await first.app.close();
  await first.services.store.close();

  const { app, services } = await start(KEY_B);
  const ciphertexts = await services.store.read((sql) => sql.all<{ value_json: string }>("SELECT value_json FROM settings WHERE key = 'webhook_secret'"));
  const readiness = await app.inject({ url: '/api/v1/readiness', headers: bearer(BOOT) });
  assert.equal(readiness.statusCode, 200);
  const vault = vaultOf(json(readiness));
  assert.equal(vault.status, 'attention');
  assert.match(vault.message, /^2 stored secret\(s\) of 2 organization\(s\) do not decrypt under the current master key: svc was started under another key \(now SVC_MASTER_KEY\)/);
  assert.match(vault.action!, /Restore the master key .* or set them again/);
  assert.equal(json(readiness).summary.publicReady, false);
  for (const hidden of [...SECRETS, ...ciphertexts.map((row) => JSON.parse(row.value_json) as string), acme]) {
    assert.ok(!readiness.body.includes(hidden), 'no secret, ciphertext or organization id in the answer');
  }
  // An organization's admin reads of its own secrets only.
  const ownRead = vaultOf(json(await app.inject({ url: '/api/v1/readiness', headers: bearer(acmeAdmin) })));
  assert.match(ownRead.message, /^1 stored secret\(s\) of 1 organization\(s\) do not decrypt/);

  // The repair it names: set again, under the key svc has now.
  await app.inject({ method: 'PUT', url: '/api/v1/settings', headers: bearer(acmeAdmin), payload: { key: 'webhook_secret', value: 'whsec-acme-under-b' } });
  assert.equal(vaultOf(json(await app.inject({ url: '/api/v1/readiness', headers: bearer(acmeAdmin) }))).status, 'ready');
  assert.match(vaultOf(json(await app.inject({ url: '/api/v1/readiness', headers: bearer(BOOT) }))).message, /^1 stored secret\(s\) of 1 organization\(s\)/);
  await app.inject({ method: 'PUT', url: '/api/v1/settings', headers: bearer(BOOT), payload: { key: 'webhook_secret', value: null } });
  assert.equal(vaultOf(json(await app.inject({ url: '/api/v1/readiness', headers: bearer(BOOT) }))).status, 'ready', 'a cleared secret is none');
});

test('svc serve notes once at start that stored secrets do not decrypt under its master key, and serves on', async (t) => {
  await ensureBundle();
  const dataDir = tempDir(t);
  const env = (masterKey: string) => ({ SVC_API_KEY: BOOT, SVC_MASTER_KEY: masterKey });
  const first = await startServe(t, dataDir, env(KEY_A));
  const put = await fetch(`${first.address}/api/v1/settings`, {
    method: 'PUT',
    headers: { ...bearer(BOOT), 'content-type': 'application/json' },
    body: JSON.stringify({ key: 'webhook_secret', value: SECRETS[0] }),
  });
  assert.equal(put.status, 200);
  first.child.kill('SIGTERM');
  assert.equal(await first.exited, 0);
  assert.ok(!first.output().includes('do not decrypt'), first.output());

  const second = await startServe(t, dataDir, env(KEY_B));
  const health = await fetch(`${second.address}/health`);
  assert.equal(health.status, 200, 'it serves');
  // The note is written before the address line, but on stderr: another pipe, read in its own time.
  const deadline = Date.now() + loadScaled(10_000);
  while (!second.output().includes('do not decrypt') && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
  const notes = second.output().split('\n').filter((line) => line.includes('do not decrypt'));
  assert.equal(notes.length, 1, second.output());
  assert.match(notes[0]!, /^svc: 1 stored secret\(s\) of 1 organization\(s\) do not decrypt under the current master key: .*Restore the master key/);
  assert.ok(!second.output().includes(SECRETS[0]!));
  second.child.kill('SIGTERM');
  assert.equal(await second.exited, 0);
});
