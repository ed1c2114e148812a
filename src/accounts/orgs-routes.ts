/**
 * `/api/v1/orgs*` and `/api/v1/invites/*` (SPEC 4.5; docs/accounts.md "Organizations", "Invitations").
 * Invitation lookup and acceptance are public and limited per client address.
 */
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { pageOf, paginationQuery } from '../core/pagination.ts';
import { knownQuery, noQuery, optionalChoice } from '../core/query-parameters.ts';
import { pathParameter } from '../http/path-parameters.ts';
import { authOf, clientAddress } from '../http/surface.ts';
import { noBody } from '../http/write-inputs.ts';
import { setSessionCookie } from '../http/session-cookie.ts';
import type { LimitsService } from '../limits/service.ts';
import { nameField, passwordField } from './auth-routes.ts';
import { emailField } from './email-address.ts';
import type { InvitesService } from './invites-service.ts';
import type { OrgsService } from './orgs-service.ts';
import { activeOrgView, inviteLookupView, inviteView, meView, orgListingView } from './views.ts';

const orgId = z.string().trim().min(1).max(100);
const createBody = z.object({ name: z.string().max(1000), ownerEmail: emailField.optional() }).strict();
const switchBody = z
  .object({ orgId: orgId.optional(), tenantId: orgId.optional() })
  .strict()
  .transform((body, ctx) => {
    if (body.orgId !== undefined && body.tenantId !== undefined && body.orgId !== body.tenantId) {
      ctx.addIssue({ code: 'custom', message: 'orgId and tenantId name different organizations' });
      return z.NEVER;
    }
    const id = body.orgId ?? body.tenantId;
    if (id === undefined) {
      ctx.addIssue({ code: 'custom', message: 'orgId (or tenantId) is required' });
      return z.NEVER;
    }
    return id;
  });
const renameBody = z.object({ name: z.string().max(1000) }).strict();
const deleteBody = z.object({ confirm: z.unknown().optional() }).strict().optional();
const roleBody = z.object({ role: z.enum(['owner', 'admin', 'member']) }).strict();
const userParams = z.object({ userId: pathParameter });
const inviteBody = z.object({ email: emailField, role: z.enum(['owner', 'admin', 'member']).optional() }).strict();
const inviteQuery = knownQuery(paginationQuery().extend({ status: optionalChoice(['pending', 'accepted', 'revoked', 'expired']) }));
const orgsQuery = knownQuery(paginationQuery());
const idParams = z.object({ id: pathParameter });
const tokenParams = z.object({ token: pathParameter });
/** Optional: a request without a body accepts as the signed-in user. A JSON `null` is refused (src/http/write-inputs.ts). */
const acceptBody = z.object({ name: nameField.optional(), password: passwordField.optional() }).strict().optional();

export function orgsRoutes(deps: { orgs: OrgsService; invites: InvitesService; limits: LimitsService }) {
  const { orgs, invites, limits } = deps;
  return async function (app: FastifyInstance) {
    app.get('/orgs', { config: { access: 'account' } }, async (request) => {
      const page = orgsQuery.parse(request.query);
      const { orgs: listed, total } = await orgs.list(authOf(request), page);
      return { orgs: listed.map(orgListingView), pagination: pageOf(page.limit, page.offset, total) };
    });

    app.post('/orgs', { config: { access: 'account' } }, async (request, reply) => {
      const body = createBody.parse(request.body);
      return reply.status(201).send({ org: orgListingView(await orgs.create(authOf(request), body)) });
    });

    app.post('/orgs/switch', { config: { access: 'account' } }, async (request) => {
      // No body is `{}`, a 400 naming the field; a JSON `null` never gets here (src/http/write-inputs.ts).
      const id = switchBody.parse(request.body === undefined ? {} : request.body);
      return { org: orgListingView(await orgs.switch(authOf(request), id)) };
    });

    app.get('/orgs/active', async (request) => {
      noQuery.parse(request.query);
      return activeOrgView(await orgs.active(authOf(request)));
    });

    app.patch('/orgs/active', async (request) => {
      const { name } = renameBody.parse(request.body);
      return activeOrgView(await orgs.rename(authOf(request), name));
    });

    app.delete('/orgs/active', async (request) => {
      const body = deleteBody.parse(request.body);
      const id = await orgs.delete(authOf(request), body?.confirm);
      return { deleted: true, id };
    });

    app.patch('/orgs/active/members/:userId', async (request) => {
      const { userId } = userParams.parse(request.params);
      const { role } = roleBody.parse(request.body);
      return activeOrgView(await orgs.setMemberRole(authOf(request), userId, role));
    });

    app.delete('/orgs/active/members/:userId', async (request) => {
      const { userId } = userParams.parse(request.params);
      noBody.parse(request.body);
      return activeOrgView(await orgs.removeMember(authOf(request), userId));
    });

    app.get('/orgs/active/onboarding', async (request) => {
      noQuery.parse(request.query);
      return orgs.onboarding(authOf(request));
    });
    app.post('/orgs/active/onboarding/dismiss', async (request) => {
      noBody.parse(request.body);
      return orgs.dismissOnboarding(authOf(request));
    });

    app.post('/orgs/active/invites', async (request, reply) => {
      const body = inviteBody.parse(request.body);
      await limits.take('inviteCreate', clientAddress(request));
      return reply.status(201).send({ invite: inviteView(await invites.create(authOf(request), body)) });
    });

    app.get('/orgs/active/invites', async (request) => {
      const query = inviteQuery.parse(request.query);
      const { invites: listed, total } = await invites.list(authOf(request), query);
      return { invites: listed.map(inviteView), pagination: pageOf(query.limit, query.offset, total) };
    });

    app.post('/orgs/active/invites/:id/revoke', async (request) => {
      const { id } = idParams.parse(request.params);
      noBody.parse(request.body);
      return { invite: inviteView(await invites.revoke(authOf(request), id)) };
    });

    app.get('/invites/:token', { config: { access: 'public' } }, async (request, reply) => {
      const { token } = tokenParams.parse(request.params);
      await limits.take('inviteAccept', clientAddress(request));
      reply.header('cache-control', 'no-store');
      reply.header('referrer-policy', 'no-referrer');
      return inviteLookupView(await invites.lookup(token));
    });

    app.post('/invites/:token/accept', { config: { access: 'public', setsSession: true } }, async (request, reply) => {
      const { token } = tokenParams.parse(request.params);
      const body = acceptBody.parse(request.body) ?? {};
      await limits.take('inviteAccept', clientAddress(request));
      const { me, token: sessionToken } = await invites.accept(token, body, request.auth);
      if (sessionToken) setSessionCookie(request, reply, sessionToken);
      reply.header('referrer-policy', 'no-referrer');
      return meView(me);
    });
  };
}
