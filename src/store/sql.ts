/**
 * The synchronous SQL surface the repositories of the embedded store use inside `store.read` / `store.write`.
 * Statements are prepared once and cached per connection: preparing is the dominant cost of a small query.
 */
import type { Database, Statement } from 'node-sqlite3-wasm';

export type SqlValue = string | number | bigint | boolean | null | Uint8Array;
export type SqlParams = SqlValue[] | Record<string, SqlValue>;
export type Row = Record<string, string | number | bigint | Uint8Array | null>;

export interface Sql {
  /** Run a statement that returns no rows; `changes` is the number of rows it touched. */
  run(sql: string, params?: SqlParams): { changes: number };
  get<T = Row>(sql: string, params?: SqlParams): T | undefined;
  all<T = Row>(sql: string, params?: SqlParams): T[];
  /** Turn SQLite's `secure_delete` on or off for this connection: see `erasing`, the one caller. */
  secureDelete(on: boolean): void;
}

/**
 * Run `fn`, whose deletes take customer content (prompts, answers, traces, addresses, password hashes), with SQLite's
 * `secure_delete` on, so that the space they free is overwritten with zeros rather than left in the file's free pages,
 * readable until reused. ON, not FAST: FAST zeroes only what costs no more I/O, which leaves the overflow pages of a
 * long prompt or answer in the free list whole. Off again before `fn`'s write returns: the connection is shared by
 * every write, and the ledger's (the /v1 hot path) must not pay for zeroing what they free. Within one write's
 * synchronous step nothing else runs on the connection, so only `fn`'s own statements run with it on.
 */
export function erasing<T>(sql: Sql, fn: () => T): T {
  sql.secureDelete(true);
  try {
    return fn();
  } finally {
    sql.secureDelete(false);
  }
}

/**
 * Another write's step, made inside a repository's write so that both commit together or not at all (an audit row
 * with the change it records: src/audit/service.ts `staged`). A repository runs it only when its own change was made.
 */
/** `?, ?, ?`: the parameter marks of an `IN (...)` list of `count` values. */
export function placeholders(count: number): string {
  return Array.from({ length: count }, () => '?').join(', ');
}

export type AlsoStep = (sql: Sql) => unknown;

/** Strings from this length on are worth binding as bytes (see `textBytes`). */
const TEXT_BYTES_MIN = 48;

/**
 * A string bound as its UTF-8 bytes, for a `CAST(? AS TEXT)` placeholder (SQLite reads the bytes back as text).
 * node-sqlite3-wasm copies a string parameter into WebAssembly memory with a JavaScript loop over its characters, a
 * Buffer in one block copy: ~3 µs less per 800-character JSON column, and the ledger writes several per request.
 * Short strings gain nothing (and an empty Buffer would bind as NULL), so they stay strings; so does null.
 */
export function textBytes<T extends string | null>(value: T): T | Uint8Array {
  return value !== null && value.length >= TEXT_BYTES_MIN ? Buffer.from(value, 'utf8') : value;
}

/** node-sqlite3-wasm resets a statement only before its next binding; its (untyped) `_reset` does it now. */
function resetNow(stmt: Statement): void {
  (stmt as unknown as { _reset(): boolean })._reset();
}

/**
 * A statement whose step failed (a constraint, say) reports that failure again from its next reset, which
 * node-sqlite3-wasm runs before binding: the statement's next, unrelated use would fail too. Reset it right away.
 */
function cleared(stmt: Statement, error: unknown): unknown {
  resetNow(stmt);
  return error;
}

export type Outcome<T = unknown> = { ok: true; value: T } | { ok: false; error: unknown };

/**
 * A statement failed in a way that made SQLite roll back the whole transaction, savepoints and all (SQLITE_FULL, as
 * when the file may not grow, or an I/O error): every write of the transaction is lost, not only the failing one.
 * `cause` is what SQLite said of the statement.
 */
export class TransactionRolledBack extends Error {
  constructor(override readonly cause: unknown) {
    super(`the transaction was rolled back: ${cause instanceof Error ? cause.message : String(cause)}`);
    this.name = 'TransactionRolledBack';
  }
}

