/** `/api/v1/settings` (SPEC 4.8): read all, write one key per PUT. */
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { authOf } from '../http/surface.ts';
import type { SettingsService } from './service.ts';
import { noQuery } from '../core/query-parameters.ts';

const putBody = z.object({ key: z.string().min(1).max(100), value: z.unknown() }).strict()
  .refine((body) => body.value !== undefined, { message: 'value is required (use null to clear)', path: ['value'] });

export function settingsRoutes(settings: SettingsService) {
  return async function (app: FastifyInstance) {
    app.get('/settings', async (request) => {
      noQuery.parse(request.query);
      return { settings: await settings.view(authOf(request)) };
    });

    app.put('/settings', async (request) => {
      const { key, value } = putBody.parse(request.body);
      return { settings: await settings.update(authOf(request), key, value) };
    });
  };
}
