/**
 * Invitations (SPEC 3, 4.5; docs/accounts.md "Invitations"). The raw token travels only in the e-mail: the inviter
 * never sees it, since accepting it for a new address creates a verified account for that address. A failed
 * delivery revokes the invitation, leaves deny evidence in the audit log and answers a retryable 503. An address past
 * its cap of invitations (`inviteDeliveries`, whoever invites it) is refused with a 429 before anything is made.
 */
import { AppError, notFound } from '../core/errors.ts';
import { newId, newToken, sha256Hex } from '../core/ids.ts';
import { EmailDeliveryError } from '../email/transport.ts';
import { inviteEmail } from '../email/templates.ts';
import { actorOf, NO_ORGANIZATION, type AuthContext } from '../identity/auth-context.ts';
import { requireAccountAdmin, requireMayGrant } from './access.ts';
import { normalizePassword } from './passwords.ts';
import type { AlsoStep } from '../store/sql.ts';
import { revokeLapsedInvitesOf, type AuthorityChange, type LapsedInviteStep } from './repo.ts';
import { describeIn, isTokenShaped, issueSession, type AccountsDeps, type Me } from './sessions-service.ts';
import { effectiveStatus, normalizeEmail, type Invite, type InviteStatus, type OrgRole, type User } from './types.ts';

export const INVITE_TTL_MS = 7 * 86_400_000;
/** How long a client should wait before retrying a failed delivery. */
const DELIVERY_RETRY_AFTER_S = 30;

export interface InviteLookup {
  valid: boolean;
  status: InviteStatus | 'invalid';
  orgName: string | null;
  email: string | null;
  role: OrgRole | null;
  userExists: boolean;
  expiresAt: number | null;
}

export interface InviteWithInviter {
  invite: Invite;
  inviter: User | null;
}

export interface InvitesService {
  create(auth: AuthContext, input: { email: string; role?: OrgRole | undefined }): Promise<InviteWithInviter>;
  list(auth: AuthContext, options: { status?: InviteStatus | undefined; limit: number; offset: number }): Promise<{ invites: InviteWithInviter[]; total: number }>;
  revoke(auth: AuthContext, id: string): Promise<InviteWithInviter>;
  lookup(token: string): Promise<InviteLookup>;
  /**
   * Accept: a new address needs `{name, password}` and is signed in with a new session; an existing account must be
   * the signed-in caller, whose session moves to the organization. `token` is a new session token, if one was made.
   */
  accept(token: string, body: { name?: string | undefined; password?: string | undefined }, auth: AuthContext | null): Promise<{ me: Me; token: string | null }>;
}

/** Who revoked an invitation whose inviter lost the authority: no request identity did, svc's rule did. */
const SYSTEM_ACTOR = { kind: 'system' };

/**
 * What a write that may take a user's authority to invite away (a demotion, removal, deletion, platform role change)
 * runs in its transaction: `also`, the change's own audit row, then the revocation of the user's invitations that
 * lapsed with it, each with its `invite.revoke` row dated now.
 */
export function authorityChange(deps: Pick<AccountsDeps, 'audit' | 'clock'>, also?: AlsoStep): AuthorityChange {
  return { now: deps.clock.now(), lapsed: lapsedInviteRow(deps.audit), ...(also ? { also } : {}) };
}

/** The step a key's revocation runs in its write (src/keys, wired in src/services.ts): the key's invitations lapse. */
export function lapsedInvitesOfKey(deps: Pick<AccountsDeps, 'audit' | 'clock'>): (tenantId: string, keyId: string) => AlsoStep {
  const lapsed = lapsedInviteRow(deps.audit);
  return (tenantId, keyId) => (sql) => revokeLapsedInvitesOf(sql, { tenantId, keyId }, deps.clock.now(), lapsed);
}

/**
 * Revoke the organization's pending invitations whose inviter may no longer grant their role, each with an
 * `invite.revoke` row, before they are listed or counted. The writes that take an authority away revoke them
 * eagerly (`authorityChange`, `lapsedInvitesOfKey`); this catches what they could not: invitations that lapsed before
 * svc revoked eagerly, or whose inviting key migration 11 found in the audit log.
 */
