/**
 * The accounts tables (migration 4): users, organizations (the `tenants` table), memberships, sessions,
 * invitations, one-time account tokens, and the installation's login-mode flag.
 *
 * Every operation that touches several rows is one method running in one write, so it is atomic, and the checks
 * that guard it (the last owner, an invitation still pending, an e-mail still free) run inside that same write: the
 * store applies writes one at a time, so two concurrent requests cannot both pass a check that only one may pass.
 * Only sha256 hashes of tokens (sessions, invitations, verification, reset) are stored or looked up.
 */
import { erasing, type AlsoStep, type Sql } from '../store/sql.ts';
import type { Store } from '../store/store.ts';
import { DEFAULT_TENANT_ID, DEFAULT_TENANT_NAME } from '../tenants/defaults.ts';
import {
  ORG_ROLE_RANK,
  type AccountToken,
  type AccountTokenKind,
  type Invite,
  type InviteStatus,
  type Member,
  type Membership,
  type Org,
  type OrgRole,
  type PlatformRole,
  type Session,
  type User,
} from './types.ts';

// ---------------------------------------------------------------------------------------------------------------
// Rows

interface UserRow {
  id: string;
  email: string;
  name: string;
  role: PlatformRole;
  email_verified: number;
  must_change_password: number;
  password_hash: string;
  password_changed_at: number;
  created_at: number;
  updated_at: number;
}

interface OrgRow {
  id: string;
  name: string;
  created_at: number;
  plan: string;
  trial_plan: string | null;
  trial_started_at: number | null;
  trial_ends_at: number | null;
  onboarding_dismissed_at: number | null;
}

interface SessionRow {
  id: string;
  user_id: string;
  active_tenant_id: string | null;
  created_at: number;
  last_seen_at: number;
  expires_at: number;
}

interface InviteRow {
  id: string;
  tenant_id: string;
  email: string;
  role: OrgRole;
  invited_by: string | null;
  invited_by_key: string | null;
  status: InviteStatus;
  created_at: number;
  expires_at: number;
  accepted_at: number | null;
  accepted_by: string | null;
  revoked_at: number | null;
}

interface TokenRow {
  token_hash: string;
  kind: AccountTokenKind;
  user_id: string;
  email: string;
  created_at: number;
  expires_at: number;
}

