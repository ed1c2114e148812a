/**
 * The exact-response cache's repository: the index of stored keys (no read for a miss, loaded after a restart, one row
 * per key), the memory tier (byte-bounded LRU, no SQL read on a hit), invalidation, hit coalescing, migration 6.
 */
import assert from 'node:assert/strict';
import test from 'node:test';
import { KeyIndex } from '../../src/caches/key-index.ts';
import { ByteLru } from '../../src/caches/lru.ts';
import { createCacheRepository, DELETE_BYTES_PER_WRITE, INVALIDATE_BATCH, type CacheEntry } from '../../src/caches/repo.ts';
import { MIGRATIONS } from '../../src/store/migrations.ts';
import { openStore, type Store } from '../../src/store/store.ts';
import { countingStore, deletesPerWrite } from '../support/counting-store.ts';
import { tempDir } from '../support/process.ts';

function entry(tenantId: string, key: string, value: unknown = { answer: key }, createdAt = 1_000): Omit<CacheEntry, 'hits' | 'lastHitAt'> {
  return { tenantId, cacheType: 'exact_response', key, appId: null, value, sourceRunId: `run_${key}`, costUsd: 0.01, latencyMs: 5, createdAt };
}

/**
 * A repository over a counting in-memory store, its index loaded. The store acts as under load (`loadedTurnMs: 0`):
 * it may write a put early, ahead of writes queued before it, the order a busy svc sees; left to measure the loop, it
 * chose either order by the machine's speed, and a test that held only under one of them failed at random.
 */
async function setup(t: test.TestContext, memoryBytes?: number) {
  const inner = openStore({ dataDir: null, loadedTurnMs: 0 });
  t.after(() => inner.close());
  const { store, counts } = countingStore(inner);
  const repo = createCacheRepository(store, memoryBytes === undefined ? {} : { memoryBytes });
  await repo.loaded();
  return { inner, repo, counts };
}

/** A second repository over the same store, as after a restart (empty memory, index loaded from the table). */
async function restarted(inner: Store, options: { memoryBytes?: number } = {}) {
  const wrapped = countingStore(inner);
  const repo = createCacheRepository(wrapped.store, options);
  await repo.loaded();
  return { repo, counts: wrapped.counts };
}

const rowsOf = (inner: Store, tenantId: string) =>
  inner.read((sql) => sql.all<{ id: number; key: string }>('SELECT id, key FROM cache_entries WHERE tenant_id = ? ORDER BY id', [tenantId]));

test('ByteLru evicts the least recently used entries by bytes, and never keeps an oversized one', () => {
  const lru = new ByteLru<string>(100, 60);
  lru.set('a', 'A', 40);
  lru.set('b', 'B', 40);
  assert.equal(lru.get('a'), 'A'); // a is now the most recently used
  lru.set('c', 'C', 40); // 120 > 100: b goes
  assert.equal(lru.has('b'), false);
  assert.equal(lru.get('a'), 'A');
  assert.equal(lru.get('c'), 'C');
  assert.equal(lru.bytes, 80);
  lru.set('huge', 'H', 61);
  assert.equal(lru.has('huge'), false);
  assert.equal(lru.bytes, 80);
  lru.set('a', 'A2', 10); // replacing adjusts the total
  assert.equal(lru.bytes, 50);
  assert.equal(lru.deleteWhere((key) => key === 'c'), 1);
  assert.equal(lru.bytes, 10);
  assert.equal(lru.size, 1);
});

test('a hit on a stored entry does no SQL read, before and after its commit', async (t) => {
  const { inner, repo, counts } = await setup(t);
  repo.putDeferred(entry('ten_a', 'k1'));
  assert.deepEqual((await repo.get('ten_a', 'exact_response', 'k1'))?.value, { answer: 'k1' });
  await inner.flush();
  const reads = counts.reads;
  for (let i = 0; i < 5; i += 1) assert.deepEqual((await repo.get('ten_a', 'exact_response', 'k1'))?.value, { answer: 'k1' });
  assert.equal(counts.reads, reads);
  // Nor does a miss: the index knows the key was never stored.
  assert.equal(await repo.get('ten_a', 'exact_response', 'other'), null);
  assert.equal(counts.reads, reads);
});

