/**
 * What operators learn of deferred writes (answered requests' run ledger, cache entries) lost to commits that failed,
 * or that failed alone in a commit that succeeded (a full disk at the statement level, a constraint; src/store/store.ts,
 * `deferredWriteLosses`): an error line when a streak of commits losing writes starts, another at most
 * every `REMINDER_MS` while it lasts, a summary when commits succeed again, and the state readiness reports (item
 * `storage`, src/health/service.ts). A line per failed commit would flood the log while the disk is full: under load
 * a commit follows every ~20 ms window. Failed commits of awaited writes (management writes, answered with the error)
 * are counted in the streak too, so that readiness shows a disk refusing them where no gateway traffic loses deferred
 * writes; they start no line of their own, as each of their requests is logged as failed, with the cause.
 */
import { noteForOperator } from '../core/operator-note.ts';
import type { DeferredWriteLossListener, LostDeferredWrites } from './store.ts';

/** While commits keep failing, the loss is logged again this often, with its totals so far. */
export const REMINDER_MS = 60_000;

/** Where the lines go: svc serve's logger (pino's `(fields, message)`), standard error until it exists. */
export interface LossLog {
  error(fields: object, message: string): void;
  warn(fields: object, message: string): void;
}

/** A streak of commits that lost deferred writes, up to the next commit that succeeded losing none. */
export interface LossStreak {
  /** When its first commit failed (epoch ms). */
  since: number;
  /** When a commit succeeded again (epoch ms); null while commits still fail. */
  endedAt: number | null;
  /** Commits that failed (all their deferred writes lost). */
  failedCommits: number;
  /** Deferred writes lost, those that failed alone included. */
  lostWrites: number;
  /** Of `lostWrites`, those that failed alone (the commit succeeded without them). */
  droppedAlone: number;
  /** Awaited writes (management writes) of failed commits, answered with the error. */
  refusedWrites: number;
  kinds: Record<string, number>;
  /** What SQLite said of its latest loss. */
  error: string;
}

export interface DeferredLossStatus {
  /** The streak going on, or else the last one that ended; null if no deferred write was lost since svc started. */
  streak: LossStreak | null;
}

const toStderr = (fields: object, message: string): void => noteForOperator(`${message} ${JSON.stringify(fields)}`);
const stderrLog: LossLog = { error: toStderr, warn: toStderr };

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

export class DeferredWriteLosses implements DeferredWriteLossListener {
  private log: LossLog = stderrLog;
  private streak: LossStreak | null = null;
  private loggedAt = 0;

  constructor(private readonly now: () => number = Date.now) {}

  /** From here on, log to `log` (svc serve's logger, once its app exists). */
  logTo(log: LossLog): void {
    this.log = log;
  }

  lost(loss: LostDeferredWrites): void {
    const now = this.now();
    const error = messageOf(loss.error);
    const starts = this.streak === null || this.streak.endedAt !== null;
    if (starts) this.streak = { since: now, endedAt: null, failedCommits: 0, lostWrites: 0, droppedAlone: 0, refusedWrites: 0, kinds: {}, error };
    const streak = this.streak!;
    if (loss.commitFailed) streak.failedCommits += 1;
    else streak.droppedAlone += loss.writes;
    streak.lostWrites += loss.writes;
    streak.refusedWrites += loss.refusedWrites ?? 0;
    streak.error = error;
    for (const [kind, count] of Object.entries(loss.kinds)) streak.kinds[kind] = (streak.kinds[kind] ?? 0) + count;
    // Refused writes alone start no line: each of their requests is logged as failed, with the cause.
    if (loss.writes === 0) return;
    if (streak.lostWrites === loss.writes) {
      this.loggedAt = now;
      this.log.error(
        { lostWrites: loss.writes, kinds: loss.kinds, error },
        loss.commitFailed
          ? 'a commit of the data file failed: deferred writes lost (requests answered already); the next failures are summed up once commits succeed again'
          : 'deferred writes failed alone and were dropped from their commit (requests answered already); the next losses are summed up once commits drop none again',
      );
    } else if (now - this.loggedAt >= REMINDER_MS) {
      this.loggedAt = now;
      this.log.error(
        {
          failedCommits: streak.failedCommits,
          lostWrites: streak.lostWrites,
          droppedAlone: streak.droppedAlone,
          kinds: streak.kinds,
          error,
          since: new Date(streak.since).toISOString(),
        },
        'commits of the data file still lose deferred writes: lost so far',
      );
    }
  }

  committedAgain(): void {
    const streak = this.streak;
    if (streak === null || streak.endedAt !== null) return;
    streak.endedAt = this.now();
    this.log.warn(
      {
        failedCommits: streak.failedCommits,
        lostWrites: streak.lostWrites,
        droppedAlone: streak.droppedAlone,
        refusedWrites: streak.refusedWrites,
        kinds: streak.kinds,
        failingMs: streak.endedAt - streak.since,
        error: streak.error,
      },
      streak.lostWrites > 0
        ? 'commits of the data file succeed again; the deferred writes of the failed ones are lost'
        : 'commits of the data file succeed again',
    );
  }

  status(): DeferredLossStatus {
    return { streak: this.streak === null ? null : { ...this.streak, kinds: { ...this.streak.kinds } } };
  }
}
