/** `/api/v1/users` (SPEC 4.4; docs/accounts.md "Users"). Temporary passwords appear once, in the answer that made them. */
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { paginationQuery } from '../core/pagination.ts';
import { pageOf } from '../core/pagination.ts';
import { knownQuery, optionalText } from '../core/query-parameters.ts';
import { pathParameter } from '../http/path-parameters.ts';
import { authOf } from '../http/surface.ts';
import { noBody } from '../http/write-inputs.ts';
import { nameField, passwordField } from './auth-routes.ts';
import { emailField } from './email-address.ts';
import type { UsersService } from './users-service.ts';
import { userListingView } from './views.ts';

const listQuery = knownQuery(paginationQuery().extend({ email: optionalText(254) }));
const createBody = z
  .object({
    email: emailField,
    name: nameField.optional(),
    role: z.enum(['admin', 'member']).optional(),
    orgRole: z.enum(['owner', 'admin', 'member']).optional(),
    tempPassword: passwordField.optional(),
  })
  .strict();
const patchBody = z.object({ name: nameField.optional(), role: z.enum(['admin', 'member']).optional() }).strict();
const idParams = z.object({ id: pathParameter });

export function usersRoutes(users: UsersService) {
  return async function (app: FastifyInstance) {
    app.get('/users', async (request) => {
      const query = listQuery.parse(request.query);
      const { users: listed, total } = await users.list(authOf(request), query);
      return { users: listed.map(userListingView), pagination: pageOf(query.limit, query.offset, total) };
    });

    app.post('/users', async (request, reply) => {
      const body = createBody.parse(request.body);
      const { user, tempPassword } = await users.create(authOf(request), body);
      reply.header('cache-control', 'no-store');
      return reply.status(201).send({ user: userListingView(user), tempPassword });
    });

    app.patch('/users/:id', { config: { access: 'account' } }, async (request) => {
      const { id } = idParams.parse(request.params);
      const body = patchBody.parse(request.body);
      return { user: userListingView(await users.update(authOf(request), id, body)) };
    });

    app.delete('/users/:id', async (request) => {
      const { id } = idParams.parse(request.params);
      noBody.parse(request.body);
      await users.delete(authOf(request), id);
      return { deleted: true, id };
    });

    app.post('/users/:id/reset-password', async (request, reply) => {
      const { id } = idParams.parse(request.params);
      noBody.parse(request.body);
      const { user, tempPassword } = await users.resetPassword(authOf(request), id);
      reply.header('cache-control', 'no-store');
      return { user: userListingView(user), tempPassword };
    });
  };
}
