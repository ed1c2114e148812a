/**
 * Durable flushes of the data file's pieces, run on libuv's thread pool instead of the event loop.
 *
 * SQLite's own fsyncs run inside its VFS, synchronously, on the thread that called into it: with the engine in
 * WebAssembly that is the event loop, so every commit would stall every request for the length of a disk flush. The
 * store therefore runs SQLite with `synchronous = OFF` and makes the two flushes durability needs itself:
 * the write-ahead log after each group commit (before any write of that commit is acknowledged), and the main file
 * after each checkpoint (before the log may be overwritten). `fdatasync` on a second descriptor of the same file
 * flushes the file, whoever wrote it. `syncNow` is the exception, for the flushes that are quicker on the event
 * loop than waiting for a callback under load (the store's around a checkpoint, src/store/store.ts), while the disk
 * is quick.
 */
import { closeSync, existsSync, fdatasync, fdatasyncSync, fsyncSync, openSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { dirname } from 'node:path';
import { performance } from 'node:perf_hooks';

/**
 * Flush a file or a directory (a directory's flush keeps the names of the files created in it) at once, blocking:
 * for start-up, before anything else runs.
 */
export function flushNow(path: string): void {
  const fd = openSync(path, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** `flushNow` of a directory off the event loop. */
async function syncDirectory(path: string): Promise<void> {
  const directory = await open(path, 'r');
  try {
    await directory.sync();
  } finally {
    await directory.close();
  }
}

/**
 * After this many flushes on the event loop in a row took longer than their limit, `mayFlushOnLoop` refuses the next
 * `OFF_LOOP_ASKS_AFTER_SLOW_FLUSHES` asks. One is not enough: a fresh data file's log grows for its first seconds, and
 * one flush of 11 ms among ~1 ms ones (traced) then sent every checkpoint of a process's first seconds off the loop.
 */
const SLOW_FLUSHES_IN_A_ROW = 2;
const OFF_LOOP_ASKS_AFTER_SLOW_FLUSHES = 64;

export class FileSync {
  private fd: number | null = null;
  /**
   * `syncNow`'s own descriptor. The kernel reports a failed write-back once per open file description: a flush on the
   * event loop running beside one off it on the same descriptor could return success while the other took the error.
   * Each descriptor open when the error happened reports it.
   */
  private loopFd: number | null = null;
  /** The file's directory was flushed since this process opened the file (see `sync`). */
  private directoryFlushed = false;
  /** The last flushes on the loop that took longer than the limit, in a row. */
  private slowFlushesInARow = 0;
  /** How many more asks `mayFlushOnLoop` refuses after slow flushes on the loop. */
  private offLoopAsksLeft = 0;

  /** `onLoopMaxMs`: how long a flush on the event loop may take before the next ones go off it for a while; 0: never on it. */
  constructor(
    readonly path: string,
    private readonly onLoopMaxMs = 0,
  ) {}

  /**
   * Flush the file's written data to the disk; a file that does not exist yet has nothing to flush. A file that cannot
   * be opened (EMFILE) fails the flush as a rejection: the store starts flushes after its COMMIT and in a timer, where
   * a throw would escape the commit (an unhandled rejection ends svc serve) or the timer (an uncaught exception).
   */
  sync(): Promise<void> {
    let fd: number | null;
    try {
      fd = this.open();
    } catch (error) {
      return Promise.reject(error);
    }
    if (fd === null) return Promise.resolve();
    const flushed = new Promise<void>((resolve, reject) => fdatasync(fd, (error) => (error ? reject(error) : resolve())));
    if (this.directoryFlushed) return flushed;
    // Until it has succeeded once, a flush also flushes the file's directory: the log (or the data file) may have
    // been created since the directory was last flushed, and its content is of no use if its name is lost.
    return flushed.then(() => syncDirectory(dirname(this.path))).then(() => {
      this.directoryFlushed = true;
    });
  }

  /**
   * Whether the next flush may run on the event loop (`syncNow`): not with a limit of 0, not before the first `sync`
   * (with the directory's flush, off the loop) has ended, and not for a while after flushes on the loop took longer
   * than the limit (a disk that got slow; then the loop is tried again; see `SLOW_FLUSHES_IN_A_ROW`).
   */
  mayFlushOnLoop(): boolean {
    if (this.onLoopMaxMs <= 0 || !this.directoryFlushed) return false;
    if (this.offLoopAsksLeft === 0) return true;
    this.offLoopAsksLeft--;
    return false;
  }

  /** Flush the file's written data at once, blocking the event loop (ask `mayFlushOnLoop` first). */
  syncNow(): void {
    if (!this.directoryFlushed) throw new Error(`${this.path}: its first flush, with its directory's, has not ended`);
    if (this.open() === null) return;
    const startedAt = performance.now();
    fdatasyncSync(this.loopFd!);
    const slow = performance.now() - startedAt > this.onLoopMaxMs;
    this.slowFlushesInARow = slow ? this.slowFlushesInARow + 1 : 0;
    if (this.slowFlushesInARow >= SLOW_FLUSHES_IN_A_ROW) {
      this.slowFlushesInARow = 0;
      this.offLoopAsksLeft = OFF_LOOP_ASKS_AFTER_SLOW_FLUSHES;
    }
  }

  close(): void {
    for (const fd of [this.fd, this.loopFd]) if (fd !== null) closeSync(fd);
    this.fd = this.loopFd = null;
  }

  /** Both descriptors, opened together (see `loopFd`); null while the file does not exist. */
  private open(): number | null {
    if (this.fd === null && existsSync(this.path)) {
      const fd = openSync(this.path, 'r+');
      try {
        this.loopFd = openSync(this.path, 'r+');
      } catch (error) {
        closeSync(fd);
        throw error;
      }
      this.fd = fd;
    }
    return this.fd;
  }
}
