/** The data file: versioned migrations, group commit, deferred writes, a stale engine lock cleared. */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import test, { type TestContext } from 'node:test';
import { MIGRATIONS } from '../../src/store/migrations.ts';
import { textBytes, type Sql } from '../../src/store/sql.ts';
import {
  DATA_FILE_NAME,
  FRESH_COMMITS,
  FRESH_WINDOW_MARGIN_MS,
  WINDOW_MARGIN_MS,
  openStore,
  windowDelayMs,
  windowMarginMs,
  type CommittedWindow,
  type LostDeferredWrites,
  type Store,
  type StoreOptions,
} from '../../src/store/store.ts';
import { tempDir } from '../support/process.ts';

test('migrations are versioned, applied once, and reopening is idempotent', async (t) => {
  const dataDir = tempDir(t);
  const first = openStore({ dataDir });
  const latest = Math.max(...MIGRATIONS.map((migration) => migration.version));
  assert.equal(first.schemaVersion, latest);
  const versions = await first.read((sql) => sql.all<{ version: number }>('SELECT version FROM schema_migrations ORDER BY version').map((row) => row.version));
  assert.deepEqual(versions, [...MIGRATIONS].map((migration) => migration.version).sort((a, b) => a - b));
  await first.close();
  const second = openStore({ dataDir });
  assert.equal(second.schemaVersion, latest);
  assert.equal(await second.read((sql) => sql.get<{ n: number }>('SELECT COUNT(*) AS n FROM schema_migrations')!.n), MIGRATIONS.length);
  await second.close();
});

test('a migration missing below the highest applied one is still applied', async (t) => {
  const dataDir = tempDir(t);
  const extra = { version: 999, name: 'late', sql: 'CREATE TABLE late_one (id TEXT)' };
  const gap = { version: 998, name: 'gap', sql: 'CREATE TABLE gap_one (id TEXT)' };
  await openStore({ dataDir, migrations: [...MIGRATIONS, extra] }).close();
  const store = openStore({ dataDir, migrations: [...MIGRATIONS, gap, extra] });
  assert.ok(await store.read((sql) => sql.get("SELECT name FROM sqlite_master WHERE name = 'gap_one'")));
  await store.close();
});

test('a data file holding a migration this code does not know (a newer svc wrote it) is refused and left as it was', async (t) => {
  const dataDir = tempDir(t);
  const newer = { version: 999, name: 'newer', sql: 'CREATE TABLE newer_one (id TEXT)' };
  await openStore({ dataDir, migrations: [...MIGRATIONS, newer] }).close();
  assert.throws(() => openStore({ dataDir }), /written by a newer svc: it holds schema migration 999, which this svc \(migrations up to \d+\) does not know/);
  const again = openStore({ dataDir, migrations: [...MIGRATIONS, newer] });
  assert.equal(await again.read((sql) => sql.get<{ n: number }>('SELECT COUNT(*) AS n FROM schema_migrations')!.n), MIGRATIONS.length + 1);
  await again.close();
});

test('concurrent writes share a commit, each resolving after it; a failing write does not sink its batch', async (t) => {
  const store = openStore({ dataDir: tempDir(t) });
  t.after(() => store.close());
  await store.write((sql) => sql.run("CREATE TABLE IF NOT EXISTS t (id TEXT PRIMARY KEY)"));
  const writes = Array.from({ length: 50 }, (_, i) => store.write((sql) => sql.run('INSERT INTO t (id) VALUES (?)', [`r${i}`])));
  const failing = assert.rejects(store.write((sql) => sql.run('INSERT INTO t (id) VALUES (?)', ['r1'])), /UNIQUE/);
  await Promise.all(writes);
  await failing;
  assert.equal(await store.read((sql) => sql.get<{ n: number }>('SELECT COUNT(*) AS n FROM t')!.n), 50);
});

test('a write queued from the continuation of another write resolves (no lost wake-up)', async (t) => {
  const store = openStore({ dataDir: null });
  t.after(() => store.close());
  await store.write((sql) => sql.run('CREATE TABLE IF NOT EXISTS t (id INTEGER)'));
  for (let i = 0; i < 200; i++) {
    await store.write((sql) => sql.run('INSERT INTO t (id) VALUES (?)', [i])).then(() => store.write((sql) => sql.run('INSERT INTO t (id) VALUES (?)', [-i])));
  }
  store.writeDeferred((sql) => sql.run('INSERT INTO t (id) VALUES (?)', [1_000_000]));
  await store.flush();
  assert.equal(await store.read((sql) => sql.get<{ n: number }>('SELECT COUNT(*) AS n FROM t')!.n), 401);
});

test('a stale engine lock directory left by a killed process is cleared on open', async (t) => {
  const dataDir = tempDir(t);
  await openStore({ dataDir }).close();
  mkdirSync(join(dataDir, `${DATA_FILE_NAME}.lock`));
  const store = openStore({ dataDir });
  assert.equal(await store.read((sql) => sql.get<{ one: number }>('SELECT 1 AS one')!.one), 1);
  await store.close();
  assert.equal(existsSync(join(dataDir, `${DATA_FILE_NAME}.lock`)), false);
});

test('deferred writes share one savepoint; a failing one is dropped alone', async (t) => {
  const store = openStore({ dataDir: tempDir(t) });
  t.after(() => store.close());
  await store.write((sql) => sql.run('CREATE TABLE t (id TEXT PRIMARY KEY)'));
  store.writeDeferred((sql) => void sql.run('INSERT INTO t (id) VALUES (?)', ['a']));
  store.writeDeferred((sql) => void sql.run('INSERT INTO t (id) VALUES (?)', ['a']));
  store.writeDeferred((sql) => void sql.run('INSERT INTO t (id) VALUES (?)', ['b']));
  await store.flush();
  assert.deepEqual(await store.read((sql) => sql.all<{ id: string }>('SELECT id FROM t ORDER BY id').map((row) => row.id)), ['a', 'b']);
});

/** Keep the event loop busy for `ms` milliseconds: a write, or a competitor, that takes that long. */
function busyFor(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until);
}

