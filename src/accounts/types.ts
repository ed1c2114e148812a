/** The accounts area's domain types (SPEC 2.1): users, memberships, organizations, sessions, invitations, tokens. */
import type { OrgRole } from '../identity/auth-context.ts';

export type { OrgRole };
export type PlatformRole = 'admin' | 'member';
export type InviteStatus = 'pending' | 'accepted' | 'revoked' | 'expired';
export type AccountTokenKind = 'verify_email' | 'password_reset';

export const ORG_ROLE_RANK: Record<OrgRole, number> = { member: 1, admin: 2, owner: 3 };

export interface User {
  id: string;
  /** Trimmed, lowercased, the domain in its Unicode form (`normalizeEmail`); unique. */
  email: string;
  name: string;
  role: PlatformRole;
  emailVerified: boolean;
  mustChangePassword: boolean;
  passwordHash: string;
  passwordChangedAt: number;
  createdAt: number;
  updatedAt: number;
}

export interface Membership {
  tenantId: string;
  orgName: string;
  userId: string;
  role: OrgRole;
  createdAt: number;
}

export interface Member {
  user: User;
  role: OrgRole;
  joinedAt: number;
}

export interface Trial {
  plan: string;
  startedAt: number;
  endsAt: number;
}

export interface Org {
  id: string;
  name: string;
  createdAt: number;
  /** The plan the organization is on without a trial. */
  plan: string;
  trial: Trial | null;
  onboardingDismissedAt: number | null;
}

export interface Session {
  id: string;
  userId: string;
  activeTenantId: string | null;
  createdAt: number;
  lastSeenAt: number;
  expiresAt: number;
}

export interface Invite {
  id: string;
  tenantId: string;
  email: string;
  role: OrgRole;
  invitedBy: string | null;
  /** The admin API key that sent it (never echoed: the list names human inviters only), else null. */
  invitedByKey: string | null;
  /** As stored; a pending invite past `expiresAt` reads as `expired` (see `effectiveStatus`). */
  status: InviteStatus;
  createdAt: number;
  expiresAt: number;
  acceptedAt: number | null;
  acceptedBy: string | null;
  revokedAt: number | null;
}

export interface AccountToken {
  tokenHash: string;
  kind: AccountTokenKind;
  userId: string;
  email: string;
  createdAt: number;
  expiresAt: number;
}

export function effectiveStatus(invite: Invite, now: number): InviteStatus {
  return invite.status === 'pending' && invite.expiresAt <= now ? 'expired' : invite.status;
}

/** E-mail addresses are compared and stored trimmed, lowercased, the domain in its Unicode form (SPEC 2.1). */
export { normalizeEmail } from '../core/mail-domain.ts';
