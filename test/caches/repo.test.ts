/** The exact-response cache's memory tier: byte-bounded LRU, no SQL read on a hit, invalidation, hit coalescing. */
import assert from 'node:assert/strict';
import test from 'node:test';
import { KeyFilter } from '../../src/caches/key-filter.ts';
import { ByteLru } from '../../src/caches/lru.ts';
import { createCacheRepository, type CacheEntry } from '../../src/caches/repo.ts';
import { openStore, type Store } from '../../src/store/store.ts';
import { countingStore } from '../support/counting-store.ts';

function entry(tenantId: string, key: string, value: unknown = { answer: key }, createdAt = 1_000): Omit<CacheEntry, 'hits' | 'lastHitAt'> {
  return { tenantId, cacheType: 'exact_response', key, value, sourceRunId: `run_${key}`, costUsd: 0.01, latencyMs: 5, createdAt };
}

/** A repository over a counting in-memory store; the key filter is off unless asked for (its own tests below). */
async function setup(t: test.TestContext, memoryBytes?: number, keyFilterKeys = 0) {
  const inner = openStore({ dataDir: null });
  t.after(() => inner.close());
  const { store, counts } = countingStore(inner);
  const repo = createCacheRepository(store, { keyFilterKeys, ...(memoryBytes === undefined ? {} : { memoryBytes }) });
  return { inner, repo, counts };
}

/** Event-loop turns enough for a key filter over a small table to finish loading. */
async function filterLoaded() {
  for (let i = 0; i < 5; i += 1) await new Promise((resolve) => setImmediate(resolve));
}

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
  // A miss still asks the table.
  assert.equal(await repo.get('ten_a', 'exact_response', 'other'), null);
  assert.equal(counts.reads, reads + 1);
});

test('an entry read from the table is kept in memory for the next hit', async (t) => {
  const { inner, repo } = await setup(t);
  repo.putDeferred(entry('ten_a', 'k1'));
  await inner.flush();
  // A second repository over the same file starts with an empty memory, as after a restart.
  const wrapped = countingStore(inner);
  const fresh = createCacheRepository(wrapped.store, { keyFilterKeys: 0 });
  for (let i = 0; i < 3; i += 1) assert.deepEqual((await fresh.get('ten_a', 'exact_response', 'k1'))?.value, { answer: 'k1' });
  assert.equal(wrapped.counts.reads, 1);
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
  assert.deepEqual(await repo.stats('ten_a'), [{ cacheType: 'exact_response', entries: 1, hits: 25 }]);
  const lastHit = await inner.read((sql) => sql.get<{ last_hit_at: number }>('SELECT last_hit_at FROM cache_entries WHERE tenant_id = ?', ['ten_a']));
  assert.equal(lastHit?.last_hit_at, 2_025);
  // The next window starts a new count.
  repo.recordHitDeferred('ten_a', 'exact_response', 'k', 4_000);
  assert.equal(counts.deferred, deferred + 3);
  assert.deepEqual(await repo.stats('ten_a'), [{ cacheType: 'exact_response', entries: 1, hits: 26 }]);
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
  assert.deepEqual(await repo.stats('ten_a'), [{ cacheType: 'exact_response', entries: 1, hits: 3 }]);
});

test('KeyFilter: no false negatives, and about 1% false positives at capacity', () => {
  const filter = new KeyFilter(10_000);
  const id = (i: number) => `ten_a\u0000exact_response\u0000chat_completions:${i.toString(16).padStart(64, '0')}`;
  for (let i = 0; i < 10_000; i += 1) filter.add(id(i));
  for (let i = 0; i < 10_000; i += 1) assert.equal(filter.mightContain(id(i)), true);
  let positives = 0;
  for (let i = 10_000; i < 30_000; i += 1) if (filter.mightContain(id(i))) positives += 1;
  assert.ok(positives < 20_000 * 0.03, `${positives} false positives in 20,000`);
  assert.equal(filter.full, false);
  filter.add(id(10_000));
  assert.equal(filter.full, true);
});

test('key filter: a never-stored key is a miss without a read; stored keys, before a restart and while loading, are found', async (t) => {
  const { inner, repo, counts } = await setup(t, 0, 1024);
  repo.putDeferred(entry('ten_a', 'k1'));
  await inner.flush();
  await filterLoaded();
  let reads = counts.reads;
  assert.equal(await repo.get('ten_a', 'exact_response', 'never-stored'), null);
  assert.equal(await repo.get('ten_b', 'exact_response', 'k1'), null, 'the filter knows tenants apart');
  assert.equal(counts.reads, reads);
  assert.deepEqual((await repo.get('ten_a', 'exact_response', 'k1'))?.value, { answer: 'k1' });
  assert.equal(counts.reads, reads + 1, 'a stored key (no copy in memory here) is read');

  // After a restart the filter is loaded from the table; a key stored before the load finishes is not lost.
  const wrapped = countingStore(inner);
  const fresh = createCacheRepository(wrapped.store, { memoryBytes: 0, keyFilterKeys: 1024 });
  fresh.putDeferred(entry('ten_a', 'k2'));
  await inner.flush();
  await filterLoaded();
  reads = wrapped.counts.reads;
  assert.equal(await fresh.get('ten_a', 'exact_response', 'never-stored'), null);
  assert.equal(wrapped.counts.reads, reads, 'the loaded filter answers');
  assert.deepEqual((await fresh.get('ten_a', 'exact_response', 'k1'))?.value, { answer: 'k1' });
  assert.deepEqual((await fresh.get('ten_a', 'exact_response', 'k2'))?.value, { answer: 'k2' });
});

test('key filter: when it fills up it is rebuilt twice as large, losing no key, committed or still pending', async (t) => {
  const { inner, repo, counts } = await setup(t, 0, 8);
  await filterLoaded();
  for (let i = 0; i < 12; i += 1) repo.putDeferred(entry('ten_a', `k${i}`));
  await inner.flush();
  // The 9th key filled it: a rebuild started, which also takes keys stored while it loads and keys not yet committed.
  for (let i = 12; i < 16; i += 1) repo.putDeferred(entry('ten_a', `k${i}`));
  await filterLoaded();
  await inner.flush();
  await filterLoaded();
  for (let i = 0; i < 16; i += 1) assert.deepEqual((await repo.get('ten_a', 'exact_response', `k${i}`))?.value, { answer: `k${i}` }, `k${i}`);
  const reads = counts.reads;
  let misses = 0;
  for (let i = 0; i < 50; i += 1) if ((await repo.get('ten_a', 'exact_response', `absent-${i}`)) === null) misses += 1;
  assert.equal(misses, 50);
  assert.ok(counts.reads - reads < 3, `the rebuilt filter answers the misses (${counts.reads - reads} reads for 50)`);
});
