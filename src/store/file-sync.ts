/**
 * Durable flushes of the data file's pieces, run on libuv's thread pool instead of the event loop.
 *
 * SQLite's own fsyncs run inside its VFS, synchronously, on the thread that called into it: with the engine in
 * WebAssembly that is the event loop, so every commit would stall every request for the length of a disk flush. The
 * store therefore runs SQLite with `synchronous = OFF` and makes the two flushes durability needs itself:
 * the write-ahead log after each group commit (before any write of that commit is acknowledged), and the main file
 * after each checkpoint (before the log may be overwritten). `fdatasync` on a second descriptor of the same file
 * flushes the file, whoever wrote it. `syncNow` is the exception, for the store's one flush that is quicker on the
 * event loop than waiting for its callback (the log's before a checkpoint, src/store/store.ts).
 */
import { closeSync, existsSync, fdatasync, fdatasyncSync, fsyncSync, openSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { dirname } from 'node:path';

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

export class FileSync {
  private fd: number | null = null;
  /** The file's directory was flushed since this process opened the file (see `sync`). */
  private directoryFlushed = false;

  constructor(readonly path: string) {}

  /** Flush the file's written data to the disk; a file that does not exist yet has nothing to flush. */
  sync(): Promise<void> {
    const fd = this.open();
    if (fd === null) return Promise.resolve();
    const flushed = new Promise<void>((resolve, reject) => fdatasync(fd, (error) => (error ? reject(error) : resolve())));
    if (this.directoryFlushed) return flushed;
    // Until it has succeeded once, a flush also flushes the file's directory: the log (or the data file) may have
    // been created since the directory was last flushed, and its content is of no use if its name is lost.
    return flushed.then(() => syncDirectory(dirname(this.path))).then(() => {
      this.directoryFlushed = true;
    });
  }

  /** Whether `syncNow` may be called: the first `sync` (with the directory's flush, off the event loop) is done. */
  get canSyncNow(): boolean {
    return this.directoryFlushed;
  }

  /** Flush the file's written data at once, blocking the event loop (see `canSyncNow`). */
  syncNow(): void {
    if (!this.directoryFlushed) throw new Error(`${this.path}: its first flush, with its directory's, has not ended`);
    const fd = this.open();
    if (fd !== null) fdatasyncSync(fd);
  }

  close(): void {
    if (this.fd === null) return;
    closeSync(this.fd);
    this.fd = null;
  }

  private open(): number | null {
    if (this.fd === null && existsSync(this.path)) this.fd = openSync(this.path, 'r+');
    return this.fd;
  }
}