test('an entry read from the table is kept in memory for the next hit', async (t) => {
  const { inner, repo } = await setup(t);
  repo.putDeferred(entry('ten_a', 'k1'));
  await inner.flush();
  const fresh = await restarted(inner);
  const reads = fresh.counts.reads;
  for (let i = 0; i < 3; i += 1) assert.deepEqual((await fresh.repo.get('ten_a', 'exact_response', 'k1'))?.value, { answer: 'k1' });
  assert.equal(fresh.counts.reads, reads + 1);
});

test('tenants never see each other\'s entries, in memory or in the table', async (t) => {
  const { inner, repo } = await setup(t);
  repo.putDeferred(entry('ten_a', 'same-key', { answer: 'for a' }));
  assert.equal(await repo.get('ten_b', 'exact_response', 'same-key'), null);
  await inner.flush();
  assert.equal(await repo.get('ten_b', 'exact_response', 'same-key'), null);
  assert.deepEqual((await repo.get('ten_a', 'exact_response', 'same-key'))?.value, { answer: 'for a' });
});

test('invalidation drops the entries held in memory (all, by tier, by key prefix), and only the tenant\'s', async (t) => {
  const { repo } = await setup(t);
  for (const key of ['chat_completions:1', 'chat_completions:2', 'messages:1']) {
    repo.putDeferred(entry('ten_a', key));
    repo.putDeferred(entry('ten_b', key));
  }
  for (const key of ['chat_completions:1', 'messages:1']) assert.ok(await repo.get('ten_a', 'exact_response', key));

  assert.equal(await repo.invalidate('ten_a', { cacheType: 'exact_response', keyPrefix: 'chat_completions:' }), 2);
  assert.equal(await repo.get('ten_a', 'exact_response', 'chat_completions:1'), null);
  assert.equal(await repo.get('ten_a', 'exact_response', 'chat_completions:2'), null);
  assert.ok(await repo.get('ten_a', 'exact_response', 'messages:1'));
  assert.ok(await repo.get('ten_b', 'exact_response', 'chat_completions:1'));

  assert.equal(await repo.invalidate('ten_a', { cacheType: null, keyPrefix: null }), 1);
  assert.equal(await repo.get('ten_a', 'exact_response', 'messages:1'), null);
  assert.ok(await repo.get('ten_b', 'exact_response', 'messages:1'));

  assert.equal(await repo.invalidate('ten_b', { cacheType: 'exact_response', keyPrefix: null }), 3);
  assert.equal(await repo.get('ten_b', 'exact_response', 'messages:1'), null);
});

test('invalidation deletes a large cache in writes of a bounded number of entries; the answer counts them all', async (t) => {
  const inner = openStore({ dataDir: null });
  t.after(() => inner.close());
  const { store, perWrite } = deletesPerWrite(inner, 'cache_entries');
  const repo = createCacheRepository(store);
  await repo.loaded();
  // One creation time for all (the order the writes go through breaks ties by row id), two wires interleaved.
  const count = INVALIDATE_BATCH * 2 + 300;
  for (let i = 0; i < count; i++) {
    repo.putDeferred(entry('ten_a', `chat_completions:${i}`));
    repo.putDeferred(entry('ten_a', `messages:${i}`));
  }
  repo.putDeferred(entry('ten_b', 'messages:0'));
  await inner.flush();
  assert.ok(await repo.get('ten_a', 'exact_response', 'messages:7'));

  assert.equal(await repo.invalidate('ten_a', { cacheType: 'exact_response', keyPrefix: 'messages:' }), count);
  assert.ok(perWrite.length > 1 && perWrite.every((rows) => rows <= INVALIDATE_BATCH), JSON.stringify(perWrite));
  assert.equal(await repo.get('ten_a', 'exact_response', 'messages:7'), null);
  assert.equal(await repo.get('ten_a', 'exact_response', `messages:${count - 1}`), null);
  assert.ok(await repo.get('ten_a', 'exact_response', `chat_completions:${count - 1}`));
  assert.ok(await repo.get('ten_b', 'exact_response', 'messages:0'));

  perWrite.length = 0;
  assert.equal(await repo.invalidate('ten_a', { cacheType: null, keyPrefix: null }), count);
  assert.ok(perWrite.every((rows) => rows <= INVALIDATE_BATCH), JSON.stringify(perWrite));
  assert.deepEqual(await rowsOf(inner, 'ten_a'), []);
  assert.equal((await rowsOf(inner, 'ten_b')).length, 1);
});

