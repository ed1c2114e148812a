/**
 * Organizations (SPEC 3, 4.5; docs/accounts.md "Organizations"): list, create, switch, the active organization with
 * its members, plan and seats, rename, member roles and removal, deletion, onboarding.
 *
 * Deletion removes the organization and its small tables at once (foreign keys cascade: memberships, invitations,
 * API keys, settings) and hands its bulk data (runs, traces, caches, rollups) to the background purge; its audit
 * log is kept, so the `org.delete` record survives.
 */
import { AppError, invalid, notFound } from '../core/errors.ts';
import { newId } from '../core/ids.ts';
import { BLANK_MESSAGE, isPrintableText, showsSomething, UNPRINTABLE_MESSAGE } from '../core/text.ts';
import { NO_ORGANIZATION, type AuthContext } from '../identity/auth-context.ts';
import { DEFAULT_TENANT_ID } from '../tenants/defaults.ts';
import { rankOf, requireAccountAdmin, requireOrgAdmin, requireOwner, requireSession } from './access.ts';
import { actorOf } from '../identity/auth-context.ts';
import { authorityChange, revokeLapsedInvites } from './invites-service.ts';
import type { AccountsDeps } from './sessions-service.ts';
import { normalizeEmail, ORG_ROLE_RANK, type Member, type Org, type OrgRole } from './types.ts';

/** The plan of an organization as it applies now (docs/accounts.md): the trial's only with a verified owner. */
export interface PlanState {
  effective: string;
  base: string;
  trial: { plan: string; startedAt: number; endsAt: number; active: boolean; awaitingVerification: boolean } | null;
}

export interface ActiveOrg {
  org: Org;
  plan: PlanState;
  role: OrgRole | null;
  members: Member[];
  seats: { members: number; pendingInvites: number; used: number };
}

export interface OrgListing {
  org: Org;
  role: OrgRole | null;
  active: boolean;
}

export interface Onboarding {
  workflowCount: number;
  agentCount: number;
  hasRuns: boolean;
  dismissed: boolean;
}

export interface OrgsService {
  list(auth: AuthContext, page: { limit: number; offset: number }): Promise<{ orgs: OrgListing[]; total: number }>;
  create(auth: AuthContext, input: { name: string; ownerEmail?: string | undefined }): Promise<OrgListing>;
  switch(auth: AuthContext, orgId: string): Promise<OrgListing>;
  active(auth: AuthContext): Promise<ActiveOrg>;
  rename(auth: AuthContext, name: string): Promise<ActiveOrg>;
  setMemberRole(auth: AuthContext, userId: string, role: OrgRole): Promise<ActiveOrg>;
  removeMember(auth: AuthContext, userId: string): Promise<ActiveOrg>;
  delete(auth: AuthContext, confirm: unknown): Promise<string>;
  onboarding(auth: AuthContext): Promise<Onboarding>;
  dismissOnboarding(auth: AuthContext): Promise<Onboarding>;
  planOf(org: Org): Promise<PlanState>;
}

export interface OrgsDeps extends AccountsDeps {
  /** Whether the organization recorded any run (the evidence area knows). */
  hasRuns(tenantId: string): Promise<boolean>;
  /** Called after an organization was deleted: start purging its bulk data. */
  onDeleted(tenantId: string): void;
}