export function revokeLapsedInvites(deps: Pick<AccountsDeps, 'repo' | 'audit' | 'clock'>, tenantId: string): Promise<void> {
  return deps.repo.revokeLapsedInvites(tenantId, deps.clock.now(), lapsedInviteRow(deps.audit));
}

/** The audit row of an invitation revoked because its inviter's authority lapsed (docs/accounts.md). */
function lapsedInviteRow(audit: AccountsDeps['audit']): LapsedInviteStep {
  return (invite) =>
    audit.stagedAs(SYSTEM_ACTOR, invite.tenantId, 'invite.revoke', { target: invite.id, details: { email: invite.email, reason: 'inviter_lapsed' } });
}

function invalidToken(status: InviteStatus | 'invalid'): AppError {
  const messages: Record<InviteStatus | 'invalid', string> = {
    invalid: 'The invitation link is invalid.',
    expired: 'The invitation has expired; ask for a new one.',
    revoked: 'The invitation was revoked.',
    accepted: 'The invitation was already accepted.',
    pending: 'The invitation cannot be accepted.',
  };
  return new AppError('invalid_token', { message: messages[status], details: { status } });
}

export function createInvitesService(deps: AccountsDeps): InvitesService {
  const { repo, clock, audit, hasher, mailer, limits } = deps;
  const lapsed = lapsedInviteRow(audit);

  async function withInviter(invite: Invite): Promise<InviteWithInviter> {
    return { invite: { ...invite, status: effectiveStatus(invite, clock.now()) }, inviter: invite.invitedBy ? await repo.findUser(invite.invitedBy) : null };
  }

  /** The invitation of a token with its status as of now; a pending one found expired is stored as such. */
  async function byToken(token: string): Promise<{ invite: Invite; status: InviteStatus } | null> {
    if (!isTokenShaped(token)) return null;
    const invite = await repo.findInviteByToken(sha256Hex(token));
    if (!invite) return null;
    const status = effectiveStatus(invite, clock.now());
    if (status === 'expired' && invite.status === 'pending') await repo.setInviteStatus(invite.id, 'expired', clock.now());
    // A pending invitation whose inviter lost the authority to grant its role is revoked (src/accounts/repo.ts).
    if (status === 'pending' && (await repo.revokeIfInviterLapsed(invite.id, clock.now(), lapsed))) return { invite, status: 'revoked' };
    return { invite, status };
  }

  function requireOrg(auth: AuthContext): void {
    if (auth.tenantId === NO_ORGANIZATION) throw new AppError('no_organization');
  }

  /** The invitation `id` of the tenant while it is pending: 404 when there is none, 409 naming its status otherwise. */
  async function pendingInvite(tenantId: string, id: string): Promise<Invite> {
    const invite = await repo.findInvite(tenantId, id);
    if (!invite) throw notFound('Invitation');
    const status = effectiveStatus(invite, clock.now());
    if (status !== 'pending') throw new AppError('conflict', { message: `The invitation is already ${status}.`, details: { status } });
    return invite;
  }

  /**
   * The answer to an acceptance whose write found the invitation no longer pending: another request ended it after
   * this one read it (an acceptance, a revocation, its organization's deletion). Reading it again names its status, as
   * an acceptance sent after that request would.
   */
  async function endedMeanwhile(invite: Invite): Promise<AppError> {
    const current = await repo.findInvite(invite.tenantId, invite.id);
    const status = current ? effectiveStatus(current, clock.now()) : 'invalid';
    return invalidToken(status === 'pending' ? 'invalid' : status);
  }

  const service: InvitesService = {
    async create(auth, input) {
      requireOrg(auth);
      requireAccountAdmin(auth);
      const role = input.role ?? 'member';
      requireMayGrant(auth, role);
      const email = normalizeEmail(input.email);
      const existing = await repo.findUserByEmail(email);
      if (existing && (await repo.roleIn(auth.tenantId, existing.id)) !== null) throw new AppError('already_member');
      const org = await repo.findOrg(auth.tenantId);
      if (!org) throw notFound('Organization');
      // Keyed by a hash: the rate window's rows hold no address.
      // Uncounted if the e-mail does not go out: the cap is on what reaches the inbox.
      const uncount = await limits.reserve('inviteDeliveries', sha256Hex(`invite:${email}`));

      const now = clock.now();
      const token = newToken();
      const invite: Invite = {
        id: newId('inv'),
        tenantId: auth.tenantId,
        email,
        role,
        invitedBy: auth.userId,
        // A key's invitation lapses with the key (src/accounts/repo.ts inviterAuthorityLapsed).
        invitedByKey: auth.kind === 'api_key' ? auth.keyId : null,
        status: 'pending',
        createdAt: now,
        expiresAt: now + INVITE_TTL_MS,
        acceptedAt: null,
        acceptedBy: null,
        revokedAt: null,
      };
      // The pending invitation this one replaces (a re-send) is revoked by this caller, on the record.
      await repo.createInvite(invite, sha256Hex(token), (old) =>
        audit.staged(auth, 'invite.revoke', { target: old.id, details: { email: old.email, reason: 'replaced', replacedBy: invite.id } }),
      );
      const inviter = auth.userId ? await repo.findUser(auth.userId) : null;
      const acceptUrl = `${deps.linkBaseUrl()}/accept-invite?token=${token}`;
      try {
        await mailer.send({ to: email, ...inviteEmail({ orgName: org.name, inviterName: inviter?.name ?? null, role, acceptUrl, expiresAt: invite.expiresAt }) });
      } catch (error) {
        if (!(error instanceof EmailDeliveryError)) throw error;
        deps.log.warn(`invitation e-mail to ${email} failed`, error);
        const denied = { decision: 'deny', target: invite.id, details: { email, role, reason: 'delivery_failed' } } as const;
        // The failed delivery is on the record whether or not this write still revokes the invitation: revoked
        // meanwhile (by an admin, or replaced by a re-send), it left no row of its delivery at all (SPEC 6.2). Gone
        // (deleted with its organization), its row would land after the organization's `org.delete` in the kept log:
        // recordInvite writes it only while the invitation, and so its organization, still exists.
        if (!(await repo.setInviteStatus(invite.id, 'revoked', clock.now(), audit.staged(auth, 'invite.create', denied)))) {
          if (!(await repo.recordInvite(invite.id, audit.staged(auth, 'invite.create', denied)))) throw notFound('Organization');
        }
        await uncount();
        throw new AppError('email_delivery_failed', { headers: { 'retry-after': String(DELIVERY_RETRY_AFTER_S) } });
      }
      // The organization may have been deleted, with its invitations, while the e-mail was on its way.
      if (!(await repo.recordInvite(invite.id, audit.staged(auth, 'invite.create', { target: invite.id, details: { email, role } })))) {
        throw notFound('Organization');
      }
      return { invite, inviter };
    },

    async list(auth, options) {
      requireOrg(auth);
      requireAccountAdmin(auth);
      await revokeLapsedInvites(deps, auth.tenantId);
      const { invites, total } = await repo.listInvites(auth.tenantId, { ...options, now: clock.now() });
      return { invites: await Promise.all(invites.map(withInviter)), total };
    },

    async revoke(auth, id) {
      requireOrg(auth);
      requireAccountAdmin(auth);
      const invite = await pendingInvite(auth.tenantId, id);
      const revoked = await repo.setInviteStatus(id, 'revoked', clock.now(), audit.staged(auth, 'invite.revoke', { target: id, details: { email: invite.email } }));
      if (!revoked) {
        // Another request ended it between the read and the write (a revocation, an acceptance, its organization's
        // deletion): reading it again says which (404 or 409); the write revokes any invitation still pending.
        await pendingInvite(auth.tenantId, id);
        throw new AppError('conflict');
      }
      return withInviter((await repo.findInvite(auth.tenantId, id))!);
    },

    async lookup(token) {
      const found = await byToken(token);
      if (!found) return { valid: false, status: 'invalid', orgName: null, email: null, role: null, userExists: false, expiresAt: null };
      const { invite, status } = found;
      const [org, user] = await Promise.all([repo.findOrg(invite.tenantId), repo.findUserByEmail(invite.email)]);
      return {
        valid: status === 'pending',
        status,
        orgName: org?.name ?? null,
        email: invite.email,
        role: invite.role,
        userExists: user !== null,
        expiresAt: invite.expiresAt,
      };
    },

    async accept(token, body, auth) {
      const found = await byToken(token);
      if (!found) throw invalidToken('invalid');
      if (found.status !== 'pending') throw invalidToken(found.status);
      const { invite } = found;
      const now = clock.now();
      const existing = await repo.findUserByEmail(invite.email);

      if (existing) {
        // Only the signed-in account itself may accept: nothing in the body is read, so this is no password oracle.
        if (auth?.kind !== 'session' || auth.userId !== existing.id || !auth.session) throw new AppError('sign_in_required');
        // The row in the acceptance's write: appended after it, a crash between the two lost it.
        const also = audit.stagedAs(actorOf(auth), invite.tenantId, 'invite.accept', { target: invite.id, details: { email: invite.email, role: invite.role, userId: existing.id } });
        const outcome = await repo.acceptInvite({ invite, now, user: { existing: existing.id }, session: { switch: auth.session.id }, lapsed, also });
        // The account was deleted (with this session) since it was read: answered as after the deletion, where the
        // stale cookie counts as none (a public route) and the address has no account, or another one by now.
        if (outcome === 'no_user') return service.accept(token, body, null);
        if (outcome === 'revoked') throw invalidToken('revoked');
        if (outcome !== 'accepted') throw await endedMeanwhile(invite);
        return { me: await describeIn(repo, existing, invite.tenantId), token: null };
      }

      if (body.name === undefined || body.password === undefined) {
        throw new AppError('invalid_request', { message: 'A new account needs name and password.', details: { param: body.name === undefined ? 'name' : 'password' } });
      }
      const name = body.name.trim();
      if (name.length < 1 || name.length > 100) throw new AppError('invalid_request', { message: 'name must be 1 to 100 characters', details: { param: 'name' } });
      const password = normalizePassword(body.password);
      const user: User = {
        id: newId('usr'),
        email: invite.email,
        name,
        role: 'member',
        // The e-mailed link proved the address.
        emailVerified: true,
        mustChangePassword: false,
        passwordHash: await hasher.hash(password),
        passwordChangedAt: now,
        createdAt: now,
        updatedAt: now,
      };
      const issued = issueSession(clock, user.id, invite.tenantId);
      const actor = { kind: 'user', userId: user.id };
      const signedUp = audit.stagedAs(actor, invite.tenantId, 'user.signup', { target: user.id, details: { email: user.email, via: 'invite' } });
      const accepted = audit.stagedAs(actor, invite.tenantId, 'invite.accept', { target: invite.id, details: { email: invite.email, role: invite.role, userId: user.id } });
      const outcome = await repo.acceptInvite({
        invite,
        now,
        user: { create: user },
        session: { create: issued.session, tokenHash: issued.tokenHash },
        lapsed,
        // The rows in the acceptance's write: appended after it, a crash between the two lost them.
        also: (sql) => (signedUp(sql), accepted(sql)),
      });
      if (outcome === 'email_taken') throw new AppError('email_taken', { message: 'An account with this address now exists; sign in to accept.' });
      if (outcome === 'revoked') throw invalidToken('revoked');
      if (outcome !== 'accepted') throw await endedMeanwhile(invite);
      return { me: await describeIn(repo, user, invite.tenantId), token: issued.token };
    },
  };
  return service;
}
