/**
 * The store's disk flushes on a thread of their own, whose completion the event loop can see at any moment.
 *
 * A flush on libuv's thread pool ends in a callback the event loop runs only at its next poll of the sockets: under
 * load, after a turn that handled tens of requests. A checkpoint waits for two flushes in a row (the log's, then the
 * main file's) and every ledger window open meanwhile waits for the checkpoint: at c=64 that made windows of 25-60 ms
 * while the `fdatasync` calls themselves took 0.5-2 ms (strace, docs/performance.md). Here a worker thread runs the
 * flushes and publishes how far each file is flushed in shared memory; `poll()` reads it, so the store notices a
 * finished flush between two requests of a long turn (it polls at every deferred write) and moves on at once. The
 * thread also posts a message per flush, for a loop with nothing else to do.
 *
 * A flush that fails fails its file for good: every later flush of it fails too. After a failed `fdatasync` Linux may
 * have dropped the pages it could not write, and a later flush that succeeds would vouch for data that is gone.
 */
import { getSystemErrorName } from 'node:util';
import { Worker } from 'node:worker_threads';

/**
 * Shared cells: [0] wakes the thread; then per file: the last flush requested, done, and done successfully (sequence
 * numbers), the descriptor to flush, and the error number of the flush that failed.
 */
const WAKE = 0;
const CELLS_PER_FILE = 5;
const REQUESTED = 0;
const DONE = 1;
const OK = 2;
const FD = 3;
const ERRNO = 4;

const THREAD_SOURCE = `
const { workerData, parentPort } = require('node:worker_threads');
const { fdatasyncSync } = require('node:fs');
const cells = new Int32Array(workerData.cells);
const files = workerData.files;
for (;;) {
  const wake = Atomics.load(cells, ${WAKE});
  let worked = false;
  for (let file = 0; file < files; file++) {
    const base = 1 + file * ${CELLS_PER_FILE};
    const requested = Atomics.load(cells, base + ${REQUESTED});
    if (requested === Atomics.load(cells, base + ${DONE})) continue;
    worked = true;
    if (Atomics.load(cells, base + ${ERRNO}) === 0) {
      try {
        fdatasyncSync(Atomics.load(cells, base + ${FD}));
        Atomics.store(cells, base + ${OK}, requested);
      } catch (error) {
        Atomics.store(cells, base + ${ERRNO}, typeof error.errno === 'number' && error.errno !== 0 ? error.errno : -5);
      }
    }
    Atomics.store(cells, base + ${DONE}, requested);
    parentPort.postMessage(file);
  }
  if (!worked) Atomics.wait(cells, ${WAKE}, wake);
}
`;

interface PendingFlush {
  file: number;
  seq: number;
  resolve: () => void;
  reject: (error: Error) => void;
}

export class FlushThread {
  private readonly cells: Int32Array;
  /** Started with the first flush (not with the store: ~30 ms of start-up on a thread, ~10 MB). */
  private worker: Worker | null = null;
  private pending: PendingFlush[] = [];
  /** The thread is gone (it failed to start or exited): flushes it had not done fail, and new ones are refused. */
  private gone: Error | null = null;

  constructor(readonly files: number) {
    this.cells = new Int32Array(new SharedArrayBuffer(4 * (1 + files * CELLS_PER_FILE)));
  }

  private start(): Worker {
    // Not the process's own options: `--input-type=module` would make this CommonJS source fail, `--cpu-prof` profile
    // a thread that only waits.
    const worker = new Worker(THREAD_SOURCE, { eval: true, execArgv: [], workerData: { cells: this.cells.buffer, files: this.files } });
    worker.on('message', () => this.poll());
    const end = (error: Error) => {
      this.gone ??= error;
      this.poll();
    };
    worker.on('error', end);
    worker.on('exit', (code) => end(new Error(`the flush thread exited (code ${code})`)));
    return worker;
  }

  get isGone(): boolean {
    return this.gone !== null;
  }

  /** Flush the file open as `fd` (in slot `file`); resolves once its data written so far is on the disk. */
  flush(file: number, fd: number): Promise<void> {
    if (this.gone) return Promise.reject(this.gone);
    const base = 1 + file * CELLS_PER_FILE;
    Atomics.store(this.cells, base + FD, fd);
    const seq = Atomics.add(this.cells, base + REQUESTED, 1) + 1;
    Atomics.add(this.cells, WAKE, 1);
    Atomics.notify(this.cells, WAKE);
    // Referenced only while a flush is pending: an idle thread does not keep the process alive.
    this.worker ??= this.start();
    if (this.pending.length === 0) this.worker.ref();
    return new Promise<void>((resolve, reject) => this.pending.push({ file, seq, resolve, reject }));
  }

  /** Settle every flush the thread has finished (or, once it is gone, every pending one). Cheap: call it often. */
  poll(): void {
    if (this.pending.length === 0) return;
    const still: PendingFlush[] = [];
    for (const flush of this.pending) {
      const base = 1 + flush.file * CELLS_PER_FILE;
      // A sequence number taken as Int32 wraps after 2^31 flushes: compared by difference, it stays ordered.
      if (((Atomics.load(this.cells, base + DONE) - flush.seq) | 0) >= 0) {
        if (((Atomics.load(this.cells, base + OK) - flush.seq) | 0) >= 0) flush.resolve();
        else flush.reject(flushError(Atomics.load(this.cells, base + ERRNO)));
      } else if (this.gone) {
        flush.reject(this.gone);
      } else {
        still.push(flush);
      }
    }
    this.pending = still;
    if (still.length === 0) this.worker?.unref();
  }

  async close(): Promise<void> {
    this.gone ??= new Error('the flush thread is closed');
    await this.worker?.terminate();
    this.poll();
  }
}

function flushError(errno: number): NodeJS.ErrnoException {
  const code = getSystemErrorName(errno);
  return Object.assign(new Error(`${code}: flushing the data file failed (fdatasync)`), { errno, code, syscall: 'fdatasync' });
}