/** A store on a data file of the test's own, with a table `t (id INTEGER PRIMARY KEY)`; closed when the test ends. */
async function storeWithTable(
  t: TestContext,
  options: { loadedTurnMs?: number; deferredWindowMs?: number; turnBetweenSlices?: () => Promise<void> } = {},
): Promise<Store> {
  const store = openStore({ dataDir: tempDir(t), ...options });
  t.after(() => store.close());
  await store.write((sql) => sql.run('CREATE TABLE t (id INTEGER PRIMARY KEY)'));
  return store;
}

/**
 * Queue `count` deferred inserts into `t` (ids 0..count-1), each taking ~0.1 ms: together far more than one slice.
 * `written` is called in each, as it is written.
 */
function queueSlowInserts(store: Store, count: number, written = () => {}): void {
  for (let i = 0; i < count; i++) {
    store.writeDeferred((sql) => {
      busyFor(0.1);
      written();
      sql.run('INSERT INTO t (id) VALUES (?)', [i]);
    });
  }
}

/** Flush `store` while a loop of immediates counts the turns of the event loop in `clock.turn`. */
async function flushCountingTurns(store: Store, clock: { turn: number }): Promise<void> {
  let committed = false;
  const flushed = store.flush().then(() => (committed = true));
  while (!committed) {
    await new Promise((resolve) => setImmediate(resolve));
    clock.turn += 1;
  }
  await flushed;
}

test('a commit of many deferred writes gives the event loop turns between slices, and commits them all', async (t) => {
  // The light-load path: a turn of this test's loop is a few microseconds, but one slow turn of a busy machine would
  // otherwise count as load and finish the commit in one piece (the loaded path has a test of its own below). A long
  // window: the commit of a 20 ms one writes what is left at once when it would end late (the next test).
  const store = await storeWithTable(t, { loadedTurnMs: 1_000, deferredWindowMs: 1_000 });
  // ~0.1 ms of work per write: 200 of them are far more than one slice.
  // Each write notes the turn of the event loop it ran in.
  const clock = { turn: 0 };
  const turnsSeen = new Set<number>();
  for (let i = 0; i < 200; i++) {
    store.writeDeferred((sql) => {
      busyFor(0.1);
      turnsSeen.add(clock.turn);
      // The second write to id 7 fails (a duplicate); only it is dropped, not its slice.
      sql.run('INSERT INTO t (id) VALUES (?)', [i === 150 ? 7 : i]);
    });
  }
  await flushCountingTurns(store, clock);
  // In one piece, all 200 writes (~20 ms) would run in one turn.
  assert.ok(turnsSeen.size >= 10, `the writes ran in ${turnsSeen.size} turns of the event loop`);
  const ids = await store.read((sql) => sql.all<{ id: number }>('SELECT id FROM t ORDER BY id').map((row) => row.id));
  assert.equal(ids.length, 199);
  assert.equal(ids.includes(150), false);
});

test("a sliced commit's turns between slices are the ones it is given (svc serve's let arriving requests go first)", async (t) => {
  let turns = 0;
  const turnBetweenSlices = async () => {
    turns += 1;
    await new Promise((resolve) => setImmediate(resolve));
  };
  const store = await storeWithTable(t, { loadedTurnMs: 1_000, deferredWindowMs: 1_000, turnBetweenSlices });
  let writes = 0;
  queueSlowInserts(store, 100, () => (writes += 1));
  await store.flush();
  // ~10 ms of writing in slices of ~0.2 ms: a turn between each two, every one of them the store's option.
  assert.ok(turns >= 10, `${turns} turns taken between slices`);
  assert.ok(turns < writes, `${turns} turns for ${writes} writes`);
  assert.equal((await store.read((sql) => sql.get<{ n: number }>('SELECT COUNT(*) AS n FROM t')))?.n, 100);
});

test('a store counts as loaded until it has measured a turn: a commit that begins before that is written in one piece', async (t) => {
  // A fresh process's first window under load falls due in the long turn of its first requests, before the store
  // saw any turn end: sliced, its commit would wait for the rest of that turn after the first slice.
  const store = await storeWithTable(t);
  const clock = { turn: 0 };
  const turnsSeen = new Set<number>();
  queueSlowInserts(store, 100, () => turnsSeen.add(clock.turn));
  // The turn ends with this immediate, before any the commit would wait for.
  const turnEnded = new Promise((resolve) => setImmediate(resolve)).then(() => (clock.turn = 1));
  busyFor(30); // past the window's end, in the turn that opened it
  store.commitIfOverdue();
  await turnEnded;
  await store.flush();
  assert.deepEqual([...turnsSeen], [0], 'all 100 writes (~10 ms) in the turn the commit began');
  assert.equal(await store.read((sql) => sql.get<{ n: number }>('SELECT COUNT(*) AS n FROM t')!.n), 100);
});

test('a sliced commit that would end past its window writes the rest in one piece, so it ends in time', async (t) => {
  const store = await storeWithTable(t, { loadedTurnMs: 1_000, deferredWindowMs: 20 });
  // ~0.1 ms of work per write, ~40 ms in all: twice the window. Each write notes the turn it ran in.
  const clock = { turn: 0 };
  const turns: number[] = [];
  for (let i = 0; i < 400; i++) {
    store.writeDeferred((sql) => {
      busyFor(0.1);
      turns.push(clock.turn);
      sql.run('INSERT INTO t (id) VALUES (?)', [i]);
    });
  }
  await flushCountingTurns(store, clock);
  assert.equal(turns.length, 400);
  // Sliced, a slice of ~0.2 ms holds a few writes; from 11 ms after the window opened (20 ms less a fresh store's
  // margin for COMMIT) what was left, over half of them, went in one piece, in the commit's last turn.
  const inLastTurn = turns.filter((turn) => turn === turns[turns.length - 1]).length;
  assert.ok(inLastTurn > 200, `${inLastTurn} writes in the commit's last turn`);
  assert.equal(await store.read((sql) => sql.get<{ n: number }>('SELECT COUNT(*) AS n FROM t')!.n), 400);
});