test('invalidation and pruning delete large answers a few megabytes to a write; their answers count them all', async (t) => {
  const inner = openStore({ dataDir: null });
  t.after(() => inner.close());
  const { store, perWrite } = deletesPerWrite(inner, 'cache_entries');
  const repo = createCacheRepository(store);
  await repo.loaded();
  // Three answers to a write's budget: each write deletes at most three (one, should a single answer be larger).
  const large = 'x'.repeat(Math.floor(DELETE_BYTES_PER_WRITE / 3) - 100);
  for (let i = 0; i < 10; i++) {
    repo.putDeferred(entry('ten_a', `chat_completions:${i}`, { large }, 1_000 + i));
    repo.putDeferred(entry('ten_b', `chat_completions:${i}`, { large }, 1_000 + i));
  }
  repo.putDeferred(entry('ten_a', 'chat_completions:new', { large }, 5_000));
  await inner.flush();

  assert.equal(await repo.pruneTenant('ten_a', 2_000, 200), 10);
  assert.deepEqual(perWrite, [3, 3, 3, 1]);
  assert.deepEqual((await rowsOf(inner, 'ten_a')).map((row) => row.key), ['chat_completions:new']);

  perWrite.length = 0;
  assert.equal(await repo.pruneTenant('ten_b', 2_000, 4), 4, 'a batch is counted across its writes');
  assert.deepEqual(perWrite, [3, 1]);

  perWrite.length = 0;
  assert.equal(await repo.invalidate('ten_b', { cacheType: 'exact_response', keyPrefix: 'chat_' }), 6);
  assert.deepEqual(perWrite, [3, 3]);
  assert.deepEqual(await rowsOf(inner, 'ten_b'), []);
  assert.equal(await repo.get('ten_b', 'exact_response', 'chat_completions:9'), null);
  assert.ok(await repo.get('ten_a', 'exact_response', 'chat_completions:new'));
});

test('a key prefix matches literally and case-sensitively, in the table as in memory', async (t) => {
  const { inner, repo } = await setup(t);
  for (const key of ['chat_completions:1', 'chat%:1', 'chat_:1']) repo.putDeferred(entry('ten_a', key));
  await inner.flush();
  // Asked for again: held in memory as well as in the table.
  assert.ok(await repo.get('ten_a', 'exact_response', 'chat_completions:1'));
  assert.equal(await repo.invalidate('ten_a', { cacheType: 'exact_response', keyPrefix: 'CHAT_COMPLETIONS:' }), 0);
  assert.ok(await repo.get('ten_a', 'exact_response', 'chat_completions:1'), 'another case is another prefix');
  assert.equal(await repo.invalidate('ten_a', { cacheType: 'exact_response', keyPrefix: 'chat%' }), 1);
  assert.equal(await repo.invalidate('ten_a', { cacheType: 'exact_response', keyPrefix: 'chat_' }), 2);
  assert.equal(await repo.get('ten_a', 'exact_response', 'chat_completions:1'), null);
  assert.equal(await repo.get('ten_a', 'exact_response', 'chat_:1'), null);
});

test('an entry stored after an invalidation is served again', async (t) => {
  const { repo } = await setup(t);
  repo.putDeferred(entry('ten_a', 'k', { answer: 'old' }));
  await repo.invalidate('ten_a', { cacheType: null, keyPrefix: null });
  repo.putDeferred(entry('ten_a', 'k', { answer: 'new' }));
  assert.deepEqual((await repo.get('ten_a', 'exact_response', 'k'))?.value, { answer: 'new' });
});

test('retention pruning drops the entries held in memory past the cutoff', async (t) => {
  const { inner, repo } = await setup(t);
  repo.putDeferred(entry('ten_a', 'old', { answer: 'old' }, 100));
  repo.putDeferred(entry('ten_a', 'new', { answer: 'new' }, 5_000));
  repo.putDeferred(entry('ten_b', 'old', { answer: 'old b' }, 100));
  await inner.flush();
  assert.ok(await repo.get('ten_a', 'exact_response', 'old'));
  assert.equal(await repo.pruneTenant('ten_a', 1_000, 100), 1);
  assert.equal(await repo.get('ten_a', 'exact_response', 'old'), null);
  assert.ok(await repo.get('ten_a', 'exact_response', 'new'));
  assert.ok(await repo.get('ten_b', 'exact_response', 'old'));
});

