/** `GET /api/v1/audit` (SPEC 4.12): newest first; `limit` 1..500 (default 50), optional `decision`, `verify`. */
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { toIso } from '../core/clock.ts';
import { queryInteger } from '../core/pagination.ts';
import { authOf } from '../http/surface.ts';
import type { AuditService } from './service.ts';

const query = z.object({
  limit: queryInteger(1, 500, 50),
  decision: z.enum(['allow', 'deny']).optional(),
  /** Recompute the tenant's whole hash chain (linear in the log's length, so opt-in). */
  verify: z.enum(['true', 'false']).optional(),
});

export function auditRoutes(audit: AuditService) {
  return async function (app: FastifyInstance) {
    app.get('/audit', async (request) => {
      const { limit, decision, verify } = query.parse(request.query);
      const auth = authOf(request);
      const [events, integrity] = await Promise.all([
        audit.list(auth, { limit, ...(decision ? { decision } : {}) }),
        verify === 'true' ? audit.verify(auth) : null,
      ]);
      return {
        events: events.map((event) => ({
          id: event.id,
          seq: event.seq,
          action: event.action,
          decision: event.decision,
          actor: event.actor,
          target: event.target,
          details: event.details,
          createdAt: toIso(event.createdAt),
          hash: event.hash,
          prevHash: event.prevHash,
        })),
        ...(integrity ? { integrity } : {}),
      };
    });
  };
}