test('on a loaded event loop a sliced commit still gets about half of the time, so it keeps up', async (t) => {
  const store = await storeWithTable(t);
  // ~30 ms of deferred work against a competitor that takes 1 ms of every turn of the event loop. In slices of a
  // fixed 0.3 ms the commit would need ~100 turns (and under real load fall further behind every turn).
  queueSlowInserts(store, 300);
  let committed = false;
  const flushed = store.flush().then(() => (committed = true));
  let turns = 0;
  while (!committed) {
    busyFor(1);
    turns += 1;
    await new Promise((resolve) => setImmediate(resolve));
  }
  await flushed;
  assert.ok(turns < 60, `the commit took ${turns} turns of a loaded event loop`);
  assert.equal(await store.read((sql) => sql.get<{ n: number }>('SELECT COUNT(*) AS n FROM t')!.n), 300);
});

test('a deferred write in steps is planned once when its commit starts; a failing step is dropped alone', async (t) => {
  // Unloaded: under load its ready steps are also planned early (the test below), and one slow turn of a busy
  // machine would count as load.
  const store = await storeWithTable(t, { loadedTurnMs: 1_000 });
  let planned = 0;
  const ids = [1, 2, 2, 3];
  store.writeDeferredSteps(() => {
    planned += 1;
    return ids.map((id) => (sql) => void sql.run('INSERT INTO t (id) VALUES (?)', [id]));
  });
  await store.flush();
  assert.equal(planned, 1);
  assert.deepEqual(await store.read((sql) => sql.all<{ id: number }>('SELECT id FROM t ORDER BY id').map((row) => row.id)), [1, 2, 3]);
});

test('under load, the ready part of deferred writes goes into an open transaction early; its commit ends it', async (t) => {
  const dataDir = tempDir(t);
  const log = join(dataDir, `${DATA_FILE_NAME}-wal`);
  // Every turn counts as loaded; the window stays open until something commits it.
  const store = openStore({ dataDir, loadedTurnMs: 0, deferredWindowMs: 60_000 });
  await store.write((sql) => sql.run('CREATE TABLE t (id INTEGER PRIMARY KEY)'));
  const logBefore = statSync(log).size;
  const plans: boolean[] = [];
  store.writeDeferredSteps((final) => {
    plans.push(final);
    if (final) return [(sql) => void sql.run('INSERT INTO t (id) VALUES (2)')];
    return plans.length === 1 ? [(sql) => void sql.run('INSERT INTO t (id) VALUES (1)')] : [];
  });
  store.writeDeferred((sql) => void sql.run('INSERT INTO t (id) VALUES (3)'), { early: true });
  store.writeDeferred((sql) => void sql.run('INSERT INTO t (id) VALUES (4)'));
  await new Promise((resolve) => setImmediate(resolve));
  await new Promise((resolve) => setImmediate(resolve));
  const ids = () => store.read((sql) => sql.all<{ id: number }>('SELECT id FROM t ORDER BY id').map((row) => row.id));
  // Written (this connection sees them), not committed: nothing reached the log, which a checkpoint's flush may
  // still need unchanged.
  assert.deepEqual(await ids(), [1, 3]);
  assert.equal(statSync(log).size, logBefore);
  // An awaited write commits the open transaction with the rest of the window.
  await store.write((sql) => sql.run('INSERT INTO t (id) VALUES (5)'));
  assert.deepEqual(await ids(), [1, 2, 3, 4, 5]);
  assert.deepEqual(plans, [false, true]);
  await store.close();
  const reopened = openStore({ dataDir });
  t.after(() => reopened.close());
  assert.deepEqual(await reopened.read((sql) => sql.all<{ id: number }>('SELECT id FROM t ORDER BY id').map((row) => row.id)), [1, 2, 3, 4, 5]);
});

/** A store told of lost deferred writes into `lost`, and counting in `again` the commits that succeeded after a loss. */
async function storeTellingLosses(t: TestContext, options: Partial<StoreOptions> = {}) {
  const told = { lost: [] as LostDeferredWrites[], again: 0 };
  const store = openStore({
    dataDir: tempDir(t),
    ...options,
    deferredWriteLosses: { lost: (loss) => void told.lost.push(loss), committedAgain: () => void (told.again += 1) },
  });
  t.after(() => store.close());
  // `c.p` is checked at COMMIT: a row breaking it makes the COMMIT itself fail, as a full disk or an I/O error does.
  await store.write((sql) => {
    sql.run('CREATE TABLE t (id INTEGER PRIMARY KEY)');
    sql.run('CREATE TABLE p (id INTEGER PRIMARY KEY)');
    sql.run('CREATE TABLE c (id INTEGER PRIMARY KEY, p INTEGER REFERENCES p (id) DEFERRABLE INITIALLY DEFERRED)');
  });
  const ids = () => store.read((sql) => sql.all<{ id: number }>('SELECT id FROM t ORDER BY id').map((row) => row.id));
  return { store, told, ids };
}

test('a COMMIT that fails loses its deferred writes, early ones included: the store tells how many, of which kinds, and why, then that commits succeed again', async (t) => {
  // Every turn counts as loaded, so the ready writes go into the window's transaction early; the window stays open
  // until the awaited write below commits it.
  const { store, told, ids } = await storeTellingLosses(t, { loadedTurnMs: 0, deferredWindowMs: 60_000 });
  store.writeDeferredSteps(
    (final) => (final ? [(sql) => void sql.run('INSERT INTO t (id) VALUES (1)'), (sql) => void sql.run('INSERT INTO t (id) VALUES (2)')] : []),
    'run ledger',
  );
  store.writeDeferred((sql) => void sql.run('INSERT INTO t (id) VALUES (3)'), { early: true, kind: 'cache entries' });
  store.writeDeferred((sql) => void sql.run('INSERT INTO c (id, p) VALUES (1, 404)'), { early: true, kind: 'cache entries' });
  store.writeDeferred((sql) => void sql.run('INSERT INTO t (id) VALUES (4)'), { kind: 'session activity' });
  await new Promise((resolve) => setImmediate(resolve));
  await new Promise((resolve) => setImmediate(resolve));
  await assert.rejects(store.write((sql) => sql.run('INSERT INTO t (id) VALUES (5)')), /FOREIGN KEY/);
  assert.deepEqual(await ids(), []);
  assert.equal(told.lost.length, 1);
  assert.equal(told.lost[0]!.writes, 4);
  assert.deepEqual(told.lost[0]!.kinds, { 'run ledger': 1, 'cache entries': 2, 'session activity': 1 });
  assert.match((told.lost[0]!.error as Error).message, /FOREIGN KEY constraint failed/);
  assert.equal(told.again, 0);
  // The next commit succeeds: told once, not for every commit after it.
  store.writeDeferred((sql) => void sql.run('INSERT INTO t (id) VALUES (6)'));
  await store.flush();
  await store.write((sql) => sql.run('INSERT INTO t (id) VALUES (7)'));
  assert.deepEqual(await ids(), [6, 7]);
  assert.equal(told.lost.length, 1);
  assert.equal(told.again, 1);
});