test('an answer nobody asked for again is not kept in memory: its first repeat reads it, later ones do not', async (t) => {
  const { inner, repo, counts } = await setup(t);
  repo.putDeferred(entry('ten_a', 'k1'));
  await inner.flush();
  const reads = counts.reads;
  for (let i = 0; i < 3; i += 1) assert.deepEqual((await repo.get('ten_a', 'exact_response', 'k1'))?.value, { answer: 'k1' });
  assert.equal(counts.reads, reads + 1);
  // A refresh of a key kept in memory replaces the copy there.
  repo.putDeferred(entry('ten_a', 'k1', { answer: 'refreshed' }));
  await inner.flush();
  assert.deepEqual((await repo.get('ten_a', 'exact_response', 'k1'))?.value, { answer: 'refreshed' });
  assert.equal(counts.reads, reads + 1);
});

test('the memory tier is bounded by bytes: an evicted entry is read from the table again', async (t) => {
  // Each entry's value is ~2,000 characters: about 4.3 KB estimated; 40 KB holds nine of them.
  const { inner, repo, counts } = await setup(t, 40_000);
  for (let i = 0; i < 20; i += 1) {
    repo.putDeferred(entry('ten_a', `k${i}`, { text: `${'x'.repeat(2_000)}${i}` }));
    assert.ok(await repo.get('ten_a', 'exact_response', `k${i}`)); // asked for while pending: kept once written
  }
  await inner.flush();
  const reads = counts.reads;
  assert.ok(await repo.get('ten_a', 'exact_response', 'k19'));
  assert.equal(counts.reads, reads, 'the newest entry is in memory');
  assert.deepEqual((await repo.get('ten_a', 'exact_response', 'k0'))?.value, { text: `${'x'.repeat(2_000)}0` });
  assert.equal(counts.reads, reads + 1, 'the oldest entry was evicted and comes from the table');
});

test('many hits of one key in a commit window become one counter update', async (t) => {
  const { inner, repo, counts } = await setup(t);
  repo.putDeferred(entry('ten_a', 'k'));
  await inner.flush();
  const deferred = counts.deferred;
  for (let i = 1; i <= 25; i += 1) repo.recordHitDeferred('ten_a', 'exact_response', 'k', 2_000 + i);
  repo.recordHitDeferred('ten_b', 'exact_response', 'k', 3_000);
  assert.equal(counts.deferred, deferred + 2, 'one deferred write per key and tenant');
  assert.deepEqual(await repo.stats('ten_a', null), [{ cacheType: 'exact_response', entries: 1, hits: 25 }]);
  const lastHit = await inner.read((sql) => sql.get<{ last_hit_at: number }>('SELECT last_hit_at FROM cache_entries WHERE tenant_id = ?', ['ten_a']));
  assert.equal(lastHit?.last_hit_at, 2_025);
  // The next window starts a new count.
  repo.recordHitDeferred('ten_a', 'exact_response', 'k', 4_000);
  assert.equal(counts.deferred, deferred + 3);
  assert.deepEqual(await repo.stats('ten_a', null), [{ cacheType: 'exact_response', entries: 1, hits: 26 }]);
});

test('a counter update run twice by the store (savepoint retry) counts its hits once', async (t) => {
  const inner = openStore({ dataDir: null });
  t.after(() => inner.close());
  const captured: Array<(sql: Parameters<Parameters<Store['writeDeferred']>[0]>[0]) => void> = [];
  const { store } = countingStore(inner);
  const repo = createCacheRepository({ ...store, writeDeferred: (fn) => void captured.push(fn) } as Store);
  repo.putDeferred(entry('ten_a', 'k'));
  for (let i = 0; i < 3; i += 1) repo.recordHitDeferred('ten_a', 'exact_response', 'k', 2_000);
  await inner.write((sql) => {
    for (const fn of captured) fn(sql);
    sql.run("UPDATE cache_entries SET hits = 0 WHERE tenant_id = 'ten_a'"); // as if that savepoint rolled back
    captured[1]!(sql); // the retry alone
  });
  assert.deepEqual(await repo.stats('ten_a', null), [{ cacheType: 'exact_response', entries: 1, hits: 3 }]);
});

