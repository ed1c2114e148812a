/**
 * The embedded data file: SQLite compiled to WebAssembly (node-sqlite3-wasm) with direct file access.
 *
 * - SQLite's own pager and atomic commit, a write-ahead log, and `locking_mode=EXCLUSIVE` (only svc opens the file;
 *   see DESIGN.md section 3; exclusive mode is also what lets the log work without shared memory, which the
 *   WebAssembly file layer does not offer).
 * - One write queue with group commit: writes that arrive in the same event-loop turn share one
 *   `BEGIN IMMEDIATE ... COMMIT`; each write's promise settles only after that commit is on the disk, so a 2xx
 *   answered after `await store.write(...)` survives a crash, power loss included. Each write runs in its own
 *   savepoint, so one failing write does not take its batch neighbours down with it.
 * - The disk flushes run off the event loop (src/store/file-sync.ts): SQLite runs with `synchronous = OFF`, the
 *   store flushes the log after each commit before acknowledging it (the next commit does not wait for that), and
 *   checkpoints the log into the main file itself every `CHECKPOINT_EVERY_COMMITS` commits or sooner (after
 *   `CHECKPOINT_AFTER_WRITING_MS` of writing), flushing the main file before the log may be reused. The log's flush
 *   before a checkpoint runs on the event loop while the disk is quick, and so does the main file's once a window
 *   waiting for it is due (`FLUSH_ON_LOOP_MAX_MS`).
 * - Deferred writes (the gateway's own ledger) join the next group commit, whose window is to end `deferredWindowMs`
 *   after the first of them was queued: it is shortened by how late recent commits ended (test/bench/crash.mjs
 *   measures how long after an answer its run is committed). At light load the commit writes them in slices of a
 *   fraction of a millisecond, one savepoint each (each write alone only if that fails), with a turn of the event
 *   loop between slices; under load what is ready goes into the window's open transaction in the turn after it was
 *   queued, so the commit has little left. `flush()` waits for them, which readers naming a run call first
 *   (read-your-writes). For a fresh store's first seconds of traffic, whose windows it cannot keep, `committed()` lets
 *   an answer wait for the commit of its writes instead (`answersWaitForCommit`).
 * - "database is locked" is retried with async backoff, never a busy-wait.
 */
