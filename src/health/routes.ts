/** `GET /health` (public) and `GET /api/v1/readiness` (admin), SPEC 4.1. */
import type { FastifyInstance } from 'fastify';
import { AppError } from '../core/errors.ts';
import { authOf } from '../http/surface.ts';
import type { HealthService } from './service.ts';
import { noQuery } from '../core/query-parameters.ts';

export function healthRoute(health: HealthService) {
  return async function (app: FastifyInstance) {
    app.get('/health', async (_request, reply) => {
      const body = health.health();
      reply.header('cache-control', 'no-store');
      return reply.status(body.ok ? 200 : 503).send(body);
    });
  };
}

export function readinessRoute(health: HealthService) {
  return async function (app: FastifyInstance) {
    app.get('/readiness', async (request) => {
      if (!authOf(request).admin) throw new AppError('admin_required');
      noQuery.parse(request.query);
      const auth = authOf(request);
      // The platform's operator reads of every organization, an organization's admin of its own (the stored secrets).
      return health.readiness(auth.platformAdmin ? null : auth.tenantId);
    });
  };
}
