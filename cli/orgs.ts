/**
 * `svc orgs list|create|members|invite|invites|revoke-invite|set-role|remove-member|delete` (docs/accounts.md,
 * "Organizations" and "Invitations"). `--org <id>` picks the organization through the `X-Svc-Tenant` header, which
 * the local operator and the bootstrap token may send; without it they act in the default organization.
 */
import type { Command } from 'commander';
import type { ActiveOrg, Invite, InviteStatus, OrgRole } from '../src/client/client.ts';
import { withClient, withConnectionOptions, type ConnectionOptions } from './connection.ts';
import { idParser, limitParser, oneOf, parseNonEmpty, parseNonNegativeInt } from './options.ts';
import { note, print, printJson, table } from './output.ts';
import { confirmThenAct, inOrg, ORG_ROLES, parseUserRef, resolveUser, userLabel } from './users.ts';

const INVITE_STATUSES: readonly InviteStatus[] = ['pending', 'accepted', 'revoked', 'expired'];

const ORG_COLUMNS = { id: 'ID', name: 'NAME', role: 'ROLE', active: 'ACTIVE', createdAt: 'CREATED' };
const MEMBER_COLUMNS = { userId: 'USER', email: 'EMAIL', name: 'NAME', role: 'ROLE', joinedAt: 'JOINED' };
const INVITE_COLUMNS = { id: 'ID', email: 'EMAIL', role: 'ROLE', status: 'STATUS', invitedBy: 'INVITED-BY', createdAt: 'CREATED', expiresAt: 'EXPIRES' };

const inviteRows = (invites: readonly Invite[]) => invites.map((invite) => ({ ...invite, invitedBy: invite.invitedBy?.email ?? null }));

/** One line naming the organization, its plan and seats, then the members table. */
function printActiveOrg(active: ActiveOrg): void {
  const { org, seats } = active;
  const plan = org.plan.effective === org.plan.base ? org.plan.effective : `${org.plan.effective} (trial; base ${org.plan.base})`;
  const pending = seats.pendingInvites === 1 ? '1 pending invite' : `${seats.pendingInvites} pending invites`;
  print(`${org.name} (${org.id})  plan: ${plan}  seats: ${seats.used} (${seats.members} member${seats.members === 1 ? '' : 's'}, ${pending})\n`);
  print(table(active.members, MEMBER_COLUMNS, 'No members.'));
}

/** `--org <id>`: which organization a command acts in. */
const orgOption = (command: Command, required = false) =>
  required
    ? command.requiredOption('--org <id>', 'the organization (org_...)', parseNonEmpty)
    : command.option('--org <id>', 'the organization (org_...); default: your active one (the default organization for the local operator)', parseNonEmpty);

const pageOf = (options: { limit?: number; offset?: number }) => ({ limit: options.limit, offset: options.offset });

function morePages(pagination: { offset: number; total: number; hasMore: boolean }, shown: number): void {
  const { offset, total, hasMore } = pagination;
  if (hasMore) note(`showing ${offset + 1}-${offset + shown} of ${total}; next page: --offset ${offset + shown}\n`);
}

type OrgOptions = ConnectionOptions & { org?: string };

