/** The query parameter for a point in time (`since`, `until`); its forms and range are instant-form.ts's. */
import { z } from 'zod';
import { FORMS_MESSAGE, INSTANT_MAX_MS, INSTANT_MIN_MS, parseInstant } from './instant-form.ts';

export { INSTANT_MAX_MS, INSTANT_MIN_MS } from './instant-form.ts';

/** Optional query instant: epoch milliseconds out, undefined when absent or blank; 400 when unparseable or out of range. */
export const instantQuery = z
  .string()
  .trim()
  .optional()
  .transform((value, ctx) => {
    if (!value) return undefined;
    const ms = parseInstant(value);
    if (ms === null) {
      ctx.addIssue({ code: 'custom', message: FORMS_MESSAGE });
      return z.NEVER;
    }
    if (ms < INSTANT_MIN_MS || ms > INSTANT_MAX_MS) {
      ctx.addIssue({ code: 'custom', message: 'must be between 0000-01-01T00:00:00.000Z and 9999-12-31T23:59:59.999Z' });
      return z.NEVER;
    }
    return ms;
  });
