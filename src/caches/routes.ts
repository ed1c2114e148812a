/** `GET /api/v1/cache/stats`, `POST /api/v1/cache/invalidate` (SPEC 4.11). */
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { noQuery } from '../core/query-parameters.ts';
import { authOf } from '../http/surface.ts';
import type { CacheService } from './service.ts';

const invalidateBody = z
  .object({
    cacheType: z.string().optional(),
    keyPrefix: z.string().optional(),
    all: z.boolean().optional(),
  })
  .strict();

export function cacheRoutes(cache: CacheService) {
  return async function (app: FastifyInstance) {
    // Every cache type, always: a `cacheType` as invalidate takes would be answered for all types without a word.
    app.get('/cache/stats', async (request) => {
      noQuery.parse(request.query);
      return cache.stats(authOf(request));
    });
    // Its choices are the body's: a `?cacheType=` dropped left the delete wider than asked, every tier. Like every
    // write's, its query is refused before it runs (src/http/write-inputs.ts).
    app.post('/cache/invalidate', async (request) => {
      // No body at all is `{}` (every tier, as the SPEC's omitted cacheType); a JSON `null` is refused as `[]` is,
      // not read as that tenant-wide clear.
      const body = invalidateBody.parse(request.body === undefined ? {} : request.body);
      return cache.invalidate(authOf(request), body);
    });
  };
}
