/** `GET /api/v1/savings`, `/usage`, `/usage/attribution` (SPEC 4.7, 4.9). */
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { instantQuery } from '../core/instant.ts';
import { queryInteger } from '../core/pagination.ts';
import { knownQuery, noQuery } from '../core/query-parameters.ts';
import { authOf } from '../http/surface.ts';
import { ATTRIBUTION_DEFAULT_LIMIT, ATTRIBUTION_DIMENSIONS, type AttributionQuery, type SavingsService } from './savings.ts';

const windowFields = { since: instantQuery, until: instantQuery };

/**
 * The one rule of every window: `since` is not after `until`. The issue is put on `since`: an object-level issue has
 * no path, and the error mapping (src/http/error-shapes.ts) names a pathless issue `body`, wrong for a query.
 */
function inOrder<S extends z.ZodType<{ since?: number | undefined; until?: number | undefined }>>(schema: S) {
  return schema.refine((window) => window.since === undefined || window.until === undefined || window.since <= window.until, {
    message: 'must not be after until',
    path: ['since'],
  });
}

const windowQuery = knownQuery(inOrder(z.object(windowFields)));

const pageFields = Object.fromEntries(
  ATTRIBUTION_DIMENSIONS.flatMap((dim) => [
    [`${dim}Limit`, queryInteger(1, 200, ATTRIBUTION_DEFAULT_LIMIT)],
    [`${dim}Offset`, queryInteger(0, Number.MAX_SAFE_INTEGER, 0)],
  ]),
);

const attributionQuery = knownQuery(inOrder(z.object({ ...windowFields, ...pageFields })));

function windowOf(query: { since?: number | undefined; until?: number | undefined }) {
  return { ...(query.since !== undefined ? { since: query.since } : {}), ...(query.until !== undefined ? { until: query.until } : {}) };
}

export function savingsRoutes(savings: SavingsService) {
  return async function (app: FastifyInstance) {
    app.get('/savings', async (request) => savings.savings(authOf(request), windowOf(windowQuery.parse(request.query))));

    // Month to date, always: a `since`/`until` as /savings takes would be answered for the month without a word.
    app.get('/usage', async (request) => {
      noQuery.parse(request.query);
      return savings.usage(authOf(request));
    });

    app.get('/usage/attribution', async (request) => {
      const query = attributionQuery.parse(request.query) as Record<string, number | undefined>;
      const pages: AttributionQuery['pages'] = {};
      for (const dim of ATTRIBUTION_DIMENSIONS) pages[dim] = { limit: query[`${dim}Limit`]!, offset: query[`${dim}Offset`]! };
      return savings.attribution(authOf(request), { ...windowOf(query), pages });
    });
  };
}