test("a commit whose BEGIN fails loses its deferred writes: the store tells so, and a fresh store's waiting answers are released", async (t) => {
  const { store, told, ids } = await storeTellingLosses(t, { loadedTurnMs: 1_000 });
  // A data file that cannot be written: BEGIN IMMEDIATE fails ("attempt to write a readonly database").
  await store.read((sql) => sql.run('PRAGMA query_only = ON'));
  store.writeDeferred((sql) => void sql.run('INSERT INTO t (id) VALUES (1)'), { kind: 'cache entries' });
  store.writeDeferredSteps(() => [(sql) => void sql.run('INSERT INTO t (id) VALUES (2)')], 'run ledger');
  // A fresh store's answers wait for the commit of their writes; one that fails lets them go, as before.
  assert.equal(store.answersWaitForCommit, true);
  await store.committed();
  assert.equal(told.lost.length, 1);
  assert.equal(told.lost[0]!.writes, 2);
  assert.deepEqual(told.lost[0]!.kinds, { 'cache entries': 1, 'run ledger': 1 });
  assert.match((told.lost[0]!.error as Error).message, /readonly/);
  await store.read((sql) => sql.run('PRAGMA query_only = OFF'));
  store.writeDeferred((sql) => void sql.run('INSERT INTO t (id) VALUES (3)'));
  await store.flush();
  assert.deepEqual(await ids(), [3]);
  assert.equal(told.again, 1);
});

test('a deferred window is shortened by how late the recent commits ended, so its commit still ends in time', async (t) => {
  const store = openStore({ dataDir: tempDir(t), deferredWindowMs: 200, loadedTurnMs: 1_000, answersWaitFreshMs: 0 });
  t.after(() => store.close());
  await store.write((sql) => sql.run('CREATE TABLE t (id INTEGER PRIMARY KEY)'));
  // This window's commit ends ~250 ms after it was due.
  store.writeDeferred((sql) => {
    busyFor(250);
    sql.run('INSERT INTO t (id) VALUES (1)');
  });
  await new Promise((resolve) => setTimeout(resolve, 600));
  // So the next window closes at once instead of 200 ms after it opened.
  const queuedAt = performance.now();
  let committedAfterMs: number | undefined;
  store.writeDeferred((sql) => {
    committedAfterMs = performance.now() - queuedAt;
    sql.run('INSERT INTO t (id) VALUES (2)');
  });
  await new Promise((resolve) => setTimeout(resolve, 100));
  assert.ok(committedAfterMs !== undefined && committedAfterMs < 100, `the second window's commit ran after ${committedAfterMs} ms`);
});

test('a window that falls due during a long turn of the event loop commits when a writer asks, not after the turn', async (t) => {
  const dataDir = tempDir(t);
  // No checkpoint after the table's commit, however long a loaded machine makes its writing: one still running would
  // hold the window (its commit follows the checkpoint, not the call), and one ended would have the next commit reuse
  // the log from its start (the log's size would not grow). A window held by a checkpoint is tested below.
  const store = openStore({ dataDir, deferredWindowMs: 200, loadedTurnMs: 0, checkpointAfterWritingMs: Infinity });
  await store.write((sql) => sql.run('CREATE TABLE t (id INTEGER PRIMARY KEY)'));
  let writtenAt: number | undefined;
  store.writeDeferred((sql) => {
    writtenAt = performance.now();
    sql.run('INSERT INTO t (id) VALUES (1)');
  });
  // Not due yet: nothing happens.
  store.commitIfOverdue();
  assert.equal(writtenAt, undefined);
  // One long turn (tens of requests handled in it, under load; here past the window's ~187 ms, so that a slow machine
  // cannot make the first call above late): the window's timer cannot fire meanwhile.
  busyFor(250);
  const log = join(dataDir, `${DATA_FILE_NAME}-wal`);
  const logBefore = statSync(log).size;
  // The next callback of the loop, whatever it is, comes after the commit's `COMMIT` (which appends to the log).
  const logAtNextCallback = new Promise<number>((resolve) => setImmediate(() => resolve(statSync(log).size)));
  const askedAt = performance.now();
  store.commitIfOverdue();
  assert.ok(writtenAt !== undefined && writtenAt >= askedAt, 'the commit began in the call, within the turn');
  assert.ok((await logAtNextCallback) > logBefore, 'committed before the next callback');
  await store.close();
  const reopened = openStore({ dataDir });
  t.after(() => reopened.close());
  assert.deepEqual(await reopened.read((sql) => sql.all<{ id: number }>('SELECT id FROM t').map((row) => row.id)), [1]);
});

test('a write queued while a sliced commit is under way joins the next commit and resolves', async (t) => {
  const store = await storeWithTable(t);
  queueSlowInserts(store, 100);
  const flushed = store.flush();
  await new Promise((resolve) => setImmediate(resolve));
  await new Promise((resolve) => setImmediate(resolve));
  // Mid-commit: a management write waits for its own commit, a deferred one for the next.
  const written = store.write((sql) => sql.run('INSERT INTO t (id) VALUES (?)', [1000]).changes);
  store.writeDeferred((sql) => void sql.run('INSERT INTO t (id) VALUES (?)', [1001]));
  assert.equal(await written, 1);
  await flushed;
  await store.flush();
  assert.equal(await store.read((sql) => sql.get<{ n: number }>('SELECT COUNT(*) AS n FROM t')!.n), 102);
});

