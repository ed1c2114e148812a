/**
 * Sessions (SPEC 4.4, 5.2; docs/accounts.md "Sessions and the cookie"): login, logout, `me`, password change, and
 * the resolution of a session cookie into an identity on every request.
 *
 * Resolution rechecks access each time: the user must still exist, the session must be unexpired, and the tenant is
 * the active organization only while the user is still a member of it, else their first membership (the session is
 * moved there). So a removed member's stale cookie, or one pointing at a deleted organization, never keeps access.
 */
import type { Clock } from '../core/clock.ts';
import { AppError } from '../core/errors.ts';
import { newId, newToken, sha256Hex } from '../core/ids.ts';
import type { AuditService } from '../audit/service.ts';
import { NO_ORGANIZATION, type AuthContext } from '../identity/auth-context.ts';
import type { LimitsService } from '../limits/service.ts';
import type { Mailer } from '../email/transport.ts';
import { limitedCaller, requireSession } from './access.ts';
import { normalizePassword, type PasswordHasher } from './passwords.ts';
import { memberTenantIdsIn, type AccountsRepository } from './repo.ts';
import type { AlsoStep } from '../store/sql.ts';
import { normalizeEmail, type Membership, type Session, type User } from './types.ts';

const DAY = 86_400_000;
/** A session ends this long after login whatever happens (docs/accounts.md). */
export const SESSION_MAX_AGE_MS = 30 * DAY;
/** ... or after this long unused. */
export const SESSION_IDLE_MS = 7 * DAY;
/** `last seen` is written at most this often. */
const TOUCH_INTERVAL_MS = 10 * 60_000;

/** Tokens are 32 random bytes, base64url: anything else is not worth a lookup. */
const TOKEN_SHAPE = /^[A-Za-z0-9_-]{43}$/;

export function isTokenShaped(token: string): boolean {
  return TOKEN_SHAPE.test(token);
}

export interface AccountsLog {
  warn(message: string, error?: unknown): void;
}

/** Everything the account services share; built once in src/services.ts. */
export interface AccountsDeps {
  repo: AccountsRepository;
  hasher: PasswordHasher;
  clock: Clock;
  audit: AuditService;
  limits: LimitsService;
  mailer: Mailer;
  log: AccountsLog;
  /** Base of e-mailed links, from configuration only (read when a link is made: `--port 0` learns its port late). */
  linkBaseUrl: () => string;
  allowPublicSignup: boolean;
}

/** What `GET /api/v1/auth/me` and every sign-in answer describe. */
export interface Me {
  user: User;
  org: { id: string; name: string; role: Membership['role'] } | null;
  admin: boolean;
  platformAdmin: boolean;
}

/** A new session and the raw token for its cookie (shown once, stored hashed). */
export interface IssuedSession {
  session: Session;
  token: string;
  tokenHash: string;
}

export function issueSession(clock: Clock, userId: string, activeTenantId: string | null): IssuedSession {
  const now = clock.now();
  const token = newToken();
  return {
    token,
    tokenHash: sha256Hex(token),
    session: {
      id: newId('ses'),
      userId,
      activeTenantId,
      createdAt: now,
      lastSeenAt: now,
      expiresAt: now + Math.min(SESSION_MAX_AGE_MS, SESSION_IDLE_MS),
    },
  };
}

/** `me` for a user acting in an organization (or none). */
export function describe(user: User, membership: Membership | null): Me {
  const platformAdmin = user.role === 'admin';
  return {
    user,
    org: membership ? { id: membership.tenantId, name: membership.orgName, role: membership.role } : null,
    admin: platformAdmin || membership?.role === 'owner' || membership?.role === 'admin',
    platformAdmin,
  };
}

/** `me` of a user in a given organization (their first membership when it is not one of theirs). */
export async function describeIn(repo: AccountsRepository, user: User, tenantId: string | null): Promise<Me> {
  const memberships = await repo.membershipsOf(user.id);
  return describe(user, memberships.find((m) => m.tenantId === tenantId) ?? memberships[0] ?? null);
}

