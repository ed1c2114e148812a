/**
 * The group commit on errors that are neither a write's own (dropped alone) nor SQLite's verdict on the transaction
 * (a failed BEGIN or COMMIT, a full rollback): a turn between slices that fails, a savepoint's own statement
 * failing. Each is contained: the writes it holds are settled, the transaction ended, and
 * the store commits the next write. Escaped, it was an unhandled rejection (svc serve ends) with awaited writes never
 * settled.
 */
import assert from 'node:assert/strict';
import test, { type TestContext } from 'node:test';
import { openStore, type LostDeferredWrites, type Store, type StoreOptions } from '../../src/store/store.ts';
import { tempDir } from '../support/process.ts';

/** `promise`, or a rejection naming `what` if it has not settled after a minute: a write left hanging fails the test. */
function settledWithin<T>(promise: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const hanging = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} never settled`)), 60_000);
  });
  return Promise.race([promise, hanging]).finally(() => clearTimeout(timer));
}

/** A store on a data file of the test's own with a table `t (id INTEGER PRIMARY KEY)`, telling `listener` of losses. */
async function storeWithTable(
  t: TestContext,
  listener: StoreOptions['deferredWriteLosses'],
  options: Partial<StoreOptions> = {},
): Promise<{ store: Store; ids: () => Promise<number[]> }> {
  const store = openStore({ dataDir: tempDir(t), ...options, deferredWriteLosses: listener });
  t.after(() => store.close());
  await store.write((sql) => sql.run('CREATE TABLE t (id INTEGER PRIMARY KEY)'));
  const ids = () => store.read((sql) => sql.all<{ id: number }>('SELECT id FROM t ORDER BY id').map((row) => row.id));
  return { store, ids };
}

test('a sliced commit whose turn between slices fails is a failed commit: rolled back, its awaited write rejected, its deferred writes told lost, and the next commit succeeds', async (t) => {
  const told = { lost: [] as LostDeferredWrites[], again: 0 };
  let turns = 0;
  const turnBetweenSlices = async () => {
    turns += 1;
    if (turns === 1) throw new Error('the turn between slices failed');
    await new Promise((resolve) => setImmediate(resolve));
  };
  // Unloaded, with a long window: the commit is sliced (see store.test.ts), and the awaited write takes the deferred
  // ones with it.
  const { store, ids } = await storeWithTable(
    t,
    { lost: (loss) => void told.lost.push(loss), committedAgain: () => void (told.again += 1) },
    { loadedTurnMs: 1_000, deferredWindowMs: 1_000, turnBetweenSlices },
  );
  for (let i = 0; i < 100; i++) {
    store.writeDeferred(
      (sql) => {
        // ~0.1 ms each: together far more than one slice.
        const until = performance.now() + 0.1;
        while (performance.now() < until);
        sql.run('INSERT INTO t (id) VALUES (?)', [i]);
      },
      { kind: 'cache entries' },
    );
  }
  const awaited = store.write((sql) => sql.run('INSERT INTO t (id) VALUES (1000)'));
  await assert.rejects(settledWithin(awaited, 'the awaited write'), /the turn between slices failed/);
  assert.deepEqual(await ids(), [], 'the slices written were rolled back');
  assert.equal(told.lost.length, 1);
  assert.equal(told.lost[0]!.writes, 100);
  assert.equal(told.lost[0]!.refusedWrites, 1);
  assert.deepEqual(told.lost[0]!.kinds, { 'cache entries': 100 });
  assert.equal(told.lost[0]!.commitFailed, true);

  store.writeDeferred((sql) => void sql.run('INSERT INTO t (id) VALUES (2000)'));
  await settledWithin(store.write((sql) => sql.run('INSERT INTO t (id) VALUES (2001)')), 'the next write');
  assert.deepEqual(await ids(), [2000, 2001]);
  assert.equal(told.again, 1);
});

test('writes written early whose savepoint fails on its own (no full rollback) are lost, told, and the transaction is rolled back, so the next commit begins anew', async (t) => {
  const told: LostDeferredWrites[] = [];
  // Every turn counts as loaded, so the ready writes go into the window's transaction early; the window stays open
  // until the awaited write below commits it.
  const { store, ids } = await storeWithTable(
    t,
    { lost: (loss) => void told.push(loss), committedAgain: () => {} },
    { loadedTurnMs: 0, deferredWindowMs: 60_000 },
  );
  store.writeDeferred((sql) => void sql.run('INSERT INTO t (id) VALUES (1)'), { early: true, kind: 'cache entries' });
  // Its savepoint's own statement fails (as on SQLITE_NOMEM): the write ends the savepoint it runs in, whose RELEASE
  // and ROLLBACK TO then find none, while the transaction itself stays open.
  store.writeDeferred((sql) => void sql.run('RELEASE w'), { early: true, kind: 'cache entries' });
  await new Promise((resolve) => setImmediate(resolve));
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(told.length, 1);
  assert.equal(told[0]!.writes, 2);
  assert.deepEqual(told[0]!.kinds, { 'cache entries': 2 });
  await settledWithin(store.write((sql) => sql.run('INSERT INTO t (id) VALUES (3)')), 'the next write');
  assert.deepEqual(await ids(), [3], 'the early writes rolled back, the next write committed');
});
