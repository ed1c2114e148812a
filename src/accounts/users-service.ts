/**
 * Admin user management (SPEC 4.4; docs/accounts.md "Users") and the bootstrap admin (SPEC 5.2).
 *
 * Every self-signup is the owner of its own organization, so an organization owner or admin reaches only the users
 * of their active organization who belong to no other one; creating or raising a platform admin, and touching users
 * of other organizations, is for platform admins (src/accounts/access.ts).
 */
import { randomBytes } from 'node:crypto';
import { AppError, invalid, notFound } from '../core/errors.ts';
import { newId } from '../core/ids.ts';
import { actorOf, NO_ORGANIZATION, type AuthContext } from '../identity/auth-context.ts';
import { DEFAULT_TENANT_ID } from '../tenants/defaults.ts';
import { authorityChange } from './invites-service.ts';
import { limitedCaller, requireAccountAdmin, requireMayGrant, requireReach } from './access.ts';
import { normalizePassword } from './passwords.ts';
import { stagedAccountEvent, type AccountsDeps } from './sessions-service.ts';
import type { UserChange } from './repo.ts';
import type { AlsoStep } from '../store/sql.ts';
import { normalizeEmail, type Membership, type OrgRole, type PlatformRole, type User } from './types.ts';

export interface UserListing {
  user: User;
  /** The user's role in the caller's organization. */
  orgRole: OrgRole | null;
  /** Every membership, for platform admins only. */
  memberships: Membership[] | null;
}

export interface CreateUserInput {
  email: string;
  name?: string | undefined;
  role?: PlatformRole | undefined;
  orgRole?: OrgRole | undefined;
  tempPassword?: string | undefined;
}

export interface UsersService {
  list(auth: AuthContext, options: { email?: string | undefined; limit: number; offset: number }): Promise<{ users: UserListing[]; total: number }>;
  create(auth: AuthContext, input: CreateUserInput): Promise<{ user: UserListing; tempPassword: string }>;
  update(auth: AuthContext, id: string, patch: { name?: string | undefined; role?: PlatformRole | undefined }): Promise<UserListing>;
  delete(auth: AuthContext, id: string): Promise<void>;
  resetPassword(auth: AuthContext, id: string): Promise<{ user: UserListing; tempPassword: string }>;
  /** SPEC 5.2: create or raise the bootstrap admin, owner of the default organization; never resets a password. */
  ensureBootstrapAdmin(admin: { email: string; password: string }): Promise<User>;
}

/** A temporary password an admin hands over: 20 characters of base64url (120 random bits). */
export function generateTempPassword(): string {
  return randomBytes(15).toString('base64url');
}

/** The name of a user created without one: the local part of the address. */
function defaultName(email: string): string {
  return email.slice(0, email.indexOf('@')) || email;
}