/**
 * Record an account-level event (verification, password reset or change, a change by an account route) in every
 * organization the user belongs to, so each organization's admins see what happened to their member
 * (docs/accounts.md); as a step of the write that makes the change, so the rows commit with it, come before what the
 * change causes in that write (the invitations that lapse with a platform role), and name the organizations of that
 * moment. `except` is an organization already given its row.
 */
export function stagedAccountEvent(
  deps: Pick<AccountsDeps, 'audit'>,
  userId: string,
  action: string,
  actor: Record<string, string>,
  details: Record<string, unknown> = {},
  except?: string,
): AlsoStep {
  return (sql) => {
    for (const tenantId of memberTenantIdsIn(sql, userId)) {
      if (tenantId !== except) deps.audit.stagedAs(actor, tenantId, action, { target: userId, details })(sql);
    }
  };
}

export interface SessionsService {
  /** The identity of a session token, or null (unknown, expired, user gone). */
  resolve(token: string): Promise<AuthContext | null>;
  login(credentials: { email: string; password: string }, client: { address: string }): Promise<{ me: Me; token: string }>;
  /** End the sessions these tokens name (every `svc_session` cookie the request carries); unknown ones are skipped. */
  logout(tokens: readonly string[]): Promise<void>;
  me(auth: AuthContext): Promise<Me>;
  /** Change the caller's password; every other session ends and the caller's is rotated to a new token. */
  changePassword(auth: AuthContext, change: { current: string; next: string }): Promise<{ me: Me; token: string }>;
}