/**
 * Run `fn` in a savepoint of the open transaction: on failure its changes are undone and the error returned. If the
 * failure rolled back the whole transaction, there is no savepoint left to return to: `TransactionRolledBack` is
 * thrown, through every savepoint around this one, to whoever opened the transaction.
 */
export function inSavepoint<T>(sql: Sql, fn: (sql: Sql) => T): Outcome<T> {
  sql.run('SAVEPOINT w');
  try {
    const value = fn(sql);
    sql.run('RELEASE w');
    return { ok: true, value };
  } catch (error) {
    if (error instanceof TransactionRolledBack) throw error;
    try {
      sql.run('ROLLBACK TO w');
    } catch {
      // "no such savepoint": the statement's failure rolled back the transaction it was in.
      throw new TransactionRolledBack(error);
    }
    sql.run('RELEASE w');
    return { ok: false, error };
  }
}

/**
 * Write `items` together in one savepoint; if that fails, write each alone in its own, so only a failing one is
 * lost. The fast path costs one savepoint for a whole batch of writes nobody waits on (the ledger's, the caches').
 * `write` may run twice for an item: whatever it takes from shared state must be taken once. Each item lost is told
 * to `dropped` (its index, SQLite's error), so that its loss is not silent (see Store.tellDropped).
 */
export function togetherOrAlone<T>(
  sql: Sql,
  items: readonly T[],
  write: (sql: Sql, items: readonly T[]) => void,
  dropped: (index: number, error: unknown) => void,
): void {
  if (items.length === 0) return;
  const together = inSavepoint(sql, (inner) => write(inner, items));
  if (together.ok) return;
  if (items.length === 1) return dropped(0, together.error);
  for (let i = 0; i < items.length; i++) {
    const alone = inSavepoint(sql, (inner) => write(inner, [items[i]!]));
    if (!alone.ok) dropped(i, alone.error);
  }
}

export class CachedSql implements Sql {
  private readonly statements = new Map<string, Statement>();

  constructor(private readonly db: Database) {}

  private statement(sql: string): Statement {
    let stmt = this.statements.get(sql);
    if (!stmt) {
      stmt = this.db.prepare(sql);
      this.statements.set(sql, stmt);
    }
    return stmt;
  }

  run(sql: string, params?: SqlParams): { changes: number } {
    const stmt = this.statement(sql);
    try {
      return { changes: stmt.run(params as never).changes };
    } catch (error) {
      throw cleared(stmt, error);
    }
  }

  get<T = Row>(sql: string, params?: SqlParams): T | undefined {
    const stmt = this.statement(sql);
    let row: unknown;
    try {
      row = stmt.get(params as never) ?? undefined;
    } catch (error) {
      throw cleared(stmt, error);
    }
    // A statement stopped at its first row stays active, keeping its read transaction (and table locks) open until
    // its next use: that would block savepoints, checkpoints and writes to the table. Reset it now.
    resetNow(stmt);
    return row as T | undefined;
  }

  all<T = Row>(sql: string, params?: SqlParams): T[] {
    const stmt = this.statement(sql);
    try {
      return stmt.all(params as never) as T[];
    } catch (error) {
      throw cleared(stmt, error);
    }
  }

  exec(sql: string): void {
    this.db.exec(sql);
  }

  secureDelete(on: boolean): void {
    // Never a cached statement: this pragma acts when it is prepared, so a prepared one run again would change nothing.
    this.db.exec(`PRAGMA secure_delete = ${on ? 'ON' : 'OFF'}`);
  }

  /** Finalize every cached statement; must run before the database is closed. */
  finalizeAll(): void {
    for (const stmt of this.statements.values()) {
      if (stmt.isFinalized) continue;
      try {
        stmt.finalize();
      } catch {
        // sqlite3_finalize reports the statement's last step error (e.g. a constraint a write already answered
        // for); the statement is finalized all the same, and closing must not fail because of it.
      }
    }
    this.statements.clear();
  }
}