export function createOrgsService(deps: OrgsDeps): OrgsService {
  const { repo, clock, audit } = deps;

  function requireOrg(auth: AuthContext): void {
    if (auth.tenantId === NO_ORGANIZATION) throw new AppError('no_organization');
  }

  async function planOf(org: Org): Promise<PlanState> {
    if (!org.trial) return { effective: org.plan, base: org.plan, trial: null };
    const running = clock.now() < org.trial.endsAt;
    const verified = running && (await repo.ownerVerified(org.id));
    return {
      effective: running && verified ? org.trial.plan : org.plan,
      base: org.plan,
      trial: { ...org.trial, active: running && verified, awaitingVerification: running && !verified },
    };
  }

  async function active(auth: AuthContext): Promise<ActiveOrg> {
    requireOrg(auth);
    const org = await repo.findOrg(auth.tenantId);
    if (!org) throw notFound('Organization');
    // Seats count only invitations that can still be accepted.
    await revokeLapsedInvites(deps, org.id);
    const [members, pendingInvites, plan] = await Promise.all([
      repo.members(org.id),
      repo.pendingInviteCount(org.id, clock.now()),
      planOf(org),
    ]);
    return {
      org,
      plan,
      // As the members now say, not as the request began: an owner who just changed their own role has the new one.
      role: auth.session ? (members.find((m) => m.user.id === auth.userId)?.role ?? null) : null,
      members,
      seats: { members: members.length, pendingInvites, used: members.length + pendingInvites },
    };
  }

  async function onboarding(auth: AuthContext): Promise<Onboarding> {
    requireOrg(auth);
    const org = await repo.findOrg(auth.tenantId);
    if (!org) throw notFound('Organization');
    // Workflows and agents land with the automation issue; until then there are none to count.
    return { workflowCount: 0, agentCount: 0, hasRuns: await deps.hasRuns(org.id), dismissed: org.onboardingDismissedAt !== null };
  }

  function validName(name: string): string {
    const trimmed = name.trim();
    if (trimmed.length < 1 || trimmed.length > 100) throw invalid('name must be 1 to 100 characters', { param: 'name' });
    if (!isPrintableText(trimmed)) throw invalid(`name ${UNPRINTABLE_MESSAGE}`, { param: 'name' });
    if (!showsSomething(trimmed)) throw invalid(`name ${BLANK_MESSAGE}`, { param: 'name' });
    return trimmed;
  }

  return {
    planOf,
    onboarding,

    async active(auth) {
      // The answer lists every member's name and e-mail address: for the organization's people (sessions, as SPEC 4.5
      // has it) and its account administrators (operators, tenant-wide admin keys), not for the API keys an app
      // embeds, which may not list users either (GET /users is admin-only).
      if (auth.kind !== 'session') requireAccountAdmin(auth);
      return active(auth);
    },

    async list(auth, page) {
      if (auth.kind === 'session' && auth.userId) {
        const { orgs, total } = await repo.listOrgsOf(auth.userId, page);
        return { orgs: orgs.map(({ org, role }) => ({ org, role, active: org.id === auth.tenantId })), total };
      }
      if (auth.platformAdmin) {
        const { orgs, total } = await repo.listOrgs(page);
        return { orgs: orgs.map((org) => ({ org, role: null, active: org.id === auth.tenantId })), total };
      }
      const own = await repo.findOrg(auth.tenantId);
      const all = own ? [{ org: own, role: null, active: true }] : [];
      return { orgs: all.slice(page.offset, page.offset + page.limit), total: all.length };
    },

    async create(auth, input) {
      const name = validName(input.name);
      const org: Org = { id: newId('org'), name, createdAt: clock.now(), plan: 'free', trial: null, onboardingDismissedAt: null };
      // The row in the write: appended after it, a crash between the two lost it, and an organization deleted at once
      // had it after its org.delete.
      const also = audit.stagedAs(actorOf(auth), org.id, 'org.create', { target: org.id, details: { name } });
      if (auth.kind === 'session' && auth.session && auth.userId) {
        if (input.ownerEmail !== undefined) throw invalid('ownerEmail is for platform operators; you become the owner', { param: 'ownerEmail' });
        // The caller's account was deleted (and with it this session) while the request was under way.
        if (!(await repo.createOrg(org, auth.userId, auth.session.id, also))) throw new AppError('unauthorized');
      } else if (auth.platformAdmin) {
        if (input.ownerEmail === undefined) throw invalid('ownerEmail is required: name the existing user who will own the organization', { param: 'ownerEmail' });
        const owner = await repo.findUserByEmail(normalizeEmail(input.ownerEmail));
        const noOwner = () => new AppError('not_found', { message: 'No user has that e-mail address.' });
        if (!owner) throw noOwner();
        // Deleted since it was read: answered as if it had been gone before.
        if (!(await repo.createOrg(org, owner.id, undefined, also))) throw noOwner();
      } else {
        throw new AppError('session_required');
      }
      return { org, role: auth.kind === 'session' ? 'owner' : null, active: auth.kind === 'session' };
    },

    async switch(auth, orgId) {
      requireSession(auth);
      const switched = await repo.switchOrg(
        auth.session.id,
        orgId,
        // The row lands in the log of the organization switched to, which all its members read: it names no other
        // organization (the one left is another tenant, whose id is not theirs to learn). Only when the switch changes
        // the active organization (docs/accounts.md "A row per change made").
        audit.stagedAs(actorOf(auth), orgId, 'org.switch', { target: orgId }),
      );
      // The account was deleted (and with it this session) while the request was under way: answered as after it.
      if (switched === 'no_session') throw new AppError('unauthorized');
      // Unknown ids answer like foreign ones, so organization ids cannot be probed.
      if (switched === 'not_member') throw new AppError('not_a_member');
      return { ...switched, active: true };
    },

    async rename(auth, name) {
      requireOrg(auth);
      requireAccountAdmin(auth);
      const next = validName(name);
      const renamed = await repo.renameOrg(auth.tenantId, next, (from) => audit.staged(auth, 'org.rename', { target: auth.tenantId, details: { from, to: next } }));
      if (!renamed) throw notFound('Organization');
      return active(auth);
    },

    async setMemberRole(auth, userId, role) {
      requireOrg(auth);
      requireOwner(auth);
      const outcome = await repo.setMemberRole(
        auth.tenantId,
        userId,
        role,
        // `from` as the write found it, as `user.update` and `org.rename` name what they replaced: of two changes at
        // once, the second row names the first one's role.
        (from) => authorityChange(deps, audit.staged(auth, 'org.member_role', { target: userId, details: { from, role } })),
      );
      if (outcome === 'not_member') throw notFound('Member');
      if (outcome === 'last_owner') throw new AppError('last_owner', { message: 'The organization would be left without an owner.' });
      return active(auth);
    },

    async removeMember(auth, userId) {
      requireOrg(auth);
      requireOwner(auth);
      const outcome = await repo.removeMember(
        auth.tenantId,
        userId,
        authorityChange(deps, audit.staged(auth, 'org.member_remove', { target: userId, details: { userId } })),
      );
      if (outcome === 'not_member') throw notFound('Member');
      if (outcome === 'last_owner') throw new AppError('last_owner', { message: 'The last owner of an organization cannot be removed.' });
      // A caller who removed themself has no access left to read the organization.
      if (userId === auth.userId) {
        const org = (await repo.findOrg(auth.tenantId))!;
        return { org, plan: await planOf(org), role: null, members: [], seats: { members: 0, pendingInvites: 0, used: 0 } };
      }
      return active(auth);
    },

    async delete(auth, confirm) {
      requireOrg(auth);
      requireOwner(auth);
      if (confirm !== true) throw new AppError('confirm_required');
      if (auth.tenantId === DEFAULT_TENANT_ID) throw new AppError('default_org');
      const org = await repo.findOrg(auth.tenantId);
      if (!org) throw notFound('Organization');
      // The row in the deletion's write: appended after it, a crash between the two lost it.
      if (!(await repo.deleteOrg(org.id, clock.now(), audit.staged(auth, 'org.delete', { target: org.id, details: { name: org.name } })))) {
        throw notFound('Organization');
      }
      deps.onDeleted(org.id);
      return org.id;
    },

    async dismissOnboarding(auth) {
      requireOrg(auth);
      requireOrgAdmin(auth);
      await repo.dismissOnboarding(auth.tenantId, clock.now());
      return onboarding(auth);
    },
  };
}
