/**
 * API keys found by token hash are kept in memory, so an authenticated gateway request reads no SQL; every awaited
 * write (a revoke, a mode change, an organization deleted) makes the next lookup read the file again.
 */
import assert from 'node:assert/strict';
import test from 'node:test';
import { sha256Hex } from '../../src/core/ids.ts';
import { createApiKeysRepository, type NewApiKey } from '../../src/keys/repo.ts';
import { openStore } from '../../src/store/store.ts';
import { countingStore } from '../support/counting-store.ts';

const TOKEN = 'svc_token-of-the-keys-repo-test-000000000000001';

function setup(t: import('node:test').TestContext) {
  const inner = openStore({ dataDir: null });
  t.after(() => inner.close());
  const { store, counts } = countingStore(inner);
  return { inner, store, counts, repo: createApiKeysRepository(store) };
}

async function withTenantAndKey(inner: ReturnType<typeof openStore>, repo: ReturnType<typeof createApiKeysRepository>, tenantId = 'acme') {
  await inner.write((sql) => sql.run('INSERT INTO tenants (id, name, created_at) VALUES (?, ?, ?)', [tenantId, tenantId, 1]));
  const key: NewApiKey = {
    id: `key_${tenantId}`,
    tenantId,
    name: 'ci',
    mode: 'optimize',
    appId: null,
    admin: false,
    tokenHash: sha256Hex(TOKEN),
    tokenPrefix: TOKEN.slice(0, 10),
    createdAt: 1_000,
  };
  return repo.insert(key);
}

test('a key found once is answered from memory until an awaited write', async (t) => {
  const { inner, store, counts, repo } = setup(t);
  const inserted = await withTenantAndKey(inner, repo);

  const first = await repo.findByTokenHash(sha256Hex(TOKEN));
  assert.deepEqual(first, inserted);
  const readsAfterFirst = counts.reads;
  for (let i = 0; i < 5; i++) assert.deepEqual(await repo.findByTokenHash(sha256Hex(TOKEN)), inserted);
  assert.equal(counts.reads, readsAfterFirst, 'no SQL read for a key already found');
  assert.ok(Object.isFrozen(first), 'the kept record cannot be changed by a caller');

  // Deferred writes (the ledger's, the caches') leave it alone; an awaited write of anything drops it.
  store.writeDeferred(() => {});
  await store.flush();
  await repo.findByTokenHash(sha256Hex(TOKEN));
  assert.equal(counts.reads, readsAfterFirst);
  await store.write(() => {});
  await repo.findByTokenHash(sha256Hex(TOKEN));
  assert.equal(counts.reads, readsAfterFirst + 1);
});

test('tokens that match no key are not kept: each lookup reads, and a key created later is found', async (t) => {
  const { inner, counts, repo } = setup(t);
  const before = counts.reads;
  for (let i = 0; i < 3; i++) assert.equal(await repo.findByTokenHash(sha256Hex(TOKEN)), null);
  assert.equal(counts.reads, before + 3);
  await withTenantAndKey(inner, repo);
  assert.equal((await repo.findByTokenHash(sha256Hex(TOKEN)))?.id, 'key_acme');
});

test('a revoke, a mode change and a deleted organization are seen by the next lookup after their commit', async (t) => {
  const { inner, repo } = setup(t);
  await withTenantAndKey(inner, repo);
  const hash = sha256Hex(TOKEN);
  assert.equal((await repo.findByTokenHash(hash))?.mode, 'optimize');

  await repo.setMode('acme', 'key_acme', 'observe');
  assert.equal((await repo.findByTokenHash(hash))?.mode, 'observe');

  // Until the revoke is committed the key is still live (as it was before keys were kept in memory); after it, not.
  const revoking = repo.revoke('acme', 'key_acme', 2_000);
  assert.equal((await repo.findByTokenHash(hash))?.revokedAt, null);
  await revoking;
  assert.equal((await repo.findByTokenHash(hash))?.revokedAt, 2_000);

  // The key's row goes with its organization (ON DELETE CASCADE), through SQL the keys repository never sees.
  await inner.write((sql) => sql.run("UPDATE api_keys SET revoked_at = NULL WHERE id = 'key_acme'"));
  assert.equal((await repo.findByTokenHash(hash))?.revokedAt, null);
  await inner.write((sql) => sql.run("DELETE FROM tenants WHERE id = 'acme'"));
  assert.equal(await repo.findByTokenHash(hash), null);
});

test('the store moves its write generation after each commit of awaited writes, failed ones included', async (t) => {
  const { inner } = setup(t);
  const start = inner.writeGeneration;
  inner.writeDeferred(() => {});
  await inner.flush();
  assert.equal(inner.writeGeneration, start, 'deferred writes alone do not move it');
  await Promise.all([inner.write(() => {}), inner.write(() => {})]);
  assert.equal(inner.writeGeneration, start + 1, 'one commit, one step');
  await assert.rejects(inner.write((sql) => sql.run('INSERT INTO no_such_table VALUES (1)')));
  assert.equal(inner.writeGeneration, start + 2);
});