export function createSessionsService(deps: AccountsDeps): SessionsService {
  const { repo, hasher, clock, limits } = deps;

  async function resolve(token: string): Promise<AuthContext | null> {
    if (!isTokenShaped(token)) return null;
    const found = await repo.findSession(sha256Hex(token));
    if (!found) return null;
    const { session, user } = found;
    const now = clock.now();
    if (session.expiresAt <= now) return null;

    const memberships = await repo.membershipsOf(user.id);
    const current = memberships.find((m) => m.tenantId === session.activeTenantId) ?? memberships[0] ?? null;
    const change: Parameters<AccountsRepository['touchSession']>[1] = {};
    if ((current?.tenantId ?? null) !== session.activeTenantId) change.activeTenantId = { from: session.activeTenantId, to: current?.tenantId ?? null };
    if (now - session.lastSeenAt >= TOUCH_INTERVAL_MS) {
      change.seen = { at: now, expiresAt: Math.min(session.createdAt + SESSION_MAX_AGE_MS, now + SESSION_IDLE_MS) };
    }
    if (change.activeTenantId !== undefined || change.seen) repo.touchSession(session.id, change);

    const me = describe(user, current);
    return {
      kind: 'session',
      tenantId: current?.tenantId ?? NO_ORGANIZATION,
      admin: me.admin,
      tenantWide: true,
      platformAdmin: me.platformAdmin,
      appId: null,
      agent: null,
      subject: null,
      mode: 'optimize',
      keyId: null,
      userId: user.id,
      session: { id: session.id, orgRole: current?.role ?? null, mustChangePassword: user.mustChangePassword },
    };
  }

  /**
   * Check a password in the same time whether or not the account exists, and count failures per address so
   * guessing one account's password is bounded too (the key is hashed: unknown addresses are not stored). Each
   * attempt is counted before its hash is checked and uncounted if it succeeds: counted after the check, a burst of
   * concurrent guesses all passed the limit (19 wrong passwords and the right one, sent at once, signed in).
   */
  async function checkPassword(email: string, password: string): Promise<{ user: User; passwordHash: string } | null> {
    const failureKey = sha256Hex(`login:${email}`);
    const succeeded = await limits.reserve('loginFailures', failureKey);
    const user = await repo.findUserByEmail(email);
    let candidate: string | null = null;
    try {
      candidate = normalizePassword(password);
    } catch {
      candidate = null; // out of the password rules: cannot match, but costs the same time below
    }
    let ok = false;
    // The hash the password was checked against, as stored: the session is made only while it still is (a password
    // changed or reset during the check ended the user's sessions, and must end this sign-in too).
    let passwordHash = user?.passwordHash ?? '';
    if (user && candidate !== null) {
      const verdict = await hasher.verify(candidate, user.passwordHash);
      ok = verdict.ok;
      if (verdict.needsRehash) {
        const rehashed = await hasher.hash(candidate);
        if (await repo.rehashPassword(user.id, user.passwordHash, rehashed)) passwordHash = rehashed;
        else ok = false;
      }
    } else {
      await hasher.verifyDummy(password);
    }
    if (!user || !ok) return null;
    await succeeded();
    return { user, passwordHash };
  }

  return {
    resolve,

    async login(credentials, client) {
      await limits.take('login', client.address);
      const checked = await checkPassword(normalizeEmail(credentials.email), credentials.password);
      if (!checked) throw new AppError('invalid_credentials');
      const { user } = checked;
      const memberships = await repo.membershipsOf(user.id);
      const first = memberships[0] ?? null;
      const issued = issueSession(clock, user.id, first?.tenantId ?? null);
      // Deleted, or the password changed, while it was checked: as any deleted user or wrong password.
      if (!(await repo.createSession(issued.session, issued.tokenHash, checked.passwordHash))) throw new AppError('invalid_credentials');
      return { me: describe(user, first), token: issued.token };
    },

    // Every session named, whoever's: a request carrying a second `svc_session` (one a sibling subdomain set for the
    // parent domain: cookie tossing) is authenticated by neither, yet the one svc set is the user's and must end when
    // they sign out; ending the other gives nothing to whoever planted it, as holding a token is enough to end it.
    async logout(tokens) {
      for (const token of new Set(tokens)) {
        if (!isTokenShaped(token)) continue;
        const found = await repo.findSession(sha256Hex(token));
        if (found) await repo.deleteSession(found.session.id);
      }
    },

    async me(auth) {
      requireSession(auth);
      const user = await repo.findUser(auth.userId);
      if (!user) throw new AppError('unauthorized');
      return describeIn(repo, user, auth.tenantId);
    },

    async changePassword(auth, change) {
      requireSession(auth);
      const user = await repo.findUser(auth.userId);
      if (!user) throw new AppError('unauthorized');
      const failureKey = sha256Hex(`login:${user.email}`);
      const next = normalizePassword(change.next, 'new');
      await limits.take('accountPasswords', limitedCaller(auth)!);
      const succeeded = await limits.reserve('loginFailures', failureKey);
      const verdict = await hasher.verify(change.current.normalize('NFKC'), user.passwordHash, 'account');
      if (!verdict.ok) throw new AppError('wrong_password');
      await succeeded();
      if (next === change.current.normalize('NFKC')) {
        throw new AppError('invalid_request', { message: 'The new password must differ from the current one.', details: { param: 'new' } });
      }
      const issued = issueSession(clock, user.id, auth.tenantId === NO_ORGANIZATION ? null : auth.tenantId);
      const now = clock.now();
      const changed = await repo.setPassword(user.id, {
        hash: await hasher.hash(next, 'account'),
        mustChangePassword: false,
        now,
        session: { create: issued.session, tokenHash: issued.tokenHash },
        from: user.passwordHash,
        // The rows in the change's write: appended after it, a crash between the two lost them.
        also: stagedAccountEvent(deps, user.id, 'user.password_change', { kind: 'session', userId: user.id }),
      });
      // Deleted, or the password changed or reset (which ended this session), while the passwords were hashed: the
      // change must not undo the reset (a leaked password's owner resetting it against whoever holds a session).
      if (!changed) throw new AppError('unauthorized');
      const updated = (await repo.findUser(user.id))!;
      return { me: await describeIn(repo, updated, auth.tenantId), token: issued.token };
    },
  };
}
