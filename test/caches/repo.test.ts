/** The exact-response cache's memory tier: byte-bounded LRU, no SQL read on a hit, invalidation, hit coalescing. */
import assert from 'node:assert/strict';
import test from 'node:test';
import { ByteLru } from '../../src/caches/lru.ts';
import { createCacheRepository, type CacheEntry } from '../../src/caches/repo.ts';
import { openStore, type Store } from '../../src/store/store.ts';

/** The real in-memory store, with its reads and deferred writes counted. */
function countingStore(store: Store) {
  const counts = { reads: 0, deferred: 0 };
  const wrapped: Store = {
    read: (fn) => {
      counts.reads += 1;
      return store.read(fn);
    },
    write: (fn) => store.write(fn),
    writeDeferred: (fn) => {
      counts.deferred += 1;
      store.writeDeferred(fn);
    },
    flush: () => store.flush(),
    close: () => store.close(),
    get schemaVersion() {
      return store.schemaVersion;
    },
    get filePath() {
      return store.filePath;
    },
    get isOpen() {
      return store.isOpen;
    },
  };
  return { store: wrapped, counts };
}

function entry(tenantId: string, key: string, value: unknown = { answer: key }, createdAt = 1_000): Omit<CacheEntry, 'hits' | 'lastHitAt'> {
  return { tenantId, cacheType: 'exact_response', key, value, sourceRunId: `run_${key}`, costUsd: 0.01, latencyMs: 5, createdAt };
}

async function setup(t: test.TestContext, memoryBytes?: number) {
  const inner = openStore({ dataDir: null });
  t.after(() => inner.close());
  const { store, counts } = countingStore(inner);
  const repo = createCacheRepository(store, memoryBytes === undefined ? {} : { memoryBytes });
  return { inner, repo, counts };
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
  const fresh = createCacheRepository(wrapped.store);
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

test('the memory tier is bounded by bytes: an evicted entry is read from the table again', async (t) => {
  // Each entry's value is ~2,000 characters: about 4.3 KB estimated; 40 KB holds nine of them.
  const { inner, repo, counts } = await setup(t, 40_000);
  for (let i = 0; i < 20; i += 1) repo.putDeferred(entry('ten_a', `k${i}`, { text: `${'x'.repeat(2_000)}${i}` }));
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
