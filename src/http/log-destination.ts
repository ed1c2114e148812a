/**
 * Where `svc serve` writes its log: a file descriptor (stdout), written off the event loop and in order, as pino's
 * default destination does, except that a write that fails never stops the gateway. pino's own re-throws every error
 * but EPIPE from the write's callback (an uncaught exception) and flushes on exit retrying a failed write forever, so a
 * log on a full disk (ENOSPC) left svc alive and answering nothing. Here a failed write drops its lines and says so
 * once (`tell`); the next lines try again (the disk may have room by then), and once one is written that is said too.
 * A reader gone for good (EPIPE) ends the log. Lines waiting behind a write that does not end are capped, not held.
 * The log is often a terminal: each line is made safe for one (src/core/terminal-escapes.ts), since it quotes what any
 * client sent (a Host header) before svc has read a credential.
 */
import { write, writeSync } from 'node:fs';
import { terminalSafeJson } from '../core/terminal-escapes.ts';

/** What pino needs of a destination stream. */
export interface LogDestination {
  write(line: string): void;
  /** Write what waits now, synchronously, once (before the process exits): a failure drops it. */
  flushSync(): void;
}

/** Lines queued behind the write in flight beyond this many characters are dropped. */
const MAX_QUEUED_CHARS = 4 * 1024 * 1024;
/** A non-blocking descriptor that is full (EAGAIN): the same bytes are written again after this long. */
const BUSY_RETRY_MS = 100;

export function logDestination(fd: number, tell: (message: string) => void): LogDestination {
  let queued = '';
  let writing = false;
  let ended = false;
  /** Since the last write that worked, the lines dropped (null: none failed). */
  let dropped: number | null = null;

  const lineCount = (text: string | Buffer) => {
    let count = 0;
    for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) count++;
    return count;
  };
  const failed = (error: NodeJS.ErrnoException, lines: number) => {
    if (error.code === 'EPIPE') {
      ended = true;
      queued = '';
      tell(`writing the log to stdout failed (EPIPE: its reader is gone); svc goes on without a log`);
      return;
    }
    if (dropped === null) tell(`writing the log to stdout failed (${error.code ?? error.message}); log lines are dropped until a write works again`);
    dropped = (dropped ?? 0) + lines;
  };
  const worked = () => {
    if (dropped === null) return;
    tell(`writing the log to stdout works again; ${dropped} log line(s) were dropped`);
    dropped = null;
  };

  const writeOut = (bytes: Buffer): void => {
    writing = true;
    write(fd, bytes, 0, bytes.length, null, (error, written) => {
      if (error?.code === 'EAGAIN') {
        setTimeout(() => writeOut(bytes), BUSY_RETRY_MS).unref();
        return;
      }
      if (!error && written < bytes.length) return writeOut(bytes.subarray(written));
      if (error) failed(error, lineCount(bytes));
      else worked();
      writing = false;
      if (queued !== '' && !ended) writeQueued();
    });
  };
  const writeQueued = () => {
    const bytes = Buffer.from(queued);
    queued = '';
    writeOut(bytes);
  };

  return {
    write(json) {
      if (ended) return;
      const line = terminalSafeJson(json);
      if (queued.length + line.length > MAX_QUEUED_CHARS) {
        if (dropped === null) tell('the log on stdout is not keeping up; log lines are dropped until it does');
        dropped = (dropped ?? 0) + 1;
        return;
      }
      queued += line;
      if (!writing) writeQueued();
    },
    flushSync() {
      if (ended || queued === '') return;
      const lines = queued;
      queued = '';
      try {
        writeSync(fd, lines);
      } catch (error) {
        failed(error as NodeJS.ErrnoException, lineCount(lines));
      }
    },
  };
}
