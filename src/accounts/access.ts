/**
 * Who may do what to accounts and organizations (docs/accounts.md "Identities and who may do what"), in one place.
 * Ranks: owner > admin > member. Platform admins that are not sessions (local operator, bootstrap token) act as
 * owners everywhere; a tenant-wide admin API key and open dev mode act as org admins; everyone else has no rank.
 */
import { AppError } from '../core/errors.ts';
import type { AuthContext, OrgRole } from '../identity/auth-context.ts';
import { ORG_ROLE_RANK, type Membership, type User } from './types.ts';

/**
 * The key a per-caller limit counts `auth` under: a user or an API key. Null for the operator (the bootstrap token,
 * the local socket, open dev mode), who is not limited.
 */
export function limitedCaller(auth: AuthContext): string | null {
  if (auth.kind === 'session' && auth.userId) return `user:${auth.userId}`;
  if (auth.kind === 'api_key' && auth.keyId) return `key:${auth.keyId}`;
  return null;
}

/** The caller's rank in its resolved organization: 3 owner, 2 admin, 1 member, 0 none. */
export function rankOf(auth: AuthContext): number {
  if (auth.platformAdmin) return ORG_ROLE_RANK.owner;
  if (auth.session) return auth.session.orgRole ? ORG_ROLE_RANK[auth.session.orgRole] : 0;
  if (auth.admin && auth.tenantWide) return ORG_ROLE_RANK.admin;
  return 0;
}

/** Account administration of the caller's organization: owner/admin sessions, admin keys, operators. */
export function requireAccountAdmin(auth: AuthContext): void {
  if (!auth.admin) throw new AppError('admin_required');
  if (!auth.tenantWide) throw new AppError('tenant_admin_required');
}

export function requireOwner(auth: AuthContext): void {
  if (rankOf(auth) < ORG_ROLE_RANK.owner) throw new AppError('owner_required');
}

export function requireSession(auth: AuthContext): asserts auth is AuthContext & { session: NonNullable<AuthContext['session']>; userId: string } {
  if (auth.kind !== 'session' || !auth.session || !auth.userId) throw new AppError('session_required');
}

/**
 * An admin of the caller's organization or above. An app-pinned admin key has no rank there, and is told that it is
 * its pinning that falls short (`tenant_admin_required`), as account administration tells it.
 */
export function requireOrgAdmin(auth: AuthContext): void {
  if (rankOf(auth) >= ORG_ROLE_RANK.admin) return;
  throw new AppError(auth.admin && !auth.tenantWide ? 'tenant_admin_required' : 'admin_required');
}

/** Whether the caller may grant an organization role (owners grant owner; admins grant admin and member). */
export function requireMayGrant(auth: AuthContext, role: OrgRole): void {
  if (role === 'owner') requireOwner(auth);
  else requireOrgAdmin(auth);
}

/**
 * Whether the caller may delete or reset the target user. A platform admin may act on anyone. Otherwise the target
 * must be a member of the caller's organization (else it is invisible: 404), must belong to no other organization
 * and not be a platform admin (else only a platform admin may: 403), and the caller must outrank them or be an
 * owner (owners may act on other owners; admins only on members).
 */
export function requireReach(auth: AuthContext, target: User, memberships: Membership[]): void {
  if (auth.platformAdmin) return;
  const here = memberships.find((m) => m.tenantId === auth.tenantId);
  if (!here) throw new AppError('not_found', { message: 'User not found.' });
  if (target.role === 'admin' || memberships.some((m) => m.tenantId !== auth.tenantId)) {
    throw new AppError('platform_admin_required', {
      message: 'The user is a platform admin or belongs to other organizations; only a platform admin may do that.',
    });
  }
  const rank = rankOf(auth);
  if (rank !== ORG_ROLE_RANK.owner && rank <= ORG_ROLE_RANK[here.role]) {
    throw new AppError('forbidden', { message: `An ${auth.session?.orgRole ?? 'admin'} may only act on members of lower rank.` });
  }
}