test('KeyIndex: finds every key it holds, forgets deleted ones, keeps the newer row of a key, and grows', () => {
  const index = new KeyIndex();
  const id = (i: number) => `ten_a\u0000exact_response\u0000chat_completions:${i.toString(16).padStart(64, '0')}`;
  for (let i = 0; i < 10_000; i += 1) assert.equal(index.set(id(i), i + 1), undefined);
  assert.equal(index.size, 10_000);
  assert.ok(index.bytes >= 10_000 * 16 && index.bytes <= 10_000 * 16 * 4, `${index.bytes} bytes for 10,000 keys`);
  for (let i = 0; i < 10_000; i += 1) assert.equal(index.get(id(i)), i + 1);
  for (let i = 10_000; i < 20_000; i += 1) assert.equal(index.get(id(i)), undefined);

  // A row read from the table replaces an older one (returned, to be dropped), never a newer one (then it is returned).
  assert.equal(index.setUnlessNewer(id(5), 50_000), 6);
  assert.equal(index.get(id(5)), 50_000);
  assert.equal(index.setUnlessNewer(id(5), 7), 7);
  assert.equal(index.get(id(5)), 50_000);
  assert.equal(index.setUnlessNewer(id(5), 50_000), undefined);
  // A row just written always takes the place.
  assert.equal(index.set(id(7), 3), 8);
  assert.equal(index.set(id(7), 8), 3);
  assert.equal(index.get(id(7)), 8);

  // A delete names the row: a newer row of the key stays.
  index.delete(id(5), 6);
  assert.equal(index.get(id(5)), 50_000);
  for (let i = 0; i < 10_000; i += 2) index.delete(id(i), i + 1);
  assert.equal(index.size, 5_000);
  const rowOf = (i: number) => (i === 5 ? 50_000 : i + 1);
  for (let i = 0; i < 10_000; i += 1) assert.equal(index.get(id(i)), i % 2 ? rowOf(i) : undefined, `key ${i}`);
  // Deleted slots are reused, and rehashing drops them: churn does not grow the arrays.
  const bytes = index.bytes;
  for (let round = 0; round < 20; round += 1) {
    for (let i = 0; i < 10_000; i += 2) index.set(id(i), 100_000 * (round + 1) + i);
    for (let i = 0; i < 10_000; i += 2) index.delete(id(i), 100_000 * (round + 1) + i);
  }
  assert.equal(index.size, 5_000);
  assert.equal(index.bytes, bytes);
  for (let i = 1; i < 10_000; i += 2) assert.equal(index.get(id(i)), rowOf(i));
  // Emptied, it shrinks back to its smallest size at the next rehash.
  for (let i = 1; i < 10_000; i += 2) index.delete(id(i), rowOf(i));
  for (let i = 0; i < 20_000; i += 1) {
    index.set(`other ${i}`, 1_000_000 + i);
    index.delete(`other ${i}`, 1_000_000 + i);
  }
  assert.equal(index.size, 0);
  assert.equal(index.bytes, 1024 * 16);
});

test('index: stored keys are found after a restart, also those stored while it loads; a refresh keeps its row', async (t) => {
  const { inner, repo } = await setup(t, 0);
  // More rows than one load batch (1,000), so the load takes several turns.
  for (let i = 0; i < 2_500; i += 1) repo.putDeferred(entry('ten_a', `k${i}`));
  await inner.flush();

  const wrapped = countingStore(inner);
  // The restarted repository's reads wait until the gate opens: its index has loaded nothing before that.
  let open!: () => void;
  const gate = new Promise<void>((resolve) => (open = resolve));
  const fresh = createCacheRepository({ ...wrapped.store, read: async (fn) => gate.then(() => wrapped.store.read(fn)) } as Store, { memoryBytes: 0 });
  // Stored before the index has loaded: a new key, and a key whose older row the load has not reached yet.
  fresh.putDeferred(entry('ten_a', 'new'));
  fresh.putDeferred(entry('ten_a', 'k2400', { answer: 'refreshed' }));
  await inner.flush();
  assert.equal((await rowsOf(inner, 'ten_a')).filter((row) => row.key === 'k2400').length, 2, 'a second row, until the load reaches the first');
  open();
  await fresh.loaded();
  const reads = wrapped.counts.reads;
  assert.equal(await fresh.get('ten_a', 'exact_response', 'never-stored'), null);
  assert.equal(await fresh.get('ten_b', 'exact_response', 'k1'), null, 'the index knows tenants apart');
  assert.equal(wrapped.counts.reads, reads, 'misses read nothing');
  for (const i of [0, 999, 1_000, 2_499]) assert.deepEqual((await fresh.get('ten_a', 'exact_response', `k${i}`))?.value, { answer: `k${i}` });
  assert.deepEqual((await fresh.get('ten_a', 'exact_response', 'new'))?.value, { answer: 'new' });
  assert.deepEqual((await fresh.get('ten_a', 'exact_response', 'k2400'))?.value, { answer: 'refreshed' });
  await inner.flush();
  // One row per key: the load dropped the older row of the key stored again.
  const rows = await rowsOf(inner, 'ten_a');
  assert.equal(rows.length, 2_501);
  assert.equal(rows.filter((row) => row.key === 'k2400').length, 1);

  // A refresh after the load updates the row in place, keeping its hits.
  fresh.recordHitDeferred('ten_a', 'exact_response', 'k7', 9_000);
  await inner.flush();
  const before = rows.find((row) => row.key === 'k7')!.id;
  fresh.putDeferred(entry('ten_a', 'k7', { answer: 'again' }));
  await inner.flush();
  const after = await inner.read((sql) => sql.all<{ id: number; hits: number }>("SELECT id, hits FROM cache_entries WHERE key = 'k7'"));
  assert.deepEqual(after, [{ id: before, hits: 1 }]);
});