test('the write-ahead log is checkpointed into the data file and reused, not grown without end', async (t) => {
  const dataDir = tempDir(t);
  const file = join(dataDir, DATA_FILE_NAME);
  const store = openStore({ dataDir });
  await store.write((sql) => sql.run('CREATE TABLE t (id INTEGER PRIMARY KEY, body TEXT)'));
  const body = 'x'.repeat(8_000);
  const logSizes: number[] = [];
  for (let i = 0; i < 400; i++) {
    await store.write((sql) => sql.run('INSERT OR REPLACE INTO t (id, body) VALUES (?, ?)', [i % 10, body]));
    logSizes.push(statSync(`${file}-wal`).size);
  }
  // 400 commits of ~3 pages each would make a ~5 MB log; checkpoints keep it to what the commits between two of
  // them wrote (64 commits, ~1.4 MB: small commits share a checkpoint).
  assert.ok(Math.max(...logSizes) < 2_000_000, `the log grew to ${Math.max(...logSizes)} bytes`);
  assert.ok(statSync(file).size > 80_000, 'the checkpoints copied the rows into the data file');
  await store.close();
  assert.equal(existsSync(`${file}-wal`), false, 'closing folds the log into the data file');
  const reopened = openStore({ dataDir });
  assert.equal(await reopened.read((sql) => sql.get<{ n: number }>('SELECT COUNT(*) AS n FROM t')!.n), 10);
  await reopened.close();
});

test('the log is checkpointed sooner once the commits since the last checkpoint spent long enough writing', async (t) => {
  // A checkpoint's stall follows the pages written since the last one, which the time spent writing them measures:
  // with no writing time allowed, every commit is checkpointed and the log never holds more than one commit.
  const dataDir = tempDir(t);
  const file = join(dataDir, DATA_FILE_NAME);
  const store = openStore({ dataDir, checkpointAfterWritingMs: 0 });
  await store.write((sql) => sql.run('CREATE TABLE t (id INTEGER PRIMARY KEY, body TEXT)'));
  // The log is reused from its start after a checkpoint, never shortened: what opening the store wrote stays its size.
  const opened = statSync(`${file}-wal`).size;
  const body = 'x'.repeat(8_000);
  const logSizes: number[] = [];
  for (let i = 0; i < 100; i++) {
    store.writeDeferred((sql) => sql.run('INSERT OR REPLACE INTO t (id, body) VALUES (?, ?)', [i % 10, body]));
    await store.write((sql) => sql.run('INSERT OR REPLACE INTO t (id, body) VALUES (?, ?)', [10 + (i % 10), body]));
    logSizes.push(statSync(`${file}-wal`).size);
  }
  // One commit of these is ~8 pages (~33 KB of log); 64 of them would add ~2 MB.
  assert.ok(Math.max(...logSizes) < opened + 100_000, `the log grew from ${opened} to ${Math.max(...logSizes)} bytes`);
  await store.close();
  const reopened = openStore({ dataDir });
  assert.equal(await reopened.read((sql) => sql.get<{ n: number }>('SELECT COUNT(*) AS n FROM t')!.n), 20);
  await reopened.close();
});

test('a window open while a checkpoint runs is due at once: its commit follows the checkpoint, not its timer', async (t) => {
  // Every commit is checkpointed; a window is a minute long, so a commit within half of it was not the timer's (however
  // loaded the machine).
  const windows: CommittedWindow[] = [];
  const store = openStore({
    dataDir: tempDir(t),
    checkpointAfterWritingMs: 0,
    deferredWindowMs: 60_000,
    onWindowCommitted: (window) => windows.push(window),
  });
  t.after(() => store.close());
  await store.write((sql) => sql.run('CREATE TABLE t (id INTEGER PRIMARY KEY)'));
  await store.flush(); // and the checkpoint after it
  let queuedAt = 0;
  let writtenAfterMs: number | undefined;
  store.writeDeferred((sql) => {
    sql.run('INSERT INTO t (id) VALUES (1)');
    // Queued while the commit that will checkpoint is writing: its window opens now.
    queuedAt = performance.now();
    store.writeDeferred((inner) => {
      writtenAfterMs = performance.now() - queuedAt;
      inner.run('INSERT INTO t (id) VALUES (2)');
    });
  });
  // The first window's commit (and its checkpoint) now; the second window is left to the store.
  const first = store.write((sql) => sql.run('INSERT INTO t (id) VALUES (3)'));
  await first;
  const waitedUntil = performance.now() + 30_000;
  while (writtenAfterMs === undefined && performance.now() < waitedUntil) await new Promise((resolve) => setTimeout(resolve, 5));
  assert.ok(writtenAfterMs !== undefined, "the second window's commit waited for its timer");
  // Both windows are noted: the first was committed by the awaited write, the second held by the checkpoint.
  await store.flush();
  assert.deepEqual(windows.map((window) => window.heldByCheckpoint), [false, true]);
  assert.ok(windows.every((window) => window.lengthMs >= 0 && window.lengthMs < 500));
});

/**
 * Hold the event loop (only microtasks run, no callback of a timer or a flush) until `done()` or for `ms`: whether
 * `done()` came true.
 */
async function inMicrotasksUntil(done: () => boolean, ms: number): Promise<boolean> {
  const until = performance.now() + ms;
  while (!done() && performance.now() < until) await Promise.resolve();
  return done();
}

/**
 * Whether an awaited write's commit (every commit checkpoints here) copied the log into the data file before the
 * event loop's next turn: from that commit on, the loop is held for up to 200 ms (only microtasks run), watching the
 * data file's size. A copy that waits for a flush's callback cannot happen meanwhile.
 */
async function copiedWithinTheCommitsTurn(store: Store, file: string, id: number): Promise<boolean> {
  const before = statSync(file).size;
  let copied: Promise<boolean> | undefined;
  store.writeDeferred((sql) => {
    sql.run('INSERT INTO t (id, body) VALUES (?, ?)', [id, 'x'.repeat(8_000)]);
    copied = new Promise((resolve) => queueMicrotask(() => resolve(inMicrotasksUntil(() => statSync(file).size > before, 200))));
  });
  await store.write((sql) => sql.run('INSERT INTO t (id, body) VALUES (?, ?)', [id + 1, 'y'.repeat(8_000)]));
  return await copied!;
}

/**
 * Checkpointing commits until one copies within its turn: until the log's first flush (with its directory's, off the
 * loop as the store opened) has ended, it is flushed off the loop; after that, on it. Returns the last id written.
 */
async function untilTheLogIsFlushedOnTheLoop(store: Store, file: string): Promise<number> {
  let id = 0;
  while (!(await copiedWithinTheCommitsTurn(store, file, (id += 2)))) {
    assert.ok(id < 200, 'no checkpoint flushed the log on the event loop');
  }
  return id;
}