import { chmodSync, existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import sqlite from 'node-sqlite3-wasm';
import { noteForOperator } from '../core/operator-note.ts';
import { ensurePrivateDataDir } from './data-dir.ts';
import { FileSync, flushNow } from './file-sync.ts';
import { CachedSql, inSavepoint, togetherOrAlone, TransactionRolledBack, type Outcome, type Sql } from './sql.ts';
import { MIGRATIONS, type Migration } from './migrations.ts';
import { createFromTemplate } from './template.ts';
import { explainIoFailure } from './io-failure.ts';

export const DATA_FILE_NAME = 'svc.db';

export interface StoreOptions {
  /** Directory holding the data file; `null` opens a private in-memory database (tests). */
  dataDir: string | null;
  /** How long after the first deferred write of a window its commit starts (later while another one still runs). */
  deferredWindowMs?: number;
  /** How long answers wait for their commit after the first deferred write; default `ANSWERS_WAIT_FRESH_MS`. */
  answersWaitFreshMs?: number;
  /** Checkpoint once the commits since the last one spent this long writing; default `CHECKPOINT_AFTER_WRITING_MS`. */
  checkpointAfterWritingMs?: number;
  /**
   * A checkpoint's flushes may run on the event loop, blocking, while such flushes took at most this long; 0: never
   * (see `FLUSH_ON_LOOP_MAX_MS`).
   */
  flushOnLoopMaxMs?: number;
  /**
   * A turn of the event loop between two slices of a commit longer than this means a loaded loop, where the commit
   * finishes in one piece (see writeInSlices); default `LOADED_TURN_MS`. A test of the light-load path raises it, so a
   * hiccup of the machine (a collection, another process) does not switch the path under test.
   */
  loadedTurnMs?: number;
  /**
   * How a sliced commit gives the event loop a turn between two slices; default one `setImmediate`. `svc serve` waits
   * one more when a request arrived meanwhile, so that its upstream call is written first (src/http/request-arrivals.ts).
   */
  turnBetweenSlices?: () => Promise<void>;
  /**
   * Told of every deferred window's commit, right after its `COMMIT`: how the durability rule's window was kept,
   * measured inside svc (`SVC_TRACE_COMMITS`, src/store/commit-trace.ts). Called on the event loop: keep it short.
   */
  onWindowCommitted?: (window: CommittedWindow) => void;
  /**
   * Told when a commit fails (its `BEGIN` or its `COMMIT`: a full disk, an I/O error) and takes deferred writes with
   * it, or awaited writes (their callers get the error; told so that readiness shows a disk that refuses management
   * writes too), and of the first commit that succeeds after that (src/store/deferred-losses.ts logs and counts them).
   * Called on the event loop: keep it short.
   */
  deferredWriteLosses?: DeferredWriteLossListener;
  migrations?: readonly Migration[];
  /**
   * Where a new data file may find the template of its migrations (src/store/template.ts); by default this module's
   * directory, which in the bundle is dist/, where `npm run build` writes it. `null`: always run the migrations.
   */
  templateDir?: string | null;
}

/** A deferred window's commit (see `StoreOptions.onWindowCommitted`). */
export interface CommittedWindow {
  /** From the window's first write to the end of its `COMMIT`, in milliseconds. */
  lengthMs: number;
  /** The window was made due by a checkpoint, and its commit waited for the checkpoint's flush. */
  heldByCheckpoint: boolean;
  /**
   * From the window's first write queued while answers did not wait for their commit (see
   * `Store.answersWaitForCommit`) to the end of its `COMMIT`; null if every write of it was queued while they did:
   * then no answer went out before this commit, and its length says nothing of the durability rule.
   */
  exposedMs: number | null;
}

/** Deferred writes a failed commit took with it (see `StoreOptions.deferredWriteLosses`). */
export interface LostDeferredWrites {
  /** How many deferred writes were queued for it (a planned write, such as a window of the run ledger, is one). */
  writes: number;
  /** How many awaited writes (management writes) the failed commit held, each rejected with its error; absent: none. */
  refusedWrites?: number;
  /** How many of them of each kind, as their writers labelled them (`writeDeferred`'s `kind`). */
  kinds: Record<string, number>;
  /** What SQLite said (of the first write dropped alone, if the commit itself succeeded). */
  error: unknown;
  /**
   * Whether the commit failed (its `BEGIN` or `COMMIT`, all its deferred writes lost), or succeeded but some of its
   * deferred writes (a planned write's steps, each counted) failed on their own and were rolled back to their
   * savepoint: a full disk at the statement level (SQLITE_FULL on an INSERT), a constraint.
   */
  commitFailed: boolean;
}

export interface DeferredWriteLossListener {
  /**
   * Told once per commit that failed or lost deferred writes, after it (those written early into its transaction
   * included): a failed commit that held awaited writes only is told with none lost.
   */
  lost(loss: LostDeferredWrites): void;
  /**
   * A commit succeeded, dropping none, after one that lost deferred writes or refused awaited ones (told once per
   * streak of such commits).
   */
  committedAgain(): void;
}

/** The open window a commit takes, as the drain found it. */
interface TakenWindow {
  openedAt: number;
  /** When its commit was due; null if a checkpoint made it due (its lateness then says nothing of later windows). */
  dueAt: number | null;
  /** When its first write was queued while answers did not wait for their commit; null if none was. */
  exposedAt: number | null;
  /** Answers held for this commit (see `Store.committed`): released after its `COMMIT`, or its failure. */
  waiters: Array<() => void>;
}

export interface Store {
  /** Run synchronous reads against a consistent view. */
  read<T>(fn: (sql: Sql) => T): Promise<T>;
  /** Run a write; resolves after the group commit that holds it returned. */
  write<T>(fn: (sql: Sql) => T): Promise<T>;
  /**
   * Queue a write for the next group commit without waiting for it (bounded window). `early`: under load it may be
   * written into the window's open transaction in the next turn of the event loop, before the commit. `kind`: what it
   * writes, in words, for the report of a commit that fails and loses it (default `DEFAULT_DEFERRED_KIND`).
   */
  writeDeferred(fn: (sql: Sql) => void, options?: { early?: boolean; kind?: string }): void;
  /**
   * Queue a write made of steps, planned when its commit starts (`plan(true)` runs once, before any of the commit's
   * writes, so it may take what was queued for it) and written step by step: the commit may give the event loop a
   * turn between steps, and a failing step is dropped alone. Under load `plan(false)` may be called before that, any
   * number of times, for the steps that are ready to be written early; the write stays queued until `plan(true)`.
   * `kind` as for `writeDeferred`.
   */
  writeDeferredSteps(plan: (final: boolean) => Array<(sql: Sql) => void>, kind?: string): void;
  /**
   * From inside a deferred write: a part of it (`kind`, one count) failed on its own and was rolled back to its own
   * savepoint, so the write goes on without it (the ledger's one bad change among its step's). Told with the commit's
   * losses (see `StoreOptions.deferredWriteLosses`), as a write the store drops alone is.
   */
  tellDropped(kind: string, error: unknown): void;
  /**
   * Commit the deferred window now if its commit is due: a writer adding to a queued plan (`writeDeferredSteps`)
   * calls this each time, outside any `read` or `write`. Under load one turn of the event loop handles tens of
   * requests, and a window's timer fires only after the turn it falls due in; this keeps the commit on time.
   */
  commitIfOverdue(): void;
  /**
   * Whether answers are to wait for the commit of their deferred writes (`committed`) instead of going out before
   * it: while the store is fresh it cannot keep the deferred window's bound, so the writes of an answer are committed
   * before it (see `ANSWERS_WAIT_FRESH_MS`).
   */
  readonly answersWaitForCommit: boolean;
  /**
   * Resolves once the deferred writes queued so far are committed (or their commit failed: they are then lost as
   * any failed deferred write is); their window is made due now. Waiting for one commit, not for `flush()`, which
   * under load also waits for the windows that open meanwhile.
   */
  committed(): Promise<void>;
  /** Wait until every queued write, deferred ones included, is committed. */
  flush(): Promise<void>;
  /**
   * `flush()`, then the log's flush that puts those commits on the disk: for an answer that acknowledges deferred
   * writes as an awaited write's answer does (an SDK ingestion through the ledger). `flush()` alone returns after the
   * `COMMIT`, while a commit of deferred writes only is flushed up to `LOG_FLUSH_BATCH_MS` later.
   */
  flushToDisk(): Promise<void>;
  /** Flush, then close the file. */
  close(): Promise<void>;
  readonly schemaVersion: number;
  readonly filePath: string | null;
  readonly isOpen: boolean;
  /**
   * Moves on after every commit that held awaited writes (`write`), whether it committed or not; deferred writes do
   * not move it. Rows copied into memory are current while it stays what it was when they were read, for every table
   * that only awaited writes change (all but the ledger's, the caches' and the sessions' last-seen times).
   */
  readonly writeGeneration: number;
}

/** The store's timing choices, each from `StoreOptions` or its default. */
type Timing = Required<
  Pick<StoreOptions, 'deferredWindowMs' | 'answersWaitFreshMs' | 'loadedTurnMs' | 'checkpointAfterWritingMs' | 'flushOnLoopMaxMs' | 'turnBetweenSlices'>
>;

/** A deferred write: one piece (maybe written early), or steps planned when its commit starts (some maybe early). */
type DeferredWrite =
  | { fn: (sql: Sql) => void; early: boolean; kind: string }
  | { plan: (final: boolean) => Array<(sql: Sql) => void>; kind: string };

/** The kind of a deferred write whose writer gave none. */
export const DEFAULT_DEFERRED_KIND = 'other';

interface PendingWrite {
  fn: (sql: Sql) => unknown;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

const BUSY_BACKOFF_MS = [2, 5, 10, 25, 50, 100, 200];

/**
 * When the log is checkpointed: after this many commits, or sooner once the commits since the last checkpoint spent
 * `CHECKPOINT_AFTER_WRITING_MS` writing. A checkpoint copies the pages the log holds into the main file on the event
 * loop (a read and a write per distinct page) while nothing else runs, and the main file's flush that follows holds
 * up the next commit: each one costs a flush, so small commits share one, but its length, the longest stall a
 * request can meet, follows the pages written since the last one, which the time spent writing them measures. At
 * full gateway load on the reference machine, 64 commits (~490 ms of writing) made a ~42 ms checkpoint and a c=16
 * p99.9 of ~115 ms; ~120 ms of writing made ~10 ms ones and ~9 ms of flushing (docs/performance-notes.md). The log is
 * reused from its start after each checkpoint, so the next commit waits for the flush: ~40 ms of writing (a ~3.5 ms
 * copy, a ~4 ms flush) keep that wait within a deferred window, which is to end 20 ms after it opened.
 */
const CHECKPOINT_EVERY_COMMITS = 64;
const CHECKPOINT_AFTER_WRITING_MS = 40;

/**
 * A checkpoint flushes the log before its copy and the main file after it. Off the event loop, each flush ends in a
 * callback the loop runs only at its next poll of the sockets: under load, after a turn of tens of requests, so the
 * checkpoint, and every ledger window waiting for it, took 25-60 ms at c=64 while the two `fdatasync` calls took
 * ~0.6 and ~2 ms (p50; p99 3.4 / 4.2 ms, traced on the reference machine). The log's flush runs on the loop: the
 * stall grows by ~0.6 ms and the copy follows the commit at once. The main file's starts off the loop (on it every
 * time, the exact-cache hits' p99 at c=16 grew by ~2 ms more), and a window held by the checkpoint waits for its
 * callback until the window is due: then the main file is flushed on the loop too (by then mostly a flush of
 * nothing), and the window commits (see `flushMainFile`). In a fresh process, whose turns are long until its code is
 * compiled, the callback came 15-115 ms after the copy, traced, while the flushes took 0.5-5 ms. That holds while
 * the disk is quick: once flushes on the loop took longer than this (two in a row), the file's next flushes go off
 * the loop for a while (src/store/file-sync.ts, `mayFlushOnLoop`).
 */
const FLUSH_ON_LOOP_MAX_MS = 8;

/**
 * How long the log's flush of a commit of deferred writes only may wait for the next such commits (see
 * `flushLogSoon`): their durability rule is their commit, within 20 ms of their answer; the flush that makes them
 * survive a power loss as well follows within this.
 */
const LOG_FLUSH_BATCH_MS = 10;

/**
 * About how much of deferred writes' work a commit does before it gives the event loop a turn, at least (see
 * writeInSlices): a slice ends after the write (a planned write's step: two runs of the ledger) that passes it.
 */
const SLICE_MS = 0.2;

/**
 * A turn of the event loop between two slices longer than this means a loaded loop (see writeInSlices); so does the
 * rest of the turns after answers taking half of it on average (see scheduleEarly).
 */
const LOADED_TURN_MS = 1;

/** The weight of the latest turn in the average of `turnRestMs`. */
const TURN_REST_WEIGHT = 0.1;

/**
 * A window is shortened by the longest overrun of this many recent commits, and by `WINDOW_MARGIN_MS` more (see
 * windowDelayMs). Traced at c=16 (a build timing each window from its opening to its `COMMIT`, 8 s): 8 commits and
 * 1 ms left 6.6% of the commits ending past 20 ms, 16 and 2 ms 3.3%, 32 and 3 ms 1% (p99 20 ms).
 */
const RECENT_COMMITS = 32;
export const WINDOW_MARGIN_MS = 3;

/**
 * The margin of a fresh store's windows, for its first `FRESH_COMMITS` commits (the first 2-6 s of a process under
 * load): while V8 still compiles svc's code on the same CPU and its files grow, its commits' lengths vary more than
 * the longest of the recent ones says. 6 ms instead of the steady 3 (the bench's crash sections, alternating: 11 and
 * 10 windows past 20 ms against 25 and 13) cost ~10% of the requests answered in those seconds, and 9 instead of 6
 * (test/bench/fresh.mjs, 16 fresh processes per concurrency and build: 18 against 41) 1-8% more, in more commits.
 */
export const FRESH_WINDOW_MARGIN_MS = 9;
export const FRESH_COMMITS = 400;

/**
 * Answers wait for their commit (`Store.answersWaitForCommit`) for `ANSWERS_WAIT_FRESH_MS` after a store's first
 * deferred write: a process's first seconds of traffic, whose windows ran past 20 ms in the bench's crash trials
 * however short they were made (docs/performance-notes.md, "The late windows of a fresh process, by cause"), as the
 * event loop stalls while V8 compiles svc's code on the same CPU. While answers wait, nothing answered can be lost,
 * whatever the loop does; the price is each answer's wait for its commit (group committed: the answers of a turn share
 * one). Measured with test/bench/fresh.mjs (fresh processes, 8 s of load, two rounds): windows past 20 ms 3 / 0 / 4 ->
 * 0 / 0 / 0 at concurrency 1 / 16 / 64, for 32% / 9% / 3% fewer requests answered in those 8 s (at c=1 each answer
 * then has a commit of its own; that run also made answers wait for 1 s after a late window, no longer done: in a
 * process past its first seconds, windows past 20 ms came every 5-10 s at c=1, and each second of waiting at c=1 costs
 * ~80% more CPU per request). A store without a file (tests) never makes answers wait.
 */
export const ANSWERS_WAIT_FRESH_MS = 5_000;

/** The margin a window leaves after its expected commit, by how many commits the store has measured. */
export function windowMarginMs(commitsMeasured: number): number {
  return commitsMeasured < FRESH_COMMITS ? FRESH_WINDOW_MARGIN_MS : WINDOW_MARGIN_MS;
}

/**
 * How long a new window stays open (see GroupCommitStore.windowDelayMs): its commit is to end `deferredWindowMs`
 * after it opened, so it is shorter by the longest overrun of the recent commits and by the margin.
 */
export function windowDelayMs(deferredWindowMs: number, recentOverrunsMs: readonly number[], commitsMeasured: number): number {
  const overrunMs = recentOverrunsMs.length > 0 ? Math.max(...recentOverrunsMs) : 0;
  return Math.max(1, deferredWindowMs - overrunMs - windowMarginMs(commitsMeasured));
}

/**
 * The overrun a new store assumes until its first commits have measured theirs. A fresh process is slow (code not
 * yet compiled, statements not yet prepared, pages not yet cached): its first commits under load took 15-21 ms of
 * writing, traced in the bench's crash trials, after full-length windows of 17 ms.
 */
const INITIAL_OVERRUN_MS = 10;

/**
 * A listener of the commits that threw: noted on standard error (the listener may be what logs), not thrown. Told
 * from inside a commit, its throw ended the drain: the batch's awaited writes never settled, committed ones included,
 * and the drain's rejection, unhandled, ended svc serve. What the commit did stands.
 */
function listenerFailed(listener: string, error: unknown): void {
  const message = error instanceof Error ? error.message : String(error);
  noteForOperator(`the store's listener ${listener} failed (${message}); the commit it was told of stands as it ended`);
}

/** `listener`, its throws noted (see `listenerFailed`). Made once, as the store opens. */
function containedLossListener(listener: DeferredWriteLossListener): DeferredWriteLossListener {
  return {
    lost(loss) {
      try {
        listener.lost(loss);
      } catch (error) {
        listenerFailed('deferredWriteLosses.lost', error);
      }
    },
    committedAgain() {
      try {
        listener.committedAgain();
      } catch (error) {
        listenerFailed('deferredWriteLosses.committedAgain', error);
      }
    },
  };
}

/** `listener`, its throws noted (see `listenerFailed`). Made once, as the store opens. */
function containedWindowListener(listener: (window: CommittedWindow) => void): (window: CommittedWindow) => void {
  return (window) => {
    try {
      listener(window);
    } catch (error) {
      listenerFailed('onWindowCommitted', error);
    }
  };
}

/** Whether a deferred write may be written before its commit, under load: a plan (its ready steps) or an early piece. */
function writesEarly(write: DeferredWrite): boolean {
  return !('fn' in write) || write.early;
}

/**
 * A planned deferred write's steps; a plan that fails is dropped like a write that fails (its request was answered),
 * and told to `threw` (the store's report of writes dropped alone) unless its commit is lost whole anyway.
 */
function planned(
  write: { plan: (final: boolean) => Array<(sql: Sql) => void>; kind: string },
  final: boolean,
  threw?: (kind: string, error: unknown) => void,
): Array<(sql: Sql) => void> {
  try {
    return write.plan(final);
  } catch (error) {
    threw?.(write.kind, error);
    return [];
  }
}

/** What a failed commit lost: its deferred writes, counted by kind, and the awaited writes it refused. */
function lostWrites(writes: readonly DeferredWrite[], refusedWrites: number, error: unknown): LostDeferredWrites {
  const kinds: Record<string, number> = {};
  for (const write of writes) kinds[write.kind] = (kinds[write.kind] ?? 0) + 1;
  return { writes: writes.length, refusedWrites, kinds, error, commitFailed: true };
}

/**
 * Whose step `step` of `steps` was: `steps` holds, in `writes`' order, one step per one-piece write and the steps of
 * each plan (`planSteps`, their counts in order), of the writes `included` says. Only a failure asks: nothing is
 * recorded per one-piece write on the way.
 */
function ownerOfStep(
  writes: readonly DeferredWrite[],
  planSteps: readonly number[],
  step: number,
  included: (write: DeferredWrite) => boolean = () => true,
): DeferredWrite | undefined {
  let end = 0;
  let plan = 0;
  for (const write of writes) {
    if (!included(write)) continue;
    end += 'fn' in write ? 1 : planSteps[plan++]!;
    if (step < end) return write;
  }
  return undefined;
}

/** Let the answers held for a window's commit go. */
function releaseWaiters(window: TakenWindow): void {
  for (const release of window.waiters.splice(0)) release();
}

function isBusy(error: unknown): boolean {
  return error instanceof Error && /database is locked|SQLITE_BUSY/i.test(error.message);
}

/**
 * What the engine said when the data file could not be opened, with the file named: SQLite says only "file is not a
 * database" of a file that is something else, or "unable to open database file".
 */
function unreadable(filePath: string | null, error: unknown): unknown {
  if (filePath === null || !(error instanceof Error)) return error;
  if (/file is not a database|database disk image is malformed/i.test(error.message)) {
    return new Error(`the data file ${filePath} is not a database svc can read (${error.message}): move it away, or restore it from a backup`);
  }
  if (/unable to open database file/i.test(error.message)) {
    return new Error(`the data file ${filePath} cannot be opened (${error.message}): svc needs to read and write it and its directory`);
  }
  return error;
}

/** Open the data file, clear a stale engine lock, apply pending migrations. */
export function openStore(options: StoreOptions): Store {
  const migrations = options.migrations ?? MIGRATIONS;
  let filePath: string | null = null;
  let fromTemplate = false;
  if (options.dataDir !== null) {
    ensurePrivateDataDir(options.dataDir);
    filePath = join(options.dataDir, DATA_FILE_NAME);
    // The engine locks by creating `<file>.lock/`. The caller owns the data directory (src/store/owner-lock.ts
    // proved the recorded previous owner dead), so a lock directory still present was left by a killed process.
    rmSync(`${filePath}.lock`, { recursive: true, force: true });
    // Only a data file that does not exist at all is new: an empty one may have its pages in the log still.
    if (options.templateDir !== null && !existsSync(filePath) && !existsSync(`${filePath}-wal`)) {
      fromTemplate = createFromTemplate(filePath, options.templateDir ?? fileURLToPath(new URL('.', import.meta.url)), migrations);
    }
  }
  let db: InstanceType<typeof sqlite.Database>;
  try {
    db = new sqlite.Database(filePath ?? undefined);
  } catch (error) {
    throw unreadable(filePath, error);
  }
  const sql = new CachedSql(db);
  let schemaVersion: number;
  try {
    if (filePath) {
      // Exclusive first: the log's index then lives in the process's memory instead of a shared-memory file.
      sql.exec('PRAGMA locking_mode = EXCLUSIVE');
      sql.exec('PRAGMA journal_mode = WAL');
      sql.exec('PRAGMA synchronous = OFF');
      sql.exec('PRAGMA wal_autocheckpoint = 0');
      // A transaction's pages stay in memory until its COMMIT unless they pass this many (~64 MB): early writes made
      // while the main file flushes after a checkpoint must not write to the log, which is to be reused from its start.
      sql.exec('PRAGMA cache_spill = 16384');
    }
    sql.exec('PRAGMA foreign_keys = ON');
    schemaVersion = migrate(db, sql, migrations);
    // The template recorded its migrations as applied when the build ran them; this data file got them now. Its first
    // write: a full disk fails it here, where the file is closed and no engine lock nor log is left behind.
    if (fromTemplate) sql.run('UPDATE schema_migrations SET applied_at = ?', [Date.now()]);
    if (filePath) privateEngineLock(filePath);
  } catch (error) {
    // Why a write failed is looked for while the log still takes what room it took (a full disk, a file size limit).
    const failure = filePath === null ? error : explainIoFailure(filePath, error);
    // The file as it was, and no engine lock or log left behind.
    sql.finalizeAll();
    db.close();
    throw unreadable(filePath, failure);
  }
  const timing: Timing = {
    deferredWindowMs: options.deferredWindowMs ?? 20,
    answersWaitFreshMs: options.answersWaitFreshMs ?? ANSWERS_WAIT_FRESH_MS,
    loadedTurnMs: options.loadedTurnMs ?? LOADED_TURN_MS,
    checkpointAfterWritingMs: options.checkpointAfterWritingMs ?? CHECKPOINT_AFTER_WRITING_MS,
    flushOnLoopMaxMs: options.flushOnLoopMaxMs ?? FLUSH_ON_LOOP_MAX_MS,
    turnBetweenSlices: options.turnBetweenSlices ?? (() => nextTurn()),
  };
  const onWindowCommitted = options.onWindowCommitted ? containedWindowListener(options.onWindowCommitted) : null;
  const losses = options.deferredWriteLosses ? containedLossListener(options.deferredWriteLosses) : null;
  return new GroupCommitStore(db, sql, filePath, schemaVersion, timing, onWindowCommitted, losses);
}

/**
 * The engine takes its lock by a plain `mkdir <file>.lock` (node-sqlite3-wasm's file layer), whose mode the umask
 * decides: 0777 under umask 000, where everything else svc makes in the data directory is 0600 or 0700. Made private
 * once the first statement has taken it; in exclusive locking mode the engine holds it until the file is closed.
 */
function privateEngineLock(filePath: string): void {
  try {
    chmodSync(`${filePath}.lock`, 0o700);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
}

function migrate(db: InstanceType<typeof sqlite.Database>, sql: CachedSql, migrations: readonly Migration[]): number {
  sql.exec(
    'CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)',
  );
  // Every migration not recorded yet is applied, in version order; a lower number added after a higher one (two
  // areas landing migrations in parallel) is applied too instead of being skipped. All of them share one
  // transaction: a new data file is created in one commit, and a failing migration leaves the file as it was.
  const applied = new Set(sql.all<{ version: number }>('SELECT version FROM schema_migrations').map((row) => row.version));
  // A migration this code does not have was applied by a newer svc: this code would read and write a schema it does
  // not know (a column it leaves unset, a table it does not keep up to date). Refused before anything is written.
  const known = new Set(migrations.map((migration) => migration.version));
  const unknown = [...applied].filter((version) => !known.has(version)).sort((a, b) => a - b);
  if (unknown.length > 0) {
    throw new Error(
      `the data file was written by a newer svc: it holds schema migration ${unknown.join(', ')}, which this svc ` +
        `(migrations up to ${Math.max(0, ...known)}) does not know; run that newer svc, or restore a backup made with this one`,
    );
  }
  const pending = [...migrations].sort((a, b) => a.version - b.version).filter((migration) => !applied.has(migration.version));
  const current = Math.max(0, ...applied, ...pending.map((migration) => migration.version));
  if (pending.length === 0) return current;
  for (const migration of pending) {
    for (const [name, fn] of Object.entries(migration.functions ?? {})) db.function(name, fn, { deterministic: true });
  }
  sql.exec('BEGIN IMMEDIATE');
  for (const migration of pending) {
    try {
      sql.exec(migration.sql);
      sql.run('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)', [
        migration.version,
        migration.name,
        Date.now(),
      ]);
    } catch (error) {
      sql.exec('ROLLBACK');
      throw new Error(`migration ${migration.version} (${migration.name}) failed: ${(error as Error).message}`, {
        cause: error,
      });
    }
  }
  sql.exec('COMMIT');
  return current;
}

class GroupCommitStore implements Store {
  private queue: PendingWrite[] = [];
  private deferred: DeferredWrite[] = [];
  /** The one-piece deferred writes written early into the open transaction: its commit loses them if it fails. */
  private writtenEarly: DeferredWrite[] = [];
  /**
   * The last commit lost deferred writes or refused awaited ones; the next that succeeds, dropping none, tells
   * `deferredWriteLosses` so.
   */
  private failingCommits = false;
  /** The deferred writes of the open transaction (early or at the commit) dropped alone so far: told with its commit. */
  private droppedAlone: LostDeferredWrites | null = null;
  /** When the open deferred window's commit is due to start; null while no window is open (its commit takes it). */
  private windowDueAt: number | null = null;
  /** When the open deferred window opened (its first write); its commit is to end `deferredWindowMs` later. */
  private windowOpenedAt = 0;
  /**
   * A checkpoint is due or running: the next commit waits for it and for its flush of the main file (its callback
   * waits for the event loop's next poll: 5-30 ms under load), so a window open meanwhile is due at once and commits
   * right after it (see `holdWindowsForCheckpoint`).
   */
  private checkpointing = false;
  /** The open window was made due by a checkpoint: its commit's lateness says nothing of the windows to come. */
  private windowHeldByCheckpoint = false;
  /** When the window held by the running checkpoint is due: its main file's flush goes on the loop then. */
  private heldWindowDueAt: number | null = null;
  private heldWindowTimer: NodeJS.Timeout | null = null;
  /** While the checkpoint waits for the main file's flush off the loop: tells it the held window is due. */
  private heldWindowFellDue: (() => void) | null = null;
  private deferredTimer: NodeJS.Timeout | null = null;
  private draining: Promise<void> | null = null;
  private closed = false;
  /** A transaction opened by early writes (under load) that the window's commit will end. */
  private transactionOpen = false;
  /** A commit is writing, or copying the log: early writes wait. */
  private committing = false;
  private earlyScheduled = false;
  private earlyWritingMs = 0;
  /**
   * How long the rest of a turn after an answer took, averaged over recent turns (see `scheduleEarly`). It starts at
   * the loaded threshold, so a store counts as loaded until it has measured a turn: a fresh process's first commit
   * under load, sliced, gave the event loop a turn after its first slice, and that turn, the process taking in its
   * first tens of requests, took 40-70 ms (traced at c=64); its window ended 50-85 ms after it opened. One light turn
   * measured takes the average below the threshold.
   */
  private turnRestMs: number;
  /** How long after its due time each of the last commits ended (see `windowDelayMs`). */
  private readonly recentOverrunsMs: number[] = [INITIAL_OVERRUN_MS];
  /** Commits whose overrun was measured (timed windows), for the margin of a fresh store's windows. */
  private commitsMeasured = 0;
  /** Until when answers wait for their commit (see `ANSWERS_WAIT_FRESH_MS`); null before the first deferred write. */
  private answersWaitUntil: number | null = null;
  /** When the open window's first write was queued while answers did not wait for their commit; null if none was. */
  private windowExposedAt: number | null = null;
  /** Answers waiting for the open window's commit (`committed`). */
  private windowWaiters: Array<() => void> = [];
  /** Resolves after the running commit's `COMMIT` (or its failure): what `committed` waits for when no window is open. */
  private commitInFlight: Promise<void> | null = null;
  private commitsSinceCheckpoint = 0;
  private writingMsSinceCheckpoint = 0;
  private generation = 0;
  private readonly logSync: FileSync | null;
  private readonly fileSync: FileSync | null;
  /** A flush of the main file after a checkpoint failed (see `fallBackToFullSync`). */
  private mainFileUnflushed = false;
  /** The flushes made as the store opened (see the constructor); closing waits for them. */
  private readonly firstFlushes: Promise<void>;
  /** The log flushes still running, as one promise (see `flushLog`). */
  private logFlushing: Promise<void> | null = null;
  /** The log flush the commits of deferred writes only are waiting for, due in `LOG_FLUSH_BATCH_MS` (see `flushLogSoon`). */
  private logFlushSoon: Promise<void> | null = null;

  constructor(
    private readonly db: sqlite.Database,
    private readonly sql: CachedSql,
    readonly filePath: string | null,
    readonly schemaVersion: number,
    private readonly timing: Timing,
    private readonly onWindowCommitted: ((window: CommittedWindow) => void) | null,
    private readonly deferredWriteLosses: DeferredWriteLossListener | null,
  ) {
    this.turnRestMs = timing.loadedTurnMs / 2;
    this.logSync = filePath ? new FileSync(`${filePath}-wal`, timing.flushOnLoopMaxMs) : null;
    this.fileSync = filePath ? new FileSync(filePath, timing.flushOnLoopMaxMs) : null;
    // Each file's first flush in this process also flushes its directory, which commits the file system's journal:
    // ~125-140 ms on a fresh data directory under load, traced, and the first checkpoint waited for it with every
    // commit behind it (a crash then lost runs answered up to ~150 ms before). Done now, before any request, off the
    // event loop; a flush that fails here is tried again, directory included, by the next one that needs it.
    this.firstFlushes = Promise.all([this.logSync?.sync(), this.fileSync?.sync()]).then(
      () => undefined,
      () => undefined,
    );
  }

  get isOpen(): boolean {
    return !this.closed;
  }

  get writeGeneration(): number {
    return this.generation;
  }

  get answersWaitForCommit(): boolean {
    return this.filePath !== null && (this.answersWaitUntil === null || performance.now() < this.answersWaitUntil);
  }

  committed(): Promise<void> {
    if (this.windowDueAt === null) return this.commitInFlight ?? Promise.resolve();
    return new Promise<void>((resolve) => {
      this.windowWaiters.push(resolve);
      // Due now, its commit in the next turn: the answers of this turn wait for the same commit.
      if (this.deferredTimer !== null) {
        this.closeDeferredWindow();
        if (!this.windowHeldByCheckpoint) this.windowDueAt = performance.now();
      }
      this.scheduleDrain();
    });
  }

  async read<T>(fn: (sql: Sql) => T): Promise<T> {
    this.assertOpen();
    return fn(this.sql);
  }

  write<T>(fn: (sql: Sql) => T): Promise<T> {
    this.assertOpen();
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ fn, resolve: resolve as (value: unknown) => void, reject });
      this.scheduleDrain();
    });
  }

  writeDeferred(fn: (sql: Sql) => void, options?: { early?: boolean; kind?: string }): void {
    this.queueDeferred({ fn, early: options?.early === true, kind: options?.kind ?? DEFAULT_DEFERRED_KIND });
  }

  writeDeferredSteps(plan: (final: boolean) => Array<(sql: Sql) => void>, kind = DEFAULT_DEFERRED_KIND): void {
    this.queueDeferred({ plan, kind });
  }

  private queueDeferred(write: DeferredWrite): void {
    this.assertOpen();
    this.deferred.push(write);
    // One reading of the clock: a window's exposure (from the first answer not waiting for it) never starts before
    // the window opened, however long the process is descheduled between two readings.
    const now = performance.now();
    this.answersWaitUntil ??= now + this.timing.answersWaitFreshMs;
    if (this.windowExposedAt === null && !this.answersWaitForCommit) this.windowExposedAt = now;
    // The first write of a window opens it; later ones join it, also once it passed and its drain is pending.
    if (this.windowDueAt === null) {
      this.windowOpenedAt = now;
      if (this.checkpointing) {
        // The next commit follows the checkpoint: this window is due at once (see `holdWindowsForCheckpoint`).
        this.windowDueAt = this.windowOpenedAt;
        this.windowHeldByCheckpoint = true;
        this.holdWindowUntil(this.windowOpenedAt + this.windowDelayMs());
      } else {
        const delayMs = this.windowDelayMs();
        this.windowDueAt = this.windowOpenedAt + delayMs;
        this.deferredTimer = setTimeout(() => {
          this.deferredTimer = null;
          this.drainNow();
        }, delayMs);
      }
    }
    this.scheduleEarly();
  }

  /**
   * How long a new window stays open: its commit is to end `deferredWindowMs` after it opened, so the window is
   * shorter by how late the recent commits ended after they were due (the timer firing after a long turn, a commit
   * or checkpoint still running, the commit's own writing), and a margin.
   */
  private windowDelayMs(): number {
    return windowDelayMs(this.timing.deferredWindowMs, this.recentOverrunsMs, this.commitsMeasured);
  }

  private recordOverrun(ms: number): void {
    this.commitsMeasured++;
    this.recentOverrunsMs.push(Math.max(0, ms));
    if (this.recentOverrunsMs.length > RECENT_COMMITS) this.recentOverrunsMs.shift();
  }

  /**
   * After a turn in which deferred writes were queued (a request answered), measure how long the rest of that turn
   * took: a loaded loop handles several requests per turn. While it is loaded, the ready writes go in early.
   */
  private scheduleEarly(): void {
    if (this.earlyScheduled) return;
    this.earlyScheduled = true;
    const scheduledAt = performance.now();
    setImmediate(() => {
      this.earlyScheduled = false;
      this.turnRestMs += (performance.now() - scheduledAt - this.turnRestMs) * TURN_REST_WEIGHT;
      if (this.loaded) this.writeEarly();
    });
  }

  /** Whether the loop is loaded: the rest of a turn after an answer took half of `loadedTurnMs` or more, on average. */
  private get loaded(): boolean {
    return this.turnRestMs >= this.timing.loadedTurnMs / 2;
  }

  /**
   * Under load, what is ready of the window's deferred writes goes into a transaction opened for the window now,
   * not at its commit: the commit then has little left to write but `COMMIT`, so it ends close to its due time.
   */
  private writeEarly(): void {
    if (this.committing || this.closed || this.windowDueAt === null) return;
    if (!this.transactionOpen) {
      // Nothing to write early (hit counts, session touches): no transaction either.
      if (!this.deferred.some(writesEarly)) return;
      try {
        this.sql.run('BEGIN IMMEDIATE');
      } catch {
        return; // the commit begins its own, with its backoff
      }
      this.transactionOpen = true;
    }
    const startedAt = performance.now();
    const steps: Array<(sql: Sql) => void> = [];
    const queued = this.deferred;
    // Counted for the plans only (one per window's ledger): a step dropped alone is then told with its kind.
    const planSteps: number[] = [];
    this.deferred = queued.filter((write) => {
      if (!writesEarly(write)) return true;
      if ('fn' in write) {
        steps.push(write.fn);
        this.writtenEarly.push(write);
        return false;
      }
      // Not told if it throws here: the write stays queued, and its final plan (at the commit) tells its loss once.
      const ready = planned(write, false);
      planSteps.push(ready.length);
      steps.push(...ready);
      return true;
    });
    try {
      togetherOrAlone(this.sql, steps, (sql, some) => some.forEach((step) => step(sql)), (step, error) =>
        this.dropAlone(ownerOfStep(queued, planSteps, step, writesEarly)?.kind, error),
      );
    } catch (error) {
      // A failing statement rolled back the window's transaction: every write written early into it is lost, those
      // of earlier turns too (the plans keep what they have not handed out yet, and stay queued for the commit). A
      // savepoint's own statement failing (SQLITE_NOMEM) leaves the transaction open instead: rolled back here, or
      // every later BEGIN would fail. Thrown on, it would be an uncaught exception, from this turn of its own.
      this.rollBack();
      const lost = this.writtenEarly;
      this.writtenEarly = [];
      this.lostDeferred(lost, error instanceof TransactionRolledBack ? error.cause : error);
    }
    this.earlyWritingMs += performance.now() - startedAt;
  }

  async flush(): Promise<void> {
    while (this.queue.length > 0 || this.windowDueAt !== null || this.draining) {
      this.closeDeferredWindow();
      this.scheduleDrain();
      await this.draining;
    }
  }

  async flushToDisk(): Promise<void> {
    await this.flush();
    // A new flush, not the one pending or running: that one may have started before the last commit was written.
    await this.flushLog();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    await this.flush();
    await this.logFlushSoon?.catch(() => {});
    await this.logFlushing?.catch(() => {});
    await this.firstFlushes;
    this.closed = true;
    this.closeDeferredWindow();
    this.sql.finalizeAll();
    // Closing checkpoints the log into the main file and deletes it: with full sync, SQLite flushes the main file
    // before the log goes. Blocking here is fine; nothing else runs any more.
    if (this.filePath) this.db.exec('PRAGMA synchronous = FULL');
    this.db.close();
    this.logSync?.close();
    this.fileSync?.close();
  }

  /**
   * Queued deferred writes are due once their window's timer is gone: it fired, or a flush closed it. (A commit that
   * takes the queue closes it too, leaving nothing queued, so the next write opens a new window.)
   */
  private get deferredDue(): boolean {
    return this.windowDueAt !== null && this.deferredTimer === null;
  }

  private closeDeferredWindow(): void {
    if (this.deferredTimer) clearTimeout(this.deferredTimer);
    this.deferredTimer = null;
  }

  private assertOpen(): void {
    if (this.closed) throw new Error('store is closed');
  }

  /** Drain in the next turn: every write issued in the current one joins the same commit. */
  private scheduleDrain(): void {
    this.startDrain(true);
  }

  /**
   * Drain at once, for a window whose commit is due: an immediate would wait for the rest of the turn and, under
   * load, for the next poll of the sockets, a few milliseconds (tens at c=64) that the window has not got.
   */
  private drainNow(): void {
    this.startDrain(false);
  }

  private startDrain(nextTurn: boolean): void {
    if (this.draining) return; // a scheduled or running drain loops until both queues are empty
    let resolve!: () => void;
    this.draining = new Promise<void>((done) => (resolve = done));
    const drain = () =>
      void this.drainLoop().finally(() => {
        this.draining = null;
        resolve();
        // A write queued between the loop's last emptiness check and this callback found `draining` still set
        // and did not schedule itself: pick it up now, or it would wait forever.
        if (this.queue.length > 0 || this.deferredDue) this.scheduleDrain();
      });
    if (nextTurn) setImmediate(drain);
    else drain();
  }

  commitIfOverdue(): void {
    if (this.heldWindowFellDue !== null && this.heldWindowOverdue) this.heldWindowFellDue();
    if (this.draining || this.deferredTimer === null || this.windowDueAt === null) return;
    if (performance.now() < this.windowDueAt) return;
    this.closeDeferredWindow();
    this.drainNow();
  }

  /**
   * Commit until no write waits. Deferred writes ride along with any commit, but alone they wait for their window:
   * under load that makes one commit (one log flush, one rollup upsert per row touched) of many requests' ledgers.
   */
  private async drainLoop(): Promise<void> {
    while (this.queue.length > 0 || this.deferredDue) {
      const batch = this.queue;
      const deferred = this.deferred;
      // The commit ends the open transaction: the writes written into it early are its own too.
      const writtenEarly = this.writtenEarly;
      const window: TakenWindow | null =
        this.windowDueAt === null
          ? null
          : {
              openedAt: this.windowOpenedAt,
              dueAt: this.windowHeldByCheckpoint ? null : this.windowDueAt,
              exposedAt: this.windowExposedAt,
              waiters: this.windowWaiters,
            };
      this.windowHeldByCheckpoint = false;
      this.queue = [];
      this.deferred = [];
      if (this.writtenEarly.length > 0) this.writtenEarly = [];
      this.windowDueAt = null;
      this.windowExposedAt = null;
      this.windowWaiters = [];
      this.closeDeferredWindow();
      this.committing = true;
      let committed!: () => void;
      this.commitInFlight = new Promise<void>((resolve) => (committed = resolve));
      try {
        await this.commitBatch(batch, deferred, writtenEarly, window);
      } finally {
        this.committing = false;
        // A commit that failed releases its answers too: its deferred writes are lost, as they would have been anyway.
        if (window !== null) releaseWaiters(window);
        this.commitInFlight = null;
        committed();
      }
    }
  }

  private async commitBatch(
    batch: PendingWrite[],
    deferred: DeferredWrite[],
    writtenEarly: readonly DeferredWrite[],
    window: TakenWindow | null,
  ): Promise<void> {
    for (let attempt = 0; !this.transactionOpen; attempt++) {
      try {
        this.sql.run('BEGIN IMMEDIATE');
        this.transactionOpen = true;
      } catch (error) {
        if (!isBusy(error) || attempt >= BUSY_BACKOFF_MS.length) {
          // The deferred writes are lost with this commit; their plans still take what was queued for them, so that
          // their writers queue anew.
          for (const write of deferred) if ('plan' in write) planned(write, true);
          this.commitFailed(batch, deferred, error);
          return;
        }
        await new Promise((resolve) => setTimeout(resolve, BUSY_BACKOFF_MS[attempt]));
      }
    }
    // A sliced commit finishes in one piece once it would otherwise end past its window (see writeInSlices).
    const finishBy = window === null ? Infinity : window.openedAt + this.timing.deferredWindowMs - windowMarginMs(this.commitsMeasured);
    let writingMs = this.earlyWritingMs;
    this.earlyWritingMs = 0;
    let batchStartedAt = 0;
    let outcomes: Outcome[];
    try {
      writingMs += await this.writeInSlices(deferred, finishBy);
      batchStartedAt = performance.now();
      outcomes = batch.map((write) => inSavepoint(this.sql, write.fn));
    } catch (error) {
      // A failing statement (SQLITE_FULL: the file may not grow) rolled back the whole transaction: lost like a
      // failed COMMIT. So is a commit broken off otherwise before its COMMIT (a savepoint's own statement failing,
      // SQLITE_NOMEM; the turn between slices failing), its transaction rolled back: thrown on, it would leave the
      // transaction open, the awaited writes unsettled and the drain rejected (an unhandled rejection ends svc serve).
      // The awaited writes are not run outside it (each would commit on its own): they fail. The plans handed out
      // their steps already, so their writers have queued anew.
      const cause = error instanceof TransactionRolledBack ? error.cause : error;
      const failure = this.explained(cause);
      this.rollBack();
      if (batch.length > 0) this.generation++;
      this.commitFailed(batch, deferred, cause, writtenEarly, failure);
      return;
    }
    // In the same turn as the batch's writes and their COMMIT (or ROLLBACK): no read between them and this saw a
    // generation they had changed.
    if (batch.length > 0) this.generation++;
    try {
      if (this.mainFileUnflushed) flushNow(this.filePath!);
      this.sql.run('COMMIT');
    } catch (error) {
      const failure = this.explained(error);
      this.rollBack();
      this.commitFailed(batch, deferred, error, writtenEarly, failure);
      return;
    }
    this.transactionOpen = false;
    if (this.droppedAlone !== null) {
      // The commit succeeded, but without these: the streak of losing commits goes on.
      this.failingCommits = true;
      this.deferredWriteLosses?.lost(this.droppedAlone);
      this.droppedAlone = null;
    } else if (this.failingCommits) {
      this.failingCommits = false;
      this.deferredWriteLosses?.committedAgain();
    }
    this.fallBackToFullSync();
    const committedAt = performance.now();
    writingMs += committedAt - batchStartedAt;
    if (window !== null) {
      releaseWaiters(window);
      // Only windows whose answers went out first shape the next ones: a window committed for waiting answers is made
      // due at once and holds a turn's requests, so its overrun said nothing of a full window's commit (the first
      // windows after a process's answers stopped waiting, sized by those, ended past 20 ms).
      if (window.dueAt !== null && window.exposedAt !== null) this.recordOverrun(committedAt - window.dueAt);
      const exposedMs = window.exposedAt === null ? null : committedAt - window.exposedAt;
      this.onWindowCommitted?.({ lengthMs: committedAt - window.openedAt, heldByCheckpoint: window.dueAt === null, exposedMs });
    }
    this.writingMsSinceCheckpoint += writingMs;
    this.commitsSinceCheckpoint += 1;
    const checkpointDue =
      this.fileSync !== null &&
      (this.commitsSinceCheckpoint >= CHECKPOINT_EVERY_COMMITS ||
        this.writingMsSinceCheckpoint >= this.timing.checkpointAfterWritingMs);
    // The batch is acknowledged once the log is flushed; the next commit need not wait for that (its window's early
    // writes may go into a new transaction meanwhile), unless a checkpoint follows: it copies only a flushed log,
    // and needs the connection out of any transaction.
    const flushed =
      checkpointDue && this.logSync!.mayFlushOnLoop()
        ? this.flushLogNow()
        : batch.length === 0 && !checkpointDue
          ? this.flushLogSoon()
          : this.flushLog();
    flushed.then(
      () =>
        batch.forEach((write, i) => {
          const outcome = outcomes[i]!;
          if (outcome.ok) write.resolve(outcome.value);
          else write.reject(outcome.error);
        }),
      // Committed, but not known to be on the disk: acknowledging it would be a promise svc cannot keep.
      (error) => batch.forEach((write) => write.reject(error)),
    );
    if (!checkpointDue) return;
    this.holdWindowsForCheckpoint();
    try {
      await flushed;
      await this.checkpoint();
    } catch {
      // the log's flush failed: the next checkpoint is due as well
    } finally {
      this.checkpointing = false;
      this.heldWindowDueAt = null;
      if (this.heldWindowTimer !== null) clearTimeout(this.heldWindowTimer);
      this.heldWindowTimer = null;
    }
  }

  /** End the open transaction, undoing it, after a failure; one that rolled it back (or a failed COMMIT) ended it already. */
  private rollBack(): void {
    try {
      this.sql.run('ROLLBACK');
    } catch {
      // no transaction left to roll back
    }
    this.transactionOpen = false;
  }

  /**
   * A deferred write (or a planned write's step) failed on its own and was rolled back to its savepoint: dropped,
   * its request answered already. Counted for the report of the commit that ends the transaction. A property, made
   * once: it is also what `planned` tells of a plan that threw, with no function made per call.
   */
  readonly tellDropped = (kind: string, error: unknown): void => this.dropAlone(kind, error);

  private dropAlone(kind = DEFAULT_DEFERRED_KIND, error: unknown): void {
    const dropped = (this.droppedAlone ??= { writes: 0, kinds: {}, error, commitFailed: false });
    dropped.writes += 1;
    dropped.kinds[kind] = (dropped.kinds[kind] ?? 0) + 1;
  }

  /**
   * A failed commit's error as its awaited writes get it: SQLite's bare `disk I/O error` with the data file named and,
   * where found, its cause (a full disk, a file size limit: io-failure.ts), looked for before the rollback. Answered
   * over HTTP as a 500 whose body stays generic; the in-process admin commands print it (cli/in-process.ts). The lost
   * deferred writes keep SQLite's own words: the readiness item quotes them as such.
   */
  private explained(error: unknown): unknown {
    return this.filePath === null ? error : explainIoFailure(this.filePath, error);
  }

  /**
   * A commit failed with `error`: its awaited writes are rejected with `failure` (SQLite's error explained) and told
   * of, its deferred writes lost (see `lostDeferred`).
   */
  private commitFailed(
    batch: readonly PendingWrite[],
    deferred: readonly DeferredWrite[],
    error: unknown,
    writtenEarly: readonly DeferredWrite[] = [],
    failure: unknown = this.explained(error),
  ): void {
    for (const write of batch) write.reject(failure);
    this.lostDeferred(deferred, error, writtenEarly, batch.length);
  }

  /**
   * A commit failed: its deferred writes, answered already, are lost (see `StoreOptions.deferredWriteLosses`), those
   * written early into its transaction first, and told with the awaited writes it refused. The writes its transaction
   * had dropped alone are among them: told once, with them.
   */
  private lostDeferred(deferred: readonly DeferredWrite[], error: unknown, writtenEarly: readonly DeferredWrite[] = [], refusedWrites = 0): void {
    this.droppedAlone = null;
    if (writtenEarly.length > 0) deferred = [...writtenEarly, ...deferred];
    if (deferred.length === 0 && refusedWrites === 0) return;
    this.failingCommits = true;
    this.deferredWriteLosses?.lost(lostWrites(deferred, refusedWrites, error));
  }

  /**
   * The next commit is to wait for a checkpoint: the window open now, and any opened until the checkpoint ends, are
   * due at once. Left to their timers, a window opened as the checkpoint began (the commit before it had just taken
   * the queue) fell due only ~10 ms later, after the flush had ended, and its commit ended past 20 ms (traced at c=64:
   * every such window met a checkpoint's flush of 13-19 ms).
   */
  private holdWindowsForCheckpoint(): void {
    this.checkpointing = true;
    if (this.windowDueAt !== null) this.holdWindowUntil(this.windowDueAt);
    if (this.deferredTimer === null) return;
    this.closeDeferredWindow();
    this.windowHeldByCheckpoint = true;
  }

  /**
   * The window held by the running checkpoint is due at `dueAt`: if the checkpoint still waits for the main file's
   * flush off the loop by then, the flush runs on the loop (see `flushMainFile`). A writer calling `commitIfOverdue`
   * in a long turn gets there first; the timer is for a loop with nothing else to do.
   */
  private holdWindowUntil(dueAt: number): void {
    this.heldWindowDueAt = dueAt;
    if (this.heldWindowTimer !== null) clearTimeout(this.heldWindowTimer);
    this.heldWindowTimer = setTimeout(() => this.heldWindowFellDue?.(), Math.max(0, dueAt - performance.now()));
  }

  private get heldWindowOverdue(): boolean {
    return this.heldWindowDueAt !== null && performance.now() >= this.heldWindowDueAt;
  }

  /**
   * The log's flush for a commit of deferred writes only, which nobody waits for: one flush for every such commit of
   * the next `LOG_FLUSH_BATCH_MS`. While answers wait for their commit (`answersWaitForCommit`), a lightly loaded store
   * commits once per request, and a flush per commit cost ~0.3 ms of the one CPU per request (the flush's work on a
   * pool thread of the same CPU): half of what a request cost in all. A commit with awaited writes flushes at once,
   * covering the commits before it.
   */
  private flushLogSoon(): Promise<void> {
    if (!this.logSync) return Promise.resolve();
    this.logFlushSoon ??= new Promise<void>((resolve, reject) => {
      setTimeout(() => {
        this.logFlushSoon = null;
        this.flushLog().then(resolve, reject);
      }, LOG_FLUSH_BATCH_MS);
    });
    return this.logFlushSoon;
  }

  /**
   * Flush the log (off the event loop) for the commit just written. A flush still running for an earlier commit
   * joins it: a commit counts as flushed only with every earlier one, as the log is replayed in order.
   */
  private flushLog(): Promise<void> {
    if (!this.logSync) return Promise.resolve();
    const own = this.logSync.sync();
    const earlier = this.logFlushing;
    const flushed = earlier ? Promise.all([earlier, own]).then(() => undefined) : own;
    this.logFlushing = flushed;
    const settled = () => {
      if (this.logFlushing === flushed) this.logFlushing = null;
    };
    flushed.then(settled, settled);
    return flushed;
  }

  /**
   * The deferred writes (answered requests' ledgers, cache entries) first, in slices of about `SLICE_MS` of work each,
   * giving the event loop a turn between slices while the transaction stays open: a commit carrying many requests'
   * ledgers then delays a request arriving meanwhile by one slice, not by all of them. Each slice is one savepoint;
   * if it fails, its writes are redone one savepoint each, so only a failing one is dropped (its request was already
   * answered). Between slices only reads run on the connection (they see the slices written so far; readers naming
   * a run wait for `flush()`), and writes queue for the next commit. Returns the time spent writing.
   */
  private async writeInSlices(queued: DeferredWrite[], finishBy: number): Promise<number> {
    const deferred: Array<(sql: Sql) => void> = [];
    // Counted for the plans only (one per window's ledger): a step dropped alone is then told with its kind.
    const planSteps: number[] = [];
    for (const write of queued) {
      if ('fn' in write) deferred.push(write.fn);
      else {
        const steps = planned(write, true, this.tellDropped);
        planSteps.push(steps.length);
        deferred.push(...steps);
      }
    }
    let next = 0;
    // Under load the window's ready writes went in early and what is left is written in one piece (see below).
    let budgetMs = this.loaded ? Infinity : SLICE_MS;
    let writingMs = 0;
    while (next < deferred.length) {
      const first = next;
      const startedAt = performance.now();
      const together = inSavepoint(this.sql, (sql) => {
        do deferred[next++]!(sql);
        while (next < deferred.length && performance.now() - startedAt < budgetMs);
      });
      // `next` is past the write that failed: the slice's writes up to it are redone alone.
      if (!together.ok) {
        for (let step = first; step < next; step++) {
          const alone = inSavepoint(this.sql, deferred[step]!);
          if (!alone.ok) this.dropAlone(ownerOfStep(queued, planSteps, step)?.kind, alone.error);
        }
      }
      writingMs += performance.now() - startedAt;
      if (next === deferred.length) break;
      const yieldedAt = performance.now();
      await this.timing.turnBetweenSlices();
      // A turn that took longer than `loadedTurnMs` meanwhile means a loaded loop (several requests per turn): there
      // the commit finishes in one piece, as slices interleaved with many requests cost ~15% more CPU per request
      // (measured at c=16) and a commit falling behind one short slice per turn would grow without bound. Slicing
      // is for a lightly loaded loop, whose requests it keeps from waiting for a whole commit.
      // And a commit that would otherwise end past its window's 20 ms (slices among requests of ~0.5 ms each at
      // c=8-16 stretched ~3 ms of writing over 10-17 ms, traced) writes the rest at once.
      const now = performance.now();
      if (now - yieldedAt > this.timing.loadedTurnMs || now >= finishBy) budgetMs = Infinity;
    }
    return writingMs;
  }

  /**
   * Flush the log on the event loop, blocking, for the commit just written (and any earlier one whose flush off the
   * loop is still running: this one covers its pages too). Settled already when returned.
   */
  private flushLogNow(): Promise<void> {
    try {
      this.logSync!.syncNow();
    } catch (error) {
      return Promise.reject(error);
    }
    return Promise.resolve();
  }

  /**
   * Copy the log into the main file, then flush the main file: only after that may the next commit start reusing
   * the log from its beginning (the next write transaction does so once everything was copied).
   */
  private async checkpoint(): Promise<void> {
    this.commitsSinceCheckpoint = 0;
    this.writingMsSinceCheckpoint = 0;
    try {
      this.sql.exec('PRAGMA wal_checkpoint(PASSIVE)');
      // Early writes may open the next transaction meanwhile: they stay in SQLite's page cache (it spills into the
      // log only far beyond a window's pages, see `cache_spill`), and only the next COMMIT writes to the log.
      this.committing = false;
      await this.flushMainFile();
    } catch {
      this.mainFileFlushFailed();
    }
  }

  /**
   * Flush the main file after a checkpoint's copy: off the event loop, unless the window held by the checkpoint falls
   * due before the callback ran; then on the loop, at once (see `FLUSH_ON_LOOP_MAX_MS`).
   */
  private async flushMainFile(): Promise<void> {
    const fileSync = this.fileSync!;
    const offLoop = fileSync.sync();
    if (!fileSync.mayFlushOnLoop()) return offLoop;
    if (!this.heldWindowOverdue) {
      const due = new Promise<true>((resolve) => (this.heldWindowFellDue = () => resolve(true)));
      try {
        if (!(await Promise.race([offLoop.then(() => false), due]))) return;
      } finally {
        this.heldWindowFellDue = null;
      }
    }
    // The flush off the loop is awaited no longer; should it fail after all, the store falls back as for any other.
    offLoop.catch(() => this.mainFileFlushFailed());
    fileSync.syncNow();
  }

  /**
   * The copy may be in the data file unflushed while the next commit starts overwriting the log: from here on, fall
   * back to SQLite's own (blocking) flushes rather than risk what was acknowledged.
   */
  private mainFileFlushFailed(): void {
    this.mainFileUnflushed = true;
    this.fallBackToFullSync();
  }

  /**
   * After a failed flush of the main file: SQLite's own flushes from now on. The setting cannot change inside a
   * transaction (early writes may have opened one); until it could, the next `COMMIT` flushes the main file first.
   */
  private fallBackToFullSync(): void {
    if (!this.mainFileUnflushed || this.transactionOpen) return;
    try {
      this.sql.exec('PRAGMA synchronous = FULL');
      this.mainFileUnflushed = false;
    } catch {
      // tried again after the next commit; the next log flush reports a disk that fails
    }
  }
}
