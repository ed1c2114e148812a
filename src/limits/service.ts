/**
 * The per-address and per-account limits of the account endpoints (SPEC 8, docs/accounts.md "Per-address limits"),
 * on top of the standard `/api/v1/*` limiter. Keys are client addresses as SPEC 5.4 resolves them (forwarded
 * headers only from a trusted proxy), e-mail addresses (hashed, so unknown addresses are not stored in the clear)
 * or user ids. Over a limit: 429 `rate_limited` with `retry-after`.
 */
import type { Clock } from '../core/clock.ts';
import { AppError } from '../core/errors.ts';
import type { RateEventsRepository, Window } from './repo.ts';

const MINUTE = 60_000;

export const LIMITS = {
  /** SPEC 8: 5 attempts per minute per caller address, request and confirm together. */
  passwordReset: { limit: 5, windowMs: MINUTE },
  login: { limit: 20, windowMs: MINUTE },
  /** Failed logins per e-mail address, counted for unknown addresses too (so the limit reveals nothing). */
  loginFailures: { limit: 10, windowMs: 15 * MINUTE },
  signup: { limit: 5, windowMs: 10 * MINUTE },
  inviteCreate: { limit: 30, windowMs: 10 * MINUTE },
  /** Invitation lookup and acceptance. */
  inviteAccept: { limit: 20, windowMs: MINUTE },
  /** SPEC 8: 3 verification deliveries per user per 15 minutes. */
  verificationResend: { limit: 3, windowMs: 15 * MINUTE },
  /**
   * Reset e-mails per user, whoever asks: the per-address limit alone let requests from many addresses fill one
   * inbox. Over it the e-mail is not sent and the answer stays the same (it must not tell the account exists).
   */
  resetDeliveries: { limit: 3, windowMs: 15 * MINUTE },
  /**
   * Invitations per invited address, whichever organizations and client addresses send them: the per-address limit
   * alone let many organizations fill one inbox. Over it the invitation is refused, nothing made: an invitation is
   * pending only once its e-mail went out (SPEC 4), so one that may not be e-mailed is not made at all.
   */
  inviteDeliveries: { limit: 3, windowMs: 15 * MINUTE },
  /**
   * Passwords a signed-in caller has hashed (users created, admin resets, own password changes), per caller: each
   * hash is ~0.5 s of a CPU, and one org admin's burst of resets kept both of the reference machine's busy.
   */
  accountPasswords: { limit: 60, windowMs: 10 * MINUTE },
  /**
   * `POST /users` answers that told an organization an address has an account elsewhere (409 `email_taken`), per
   * organization: `accountPasswords` counts per caller, and an org admin mints callers (API keys) at will.
   */
  emailTakenAnswers: { limit: 20, windowMs: 10 * MINUTE },
} as const satisfies Record<string, Window>;

export type LimitName = keyof typeof LIMITS;

export interface LimitsService {
  /** Count one attempt, or throw 429 when the window is already full. */
  take(name: LimitName, key: string): Promise<void>;
  /** Count one attempt and say whether the window had room, for a caller whose answer must not show it. */
  tryTake(name: LimitName, key: string): Promise<boolean>;
  /**
   * Count one attempt that may turn out not to count (a login that may fail), or throw 429 when the window is already
   * full; returns what uncounts it (the login succeeded). Counted first, not after the fact: a burst of concurrent
   * attempts then meets the limit as a sequence of them does, instead of each passing a check made before any of the
   * others was counted.
   */
  reserve(name: LimitName, key: string): Promise<() => Promise<void>>;
  /** Remove attempts older than the longest window, or more than it ahead of the clock (housekeeping). */
  prune(batch: number): Promise<number>;
}

function refusal(retryAfterMs: number): AppError {
  const seconds = Math.max(1, Math.ceil(retryAfterMs / 1000));
  return new AppError('rate_limited', {
    message: `Too many attempts. Retry after ${seconds} s.`,
    headers: { 'retry-after': String(seconds) },
  });
}

export function createLimitsService(deps: { repo: RateEventsRepository; clock: Clock }): LimitsService {
  const { repo, clock } = deps;
  const longest = Math.max(...Object.values(LIMITS).map((w) => w.windowMs));
  return {
    async take(name, key) {
      const verdict = await repo.take(name, key, LIMITS[name], clock.now());
      if (!verdict.allowed) throw refusal(verdict.retryAfterMs);
    },
    async tryTake(name, key) {
      return (await repo.take(name, key, LIMITS[name], clock.now())).allowed;
    },
    async reserve(name, key) {
      const verdict = await repo.take(name, key, LIMITS[name], clock.now());
      if (!verdict.allowed) throw refusal(verdict.retryAfterMs);
      const row = verdict.row!;
      return () => repo.release(row);
    },
    prune: (batch) => {
      const now = clock.now();
      return repo.prune(now - longest, now + longest, batch);
    },
  };
}