test("with a quick disk the log's flush before a checkpoint runs on the event loop: the copy follows its commit at once", async (t) => {
  const dataDir = tempDir(t);
  const store = openStore({ dataDir, checkpointAfterWritingMs: 0 });
  t.after(() => store.close());
  await store.write((sql) => sql.run('CREATE TABLE t (id INTEGER PRIMARY KEY, body TEXT)'));
  const id = await untilTheLogIsFlushedOnTheLoop(store, join(dataDir, DATA_FILE_NAME));
  assert.equal(await store.read((sql) => sql.get<{ n: number }>('SELECT COUNT(*) AS n FROM t')!.n), id);
});

test("once the log's flushes took longer than allowed twice in a row, the next checkpoints flush it off the event loop", async (t) => {
  // No flush is quick enough for a limit of a nanosecond: the second on the loop is the last for a while.
  const dataDir = tempDir(t);
  const file = join(dataDir, DATA_FILE_NAME);
  const store = openStore({ dataDir, checkpointAfterWritingMs: 0, flushOnLoopMaxMs: 1e-6 });
  t.after(() => store.close());
  await store.write((sql) => sql.run('CREATE TABLE t (id INTEGER PRIMARY KEY, body TEXT)'));
  let id = await untilTheLogIsFlushedOnTheLoop(store, file);
  assert.equal(await copiedWithinTheCommitsTurn(store, file, (id += 2)), true, 'one slow flush is not a slow disk');
  // Off the loop now: the copy waits for the flush's callback, which the held loop does not run.
  assert.equal(await copiedWithinTheCommitsTurn(store, file, (id += 2)), false);
  assert.equal(await copiedWithinTheCommitsTurn(store, file, (id += 2)), false);
});

test("a window held by a checkpoint commits once due though the main file's flush off the event loop has not called back: the main file is flushed on the loop", async (t) => {
  // Every commit is checkpointed; a window is due ~11 ms after it opened (30 ms, less the initial overrun and a fresh
  // store's margin).
  // No limit on flushes on the loop that a slow test machine could reach (the limit has tests of its own).
  const dataDir = tempDir(t);
  const windows: CommittedWindow[] = [];
  const store = openStore({
    dataDir,
    checkpointAfterWritingMs: 0,
    deferredWindowMs: 30,
    flushOnLoopMaxMs: 60_000,
    onWindowCommitted: (window) => windows.push(window),
  });
  t.after(() => store.close());
  await store.write((sql) => sql.run('CREATE TABLE t (id INTEGER PRIMARY KEY, body TEXT)'));
  // Its rows have the ids 2 to `written` + 1.
  const written = await untilTheLogIsFlushedOnTheLoop(store, join(dataDir, DATA_FILE_NAME));
  let id = written + 1;
  // Each try: an awaited write's commit checkpoints, in its own turn; it goes on right after (microtasks), while the
  // checkpoint waits for the main file's flush. A deferred write then opens a window the checkpoint holds. The loop
  // is held (microtasks only, a writer calling commitIfOverdue as requests do) for up to 300 ms: the flush's callback
  // cannot run, so the window commits only if the main file is flushed on the loop once the window is due. The first
  // tries may meet the main file's first flush (with its directory's) still running: that one is never on the loop.
  const heldCommittedWithinTheTurn = async (): Promise<boolean> => {
    await store.write((sql) => sql.run('INSERT INTO t (id) VALUES (?)', [(id += 1)]));
    const before = windows.length;
    store.writeDeferred((sql) => sql.run('INSERT INTO t (id) VALUES (?)', [(id += 1)]));
    const committed = await inMicrotasksUntil(() => {
      store.commitIfOverdue();
      return windows.length > before;
    }, 300);
    return committed && windows.at(-1)!.heldByCheckpoint;
  };
  let tries = 1;
  while (!(await heldCommittedWithinTheTurn())) assert.ok(++tries <= 20, 'no held window committed before the flush called back');
  await store.flush();
  assert.equal(await store.read((sql) => sql.get<{ n: number }>('SELECT COUNT(*) AS n FROM t')!.n), written + 2 * tries);
});

test("a fresh store's windows leave a wider margin for its commit, until it has measured FRESH_COMMITS of them", () => {
  assert.ok(FRESH_WINDOW_MARGIN_MS > WINDOW_MARGIN_MS);
  assert.equal(windowMarginMs(0), FRESH_WINDOW_MARGIN_MS);
  assert.equal(windowMarginMs(FRESH_COMMITS - 1), FRESH_WINDOW_MARGIN_MS);
  assert.equal(windowMarginMs(FRESH_COMMITS), WINDOW_MARGIN_MS);
  // A 20 ms window less the longest recent overrun and the margin; never under 1 ms.
  assert.equal(windowDelayMs(20, [10], 0), 20 - 10 - FRESH_WINDOW_MARGIN_MS);
  assert.equal(windowDelayMs(20, [2, 5, 1], FRESH_COMMITS), 20 - 5 - WINDOW_MARGIN_MS);
  assert.equal(windowDelayMs(20, [], FRESH_COMMITS), 20 - WINDOW_MARGIN_MS);
  assert.equal(windowDelayMs(20, [30], FRESH_COMMITS), 1);
});

test('a statement that failed (a constraint) works again on its next use', async (t) => {
  const store = openStore({ dataDir: null });
  t.after(() => store.close());
  await store.write((sql) => sql.run('CREATE TABLE t (id TEXT PRIMARY KEY)'));
  const insert = (id: string) => store.write((sql) => sql.run('INSERT INTO t (id) VALUES (?)', [id]));
  await insert('a');
  await assert.rejects(insert('a'), /UNIQUE/);
  await insert('b');
  assert.equal(await store.read((sql) => sql.get<{ n: number }>('SELECT COUNT(*) AS n FROM t')!.n), 2);
});