const userOf = (r: UserRow): User => ({
  id: r.id,
  email: r.email,
  name: r.name,
  role: r.role,
  emailVerified: r.email_verified === 1,
  mustChangePassword: r.must_change_password === 1,
  passwordHash: r.password_hash,
  passwordChangedAt: r.password_changed_at,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

const orgOf = (r: OrgRow): Org => ({
  id: r.id,
  name: r.name,
  createdAt: r.created_at,
  plan: r.plan,
  trial:
    r.trial_plan !== null && r.trial_started_at !== null && r.trial_ends_at !== null
      ? { plan: r.trial_plan, startedAt: r.trial_started_at, endsAt: r.trial_ends_at }
      : null,
  onboardingDismissedAt: r.onboarding_dismissed_at,
});

const sessionOf = (r: SessionRow): Session => ({
  id: r.id,
  userId: r.user_id,
  activeTenantId: r.active_tenant_id,
  createdAt: r.created_at,
  lastSeenAt: r.last_seen_at,
  expiresAt: r.expires_at,
});

const inviteOf = (r: InviteRow): Invite => ({
  id: r.id,
  tenantId: r.tenant_id,
  email: r.email,
  role: r.role,
  invitedBy: r.invited_by,
  invitedByKey: r.invited_by_key,
  status: r.status,
  createdAt: r.created_at,
  expiresAt: r.expires_at,
  acceptedAt: r.accepted_at,
  acceptedBy: r.accepted_by,
  revokedAt: r.revoked_at,
});

const tokenOf = (r: TokenRow): AccountToken => ({
  tokenHash: r.token_hash,
  kind: r.kind,
  userId: r.user_id,
  email: r.email,
  createdAt: r.created_at,
  expiresAt: r.expires_at,
});

// ---------------------------------------------------------------------------------------------------------------
// Statements shared by several operations (synchronous, inside a read or write)

const LOGIN_MODE_KEY = 'login_mode_since';

function insertUser(sql: Sql, user: User): void {
  sql.run(
    `INSERT INTO users (id, email, name, role, email_verified, must_change_password, password_hash, password_changed_at,
       created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    [
      user.id,
      user.email,
      user.name,
      user.role,
      user.emailVerified ? 1 : 0,
      user.mustChangePassword ? 1 : 0,
      user.passwordHash,
      user.passwordChangedAt,
      user.createdAt,
      user.updatedAt,
    ],
  );
  // The first user switches the installation into login mode for good (docs/accounts.md).
  sql.run('INSERT OR IGNORE INTO system_state (key, value, updated_at) VALUES (?, ?, ?)', [
    LOGIN_MODE_KEY,
    String(user.createdAt),
    user.createdAt,
  ]);
}

function userById(sql: Sql, id: string): User | null {
  const row = sql.get<UserRow>('SELECT * FROM users WHERE id = ?', [id]);
  return row ? userOf(row) : null;
}

function membershipsOf(sql: Sql, userId: string): Membership[] {
  return sql
    .all<{ tenant_id: string; name: string; role: OrgRole; created_at: number }>(
      `SELECT m.tenant_id, t.name, m.role, m.created_at FROM org_members m JOIN tenants t ON t.id = m.tenant_id
       WHERE m.user_id = ? ORDER BY m.created_at, m.rowid`,
      [userId],
    )
    .map((r) => ({ tenantId: r.tenant_id, orgName: r.name, userId, role: r.role, createdAt: r.created_at }));
}

function userByEmail(sql: Sql, email: string): User | null {
  const row = sql.get<UserRow>('SELECT * FROM users WHERE email = ?', [email]);
  return row ? userOf(row) : null;
}

function insertOrg(sql: Sql, org: Org): void {
  sql.run(
    `INSERT INTO tenants (id, name, created_at, plan, trial_plan, trial_started_at, trial_ends_at, onboarding_dismissed_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
    [
      org.id,
      org.name,
      org.createdAt,
      org.plan,
      org.trial?.plan ?? null,
      org.trial?.startedAt ?? null,
      org.trial?.endsAt ?? null,
      org.onboardingDismissedAt,
    ],
  );
}

function roleIn(sql: Sql, tenantId: string, userId: string): OrgRole | null {
  return sql.get<{ role: OrgRole }>('SELECT role FROM org_members WHERE tenant_id = ? AND user_id = ?', [tenantId, userId])?.role ?? null;
}

/** Add a membership; a user already a member keeps the higher of the two roles. */
/** The organizations the user belongs to, read inside a write (oldest membership first, as `membershipsOf`). */
export function memberTenantIdsIn(sql: Sql, userId: string): string[] {
  return sql
    .all<{ tenant_id: string }>('SELECT tenant_id FROM org_members WHERE user_id = ? ORDER BY created_at, rowid', [userId])
    .map((row) => row.tenant_id);
}

function addMember(sql: Sql, tenantId: string, userId: string, role: OrgRole, now: number): void {
  const current = roleIn(sql, tenantId, userId);
  if (current === null) {
    sql.run('INSERT INTO org_members (tenant_id, user_id, role, created_at) VALUES (?, ?, ?, ?)', [tenantId, userId, role, now]);
  } else if (ORG_ROLE_RANK[role] > ORG_ROLE_RANK[current]) {
    sql.run('UPDATE org_members SET role = ? WHERE tenant_id = ? AND user_id = ?', [role, tenantId, userId]);
  }
}

/**
 * Whether an invitation's inviter may no longer grant its role in its organization (docs/accounts.md): a user who is
 * neither a platform admin nor still an owner (for an owner invitation) or owner/admin there (for any other), or no
 * longer exists; an API key that is revoked, gone, or no longer a tenant-wide admin key of that organization. An
 * invitation carries its inviter's authority, so a demoted or removed admin, or a revoked key, cannot bring someone
 * in through an invitation sent before. Invitations of operators name no inviter and are not affected.
 */
function inviterAuthorityLapsed(sql: Sql, invite: InviteRow): boolean {
  if (invite.invited_by_key !== null) return keyAuthorityLapsed(sql, invite);
  if (invite.invited_by === null) return false;
  const inviter = userById(sql, invite.invited_by);
  if (!inviter) return true;
  if (inviter.role === 'admin') return false;
  const role = roleIn(sql, invite.tenant_id, inviter.id);
  const needed = invite.role === 'owner' ? ORG_ROLE_RANK.owner : ORG_ROLE_RANK.admin;
  return role === null || ORG_ROLE_RANK[role] < needed;
}

/** A key acts as org admin, never owner (docs/accounts.md), so an owner invitation could not come from one. */
function keyAuthorityLapsed(sql: Sql, invite: InviteRow): boolean {
  const key = sql.get<{ admin: number; app_id: string | null; revoked_at: number | null }>(
    'SELECT admin, app_id, revoked_at FROM api_keys WHERE tenant_id = ? AND id = ?',
    [invite.tenant_id, invite.invited_by_key],
  );
  return !key || key.revoked_at !== null || key.admin !== 1 || key.app_id !== null || invite.role === 'owner';
}

/** The audit row of an invitation revoked because its inviter's authority lapsed, appended in the revoking write. */
export type LapsedInviteStep = (invite: Invite) => AlsoStep;

/** The audit row of a pending invitation revoked because its address was invited again, appended in that write. */
export type ReplacedInviteStep = (invite: Invite) => AlsoStep;

/** Revoke a pending invitation whose inviter's authority lapsed, with its audit row; true when it did. */
function revokeIfAuthorityLapsed(sql: Sql, invite: InviteRow, now: number, lapsed: LapsedInviteStep): boolean {
  if (invite.status !== 'pending' || !inviterAuthorityLapsed(sql, invite)) return false;
  if (sql.run("UPDATE org_invites SET status = 'revoked', revoked_at = ? WHERE id = ? AND status = 'pending'", [now, invite.id]).changes > 0) {
    lapsed(inviteOf(invite))(sql);
  }
  return true;
}

/** An inviter whose authority a write takes away: a user (in every organization) or an API key (of its organization). */
export type Inviter = { userId: string } | { tenantId: string; keyId: string };

/**
 * Revoke, inside the write that took `inviter`'s authority away (a demotion, removal, deletion, key revocation), their
 * pending invitations that lapsed with it, each with its audit row: the revocation is dated when the authority went,
 * and the list, the seats and a lookup never see such an invitation pending. Expired ones are left expired.
 */
export function revokeLapsedInvitesOf(sql: Sql, inviter: Inviter, now: number, lapsed: LapsedInviteStep): void {
  const pending =
    'userId' in inviter
      ? sql.all<InviteRow>("SELECT * FROM org_invites WHERE invited_by = ? AND status = 'pending' AND expires_at > ?", [inviter.userId, now])
      : sql.all<InviteRow>("SELECT * FROM org_invites WHERE tenant_id = ? AND invited_by_key = ? AND status = 'pending' AND expires_at > ?", [
          inviter.tenantId,
          inviter.keyId,
          now,
        ]);
  for (const invite of pending) revokeIfAuthorityLapsed(sql, invite, now, lapsed);
}

/** The fields an `updateUser` changed, and the platform role it replaced. */
export interface UserChange {
  name?: string;
  role?: PlatformRole;
  fromRole?: PlatformRole;
}

/**
 * What a write that may take a user's authority to invite away runs after its change, in the same transaction: the
 * change's own audit row (`also`), then the revocation of the user's invitations that lapsed with it.
 */
export interface AuthorityChange {
  now: number;
  also?: AlsoStep;
  lapsed: LapsedInviteStep;
}

function afterAuthorityChange(sql: Sql, userId: string, change: AuthorityChange): void {
  change.also?.(sql);
  revokeLapsedInvitesOf(sql, { userId }, change.now, change.lapsed);
}

function otherOwners(sql: Sql, tenantId: string, userId: string): number {
  return (
    sql.get<{ n: number }>("SELECT COUNT(*) AS n FROM org_members WHERE tenant_id = ? AND role = 'owner' AND user_id != ?", [
      tenantId,
      userId,
    ])?.n ?? 0
  );
}

/** Organizations the user is the only owner of (they would be left without one). */
function soleOwnerships(sql: Sql, userId: string): string[] {
  return sql
    .all<{ tenant_id: string }>(
      `SELECT m.tenant_id FROM org_members m WHERE m.user_id = ? AND m.role = 'owner'
         AND NOT EXISTS (SELECT 1 FROM org_members o WHERE o.tenant_id = m.tenant_id AND o.role = 'owner' AND o.user_id != m.user_id)`,
      [userId],
    )
    .map((r) => r.tenant_id);
}

function insertSession(sql: Sql, session: Session, tokenHash: string): void {
  sql.run(
    `INSERT INTO sessions (id, token_hash, user_id, active_tenant_id, created_at, last_seen_at, expires_at)
     VALUES (?, ?, ?, ?, ?, ?, ?)`,
    [session.id, tokenHash, session.userId, session.activeTenantId, session.createdAt, session.lastSeenAt, session.expiresAt],
  );
}

function insertToken(sql: Sql, token: AccountToken): void {
  sql.run('INSERT INTO account_tokens (token_hash, kind, user_id, email, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?)', [
    token.tokenHash,
    token.kind,
    token.userId,
    token.email,
    token.createdAt,
    token.expiresAt,
  ]);
}

/** Delete a token and return it when it is of `kind`, unexpired, and still names the user's current address. */
function consumeToken(sql: Sql, tokenHash: string, kind: AccountTokenKind, now: number): { token: AccountToken; user: User } | null {
  const row = sql.get<TokenRow>('SELECT * FROM account_tokens WHERE token_hash = ? AND kind = ?', [tokenHash, kind]);
  if (!row) return null;
  sql.run('DELETE FROM account_tokens WHERE token_hash = ?', [tokenHash]);
  const user = userById(sql, row.user_id);
  if (row.expires_at <= now || !user || user.email !== row.email) return null;
  return { token: tokenOf(row), user };
}

// ---------------------------------------------------------------------------------------------------------------
// The repository

export type RemoveMemberOutcome = 'removed' | 'not_member' | 'last_owner';
export type DeleteUserOutcome = 'deleted' | 'not_found' | { lastOwnerOf: string[] };

export interface AcceptInviteInput {
  invite: Invite;
  now: number;
  /** A new account to create (acceptance by a new address), or the existing user accepting. */
  user: { create: User } | { existing: string };
  /** Sign-in: a new session (new account), or the accepting user's current session to switch. */
  session: { create: Session; tokenHash: string } | { switch: string };
  /** The audit row of the invitation, should it be revoked because its inviter's authority lapsed. */
  lapsed: LapsedInviteStep;
  /** The acceptance's audit rows, in the same write, only when it is accepted. */
  also?: AlsoStep;
}

export interface AccountsRepository {
  /** When login mode started (the first user), or null: still open/protected mode. */
  loginModeSince(): Promise<number | null>;

  findUser(id: string): Promise<User | null>;
  findUserByEmail(email: string): Promise<User | null>;
  /** Users, oldest first; with `tenantId`, only members of that organization. `orgRole` is relative to `roleIn`. */
  listUsers(options: { tenantId: string | null; roleIn: string; email?: string; limit: number; offset: number }): Promise<{
    users: Array<{ user: User; orgRole: OrgRole | null }>;
    total: number;
  }>;
  /**
   * Create a user, optionally with a membership. `email_taken` when the e-mail is taken; `no_organization` when the
   * membership's organization is gone (deleted while the password was hashed): nothing is written. `also` (its audit
   * row) runs in the same write, only when the user is created.
   */
  createUser(
    user: User,
    membership: { tenantId: string; role: OrgRole } | null,
    also?: AlsoStep,
  ): Promise<'created' | 'email_taken' | 'no_organization'>;
  /**
   * Sets the fields of `patch` that differ from the user's, read in this write; `change` is then given what was
   * replaced (`from`, only the fields that change), for its audit row, and a platform role changed revokes the
   * invitations that lapsed with it (`AuthorityChange`). A patch that changes nothing writes nothing and runs no step.
   */
  updateUser(
    id: string,
    patch: { name?: string; role?: PlatformRole; emailVerified?: boolean },
    now: number,
    change?: (changed: UserChange) => AuthorityChange,
  ): Promise<User | null>;
  /**
   * The user's invitations still pending lapse with them (`AuthorityChange`, whose `also` runs before the row and its
   * memberships are deleted). `stillReached`, when given, is called inside the write with the user and memberships as
   * they are then, and throws (deleting nothing) when the caller may no longer act on the user.
   */
  deleteUser(id: string, change: AuthorityChange, stillReached?: (user: User, memberships: Membership[]) => void): Promise<DeleteUserOutcome>;
  /**
   * Set a user's password. Ends every session of the user; when `session` is given it is created in the same
   * write (a password change keeps its caller signed in on a fresh token). False, writing nothing, when the user is
   * gone (deleted while the password was hashed). `stillReached`, when given, is called inside the write with the
   * user and memberships as they are then, and throws (writing nothing) when the caller may no longer act on the user.
   * `from`, when given, is the hash the caller checked the current password against: false, writing nothing, when the
   * password is no longer that one (changed or reset meanwhile). `also` (its audit row) runs in the same write, only
   * when the password is set. `auditedIn`, when given, is the organization `also` writes into: `no_organization`,
   * writing nothing, when it is gone (deleted while the password was hashed: its kept log ends with its `org.delete`).
   */
  setPassword(
    userId: string,
    change: {
      hash: string;
      mustChangePassword: boolean;
      now: number;
      session?: { create: Session; tokenHash: string };
      stillReached?: (user: User, memberships: Membership[]) => void;
      from?: string;
      also?: AlsoStep;
      auditedIn?: string;
    },
  ): Promise<boolean | 'no_organization'>;
  /**
   * Replace a password hash after a successful login with weaker parameters (sessions stay), if it is still `from`:
   * false, writing nothing, when the password was changed (or the user deleted) meanwhile.
   */
  rehashPassword(userId: string, from: string, hash: string): Promise<boolean>;

  membershipsOf(userId: string): Promise<Membership[]>;
  roleIn(tenantId: string, userId: string): Promise<OrgRole | null>;
  /** Add a membership; a user already a member keeps the higher of the two roles. */
  addMember(tenantId: string, userId: string, role: OrgRole, now: number): Promise<void>;
  members(tenantId: string): Promise<Member[]>;
  /**
   * Change a member's role; refuses to demote the last owner. A demoted inviter's invitations lapse (`AuthorityChange`).
   * The role the member has (read in this write) is no change: nothing is written and `change` does not run; else it
   * is given the role replaced, as this write found it.
   */
  setMemberRole(
    tenantId: string,
    userId: string,
    role: OrgRole,
    change: (from: OrgRole) => AuthorityChange,
  ): Promise<'changed' | 'unchanged' | 'not_member' | 'last_owner'>;
  /**
   * Remove a membership and end every session of the user, unless they are the last owner. Their invitations lapse
   * (`AuthorityChange`).
   */
  removeMember(tenantId: string, userId: string, change: AuthorityChange): Promise<RemoveMemberOutcome>;

  ensureDefaultOrg(now: number): Promise<void>;
  findOrg(id: string): Promise<Org | null>;
  listOrgs(page: { limit: number; offset: number }): Promise<{ orgs: Org[]; total: number }>;
  listOrgsOf(userId: string, page: { limit: number; offset: number }): Promise<{ orgs: Array<{ org: Org; role: OrgRole }>; total: number }>;
  orgIds(): Promise<string[]>;
  /**
   * Create an organization with its owner; `activateFor` makes it that session's active organization. False, writing
   * nothing, when the owner is gone (deleted while the request was under way). `also` (its audit row) runs in the
   * same write, only when the organization is created.
   */
  createOrg(org: Org, owner: string, activateFor?: string, also?: AlsoStep): Promise<boolean>;
  /**
   * Rename an organization, with `also(from)` (its audit row, given the name replaced as this write found it) in the
   * same transaction; a name equal to the current one changes nothing and runs no step. Null when it is gone.
   */
  renameOrg(id: string, name: string, also?: (from: string) => AlsoStep): Promise<Org | null>;
  dismissOnboarding(id: string, now: number): Promise<void>;
  /**
   * Delete an organization: its row, and with it (ON DELETE CASCADE) memberships, invitations, API keys and
   * settings; queue its bulk data for the background purge; point sessions that had it active nowhere. `also` (its
   * audit row, in the log kept of the organization) runs in the same write, only when it is deleted.
   */
  deleteOrg(id: string, now: number, also?: AlsoStep): Promise<boolean>;
  /** Organizations deleted whose bulk data is still being purged. */
  pendingPurges(): Promise<string[]>;
  finishPurge(tenantId: string): Promise<void>;
  /** Whether any owner of the organization has a verified e-mail address. */
  ownerVerified(tenantId: string): Promise<boolean>;

  /**
   * Create a sign-in's session. False, creating nothing, when the session's user is gone or their password hash is no
   * longer `passwordHash`, the one the sign-in checked (deleted, or the password changed, while it was checked).
   */
  createSession(session: Session, tokenHash: string, passwordHash: string): Promise<boolean>;
  /** The session of a token hash with its user, expired ones included (the caller decides). */
  findSession(tokenHash: string): Promise<{ session: Session; user: User } | null>;
  /**
   * Record use and, if it changed, the active organization; joins the next commit without waiting for it. The
   * organization moves only from the one the request read (`activeTenantId.from`): a switch committed since wins.
   */
  touchSession(id: string, change: { seen?: { at: number; expiresAt: number }; activeTenantId?: { from: string | null; to: string | null } }): void;
  /**
   * Make `tenantId` the session's active organization, with `also` (its audit row) in the same write, when the session
   * still exists and its user is a member (checked in the write: a deletion of the account, or a removal, may commit
   * while the request is under way): the organization and the member's role, else why not, nothing written. When it
   * already is the active one, nothing is written either and `also` does not run.
   */
  switchOrg(sessionId: string, tenantId: string, also: AlsoStep): Promise<{ org: Org; role: OrgRole } | 'no_session' | 'not_member'>;
  deleteSession(id: string): Promise<void>;

  /**
   * Create a pending invitation, revoking any other pending one for the same address in the organization with its
   * audit row (`replaced`, in the same write); one past its expiry is stored expired, as it reads.
   */
  createInvite(invite: Invite, tokenHash: string, replaced: ReplacedInviteStep): Promise<void>;
  findInvite(tenantId: string, id: string): Promise<Invite | null>;
  findInviteByToken(tokenHash: string): Promise<Invite | null>;
  listInvites(tenantId: string, options: { status?: InviteStatus; now: number; limit: number; offset: number }): Promise<{ invites: Invite[]; total: number }>;
  pendingInviteCount(tenantId: string, now: number): Promise<number>;
  /** Run `also` (the invitation's audit row) if the invitation still exists: false when it is gone (its organization deleted). */
  recordInvite(id: string, also: AlsoStep): Promise<boolean>;
  /** End a pending invitation, with `also` (its audit row) in the same transaction if it was still pending. */
  setInviteStatus(id: string, status: 'revoked' | 'expired', now: number, also?: AlsoStep): Promise<boolean>;
  /**
   * Accept an invitation: re-checks it is pending and unexpired and, for a new account, that the address is still
   * free, all inside the write. Returns the reason when it is no longer acceptable.
   */
  /** `no_user` when the existing user accepting is gone (deleted while the request was under way): nothing written. */
  acceptInvite(input: AcceptInviteInput): Promise<'accepted' | 'not_pending' | 'email_taken' | 'revoked' | 'no_user'>;
  /** Revoke the pending invitation if its inviter may no longer grant its role; true when it did (or it is revoked). */
  revokeIfInviterLapsed(id: string, now: number, lapsed: LapsedInviteStep): Promise<boolean>;
  /** Revoke every pending invitation of the organization whose inviter may no longer grant its role, each with its row. */
  revokeLapsedInvites(tenantId: string, now: number, lapsed: LapsedInviteStep): Promise<void>;

  /** Create a user with their own new organization, owner membership, optional verification token and a session. */
  /** `also` (its audit row) runs in the same write, only when the account is created. */
  signup(input: { user: User; org: Org; verification: AccountToken | null; session: Session; sessionTokenHash: string; also?: AlsoStep }): Promise<boolean>;
  createToken(token: AccountToken): Promise<void>;
  deleteToken(tokenHash: string): Promise<void>;
  /**
   * Delete the user's tokens of a kind made before `newerHash` (a verification delivered replaces the older ones).
   * Only older ones: two resends at once each deleting every token but its own left the user none that worked.
   */
  deleteOlderTokens(userId: string, kind: AccountTokenKind, newerHash: string): Promise<void>;
  /** Consume a verification token and mark the address verified; null when unknown, used, expired or stale. */
  verifyEmail(tokenHash: string, now: number, also?: (user: User) => AlsoStep): Promise<User | null>;
  /**
   * Consume a reset token: set the password, clear mustChangePassword, delete every reset token and every session
   * of the user. Null when unknown, used or expired.
   */
  resetPassword(tokenHash: string, passwordHash: string, now: number, also?: (user: User) => AlsoStep): Promise<User | null>;
  /** Housekeeping: delete expired sessions and tokens. */
  pruneExpired(now: number, batch: number): Promise<number>;
}

/**
 * How long a "not in login mode" answer is trusted before the table is read again. Every request asks (open mode
 * lets everyone in), so it must not cost a query each time; users created through this repository switch it at once,
 * and the re-read covers any other writer of the data (none with the embedded file, whose only owner is this process).
 */
const LOGIN_MODE_RECHECK_MS = 1_000;

/** A session's touch, as a failed commit's report names it (see Store.writeDeferred's `kind`). */
const SESSION_WRITE = { kind: 'session touches' } as const;

export function createAccountsRepository(store: Store): AccountsRepository {
  // Login mode never ends once a user existed (docs/accounts.md): once known, the answer is final.
  let loginModeSince: number | null = null;
  let loginModeCheckedAt = Number.NEGATIVE_INFINITY;
  const addUser = (sql: Sql, user: User) => {
    insertUser(sql, user);
    loginModeSince ??= user.createdAt;
  };

  return {
    loginModeSince: async () => {
      if (loginModeSince !== null) return loginModeSince;
      const now = Date.now();
      if (now - loginModeCheckedAt < LOGIN_MODE_RECHECK_MS) return null;
      const stored = await store.read((sql) => sql.get<{ value: string }>('SELECT value FROM system_state WHERE key = ?', [LOGIN_MODE_KEY]));
      loginModeCheckedAt = now;
      if (stored) loginModeSince = Number(stored.value);
      return loginModeSince;
    },

    // ----- users

    findUser: (id) => store.read((sql) => userById(sql, id)),
    findUserByEmail: (email) => store.read((sql) => userByEmail(sql, email)),

    listUsers: ({ tenantId, roleIn: relativeTo, email, limit, offset }) =>
      store.read((sql) => {
        const where: string[] = [];
        const params: Array<string | number> = [relativeTo];
        if (tenantId !== null) {
          where.push('EXISTS (SELECT 1 FROM org_members s WHERE s.user_id = u.id AND s.tenant_id = ?)');
          params.push(tenantId);
        }
        if (email !== undefined) {
          where.push('u.email = ?');
          params.push(email);
        }
        const clause = where.length ? `WHERE ${where.join(' AND ')}` : '';
        const total = sql.get<{ n: number }>(`SELECT COUNT(*) AS n FROM users u ${clause}`, params.slice(1))?.n ?? 0;
        const rows = sql.all<UserRow & { org_role: OrgRole | null }>(
          `SELECT u.*, m.role AS org_role FROM users u
             LEFT JOIN org_members m ON m.user_id = u.id AND m.tenant_id = ?
           ${clause} ORDER BY u.created_at, u.id LIMIT ? OFFSET ?`,
          [...params, limit, offset],
        );
        return { users: rows.map((r) => ({ user: userOf(r), orgRole: r.org_role })), total };
      }),

    createUser: (user, membership, also) =>
      store.write((sql) => {
        if (userByEmail(sql, user.email)) return 'email_taken';
        if (membership && !sql.get('SELECT 1 FROM tenants WHERE id = ?', [membership.tenantId])) return 'no_organization';
        addUser(sql, user);
        if (membership) addMember(sql, membership.tenantId, user.id, membership.role, user.createdAt);
        also?.(sql);
        return 'created';
      }),

    updateUser: (id, patch, now, change) =>
      store.write((sql) => {
        // What changes is decided against the row as this write reads it: read before, two identical changes at
        // once were both recorded, the second from a value it did not replace.
        const before = userById(sql, id);
        if (!before) return null;
        const changed: UserChange = {
          ...(patch.name !== undefined && patch.name !== before.name ? { name: patch.name } : {}),
          ...(patch.role !== undefined && patch.role !== before.role ? { role: patch.role, fromRole: before.role } : {}),
        };
        const sets: string[] = [];
        const params: Array<string | number> = [];
        if (changed.name !== undefined) (sets.push('name = ?'), params.push(changed.name));
        if (changed.role !== undefined) (sets.push('role = ?'), params.push(changed.role));
        if (patch.emailVerified !== undefined && patch.emailVerified !== before.emailVerified) (sets.push('email_verified = ?'), params.push(patch.emailVerified ? 1 : 0));
        if (sets.length === 0) return before;
        sql.run(`UPDATE users SET ${sets.join(', ')}, updated_at = ? WHERE id = ?`, [...params, now, id]);
        if (change && (changed.name !== undefined || changed.role !== undefined)) afterAuthorityChange(sql, id, change(changed));
        return userById(sql, id);
      }),

    deleteUser: (id, change, stillReached) =>
      store.write((sql): DeleteUserOutcome => {
        const user = userById(sql, id);
        if (!user) return 'not_found';
        stillReached?.(user, membershipsOf(sql, id));
        const sole = soleOwnerships(sql, id);
        if (sole.length) return { lastOwnerOf: sole };
        // The change's rows first, while the memberships that say which organizations' logs take them are there.
        change.also?.(sql);
        // Sessions, memberships and tokens go with the row (ON DELETE CASCADE); invitations keep naming the user. The
        // row's address and password hash are overwritten in the file (`erasing`), not left in its free space.
        erasing(sql, () => sql.run('DELETE FROM users WHERE id = ?', [id]));
        revokeLapsedInvitesOf(sql, { userId: id }, change.now, change.lapsed);
        return 'deleted';
      }),

    setPassword: (userId, change) =>
      store.write((sql): boolean | 'no_organization' => {
        if (change.auditedIn !== undefined && !sql.get('SELECT 1 FROM tenants WHERE id = ?', [change.auditedIn])) return 'no_organization';
        if (change.stillReached || change.from !== undefined) {
          const user = userById(sql, userId);
          if (!user || (change.from !== undefined && user.passwordHash !== change.from)) return false;
          change.stillReached?.(user, membershipsOf(sql, userId));
        }
        const updated = sql.run(
          'UPDATE users SET password_hash = ?, must_change_password = ?, password_changed_at = ?, updated_at = ? WHERE id = ?',
          [change.hash, change.mustChangePassword ? 1 : 0, change.now, change.now, userId],
        ).changes > 0;
        if (!updated) return false;
        sql.run('DELETE FROM sessions WHERE user_id = ?', [userId]);
        // A reset link sent before the change must not undo it: whoever changed the password (a user who feared the
        // link leaked, an admin forcing a change) meant the old ways in to end.
        sql.run("DELETE FROM account_tokens WHERE user_id = ? AND kind = 'password_reset'", [userId]);
        if (change.session) insertSession(sql, change.session.create, change.session.tokenHash);
        change.also?.(sql);
        return true;
      }),

    rehashPassword: (userId, from, hash) =>
      store.write((sql) => sql.run('UPDATE users SET password_hash = ? WHERE id = ? AND password_hash = ?', [hash, userId, from]).changes > 0),

    // ----- memberships

    membershipsOf: (userId) => store.read((sql) => membershipsOf(sql, userId)),

    roleIn: (tenantId, userId) => store.read((sql) => roleIn(sql, tenantId, userId)),

    addMember: async (tenantId, userId, role, now) => {
      await store.write((sql) => addMember(sql, tenantId, userId, role, now));
    },

    members: (tenantId) =>
      store.read((sql) =>
        sql
          .all<UserRow & { org_role: OrgRole; joined_at: number }>(
            `SELECT u.*, m.role AS org_role, m.created_at AS joined_at FROM org_members m JOIN users u ON u.id = m.user_id
             WHERE m.tenant_id = ? ORDER BY m.created_at, m.rowid`,
            [tenantId],
          )
          .map((r) => ({ user: userOf(r), role: r.org_role, joinedAt: r.joined_at })),
      ),

    setMemberRole: (tenantId, userId, role, change) =>
      store.write((sql) => {
        const current = roleIn(sql, tenantId, userId);
        if (current === null) return 'not_member';
        if (current === role) return 'unchanged';
        if (current === 'owner' && otherOwners(sql, tenantId, userId) === 0) return 'last_owner';
        sql.run('UPDATE org_members SET role = ? WHERE tenant_id = ? AND user_id = ?', [role, tenantId, userId]);
        afterAuthorityChange(sql, userId, change(current));
        return 'changed';
      }),

    removeMember: (tenantId, userId, change) =>
      store.write((sql): RemoveMemberOutcome => {
        const current = roleIn(sql, tenantId, userId);
        if (current === null) return 'not_member';
        if (current === 'owner' && otherOwners(sql, tenantId, userId) === 0) return 'last_owner';
        sql.run('DELETE FROM org_members WHERE tenant_id = ? AND user_id = ?', [tenantId, userId]);
        sql.run('DELETE FROM sessions WHERE user_id = ?', [userId]);
        afterAuthorityChange(sql, userId, change);
        return 'removed';
      }),

    // ----- organizations

    ensureDefaultOrg: async (now) => {
      await store.write((sql) =>
        sql.run('INSERT OR IGNORE INTO tenants (id, name, created_at) VALUES (?, ?, ?)', [DEFAULT_TENANT_ID, DEFAULT_TENANT_NAME, now]),
      );
    },

    findOrg: (id) =>
      store.read((sql) => {
        const row = sql.get<OrgRow>('SELECT * FROM tenants WHERE id = ?', [id]);
        return row ? orgOf(row) : null;
      }),

    listOrgs: ({ limit, offset }) =>
      store.read((sql) => ({
        orgs: sql.all<OrgRow>('SELECT * FROM tenants ORDER BY created_at, id LIMIT ? OFFSET ?', [limit, offset]).map(orgOf),
        total: sql.get<{ n: number }>('SELECT COUNT(*) AS n FROM tenants')?.n ?? 0,
      })),

    listOrgsOf: (userId, { limit, offset }) =>
      store.read((sql) => ({
        orgs: sql
          .all<OrgRow & { member_role: OrgRole }>(
            `SELECT t.*, m.role AS member_role FROM org_members m JOIN tenants t ON t.id = m.tenant_id
             WHERE m.user_id = ? ORDER BY m.created_at, m.rowid LIMIT ? OFFSET ?`,
            [userId, limit, offset],
          )
          .map((r) => ({ org: orgOf(r), role: r.member_role })),
        total: sql.get<{ n: number }>('SELECT COUNT(*) AS n FROM org_members WHERE user_id = ?', [userId])?.n ?? 0,
      })),

    orgIds: () => store.read((sql) => sql.all<{ id: string }>('SELECT id FROM tenants ORDER BY id').map((r) => r.id)),

    createOrg: (org, owner, activateFor, also) =>
      store.write((sql) => {
        // Checked in the write: an organization whose owner's deletion committed first would have no owner.
        if (!userById(sql, owner)) return false;
        insertOrg(sql, org);
        addMember(sql, org.id, owner, 'owner', org.createdAt);
        if (activateFor) sql.run('UPDATE sessions SET active_tenant_id = ? WHERE id = ?', [org.id, activateFor]);
        also?.(sql);
        return true;
      }),

    renameOrg: (id, name, also) =>
      store.write((sql) => {
        // The name replaced is read here, in the write: read before it, two renames at once both named the same one.
        const before = sql.get<OrgRow>('SELECT * FROM tenants WHERE id = ?', [id]);
        if (!before) return null;
        if (before.name === name) return orgOf(before);
        sql.run('UPDATE tenants SET name = ? WHERE id = ?', [name, id]);
        also?.(before.name)(sql);
        return orgOf({ ...before, name });
      }),

    dismissOnboarding: async (id, now) => {
      await store.write((sql) => sql.run('UPDATE tenants SET onboarding_dismissed_at = COALESCE(onboarding_dismissed_at, ?) WHERE id = ?', [now, id]));
    },

    deleteOrg: (id, now, also) =>
      store.write((sql) => {
        if (id === DEFAULT_TENANT_ID) return false;
        sql.run('UPDATE sessions SET active_tenant_id = NULL WHERE active_tenant_id = ?', [id]);
        // Its keys, settings, members and invitations go with it (ON DELETE CASCADE), overwritten in the file.
        const deleted = erasing(sql, () => sql.run('DELETE FROM tenants WHERE id = ?', [id])).changes > 0;
        if (deleted) {
          sql.run('INSERT OR IGNORE INTO tenant_purges (tenant_id, deleted_at) VALUES (?, ?)', [id, now]);
          also?.(sql);
        }
        return deleted;
      }),

    pendingPurges: () =>
      store.read((sql) => sql.all<{ tenant_id: string }>('SELECT tenant_id FROM tenant_purges ORDER BY deleted_at').map((r) => r.tenant_id)),

    finishPurge: async (tenantId) => {
      await store.write((sql) => sql.run('DELETE FROM tenant_purges WHERE tenant_id = ?', [tenantId]));
    },

    ownerVerified: (tenantId) =>
      store.read(
        (sql) =>
          sql.get(
            `SELECT 1 AS ok FROM org_members m JOIN users u ON u.id = m.user_id
             WHERE m.tenant_id = ? AND m.role = 'owner' AND u.email_verified = 1 LIMIT 1`,
            [tenantId],
          ) !== undefined,
      ),

    // ----- sessions

    createSession: (session, tokenHash, passwordHash) =>
      store.write((sql) => {
        if (userById(sql, session.userId)?.passwordHash !== passwordHash) return false;
        insertSession(sql, session, tokenHash);
        return true;
      }),

    findSession: (tokenHash) =>
      store.read((sql) => {
        const row = sql.get<SessionRow>('SELECT * FROM sessions WHERE token_hash = ?', [tokenHash]);
        if (!row) return null;
        const user = userById(sql, row.user_id);
        return user ? { session: sessionOf(row), user } : null;
      }),

    touchSession(id, change) {
      store.writeDeferred((sql) => {
        if (change.seen) sql.run('UPDATE sessions SET last_seen_at = ?, expires_at = ? WHERE id = ?', [change.seen.at, change.seen.expiresAt, id]);
        // The fallback from an organization the user left joins a later commit: a switch the user made in between (its
        // write commits at once) must not be undone by it.
        const moved = change.activeTenantId;
        if (moved) sql.run('UPDATE sessions SET active_tenant_id = ? WHERE id = ? AND active_tenant_id IS ?', [moved.to, id, moved.from]);
      }, SESSION_WRITE);
    },

    switchOrg: (sessionId, tenantId, also) =>
      store.write((sql) => {
        // Session and membership read in the write: the account's deletion, a removal or the organization's deletion
        // may have committed since the request checked them (its row would land after an org.delete).
        const session = sql.get<{ user_id: string; active_tenant_id: string | null }>('SELECT user_id, active_tenant_id FROM sessions WHERE id = ?', [sessionId]);
        if (!session) return 'no_session';
        const role = roleIn(sql, tenantId, session.user_id);
        if (role === null) return 'not_member';
        if (session.active_tenant_id !== tenantId) {
          sql.run('UPDATE sessions SET active_tenant_id = ? WHERE id = ?', [tenantId, sessionId]);
          also(sql);
        }
        return { org: orgOf(sql.get<OrgRow>('SELECT * FROM tenants WHERE id = ?', [tenantId])!), role };
      }),

    deleteSession: async (id) => {
      await store.write((sql) => sql.run('DELETE FROM sessions WHERE id = ?', [id]));
    },

    // ----- invitations

    createInvite: async (invite, tokenHash, replaced) => {
      await store.write((sql) => {
        const now = invite.createdAt;
        const pending = sql.all<InviteRow>("SELECT * FROM org_invites WHERE tenant_id = ? AND email = ? AND status = 'pending'", [
          invite.tenantId,
          invite.email,
        ]);
        for (const row of pending) {
          if (row.expires_at <= now) {
            sql.run("UPDATE org_invites SET status = 'expired' WHERE id = ?", [row.id]);
            continue;
          }
          sql.run("UPDATE org_invites SET status = 'revoked', revoked_at = ? WHERE id = ?", [now, row.id]);
          replaced(inviteOf(row))(sql);
        }
        sql.run(
          `INSERT INTO org_invites (id, tenant_id, email, role, token_hash, invited_by, invited_by_key, status, created_at, expires_at)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
          [
            invite.id,
            invite.tenantId,
            invite.email,
            invite.role,
            tokenHash,
            invite.invitedBy,
            invite.invitedByKey,
            invite.status,
            invite.createdAt,
            invite.expiresAt,
          ],
        );
      });
    },

    findInvite: (tenantId, id) =>
      store.read((sql) => {
        const row = sql.get<InviteRow>('SELECT * FROM org_invites WHERE tenant_id = ? AND id = ?', [tenantId, id]);
        return row ? inviteOf(row) : null;
      }),

    findInviteByToken: (tokenHash) =>
      store.read((sql) => {
        const row = sql.get<InviteRow>('SELECT * FROM org_invites WHERE token_hash = ?', [tokenHash]);
        return row ? inviteOf(row) : null;
      }),

    listInvites: (tenantId, { status, now, limit, offset }) =>
      store.read((sql) => {
        // Status as read: a stored `pending` past its expiry is `expired` (types.ts effectiveStatus).
        const filters: Record<InviteStatus, string> = {
          pending: "status = 'pending' AND expires_at > ?",
          expired: "(status = 'expired' OR (status = 'pending' AND expires_at <= ?))",
          accepted: "status = 'accepted' AND ? IS NOT NULL",
          revoked: "status = 'revoked' AND ? IS NOT NULL",
        };
        const clause = status ? `tenant_id = ? AND ${filters[status]}` : 'tenant_id = ? AND ? IS NOT NULL';
        const params = [tenantId, now];
        return {
          invites: sql
            .all<InviteRow>(`SELECT * FROM org_invites WHERE ${clause} ORDER BY created_at DESC, id LIMIT ? OFFSET ?`, [...params, limit, offset])
            .map(inviteOf),
          total: sql.get<{ n: number }>(`SELECT COUNT(*) AS n FROM org_invites WHERE ${clause}`, params)?.n ?? 0,
        };
      }),

    pendingInviteCount: (tenantId, now) =>
      store.read(
        (sql) =>
          sql.get<{ n: number }>("SELECT COUNT(*) AS n FROM org_invites WHERE tenant_id = ? AND status = 'pending' AND expires_at > ?", [
            tenantId,
            now,
          ])?.n ?? 0,
      ),

    recordInvite: (id, also) =>
      store.write((sql) => {
        if (!sql.get('SELECT 1 FROM org_invites WHERE id = ?', [id])) return false;
        also(sql);
        return true;
      }),

    setInviteStatus: (id, status, now, also) =>
      store.write((sql) => {
        const changed =
          sql.run(`UPDATE org_invites SET status = ?, revoked_at = CASE WHEN ? = 'revoked' THEN ? ELSE revoked_at END WHERE id = ? AND status = 'pending'`, [
            status,
            status,
            now,
            id,
          ]).changes > 0;
        if (changed) also?.(sql);
        return changed;
      }),

    acceptInvite: ({ invite, now, user, session, lapsed, also }) =>
      store.write((sql) => {
        const current = sql.get<InviteRow>('SELECT * FROM org_invites WHERE id = ?', [invite.id]);
        if (!current || current.status !== 'pending' || current.expires_at <= now) return 'not_pending';
        // Checked in the write: a demotion committed before it ends the invitation's authority.
        if (revokeIfAuthorityLapsed(sql, current, now, lapsed)) return 'revoked';
        let userId: string;
        if ('create' in user) {
          if (userByEmail(sql, user.create.email)) return 'email_taken';
          addUser(sql, user.create);
          userId = user.create.id;
        } else {
          // Checked in the write: a membership for an account whose deletion committed first would have no user.
          if (!userById(sql, user.existing)) return 'no_user';
          userId = user.existing;
        }
        addMember(sql, invite.tenantId, userId, invite.role, now);
        sql.run("UPDATE org_invites SET status = 'accepted', accepted_at = ?, accepted_by = ? WHERE id = ?", [now, userId, invite.id]);
        if ('create' in session) insertSession(sql, session.create, session.tokenHash);
        else sql.run('UPDATE sessions SET active_tenant_id = ? WHERE id = ?', [invite.tenantId, session.switch]);
        also?.(sql);
        return 'accepted';
      }),

    revokeIfInviterLapsed: (id, now, lapsed) =>
      store.write((sql) => {
        const current = sql.get<InviteRow>('SELECT * FROM org_invites WHERE id = ?', [id]);
        return current ? revokeIfAuthorityLapsed(sql, current, now, lapsed) : false;
      }),

    revokeLapsedInvites: async (tenantId, now, lapsed) => {
      const pendingOf = (sql: Sql) =>
        sql.all<InviteRow>(
          `SELECT * FROM org_invites WHERE tenant_id = ? AND status = 'pending' AND expires_at > ?
             AND (invited_by IS NOT NULL OR invited_by_key IS NOT NULL)`,
          [tenantId, now],
        );
      // Read first: a list or count of invitations (every GET /orgs/active) writes only when one has lapsed.
      const anyLapsed = await store.read((sql) => pendingOf(sql).some((invite) => inviterAuthorityLapsed(sql, invite)));
      if (!anyLapsed) return;
      await store.write((sql) => {
        for (const invite of pendingOf(sql)) revokeIfAuthorityLapsed(sql, invite, now, lapsed);
      });
    },

    // ----- signup, tokens

    signup: ({ user, org, verification, session, sessionTokenHash, also }) =>
      store.write((sql) => {
        if (userByEmail(sql, user.email)) return false;
        addUser(sql, user);
        insertOrg(sql, org);
        addMember(sql, org.id, user.id, 'owner', user.createdAt);
        if (verification) insertToken(sql, verification);
        insertSession(sql, session, sessionTokenHash);
        also?.(sql);
        return true;
      }),

    createToken: async (token) => {
      await store.write((sql) => insertToken(sql, token));
    },

    deleteToken: async (tokenHash) => {
      await store.write((sql) => sql.run('DELETE FROM account_tokens WHERE token_hash = ?', [tokenHash]));
    },

    deleteOlderTokens: async (userId, kind, newerHash) => {
      // Made before it: a lower rowid (a new row's rowid is above every row's in the table when it is inserted; equal
      // created_at times do not order tokens made in the same millisecond). None when that token is gone (used).
      await store.write((sql) =>
        sql.run(
          'DELETE FROM account_tokens WHERE user_id = ? AND kind = ? AND rowid < (SELECT rowid FROM account_tokens WHERE token_hash = ?)',
          [userId, kind, newerHash],
        ),
      );
    },

    verifyEmail: (tokenHash, now, also) =>
      store.write((sql) => {
        const consumed = consumeToken(sql, tokenHash, 'verify_email', now);
        if (!consumed) return null;
        sql.run('UPDATE users SET email_verified = 1, updated_at = ? WHERE id = ?', [now, consumed.user.id]);
        const user = userById(sql, consumed.user.id);
        if (user) also?.(user)(sql);
        return user;
      }),

    resetPassword: (tokenHash, passwordHash, now, also) =>
      store.write((sql) => {
        const consumed = consumeToken(sql, tokenHash, 'password_reset', now);
        if (!consumed) return null;
        const userId = consumed.user.id;
        sql.run(
          'UPDATE users SET password_hash = ?, must_change_password = 0, password_changed_at = ?, updated_at = ? WHERE id = ?',
          [passwordHash, now, now, userId],
        );
        sql.run("DELETE FROM account_tokens WHERE user_id = ? AND kind = 'password_reset'", [userId]);
        sql.run('DELETE FROM sessions WHERE user_id = ?', [userId]);
        const user = userById(sql, userId);
        if (user) also?.(user)(sql);
        return user;
      }),

    pruneExpired: (now, batch) =>
      store.write((sql) => {
        const sessions = sql.run('DELETE FROM sessions WHERE id IN (SELECT id FROM sessions WHERE expires_at <= ? LIMIT ?)', [now, batch]).changes;
        const tokens = sql.run(
          'DELETE FROM account_tokens WHERE token_hash IN (SELECT token_hash FROM account_tokens WHERE expires_at <= ? LIMIT ?)',
          [now, batch],
        ).changes;
        return sessions + tokens;
      }),
  };
}
