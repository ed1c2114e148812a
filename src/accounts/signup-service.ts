/**
 * Public signup with a 30-day trial, e-mail verification, and password recovery (SPEC 3, 4.4, 4.5, 7, 8;
 * docs/accounts.md "Signup, verification, recovery").
 *
 * A reset request answers the same way, after the same minimum time, whether or not the address has an account:
 * the token is stored before answering and the e-mail goes out after, so neither the answer nor its timing (nor
 * the provider's speed or failure) tells the caller anything.
 */
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { AppError } from '../core/errors.ts';
import { newId, newToken, sha256Hex } from '../core/ids.ts';
import { EmailDeliveryError } from '../email/transport.ts';
import { passwordResetEmail, verifyEmail } from '../email/templates.ts';
import { requireSession } from './access.ts';
import { orgNameForSignup } from './org-names.ts';
import { normalizePassword } from './passwords.ts';
import { describeIn, isTokenShaped, issueSession, stagedAccountEvent, type AccountsDeps, type Me } from './sessions-service.ts';
import { normalizeEmail, type AccountToken, type Org, type User } from './types.ts';
import type { AuthContext } from '../identity/auth-context.ts';

const DAY = 86_400_000;
export const TRIAL_DAYS = 30;
export const TRIAL_PLAN = 'pro';
export const VERIFICATION_TTL_MS = 7 * DAY;
export const RESET_TTL_MS = 60 * 60_000;
/** Every reset request takes at least this long (docs/accounts.md). */
export const RESET_REQUEST_FLOOR_MS = 400;

export const RESET_REQUESTED_MESSAGE = 'If an account exists for that address, a reset link is on its way.';

export interface SignupService {
  /** 403 `signup_disabled` unless SVC_ALLOW_PUBLIC_SIGNUP is on. */
  assertEnabled(): void;
  signup(input: { email: string; name: string; password: string }): Promise<{ me: Me; token: string }>;
  verify(token: string): Promise<{ email: string }>;
  resendVerification(auth: AuthContext): Promise<void>;
  requestReset(email: string): Promise<void>;
  confirmReset(token: string, password: string): Promise<void>;
}

