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
 *   store flushes the log after each commit before acknowledging it, and checkpoints the log into the main file
 *   itself every `CHECKPOINT_EVERY_COMMITS` commits or sooner (after `CHECKPOINT_AFTER_WRITING_MS` of writing),
 *   flushing the main file before the log may be reused.
 * - Deferred writes (the gateway's own ledger) join the next group commit, which starts `deferredWindowMs` after the
 *   first of them was queued, or once the commit, flush or checkpoint still running has ended (test/bench/crash.mjs
 *   measures how long after an answer its run is committed), one savepoint per slice of a fraction of a millisecond
 *   (each write alone only if that fails), with a turn of the event loop between slices while the loop is lightly
 *   loaded; `flush()` waits for them, which readers naming a run call first (read-your-writes).
 * - "database is locked" is retried with async backoff, never a busy-wait.
 */
import { existsSync, mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import sqlite from 'node-sqlite3-wasm';
import { FileSync } from './file-sync.ts';
import { CachedSql, inSavepoint, type Sql } from './sql.ts';
import { MIGRATIONS, type Migration } from './migrations.ts';
import { createFromTemplate } from './template.ts';

export const DATA_FILE_NAME = 'svc.db';

export interface StoreOptions {
  /** Directory holding the data file; `null` opens a private in-memory database (tests). */
  dataDir: string | null;
  /** How long after the first deferred write of a window its commit starts (later while another one still runs). */
  deferredWindowMs?: number;
  /** Checkpoint once the commits since the last one spent this long writing; default `CHECKPOINT_AFTER_WRITING_MS`. */
  checkpointAfterWritingMs?: number;
  /**
   * A turn of the event loop between two slices of a commit longer than this means a loaded loop, where the commit
   * finishes in one piece (see writeInSlices); default `LOADED_TURN_MS`. A test of the light-load path raises it, so a
   * hiccup of the machine (a collection, another process) does not switch the path under test.
   */
  loadedTurnMs?: number;
  migrations?: readonly Migration[];
  /**
   * Where a new data file may find the template of its migrations (src/store/template.ts); by default this module's
   * directory, which in the bundle is dist/, where `npm run build` writes it. `null`: always run the migrations.
   */
  templateDir?: string | null;
}

export interface Store {
  /** Run synchronous reads against a consistent view. */
  read<T>(fn: (sql: Sql) => T): Promise<T>;
  /** Run a write; resolves after the group commit that holds it returned. */
  write<T>(fn: (sql: Sql) => T): Promise<T>;
  /** Queue a write for the next group commit without waiting for it (bounded window). */
  writeDeferred(fn: (sql: Sql) => void): void;
  /**
   * Queue a write made of steps, planned when its commit starts (`plan` runs once, before any of the commit's writes,
   * so it may take what was queued for it) and written step by step: the commit may give the event loop a turn
   * between steps, and a failing step is dropped alone.
   */
  writeDeferredSteps(plan: () => Array<(sql: Sql) => void>): void;
  /** Wait until every queued write, deferred ones included, is committed. */
  flush(): Promise<void>;
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
type Timing = Required<Pick<StoreOptions, 'deferredWindowMs' | 'loadedTurnMs' | 'checkpointAfterWritingMs'>>;

/** A deferred write: one piece, or steps planned when its commit starts. */
type DeferredWrite = ((sql: Sql) => void) | { plan: () => Array<(sql: Sql) => void> };

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
 * p99.9 of ~115 ms; ~120 ms of writing make ~10 ms ones (docs/performance.md). The log is reused from its start
 * after each checkpoint.
 */
const CHECKPOINT_EVERY_COMMITS = 64;
const CHECKPOINT_AFTER_WRITING_MS = 120;

/**
 * About how much of deferred writes' work a commit does before it gives the event loop a turn, at least (see
 * writeInSlices).
 */
const SLICE_MS = 0.3;

/** A turn of the event loop between two slices longer than this means a loaded loop (see writeInSlices). */
const LOADED_TURN_MS = 1;

function isBusy(error: unknown): boolean {
  return error instanceof Error && /database is locked|SQLITE_BUSY/i.test(error.message);
}

/** Open the data file, clear a stale engine lock, apply pending migrations. */
export function openStore(options: StoreOptions): Store {
  const migrations = options.migrations ?? MIGRATIONS;
  let filePath: string | null = null;
  let fromTemplate = false;
  if (options.dataDir !== null) {
    mkdirSync(options.dataDir, { recursive: true, mode: 0o700 });
    filePath = join(options.dataDir, DATA_FILE_NAME);
    // The engine locks by creating `<file>.lock/`. The caller owns the data directory (src/store/owner-lock.ts
    // proved the recorded previous owner dead), so a lock directory still present was left by a killed process.
    rmSync(`${filePath}.lock`, { recursive: true, force: true });
    // Only a data file that does not exist at all is new: an empty one may have its pages in the log still.
    if (options.templateDir !== null && !existsSync(filePath) && !existsSync(`${filePath}-wal`)) {
      fromTemplate = createFromTemplate(filePath, options.templateDir ?? fileURLToPath(new URL('.', import.meta.url)), migrations);
    }
  }
  const db = new sqlite.Database(filePath ?? undefined);
  const sql = new CachedSql(db);
  if (filePath) {
    // Exclusive first: the log's index then lives in the process's memory instead of a shared-memory file.
    sql.exec('PRAGMA locking_mode = EXCLUSIVE');
    sql.exec('PRAGMA journal_mode = WAL');
    sql.exec('PRAGMA synchronous = OFF');
    sql.exec('PRAGMA wal_autocheckpoint = 0');
  }
  sql.exec('PRAGMA foreign_keys = ON');
  const schemaVersion = migrate(sql, migrations);
  // The template recorded its migrations as applied when the build ran them; this data file got them now.
  if (fromTemplate) sql.run('UPDATE schema_migrations SET applied_at = ?', [Date.now()]);
  return new GroupCommitStore(db, sql, filePath, schemaVersion, {
    deferredWindowMs: options.deferredWindowMs ?? 20,
    loadedTurnMs: options.loadedTurnMs ?? LOADED_TURN_MS,
    checkpointAfterWritingMs: options.checkpointAfterWritingMs ?? CHECKPOINT_AFTER_WRITING_MS,
  });
}

function migrate(sql: CachedSql, migrations: readonly Migration[]): number {
  sql.exec(
    'CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)',
  );
  // Every migration not recorded yet is applied, in version order; a lower number added after a higher one (two
  // areas landing migrations in parallel) is applied too instead of being skipped. All of them share one
  // transaction: a new data file is created in one commit, and a failing migration leaves the file as it was.
  const applied = new Set(sql.all<{ version: number }>('SELECT version FROM schema_migrations').map((row) => row.version));
  const pending = [...migrations].sort((a, b) => a.version - b.version).filter((migration) => !applied.has(migration.version));
  const current = Math.max(0, ...applied, ...pending.map((migration) => migration.version));
  if (pending.length === 0) return current;
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
  private deferredTimer: NodeJS.Timeout | null = null;
  private draining: Promise<void> | null = null;
  private closed = false;
  private commitsSinceCheckpoint = 0;
  private writingMsSinceCheckpoint = 0;
  private generation = 0;
  private readonly logSync: FileSync | null;
  private readonly fileSync: FileSync | null;

  constructor(
    private readonly db: sqlite.Database,
    private readonly sql: CachedSql,
    readonly filePath: string | null,
    readonly schemaVersion: number,
    private readonly timing: Timing,
  ) {
    this.logSync = filePath ? new FileSync(`${filePath}-wal`) : null;
    this.fileSync = filePath ? new FileSync(filePath) : null;
  }

  get isOpen(): boolean {
    return !this.closed;
  }

  get writeGeneration(): number {
    return this.generation;
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

  writeDeferred(fn: (sql: Sql) => void): void {
    this.queueDeferred(fn);
  }

  writeDeferredSteps(plan: () => Array<(sql: Sql) => void>): void {
    this.queueDeferred({ plan });
  }

  private queueDeferred(write: DeferredWrite): void {
    this.assertOpen();
    // The first write of a window opens it; later ones join it, also once it passed and its drain is pending.
    const opensWindow = this.deferred.length === 0;
    this.deferred.push(write);
    if (opensWindow) {
      this.deferredTimer = setTimeout(() => {
        this.deferredTimer = null;
        this.scheduleDrain();
      }, this.timing.deferredWindowMs);
    }
  }

  async flush(): Promise<void> {
    while (this.queue.length > 0 || this.deferred.length > 0 || this.draining) {
      this.closeDeferredWindow();
      this.scheduleDrain();
      await this.draining;
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    await this.flush();
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
    return this.deferred.length > 0 && this.deferredTimer === null;
  }

  private closeDeferredWindow(): void {
    if (this.deferredTimer) clearTimeout(this.deferredTimer);
    this.deferredTimer = null;
  }

  private assertOpen(): void {
    if (this.closed) throw new Error('store is closed');
  }

  private scheduleDrain(): void {
    if (this.draining) return; // a scheduled or running drain loops until both queues are empty
    // setImmediate lets every write issued in the current turn join the same commit.
    this.draining = new Promise<void>((resolve) => {
      setImmediate(() => {
        this.drainLoop().finally(() => {
          this.draining = null;
          resolve();
          // A write queued between the loop's last emptiness check and this callback found `draining` still set
          // and did not schedule itself: pick it up now, or it would wait forever.
          if (this.queue.length > 0 || this.deferredDue) this.scheduleDrain();
        });
      });
    });
  }

  /**
   * Commit until no write waits. Deferred writes ride along with any commit, but alone they wait for their window:
   * under load that makes one commit (one log flush, one rollup upsert per row touched) of many requests' ledgers.
   */
  private async drainLoop(): Promise<void> {
    while (this.queue.length > 0 || this.deferredDue) {
      const batch = this.queue;
      const deferred = this.deferred;
      this.queue = [];
      this.deferred = [];
      this.closeDeferredWindow();
      await this.commitBatch(batch, deferred);
    }
  }

  private async commitBatch(batch: PendingWrite[], deferred: DeferredWrite[]): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      try {
        this.sql.run('BEGIN IMMEDIATE');
        break;
      } catch (error) {
        if (!isBusy(error) || attempt >= BUSY_BACKOFF_MS.length) {
          for (const write of batch) write.reject(error);
          return;
        }
        await new Promise((resolve) => setTimeout(resolve, BUSY_BACKOFF_MS[attempt]));
      }
    }
    let writingMs = await this.writeInSlices(deferred);
    const batchStartedAt = performance.now();
    const outcomes = batch.map((write) => inSavepoint(this.sql, write.fn));
    // In the same turn as the batch's writes and their COMMIT (or ROLLBACK): no read between them and this saw a
    // generation they had changed.
    if (batch.length > 0) this.generation++;
    try {
      this.sql.run('COMMIT');
    } catch (error) {
      try {
        this.sql.run('ROLLBACK');
      } catch {
        // the failed COMMIT may already have rolled back
      }
      for (const write of batch) write.reject(error);
      return;
    }
    writingMs += performance.now() - batchStartedAt;
    try {
      await this.logSync?.sync();
    } catch (error) {
      // Committed, but not known to be on the disk: acknowledging it would be a promise svc cannot keep.
      for (const write of batch) write.reject(error);
      return;
    }
    batch.forEach((write, i) => {
      const outcome = outcomes[i]!;
      if (outcome.ok) write.resolve(outcome.value);
      else write.reject(outcome.error);
    });
    if (!this.fileSync) return;
    this.writingMsSinceCheckpoint += writingMs;
    this.commitsSinceCheckpoint += 1;
    const enoughCommits = this.commitsSinceCheckpoint >= CHECKPOINT_EVERY_COMMITS;
    if (enoughCommits || this.writingMsSinceCheckpoint >= this.timing.checkpointAfterWritingMs) await this.checkpoint();
  }

  /**
   * The deferred writes (answered requests' ledgers, cache entries) first, in slices of about `SLICE_MS` of work each,
   * giving the event loop a turn between slices while the transaction stays open: a commit carrying many requests'
   * ledgers then delays a request arriving meanwhile by one slice, not by all of them. Each slice is one savepoint;
   * if it fails, its writes are redone one savepoint each, so only a failing one is dropped (its request was already
   * answered). Between slices only reads run on the connection (they see the slices written so far; readers naming
   * a run wait for `flush()`), and writes queue for the next commit. Returns the time spent writing.
   */
  private async writeInSlices(queued: DeferredWrite[]): Promise<number> {
    const deferred: Array<(sql: Sql) => void> = [];
    for (const write of queued) {
      if (typeof write === 'function') deferred.push(write);
      else {
        try {
          deferred.push(...write.plan());
        } catch {
          // dropped like a write that fails: its request was already answered
        }
      }
    }
    let next = 0;
    let budgetMs = SLICE_MS;
    let writingMs = 0;
    while (next < deferred.length) {
      const first = next;
      const startedAt = performance.now();
      const together = inSavepoint(this.sql, (sql) => {
        do deferred[next++]!(sql);
        while (next < deferred.length && performance.now() - startedAt < budgetMs);
      });
      // `next` is past the write that failed: the slice's writes up to it are redone alone.
      if (!together.ok) for (const write of deferred.slice(first, next)) inSavepoint(this.sql, write);
      writingMs += performance.now() - startedAt;
      if (next === deferred.length) break;
      const yieldedAt = performance.now();
      await nextTurn();
      // A turn that took longer than `loadedTurnMs` meanwhile means a loaded loop (several requests per turn): there
      // the commit finishes in one piece, as slices interleaved with many requests cost ~15% more CPU per request
      // (measured at c=16) and a commit falling behind one short slice per turn would grow without bound. Slicing
      // is for a lightly loaded loop, whose requests it keeps from waiting for a whole commit.
      if (performance.now() - yieldedAt > this.timing.loadedTurnMs) budgetMs = Infinity;
    }
    return writingMs;
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
      await this.fileSync!.sync();
    } catch {
      // The copy may be in the data file unflushed while the next commit starts overwriting the log: from here on,
      // fall back to SQLite's own (blocking) flushes rather than risk what was acknowledged.
      try {
        this.sql.exec('PRAGMA synchronous = FULL');
      } catch {
        // nothing more to do; the next log flush reports a disk that fails
      }
    }
  }
}
