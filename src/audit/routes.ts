/**
 * `GET /api/v1/audit` (SPEC 4.12): newest first; `limit` 1..500 (default 50), `before` (exclusive seq, the previous
 * page's `window.nextBefore`), optional `decision`, `verify`.
 */
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { toIso } from '../core/clock.ts';
import { optionalQueryInteger, queryInteger } from '../core/pagination.ts';
import { knownQuery, optionalChoice } from '../core/query-parameters.ts';
import { authOf } from '../http/surface.ts';
import type { AuditService } from './service.ts';

const fields = z.object({
  limit: queryInteger(1, 500, 50),
  /** Exclusive seq: the events below it (a seq is at least 1). */
  before: optionalQueryInteger(1),
  decision: optionalChoice(['allow', 'deny']),
  /** Recompute the tenant's whole hash chain (linear in the log's length, so opt-in). */
  verify: optionalChoice(['true', 'false']),
});

const query = knownQuery(fields);

export function auditRoutes(audit: AuditService) {
  return async function (app: FastifyInstance) {
    // A deleted organization's log is kept (docs/accounts.md "Deletion"): a platform admin reads and verifies it here.
    app.get('/audit', { config: { readsDeletedTenants: true } }, async (request) => {
      const { limit, before, decision, verify } = query.parse(request.query);
      const auth = authOf(request);
      const [page, integrity] = await Promise.all([
        audit.list(auth, { limit, ...(before !== undefined ? { before } : {}), ...(decision ? { decision } : {}) }),
        verify === 'true' ? audit.verify(auth) : null,
      ]);
      return {
        events: page.records.map((event) => ({
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
        window: page.window,
        ...(integrity ? { integrity } : {}),
      };
    });
  };
}