test('long text bound as bytes reads back as the same text', async (t) => {
  const store = openStore({ dataDir: null });
  t.after(() => store.close());
  await store.write((sql) => sql.run('CREATE TABLE t (id INTEGER PRIMARY KEY, body TEXT)'));
  const values = ['', 'short', 'é'.repeat(10), `{"text":"${'héllo \u2028 \ud83d\ude00 '.repeat(40)}"}`, null];
  await store.write((sql) => values.forEach((value, id) => sql.run('INSERT INTO t (id, body) VALUES (?, CAST(? AS TEXT))', [id, textBytes(value)])));
  const rows = await store.read((sql) => sql.all<{ body: string | null; type: string }>('SELECT body, typeof(body) AS type FROM t ORDER BY id'));
  assert.deepEqual(rows.map((row) => row.body), values);
  assert.deepEqual(rows.map((row) => row.type), ['text', 'text', 'text', 'text', 'null']);
});

test('answers wait for their commit while the store is fresh: committed() makes the window due at once, and its windows report no exposure', async (t) => {
  const windows: CommittedWindow[] = [];
  const store = openStore({ dataDir: tempDir(t), deferredWindowMs: 60_000, answersWaitFreshMs: 120_000, onWindowCommitted: (window) => windows.push(window) });
  t.after(() => store.close());
  await store.write((sql) => sql.run('CREATE TABLE t (id INTEGER PRIMARY KEY)'));
  assert.equal(store.answersWaitForCommit, true);
  // In a minute's window, the answer would wait a minute; committed() asks for the commit now.
  const started = performance.now();
  store.writeDeferred((sql) => sql.run('INSERT INTO t (id) VALUES (1)'));
  store.writeDeferred((sql) => sql.run('INSERT INTO t (id) VALUES (2)'));
  await store.committed();
  assert.ok(performance.now() - started < 30_000, 'committed without waiting for the window');
  assert.equal(await store.read((sql) => sql.get<{ n: number }>('SELECT COUNT(*) AS n FROM t')!.n), 2);
  assert.equal(windows.length, 1);
  assert.equal(windows[0]!.exposedMs, null, 'every write of it was queued while answers waited');
  // Nothing queued: nothing to wait for.
  await store.committed();
  assert.equal(windows.length, 1);

  // A store without a file never makes answers wait.
  const memory = openStore({ dataDir: null });
  t.after(() => memory.close());
  assert.equal(memory.answersWaitForCommit, false);
});

test('answers go out first once the store is past its fresh time, and its windows report how long after the first of them they committed', async (t) => {
  const windows: CommittedWindow[] = [];
  const store = openStore({ dataDir: tempDir(t), deferredWindowMs: 20, answersWaitFreshMs: 50, onWindowCommitted: (window) => windows.push(window) });
  t.after(() => store.close());
  await store.write((sql) => sql.run('CREATE TABLE t (id INTEGER PRIMARY KEY)'));
  let id = 0;
  store.writeDeferred((sql) => sql.run('INSERT INTO t (id) VALUES (?)', [(id += 1)]));
  assert.equal(store.answersWaitForCommit, true, 'fresh');
  await store.committed();
  await new Promise((resolve) => setTimeout(resolve, 80));
  assert.equal(store.answersWaitForCommit, false, 'past the fresh time');
  store.writeDeferred((sql) => sql.run('INSERT INTO t (id) VALUES (?)', [(id += 1)]));
  await store.flush();
  const exposed = windows.at(-1)!;
  assert.ok(exposed.exposedMs !== null && exposed.exposedMs <= exposed.lengthMs + 0.01, JSON.stringify(exposed));
  // A loop held past the window's end shows in its length; answers still go out first.
  store.writeDeferred((sql) => sql.run('INSERT INTO t (id) VALUES (?)', [(id += 1)]));
  const until = performance.now() + 40;
  while (performance.now() < until);
  await store.flush();
  assert.ok(windows.at(-1)!.exposedMs! > 20, `the window ran late: ${windows.at(-1)!.exposedMs} ms`);
  assert.equal(store.answersWaitForCommit, false);
  assert.equal(await store.read((sql) => sql.get<{ n: number }>('SELECT COUNT(*) AS n FROM t')!.n), 3);
});

test('a data file that is not a database, or a data directory that cannot be made, is refused with an error naming it', async (t) => {
  const dataDir = tempDir(t);
  writeFileSync(join(dataDir, DATA_FILE_NAME), 'not a database, but notes someone saved under the wrong name\n'.repeat(100));
  assert.throws(() => openStore({ dataDir }), (error: Error) => {
    assert.match(error.message, new RegExp(`the data file ${join(dataDir, DATA_FILE_NAME)} is not a database svc can read`));
    return true;
  });
  assert.equal(existsSync(join(dataDir, `${DATA_FILE_NAME}.lock`)), false, 'no engine lock is left behind');
  assert.match(readFileSync(join(dataDir, DATA_FILE_NAME), 'utf8'), /^not a database/, 'the file is left as it was');

  const aFile = join(tempDir(t), 'a-file');
  writeFileSync(aFile, '');
  assert.throws(() => openStore({ dataDir: join(aFile, 'data') }), {
    message: `cannot create the data directory ${join(aFile, 'data')}: a part of its path is a file, not a directory`,
  });
});

/** Let the data file of `store` grow no more: an INSERT needing a new page fails with SQLITE_FULL, as on a full disk. */
async function fillDataFile(store: Store): Promise<void> {
  await store.read((sql) => {
    const pages = sql.get<{ page_count: number }>('PRAGMA page_count')!.page_count;
    sql.get(`PRAGMA max_page_count = ${pages}`);
  });
}


test('a statement failing with SQLITE_FULL rolls back its whole transaction: the commit loses its deferred writes, tells so, fails its awaited writes, and the store commits again', async (t) => {
  const { store, told, ids } = await storeTellingLosses(t);
  await store.write((sql) => sql.run('CREATE TABLE blobs (body BLOB)'));
  await fillDataFile(store);
  store.writeDeferred((sql) => void sql.run('INSERT INTO t (id) VALUES (1)'), { kind: 'cache entries' });
  store.writeDeferredSteps((final) => (final ? [(sql) => void sql.run('INSERT INTO blobs (body) VALUES (randomblob(1048576))')] : []), 'run ledger windows');
  store.writeDeferred((sql) => void sql.run('INSERT INTO t (id) VALUES (2)'), { kind: 'session touches' });
  const awaited = store.write((sql) => sql.run('INSERT INTO t (id) VALUES (3)'));
  await assert.rejects(awaited, /full/);
  assert.deepEqual(await ids(), []);
  assert.equal(told.lost.length, 1);
  assert.equal(told.lost[0]!.writes, 3);
  assert.deepEqual(told.lost[0]!.kinds, { 'cache entries': 1, 'run ledger windows': 1, 'session touches': 1 });
  assert.match((told.lost[0]!.error as Error).message, /full/);

  await store.read((sql) => void sql.get('PRAGMA max_page_count = 1073741823'));
  store.writeDeferred((sql) => void sql.run('INSERT INTO t (id) VALUES (4)'));
  await store.write((sql) => sql.run('INSERT INTO t (id) VALUES (5)'));
  assert.deepEqual(await ids(), [4, 5]);
  assert.equal(told.again, 1);
});