test('index: a row gone from under it, or holding another key, is a miss, never another key\'s answer', async (t) => {
  const { inner, repo } = await setup(t, 0);
  repo.putDeferred(entry('ten_a', 'first'));
  await inner.flush();
  // Deleted behind the repository's back (svc never does this): the index still points at the row id...
  await inner.write((sql) => sql.run("DELETE FROM cache_entries WHERE key = 'first'"));
  assert.equal(await repo.get('ten_a', 'exact_response', 'first'), null);
  // ...which the next new row takes (SQLite reuses the highest id): it holds another key.
  repo.putDeferred(entry('ten_a', 'second'));
  await inner.flush();
  assert.equal(await repo.get('ten_a', 'exact_response', 'first'), null);
  assert.deepEqual((await repo.get('ten_a', 'exact_response', 'second'))?.value, { answer: 'second' });
  // Hits of the stale key count nowhere; storing it again appends its own row and leaves the other key's alone.
  // (Committed before the put: under load the store writes a put early, ahead of a hit count queued before it, and
  // the hit then counts on the key's new row, rightly; this test is about the stale place.)
  repo.recordHitDeferred('ten_a', 'exact_response', 'first', 5_000);
  await inner.flush();
  repo.putDeferred(entry('ten_a', 'first', { answer: 'first again' }));
  await inner.flush();
  assert.deepEqual((await repo.get('ten_a', 'exact_response', 'first'))?.value, { answer: 'first again' });
  assert.deepEqual((await repo.get('ten_a', 'exact_response', 'second'))?.value, { answer: 'second' });
  assert.deepEqual((await rowsOf(inner, 'ten_a')).map((row) => row.key), ['second', 'first']);
  assert.deepEqual(await repo.stats('ten_a', null), [{ cacheType: 'exact_response', entries: 2, hits: 0 }]);
});

test('index: deleted entries leave it, so a key stored again is found again', async (t) => {
  const { inner, repo, counts } = await setup(t, 0);
  for (const key of ['a1', 'a2', 'b1']) repo.putDeferred(entry('ten_a', key, { answer: key }, key === 'a1' ? 100 : 5_000));
  await inner.flush();
  assert.equal(await repo.pruneTenant('ten_a', 1_000, 10), 1);
  assert.equal(await repo.invalidate('ten_a', { cacheType: 'exact_response', keyPrefix: 'a' }), 1);
  const reads = counts.reads;
  assert.equal(await repo.get('ten_a', 'exact_response', 'a1'), null);
  assert.equal(await repo.get('ten_a', 'exact_response', 'a2'), null);
  assert.equal(counts.reads, reads, 'deleted keys are misses without a read');
  repo.putDeferred(entry('ten_a', 'a1', { answer: 'back' }));
  await inner.flush();
  assert.deepEqual((await repo.get('ten_a', 'exact_response', 'a1'))?.value, { answer: 'back' });
  assert.deepEqual((await rowsOf(inner, 'ten_a')).map((row) => row.key), ['b1', 'a1']);
});

