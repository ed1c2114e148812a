/**
 * The group commit on errors that are neither a write's own (dropped alone) nor SQLite's verdict on the transaction
 * (a failed BEGIN or COMMIT, a full rollback): a turn between slices that fails, a savepoint's own statement
 * failing, a listener of the commits that throws. Each is contained: the writes it holds are settled, the transaction ended, and
 * the store commits the next write. Escaped, it was an unhandled rejection (svc serve ends) with awaited writes never
 * settled.
 */
import assert from 'node:assert/strict';
import test, { type TestContext } from 'node:test';
import { sendOperatorNotesTo } from '../../src/core/operator-note.ts';
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

/** The operator's notes (standard error) while the test runs. */
function operatorNotes(t: TestContext): string[] {
  const notes: string[] = [];
  sendOperatorNotesTo(() => ({ write: (text: string) => notes.push(text) }));
  t.after(() => sendOperatorNotesTo(() => process.stderr));
  return notes;
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

test('a loss listener that throws is noted, not thrown: a commit it was told of after its COMMIT stands, a failed one is still a failed one, and the store commits on', async (t) => {
  const notes = operatorNotes(t);
  let lost = 0;
  let again = 0;
  const { store, ids } = await storeWithTable(t, {
    lost: () => {
      lost += 1;
      throw new Error('the loss listener broke');
    },
    committedAgain: () => {
      again += 1;
      throw new Error('the listener broke again');
    },
  });
  // A deferred write dropped alone (a duplicate): the commit succeeds, and the listener is told after its COMMIT.
  store.writeDeferred((sql) => void sql.run('INSERT INTO t (id) VALUES (1)'));
  store.writeDeferred((sql) => void sql.run('INSERT INTO t (id) VALUES (1)'));
  const awaited = store.write((sql) => sql.run('INSERT INTO t (id) VALUES (2)').changes);
  assert.equal(await settledWithin(awaited, 'the awaited write of a commit that succeeded'), 1);
  assert.equal(lost, 1);
  assert.deepEqual(await ids(), [1, 2], 'committed, not lost');
  assert.equal(notes.length, 1);
  assert.match(notes[0]!, /^svc: .*the loss listener broke/);

  // A failed commit (BEGIN refused: a data file that cannot be written): its awaited write gets SQLite's error.
  await store.read((sql) => sql.run('PRAGMA query_only = ON'));
  store.writeDeferred((sql) => void sql.run('INSERT INTO t (id) VALUES (3)'));
  await assert.rejects(settledWithin(store.write((sql) => sql.run('INSERT INTO t (id) VALUES (4)')), 'the refused write'), /readonly/);
  assert.equal(lost, 2);
  await store.read((sql) => sql.run('PRAGMA query_only = OFF'));

  // The next commit succeeds: the listener told so throws too.
  await settledWithin(store.write((sql) => sql.run('INSERT INTO t (id) VALUES (5)')), 'the next write');
  assert.equal(again, 1);
  assert.deepEqual(await ids(), [1, 2, 5]);
  assert.equal(notes.length, 3);
});

test("a listener of the windows' commits that throws is noted, not thrown: the window's writes stay committed and the store commits on", async (t) => {
  const notes = operatorNotes(t);
  let told = 0;
  const store = openStore({
    dataDir: tempDir(t),
    onWindowCommitted: () => {
      told += 1;
      throw new Error('the trace broke');
    },
  });
  t.after(() => store.close());
  await store.write((sql) => sql.run('CREATE TABLE t (id INTEGER PRIMARY KEY)'));
  store.writeDeferred((sql) => void sql.run('INSERT INTO t (id) VALUES (1)'));
  const awaited = store.write((sql) => sql.run('INSERT INTO t (id) VALUES (2)').changes);
  assert.equal(await settledWithin(awaited, "the awaited write of the window's commit"), 1);
  assert.equal(told, 1);
  assert.match(notes.join(''), /the trace broke/);
  store.writeDeferred((sql) => void sql.run('INSERT INTO t (id) VALUES (3)'));
  await settledWithin(store.flush(), 'the next commit');
  assert.deepEqual(await store.read((sql) => sql.all<{ id: number }>('SELECT id FROM t ORDER BY id').map((row) => row.id)), [1, 2, 3]);
});