test('a statement written early failing with SQLITE_FULL loses the writes written early into the transaction, told, and the commit begins anew', async (t) => {
  const { store, told, ids } = await storeTellingLosses(t, { loadedTurnMs: 0, deferredWindowMs: 60_000 });
  await store.write((sql) => sql.run('CREATE TABLE blobs (body BLOB)'));
  await fillDataFile(store);
  store.writeDeferred((sql) => void sql.run('INSERT INTO t (id) VALUES (1)'), { early: true, kind: 'cache entries' });
  store.writeDeferred((sql) => void sql.run('INSERT INTO blobs (body) VALUES (randomblob(1048576))'), { early: true, kind: 'cache entries' });
  store.writeDeferred((sql) => void sql.run('INSERT INTO t (id) VALUES (2)'), { kind: 'session touches' });
  await new Promise((resolve) => setImmediate(resolve));
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(told.lost.length, 1);
  assert.equal(told.lost[0]!.writes, 2);
  assert.deepEqual(told.lost[0]!.kinds, { 'cache entries': 2 });
  await store.read((sql) => void sql.get('PRAGMA max_page_count = 1073741823'));
  await store.write((sql) => sql.run('INSERT INTO t (id) VALUES (3)'));
  assert.deepEqual(await ids(), [2, 3]);
  assert.equal(told.again, 1);
});

test('deferred writes that fail alone (a constraint) are dropped and told as lost, once per commit, until a commit drops none', async (t) => {
  const { store, told, ids } = await storeTellingLosses(t);
  store.writeDeferred((sql) => void sql.run('INSERT INTO t (id) VALUES (1)'));
  store.writeDeferred((sql) => void sql.run('INSERT INTO t (id) VALUES (1)'), { kind: 'session touches' });
  store.writeDeferredSteps(
    (final) => (final ? [(sql) => void sql.run('INSERT INTO t (id) VALUES (2)'), (sql) => void sql.run('INSERT INTO t (id) VALUES (2)')] : []),
    'run ledger windows',
  );
  store.writeDeferred((sql) => void sql.run('INSERT INTO t (id) VALUES (3)'), { kind: 'cache entries' });
  await store.flush();
  assert.deepEqual(await ids(), [1, 2, 3]);
  assert.equal(told.lost.length, 1);
  assert.equal(told.lost[0]!.writes, 2);
  assert.deepEqual(told.lost[0]!.kinds, { 'session touches': 1, 'run ledger windows': 1 });
  assert.match((told.lost[0]!.error as Error).message, /UNIQUE/);
  assert.equal(told.lost[0]!.commitFailed, false);
  assert.equal(told.again, 0);

  // A part a writer drops alone inside its own write (the ledger's one bad change) is told the same way.
  store.writeDeferred((sql) => {
    sql.run('INSERT INTO t (id) VALUES (4)');
    store.tellDropped('run ledger changes', new Error('UNIQUE constraint failed: runs.id'));
  });
  await store.flush();
  assert.equal(told.lost.length, 2);
  assert.deepEqual(told.lost[1]!.kinds, { 'run ledger changes': 1 });
  assert.equal(told.again, 0);

  store.writeDeferred((sql) => void sql.run('INSERT INTO t (id) VALUES (5)'));
  await store.flush();
  assert.deepEqual(await ids(), [1, 2, 3, 4, 5]);
  assert.equal(told.lost.length, 2);
  assert.equal(told.again, 1);
});

test('a planned write whose plan throws is told as lost, as a write dropped alone', async (t) => {
  const { store, told, ids } = await storeTellingLosses(t);
  store.writeDeferredSteps(() => {
    throw new Error('the plan broke');
  }, 'run ledger windows');
  store.writeDeferred((sql) => void sql.run('INSERT INTO t (id) VALUES (1)'), { kind: 'cache entries' });
  await store.flush();
  assert.deepEqual(await ids(), [1], 'the other writes of the commit stand');
  assert.equal(told.lost.length, 1);
  assert.deepEqual(told.lost[0]!.kinds, { 'run ledger windows': 1 });
  assert.match((told.lost[0]!.error as Error).message, /the plan broke/);
  assert.equal(told.lost[0]!.commitFailed, false);
});

test('deferred writes written early that fail alone are told as lost with their commit', async (t) => {
  const { store, told, ids } = await storeTellingLosses(t, { loadedTurnMs: 0, deferredWindowMs: 60_000 });
  store.writeDeferred((sql) => void sql.run('INSERT INTO t (id) VALUES (1)'), { early: true, kind: 'cache entries' });
  store.writeDeferred((sql) => void sql.run('INSERT INTO t (id) VALUES (1)'), { early: true, kind: 'cache entries' });
  let handedOut = false;
  // Its one step is ready early, handed out once (as the ledger hands out a finished run).
  const ready = (): Array<(sql: Sql) => void> => (handedOut ? [] : ((handedOut = true), [(sql) => void sql.run('INSERT INTO t (id) VALUES (1)')]));
  store.writeDeferredSteps((final) => (final ? [] : ready()), 'run ledger windows');
  await new Promise((resolve) => setImmediate(resolve));
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(told.lost.length, 0, 'told with the commit, not before');
  await store.flush();
  assert.deepEqual(await ids(), [1]);
  assert.equal(told.lost.length, 1);
  assert.deepEqual(told.lost[0]!.kinds, { 'cache entries': 1, 'run ledger windows': 1 });
  assert.equal(told.lost[0]!.commitFailed, false);
});
