/** `/api/v1/keys` (SPEC 4.6). The token is in the creation response only; lists never carry it or its hash. */
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { toIso } from '../core/clock.ts';
import { paginationQuery } from '../core/pagination.ts';
import { knownQuery } from '../core/query-parameters.ts';
import { nameSchema } from '../core/text.ts';
import { pathParameter } from '../http/path-parameters.ts';
import { authOf } from '../http/surface.ts';
import { noBody } from '../http/write-inputs.ts';
import type { ApiKey } from './repo.ts';
import type { KeysService } from './service.ts';

const createBody = z
  .object({
    name: nameSchema(200),
    mode: z.enum(['observe', 'optimize']).default('optimize'),
    appId: nameSchema(200).nullish(),
    admin: z.boolean().optional(),
  })
  .strict();

const patchBody = z.object({ mode: z.enum(['observe', 'optimize']) }).strict();
const idParams = z.object({ id: pathParameter });
const pageQuery = knownQuery(paginationQuery());

/** The public shape of a key. */
export function keyView(key: ApiKey) {
  return {
    id: key.id,
    name: key.name,
    mode: key.mode,
    appId: key.appId,
    admin: key.admin,
    tokenPrefix: key.tokenPrefix,
    status: key.revokedAt === null ? 'active' : 'revoked',
    createdAt: toIso(key.createdAt),
    revokedAt: key.revokedAt === null ? null : toIso(key.revokedAt),
  };
}

export function keysRoutes(keys: KeysService) {
  return async function (app: FastifyInstance) {
    app.post('/keys', async (request, reply) => {
      const body = createBody.parse(request.body);
      const { key, token } = await keys.create(authOf(request), body);
      reply.header('cache-control', 'no-store');
      return reply.status(201).send({ key: keyView(key), token });
    });

    app.get('/keys', async (request) => {
      const page = pageQuery.parse(request.query);
      const result = await keys.list(authOf(request), page);
      return { keys: result.keys.map(keyView), pagination: result.pagination };
    });

    app.patch('/keys/:id', async (request) => {
      const { id } = idParams.parse(request.params);
      const { mode } = patchBody.parse(request.body);
      return { key: keyView(await keys.setMode(authOf(request), id, mode)) };
    });

    app.post('/keys/:id/revoke', async (request) => {
      const { id } = idParams.parse(request.params);
      noBody.parse(request.body);
      return { key: keyView(await keys.revoke(authOf(request), id)) };
    });
  };
}