export function registerOrgs(program: Command): void {
  const orgs = program
    .command('orgs')
    .description('manage organizations: members, invitations, deletion')
    .addHelpText(
      'after',
      `
--org <id> names the organization a command acts in (sent as the X-Svc-Tenant header). It works for the local
operator (a running svc serve's socket, or in-process) and the bootstrap token over --url; other identities act in
their own organization. Without --org the local operator acts in the default organization.

Examples:
  svc orgs list
  svc orgs create --name Acme --owner ada@example.com
  svc orgs members --org org_...
  svc orgs invite --email bob@example.com --role admin --org org_...
  svc orgs invites --org org_... --status pending
  svc orgs set-role bob@example.com owner --org org_...
  svc orgs remove-member bob@example.com --org org_... --yes
  svc orgs delete --org org_... --yes`,
    );

  withConnectionOptions(orgs.command('list'))
    .description('list organizations: all of them for the local operator, else your own')
    .option('--limit <n>', 'page size (1-200, default 50)', limitParser(200))
    .option('--offset <n>', 'skip this many organizations', parseNonNegativeInt)
    .action(async (options: ConnectionOptions & { limit?: number; offset?: number }) => {
      const result = await withClient(options, (client) => client.orgs.list(pageOf(options)));
      if (options.json) return printJson(result);
      print(table(result.orgs, ORG_COLUMNS, 'No organizations.'));
      morePages(result.pagination, result.orgs.length);
    });

  withConnectionOptions(orgs.command('create'))
    .description('create an organization owned by an existing user (on the Free plan, without a trial)')
    .requiredOption('--name <name>', 'its name (1-100 characters)', parseNonEmpty)
    .requiredOption('--owner <email>', 'e-mail address of an existing user, who becomes its owner', parseNonEmpty)
    .action(async (options: ConnectionOptions & { name: string; owner: string }) => {
      const result = await withClient(options, (client) => client.orgs.create({ name: options.name, ownerEmail: options.owner }));
      if (options.json) return printJson(result);
      print(table([result.org], ORG_COLUMNS));
    });

  orgOption(withConnectionOptions(orgs.command('members')))
    .description("an organization's members, plan and seats")
    .action(async (options: OrgOptions) => {
      const active = await withClient(options, (client) => inOrg(client, options.org).orgs.active());
      if (options.json) return printJson(active);
      printActiveOrg(active);
    });

  orgOption(withConnectionOptions(orgs.command('invite')))
    .description('invite an e-mail address; the accept link is e-mailed to it (never shown here)')
    .requiredOption('--email <email>', 'the address to invite', parseNonEmpty)
    .option('--role <role>', 'member (default), admin or owner (owner: by an owner only)', oneOf(ORG_ROLES))
    .addHelpText(
      'after',
      `
The invitation expires after 7 days. Its token travels only in the e-mail: with the default console e-mail transport
the message (and its accept link) is written to the output of the svc process that sent it: svc serve's output, or
this command's standard error when it ran in-process (no server running). Inviting the same address again replaces
its pending invitation.`,
    )
    .action(async (options: OrgOptions & { email: string; role?: OrgRole }) => {
      const result = await withClient(options, (client) =>
        inOrg(client, options.org).orgs.invite({ email: options.email, ...(options.role ? { role: options.role } : {}) }),
      );
      if (options.json) return printJson(result);
      print(table(inviteRows([result.invite]), INVITE_COLUMNS));
      note(
        `The accept link was e-mailed to ${result.invite.email}; with the default console e-mail transport it is in svc's output.\n`,
      );
    });

  orgOption(withConnectionOptions(orgs.command('invites')))
    .description("an organization's invitations (never their tokens)")
    .option('--status <status>', `only ${INVITE_STATUSES.join(', ')} invitations`, oneOf(INVITE_STATUSES))
    .option('--limit <n>', 'page size (1-200, default 50)', limitParser(200))
    .option('--offset <n>', 'skip this many invitations', parseNonNegativeInt)
    .action(async (options: OrgOptions & { status?: InviteStatus; limit?: number; offset?: number }) => {
      const result = await withClient(options, (client) => inOrg(client, options.org).orgs.listInvites({ status: options.status, ...pageOf(options) }));
      if (options.json) return printJson(result);
      print(table(inviteRows(result.invites), INVITE_COLUMNS, 'No invitations.'));
      morePages(result.pagination, result.invites.length);
    });

  orgOption(withConnectionOptions(orgs.command('revoke-invite')))
    .description('revoke a pending invitation; its link stops working')
    .argument('<id>', 'invitation id (inv_...)', idParser('inv', 'an invitation'))
    .action(async (id: string, options: OrgOptions) => {
      const result = await withClient(options, (client) => inOrg(client, options.org).orgs.revokeInvite(id));
      if (options.json) return printJson(result);
      print(table(inviteRows([result.invite]), INVITE_COLUMNS));
    });

  orgOption(withConnectionOptions(orgs.command('set-role')))
    .description("change a member's role (owner only; the last owner cannot be demoted)")
    .argument('<user>', 'user id (usr_...) or e-mail address', parseUserRef)
    .argument('<role>', 'owner, admin or member', oneOf(ORG_ROLES))
    .action(async (ref: string, role: OrgRole, options: OrgOptions) => {
      const active = await withClient(options, async (client) => {
        const view = inOrg(client, options.org);
        return view.orgs.setMemberRole((await resolveUser(view, ref)).id, role);
      });
      if (options.json) return printJson(active);
      printActiveOrg(active);
    });

  orgOption(withConnectionOptions(orgs.command('remove-member')))
    .description("remove a member from an organization; their sessions end (the user and the organization's keys stay)")
    .argument('<user>', 'user id (usr_...) or e-mail address', parseUserRef)
    .option('-y, --yes', 'do not ask for confirmation')
    .action(async (ref: string, options: OrgOptions & { yes?: boolean }) => {
      const where = options.org ? ` from ${options.org}` : '';
      const done = await confirmThenAct(options, {
        what: `Remove ${ref}${where}`,
        lookup: (client) => resolveUser(inOrg(client, options.org), ref),
        question: (user) => `Remove ${userLabel(user)}${where}? Their sessions end.`,
        act: (client, user) => inOrg(client, options.org).orgs.removeMember(user.id),
      });
      if (!done) return;
      if (options.json) return printJson(done.result);
      note(`removed ${userLabel(done.target)}\n`);
      printActiveOrg(done.result);
    });

  orgOption(withConnectionOptions(orgs.command('delete')), true)
    .description('delete an organization and everything in it (keys, settings, runs, invitations); users are kept')
    .option('-y, --yes', 'do not ask for confirmation')
    .action(async (options: OrgOptions & { org: string; yes?: boolean }) => {
      const done = await confirmThenAct(options, {
        what: `Delete organization ${options.org}`,
        lookup: (client) => client.inOrg(options.org).orgs.active(),
        question: (active) =>
          `Delete organization ${active.org.name} (${active.org.id}) with its ${active.members.length} membership(s), API keys, settings and runs? This cannot be undone.`,
        act: (client) => client.inOrg(options.org).orgs.delete(),
      });
      if (!done) return;
      if (options.json) return printJson(done.result);
      print(`deleted organization ${done.target.org.name} (${done.result.id})`);
    });
}
