/** `GET /api/v1/savings`, `/usage`, `/usage/attribution` (SPEC 4.7, 4.9). */
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { instantQuery } from '../core/instant.ts';
import { authOf } from '../http/surface.ts';
import { ATTRIBUTION_DEFAULT_LIMIT, ATTRIBUTION_DIMENSIONS, type AttributionQuery, type SavingsService } from './savings.ts';

const windowQuery = z.object({ since: instantQuery, until: instantQuery }).refine(
  (window) => window.since === undefined || window.until === undefined || window.since <= window.until,
  'since must not be after until',
);

const pageFields = Object.fromEntries(
  ATTRIBUTION_DIMENSIONS.flatMap((dim) => [
    [`${dim}Limit`, z.coerce.number().int().min(1).max(200).default(ATTRIBUTION_DEFAULT_LIMIT)],
    [`${dim}Offset`, z.coerce.number().int().min(0).default(0)],
  ]),
);

const attributionQuery = z.object({ since: instantQuery, until: instantQuery, ...pageFields });

function windowOf(query: { since?: number | undefined; until?: number | undefined }) {
  return { ...(query.since !== undefined ? { since: query.since } : {}), ...(query.until !== undefined ? { until: query.until } : {}) };
}

export function savingsRoutes(savings: SavingsService) {
  return async function (app: FastifyInstance) {
    app.get('/savings', async (request) => savings.savings(authOf(request), windowOf(windowQuery.parse(request.query))));

    app.get('/usage', async (request) => savings.usage(authOf(request)));

    app.get('/usage/attribution', async (request) => {
      const query = attributionQuery.parse(request.query) as Record<string, number | undefined>;
      const pages: AttributionQuery['pages'] = {};
      for (const dim of ATTRIBUTION_DIMENSIONS) pages[dim] = { limit: query[`${dim}Limit`]!, offset: query[`${dim}Offset`]! };
      return savings.attribution(authOf(request), { ...windowOf(query), pages });
    });
  };
}