export function createUsersService(deps: AccountsDeps): UsersService {
  const { repo, hasher, clock, audit, limits } = deps;

  /** Hash a password a caller asked for, counted against the caller's `accountPasswords` limit. */
  async function hashFor(auth: AuthContext, password: string): Promise<string> {
    const caller = limitedCaller(auth);
    if (caller !== null) await limits.take('accountPasswords', caller);
    return hasher.hash(password, 'account');
  }

  /**
   * Count a creation against the organization's `emailTakenAnswers` window until it turns out not to be one (a 409
   * `email_taken` stays counted); returns what uncounts it. Past the window every creation is refused, not only those
   * of taken addresses, or a 201 would answer the same question. Platform admins see every user anyway, and the
   * operator is not limited.
   */
  async function reserveTakenAnswer(auth: AuthContext): Promise<() => Promise<void>> {
    if (auth.platformAdmin || limitedCaller(auth) === null) return async () => {};
    return limits.reserve('emailTakenAnswers', `tenant:${auth.tenantId}`);
  }

  async function listing(auth: AuthContext, user: User): Promise<UserListing> {
    const memberships = await repo.membershipsOf(user.id);
    return {
      user,
      orgRole: memberships.find((m) => m.tenantId === auth.tenantId)?.role ?? null,
      memberships: auth.platformAdmin ? memberships : null,
    };
  }

  /**
   * The row of a change to user `id`, as a step of its write: in the caller's organization, and in each other one the
   * user belongs to as the write finds them (only a platform admin reaches those), whose admins must see what was done
   * to their member. A caller without an organization has no log of its own: the user's organizations only (none: no
   * log could show it, and no audit row is without a tenant).
   */
  function stagedUserEvent(auth: AuthContext, id: string, action: string, details: Record<string, unknown>): AlsoStep {
    const own = auth.tenantId === NO_ORGANIZATION ? null : audit.staged(auth, action, { target: id, details });
    const theirs = stagedAccountEvent(deps, id, action, actorOf(auth), details, auth.tenantId);
    return (sql) => {
      own?.(sql);
      theirs(sql);
    };
  }

  /** The target user as the caller may see it: platform admins see everyone, others members of their organization. */
  async function visibleUser(auth: AuthContext, id: string): Promise<{ user: User; memberships: Membership[] }> {
    const user = await repo.findUser(id);
    if (!user) throw notFound('User');
    const memberships = await repo.membershipsOf(user.id);
    if (!auth.platformAdmin && !memberships.some((m) => m.tenantId === auth.tenantId)) throw notFound('User');
    return { user, memberships };
  }

  return {
    async list(auth, { email, limit, offset }) {
      requireAccountAdmin(auth);
      const result = await repo.listUsers({
        tenantId: auth.platformAdmin ? null : auth.tenantId,
        roleIn: auth.tenantId,
        ...(email !== undefined ? { email: normalizeEmail(email) } : {}),
        limit,
        offset,
      });
      const users = await Promise.all(
        result.users.map(async ({ user, orgRole }) => ({
          user,
          orgRole,
          memberships: auth.platformAdmin ? await repo.membershipsOf(user.id) : null,
        })),
      );
      return { users, total: result.total };
    },

    async create(auth, input) {
      requireAccountAdmin(auth);
      const role = input.role ?? 'member';
      const orgRole = input.orgRole ?? 'member';
      if (role === 'admin' && !auth.platformAdmin) {
        throw new AppError('platform_admin_required', { message: 'Only a platform admin may create a platform admin.' });
      }
      requireMayGrant(auth, orgRole);
      const email = normalizeEmail(input.email);
      const tempPassword = normalizePassword(input.tempPassword ?? generateTempPassword(), 'tempPassword');
      const notTaken = await reserveTakenAnswer(auth);
      let user: User;
      let outcome: Awaited<ReturnType<typeof repo.createUser>>;
      try {
        const now = clock.now();
        user = {
          id: newId('usr'),
          email,
          name: input.name?.trim() || defaultName(email),
          role,
          emailVerified: false,
          mustChangePassword: true,
          passwordHash: await hashFor(auth, tempPassword),
          passwordChangedAt: now,
          createdAt: now,
          updatedAt: now,
        };
        // The row in the write: appended after it, a crash between the two lost it, and an organization deleted
        // between the two had it after its org.delete.
        outcome = await repo.createUser(user, { tenantId: auth.tenantId, role: orgRole }, audit.staged(auth, 'user.create', { target: user.id, details: { email, role, orgRole } }));
      } catch (error) {
        await notTaken();
        throw error;
      }
      if (outcome !== 'email_taken') await notTaken();
      if (outcome === 'no_organization') throw notFound('Organization');
      if (outcome === 'email_taken') {
        throw new AppError('email_taken', { message: 'An account with this e-mail address already exists; invite it instead.' });
      }
      return { user: await listing(auth, user), tempPassword };
    },

    async update(auth, id, patch) {
      const self = auth.kind === 'session' && auth.userId === id;
      if (!auth.platformAdmin && !(self && patch.role === undefined)) {
        if (patch.role !== undefined) throw new AppError('platform_admin_required', { message: 'Only a platform admin may change a platform role.' });
        throw new AppError('forbidden', { message: 'Only a platform admin or the user themself may change a name.' });
      }
      // The user themself may rename themself also without an organization (an account route): the caller's own
      // account is always visible to them.
      const { user } = self ? { user: await repo.findUser(id) } : await visibleUser(auth, id);
      if (!user) throw notFound('User');
      if (patch.role !== undefined && self && user.role === 'admin' && patch.role !== 'admin') {
        throw invalid('A platform admin cannot demote themself; another platform admin can.');
      }
      const name = patch.name?.trim();
      // Of what the write changes (`UserChange`): a field already so is no change, and a role's `from` is the one replaced.
      const detailsOf = (changed: UserChange) => ({
        ...(changed.name !== undefined ? { name: changed.name } : {}),
        ...(changed.role !== undefined ? { from: changed.fromRole, role: changed.role } : {}),
      });
      // In the write, first: a platform role taken away takes the invitations it granted with it, in the write, and
      // their revocations must read after their cause.
      const updated = await repo.updateUser(
        id,
        { ...(name !== undefined ? { name } : {}), ...(patch.role !== undefined ? { role: patch.role } : {}) },
        clock.now(),
        (changed) => authorityChange(deps, stagedUserEvent(auth, id, 'user.update', detailsOf(changed))),
      );
      if (!updated) throw notFound('User');
      return listing(auth, updated);
    },

    async delete(auth, id) {
      requireAccountAdmin(auth);
      const { user, memberships } = await visibleUser(auth, id);
      if (auth.userId === id) throw invalid('You cannot delete your own account.');
      requireReach(auth, user, memberships);
      // Checked again in the write: the user may have joined another organization since (as for a reset, below).
      const stillReached = (current: User, now: Membership[]) => requireReach(auth, current, now);
      const outcome = await repo.deleteUser(id, authorityChange(deps, stagedUserEvent(auth, id, 'user.delete', { email: user.email })), stillReached);
      if (outcome === 'not_found') throw notFound('User');
      if (outcome !== 'deleted') {
        throw new AppError('last_owner', {
          message: 'The user is the last owner of an organization; transfer ownership or delete the organization first.',
          details: { orgIds: outcome.lastOwnerOf },
        });
      }
    },

    async resetPassword(auth, id) {
      requireAccountAdmin(auth);
      const { user, memberships } = await visibleUser(auth, id);
      requireReach(auth, user, memberships);
      const tempPassword = generateTempPassword();
      const hash = await hashFor(auth, tempPassword);
      // Checked again as the password is written: while it was hashed the user may have joined another organization
      // (accepting an invitation) or become a platform admin, and the caller would hold the password of a user it no
      // longer reaches.
      const stillReached = (user: User, memberships: Membership[]) => requireReach(auth, user, memberships);
      const also = stagedUserEvent(auth, id, 'user.reset_password', { email: user.email });
      // The row goes into the caller's organization, which may have been deleted while the password was hashed.
      const outcome = await repo.setPassword(id, { hash, mustChangePassword: true, now: clock.now(), stillReached, also, auditedIn: auth.tenantId });
      if (outcome === 'no_organization') throw notFound('Organization');
      if (!outcome) throw notFound('User'); // deleted while the temporary password was hashed
      return { user: await listing(auth, (await repo.findUser(id))!), tempPassword };
    },

    async ensureBootstrapAdmin(admin) {
      const email = normalizeEmail(admin.email);
      const now = clock.now();
      let user = await repo.findUserByEmail(email);
      if (!user) {
        const password = normalizePassword(admin.password, 'SVC_ADMIN_PASSWORD');
        const created: User = {
          id: newId('usr'),
          email,
          name: defaultName(email),
          role: 'admin',
          emailVerified: true,
          mustChangePassword: false,
          passwordHash: await hasher.hash(password),
          passwordChangedAt: now,
          createdAt: now,
          updatedAt: now,
        };
        // A concurrent start (another process on the same database) may have created it a moment ago.
        if ((await repo.createUser(created, { tenantId: DEFAULT_TENANT_ID, role: 'owner' })) === 'created') return created;
        user = (await repo.findUserByEmail(email))!;
      }
      if (user.role !== 'admin' || !user.emailVerified) {
        user = (await repo.updateUser(user.id, { role: 'admin', emailVerified: true }, now))!;
      }
      await repo.addMember(DEFAULT_TENANT_ID, user.id, 'owner', now);
      return user;
    },
  };
}