export function createSignupService(deps: AccountsDeps & { floorMs?: number }): SignupService {
  const { repo, clock, audit, hasher, mailer, limits, log } = deps;
  const floorMs = deps.floorMs ?? RESET_REQUEST_FLOOR_MS;

  function newAccountToken(kind: AccountToken['kind'], user: User, ttlMs: number): { token: string; row: AccountToken } {
    const token = newToken();
    const now = clock.now();
    return { token, row: { tokenHash: sha256Hex(token), kind, userId: user.id, email: user.email, createdAt: now, expiresAt: now + ttlMs } };
  }

  function verificationMessage(user: User, token: string) {
    return { to: user.email, ...verifyEmail({ name: user.name, verifyUrl: `${deps.linkBaseUrl()}/verify-email?token=${token}` }) };
  }

  function assertEnabled(): void {
    if (!deps.allowPublicSignup) throw new AppError('signup_disabled');
  }

  return {
    assertEnabled,

    async signup(input) {
      assertEnabled();
      const email = normalizeEmail(input.email);
      const name = input.name.trim();
      const password = normalizePassword(input.password);
      const now = clock.now();
      const user: User = {
        id: newId('usr'),
        email,
        name,
        role: 'member',
        emailVerified: false,
        mustChangePassword: false,
        passwordHash: await hasher.hash(password),
        passwordChangedAt: now,
        createdAt: now,
        updatedAt: now,
      };
      // The trial clock starts now; the plan it grants applies once the owner's address is verified.
      const org: Org = {
        id: newId('org'),
        name: orgNameForSignup(email, name),
        createdAt: now,
        plan: 'free',
        trial: { plan: TRIAL_PLAN, startedAt: now, endsAt: now + TRIAL_DAYS * DAY },
        onboardingDismissedAt: null,
      };
      const verification = newAccountToken('verify_email', user, VERIFICATION_TTL_MS);
      const issued = issueSession(clock, user.id, org.id);
      // The row in the signup's write: appended after it, a crash between the two lost it.
      const also = audit.stagedAs({ kind: 'user', userId: user.id }, org.id, 'user.signup', { target: user.id, details: { email, orgName: org.name, via: 'signup' } });
      const created = await repo.signup({ user, org, verification: verification.row, session: issued.session, sessionTokenHash: issued.tokenHash, also });
      if (!created) throw new AppError('email_taken');
      try {
        await mailer.send(verificationMessage(user, verification.token));
      } catch (error) {
        // The account stands; the user can ask for another verification e-mail.
        log.warn(`verification e-mail to ${email} failed`, error);
      }
      return { me: await describeIn(repo, user, org.id), token: issued.token };
    },

    async verify(token) {
      if (!isTokenShaped(token)) throw new AppError('invalid_token');
      // The rows in the verification's write: appended after it, a crash between the two lost them.
      const also = (user: User) => stagedAccountEvent(deps, user.id, 'user.verify', { kind: 'user', userId: user.id }, { email: user.email });
      const user = await repo.verifyEmail(sha256Hex(token), clock.now(), also);
      if (!user) throw new AppError('invalid_token', { message: 'The verification link is invalid, already used or expired.' });
      return { email: user.email };
    },

    async resendVerification(auth) {
      requireSession(auth);
      const user = await repo.findUser(auth.userId);
      if (!user) throw new AppError('unauthorized');
      if (user.emailVerified) throw new AppError('already_verified');
      // The limit is on deliveries (SPEC 8): counted now, so concurrent resends meet it, and uncounted when nothing
      // went out, or a provider's outage would use up the user's resends for the next 15 minutes.
      const uncount = await limits.reserve('verificationResend', user.id);
      const verification = newAccountToken('verify_email', user, VERIFICATION_TTL_MS);
      await repo.createToken(verification.row);
      try {
        await mailer.send(verificationMessage(user, verification.token));
      } catch (error) {
        if (!(error instanceof EmailDeliveryError)) throw error;
        log.warn(`verification e-mail to ${user.email} failed`, error);
        await repo.deleteToken(verification.row.tokenHash);
        await uncount();
        throw new AppError('email_delivery_failed', { headers: { 'retry-after': '30' } });
      }
      await repo.deleteOlderTokens(user.id, 'verify_email', verification.row.tokenHash);
    },

    async requestReset(email) {
      const started = performance.now();
      const user = await repo.findUserByEmail(normalizeEmail(email));
      let send: (() => Promise<void>) | null = null;
      // Past the account's cap no link is made or sent, and the answer below is the same.
      if (user && (await limits.tryTake('resetDeliveries', user.id))) {
        const reset = newAccountToken('password_reset', user, RESET_TTL_MS);
        await repo.createToken(reset.row);
        const message = {
          to: user.email,
          ...passwordResetEmail({ name: user.name, resetUrl: `${deps.linkBaseUrl()}/reset-password?token=${reset.token}`, expiresInMinutes: RESET_TTL_MS / 60_000 }),
        };
        send = () => mailer.send(message);
      }
      const elapsed = performance.now() - started;
      await sleep(Math.max(0, floorMs - elapsed));
      if (send) send().catch((error) => log.warn('password-reset e-mail failed', error));
    },

    async confirmReset(token, password) {
      if (!isTokenShaped(token)) throw new AppError('invalid_token');
      const next = normalizePassword(password);
      // The rows in the reset's write: appended after it, a crash between the two lost them.
      const also = (user: User) => stagedAccountEvent(deps, user.id, 'user.password_reset', { kind: 'user', userId: user.id });
      const user = await repo.resetPassword(sha256Hex(token), await hasher.hash(next), clock.now(), also);
      if (!user) throw new AppError('invalid_token', { message: 'The reset link is invalid, already used or expired.' });
    },
  };
}