test('a new entry takes the id after the largest, also after a row was added behind the repository', async (t) => {
  const { inner, repo } = await setup(t);
  repo.putDeferred(entry('ten_a', 'a1'));
  await inner.flush();
  // This row takes id 2, the id the repository counted on for its next entry: that insert fails once, and is redone.
  await inner.write((sql) =>
    sql.run("INSERT INTO cache_entries (tenant_id, cache_type, key, value_json, created_at) VALUES ('ten_b', 'exact_response', 'other', '{}', 1)"),
  );
  repo.putDeferred(entry('ten_a', 'a2'));
  await inner.flush();
  assert.deepEqual((await repo.get('ten_a', 'exact_response', 'a2'))?.value, { answer: 'a2' });
  assert.deepEqual(
    (await rowsOf(inner, 'ten_a')).map((row) => [row.id, row.key]),
    [[1, 'a1'], [3, 'a2']],
  );
});

test('migration 6 keeps the entries of an older data file, and they are found', async (t) => {
  const dir = tempDir(t);
  const old = openStore({ dataDir: dir, migrations: MIGRATIONS.filter((m) => m.version <= 5) });
  await old.write((sql) => {
    for (const key of ['k1', 'k2']) {
      sql.run(
        `INSERT INTO cache_entries (tenant_id, cache_type, key, value_json, source_run_id, cost_usd, latency_ms, hits, created_at, last_hit_at)
         VALUES ('ten_a', 'exact_response', ?, ?, NULL, 0.25, 7, 3, 1000, 2000)`,
        [key, JSON.stringify({ answer: key })],
      );
    }
  });
  await old.close();
  const store = openStore({ dataDir: dir });
  t.after(() => store.close());
  const repo = createCacheRepository(store);
  await repo.loaded();
  const found = await repo.get('ten_a', 'exact_response', 'k2');
  assert.deepEqual(found && { value: found.value, costUsd: found.costUsd, latencyMs: found.latencyMs, hits: found.hits }, {
    value: { answer: 'k2' },
    costUsd: 0.25,
    latencyMs: 7,
    hits: 3,
  });
  assert.deepEqual(await repo.stats('ten_a', null), [{ cacheType: 'exact_response', entries: 2, hits: 6 }]);
  const indexes = await store.read((sql) => sql.all<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'cache_entries'"));
  assert.deepEqual(indexes.map((row) => row.name), ['cache_entries_tenant_created']);
});

test('a dropped entry is a miss at once and stays gone: its row, a put of it not yet written, a row the index load had not reached; a put after the drop stays', async (t) => {
  const { inner, repo } = await setup(t);
  repo.putDeferred(entry('ten_a', 'written'));
  await inner.flush();
  assert.ok(await repo.get('ten_a', 'exact_response', 'written'), 'in memory after its hit');
  repo.dropDeferred('ten_a', 'exact_response', 'written');
  assert.equal(await repo.get('ten_a', 'exact_response', 'written'), null, 'a miss before the commit');
  repo.putDeferred(entry('ten_a', 'unwritten'));
  repo.dropDeferred('ten_a', 'exact_response', 'unwritten');
  repo.putDeferred(entry('ten_a', 'again'));
  repo.dropDeferred('ten_a', 'exact_response', 'again');
  repo.putDeferred(entry('ten_a', 'again', { answer: 'after the drop' }));
  await inner.flush();
  assert.deepEqual((await rowsOf(inner, 'ten_a')).map((row) => row.key), ['again']);
  assert.equal(await repo.get('ten_a', 'exact_response', 'unwritten'), null);
  assert.deepEqual((await repo.get('ten_a', 'exact_response', 'again'))?.value, { answer: 'after the drop' });

  // After a restart, dropped before the index load reached its row.
  repo.putDeferred(entry('ten_a', 'old'));
  await inner.flush();
  let open!: () => void;
  const gate = new Promise<void>((resolve) => (open = resolve));
  const { store } = countingStore(inner);
  const fresh = createCacheRepository({ ...store, read: async (fn) => gate.then(() => store.read(fn)) } as Store, { memoryBytes: 0 });
  fresh.dropDeferred('ten_a', 'exact_response', 'old');
  await inner.flush();
  open();
  await fresh.loaded();
  assert.equal(await fresh.get('ten_a', 'exact_response', 'old'), null);
  await inner.flush();
  assert.deepEqual((await rowsOf(inner, 'ten_a')).map((row) => row.key), ['again']);
});
