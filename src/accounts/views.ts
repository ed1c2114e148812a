/**
 * The public JSON shapes of the account endpoints (docs/accounts.md). Never a password hash, token or token hash.
 */
import { toIso } from '../core/clock.ts';
import type { InviteWithInviter, InviteLookup } from './invites-service.ts';
import type { ActiveOrg, OrgListing, PlanState } from './orgs-service.ts';
import type { Me } from './sessions-service.ts';
import type { Membership, User } from './types.ts';
import type { UserListing } from './users-service.ts';

export function userView(user: User) {
  return {
    id: user.id,
    email: user.email,
    name: user.name,
    role: user.role,
    emailVerified: user.emailVerified,
    mustChangePassword: user.mustChangePassword,
    createdAt: toIso(user.createdAt),
  };
}

export function meView(me: Me) {
  return {
    user: userView(me.user),
    org: me.org,
    admin: me.admin,
    platformAdmin: me.platformAdmin,
    mustChangePassword: me.user.mustChangePassword,
  };
}

function membershipView(m: Membership) {
  return { orgId: m.tenantId, orgName: m.orgName, role: m.role };
}

export function userListingView(listing: UserListing) {
  return {
    ...userView(listing.user),
    orgRole: listing.orgRole,
    ...(listing.memberships ? { memberships: listing.memberships.map(membershipView) } : {}),
  };
}

export function orgListingView(listing: OrgListing) {
  return { id: listing.org.id, name: listing.org.name, role: listing.role, active: listing.active, createdAt: toIso(listing.org.createdAt) };
}

function planView(plan: PlanState) {
  return {
    effective: plan.effective,
    base: plan.base,
    trial: plan.trial && {
      plan: plan.trial.plan,
      startedAt: toIso(plan.trial.startedAt),
      endsAt: toIso(plan.trial.endsAt),
      active: plan.trial.active,
      awaitingVerification: plan.trial.awaitingVerification,
    },
  };
}

export function activeOrgView(active: ActiveOrg) {
  return {
    org: { id: active.org.id, name: active.org.name, createdAt: toIso(active.org.createdAt), plan: planView(active.plan) },
    role: active.role,
    members: active.members.map((m) => ({
      userId: m.user.id,
      email: m.user.email,
      name: m.user.name,
      role: m.role,
      emailVerified: m.user.emailVerified,
      joinedAt: toIso(m.joinedAt),
    })),
    seats: active.seats,
  };
}

export function inviteView({ invite, inviter }: InviteWithInviter) {
  return {
    id: invite.id,
    email: invite.email,
    role: invite.role,
    status: invite.status,
    createdAt: toIso(invite.createdAt),
    expiresAt: toIso(invite.expiresAt),
    invitedBy: inviter ? { userId: inviter.id, name: inviter.name, email: inviter.email } : null,
    acceptedAt: invite.acceptedAt === null ? null : toIso(invite.acceptedAt),
  };
}

export function inviteLookupView(lookup: InviteLookup) {
  return { ...lookup, expiresAt: lookup.expiresAt === null ? null : toIso(lookup.expiresAt) };
}
